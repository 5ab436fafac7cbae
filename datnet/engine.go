package datnet

import (
	"errors"
	"fmt"

	"github.com/godat/godat/api"
)

// drain applies every queued event and sends what they make due, and
// reports whether there was any: take with a condition that never holds.
// c.mu is held.
func (c *Conn) drain() bool { return c.take(never) }

// never is drain's condition (a variable, so that no call allocates it).
var never = func() bool { return false }

// take applies queued events until ready holds, and sends what they make
// due; it reports whether there was any. A call that waits stops at the
// event it waits for: what is queued behind it (often nothing, which only
// another poll of the EVD would tell) is taken at its next wait, while the
// answer to what it got is already on its way. c.mu is held.
func (c *Conn) take(ready func() bool) bool {
	got := false
	for !ready() && c.evd.Dequeue(&c.ev) == nil {
		c.handle(&c.ev)
		got = true
	}
	if got {
		c.pump()
		// A goroutine that had looked before these events and is on
		// its way into EVD.Wait would wait for events that are gone:
		// once it shows itself (inWait) it looks again or is kicked.
		c.kick()
	}
	return got
}

// handle applies one event. c.mu is held.
func (c *Conn) handle(ev *api.Event) {
	switch ev.Number {
	case api.DTOCompletionEvent:
		d := &ev.DTO
		idx := int(d.Cookie)
		if idx < 0 || idx >= c.nrecv+c.nsend {
			c.fail(fmt.Errorf("completion with unknown cookie %d", d.Cookie))
			return
		}
		if idx >= c.nrecv {
			c.freeSend = append(c.freeSend, idx)
			c.inflight--
			if d.Status != api.DTOSuccess && d.Status != api.DTOErrFlushed {
				c.fail(fmt.Errorf("send completed with %v", d.Status))
			}
			signal(c.writable)
			signal(c.changed)
			return
		}
		r := &c.posted[c.seqOf[idx]%c.nrecv]
		r.done, r.flushed = true, d.Status != api.DTOSuccess
		if d.Status != api.DTOSuccess && d.Status != api.DTOErrFlushed {
			c.fail(fmt.Errorf("receive completed with %v", d.Status))
			return
		}
		if !r.flushed {
			if d.Length < headerLen {
				c.fail(fmt.Errorf("a message of %d bytes, shorter than its header", d.Length))
				return
			}
			credits, flags := parseHeader(c.buffer(idx))
			// Credits return buffers that this side's messages used, so
			// the peer cannot hold more than it declared in its hello;
			// one that claims more would have this side send into
			// buffers it never posted.
			if int64(credits) > int64(c.peerBufs-c.credits) {
				c.fail(fmt.Errorf("the peer returned %d credits while this side held %d of the %d receive buffers it declared", credits, c.credits, c.peerBufs))
				return
			}
			if credits > 0 {
				c.credits += int(credits)
				signal(c.writable)
				signal(c.changed)
			}
			r.length, r.flags = int(d.Length), flags
		}
		c.advance()
	case api.ConnectionDisconnectedEvent, api.ConnectionBrokenEvent:
		c.discSeen = true
		c.advance()
	case api.SoftwareEvent:
		c.kicked.Store(false)
	}
}

// advance takes completed receives in the order they were posted, which
// is the order of the stream whichever goroutine took their events, and
// declares the connection gone once it has disconnected and every posted
// receive has completed (they complete flushed when an EP disconnects),
// so that no message that arrived before the end is lost to it. c.mu is
// held.
func (c *Conn) advance() {
	for c.pLen > 0 {
		r := &c.posted[c.pHead%c.nrecv]
		if !r.done {
			break
		}
		idx, length, flags, flushed := r.idx, r.length, r.flags, r.flushed
		c.pHead++
		c.pLen--
		if flushed {
			continue
		}
		if length > headerLen && c.peerFIN {
			c.fail(fmt.Errorf("the peer sent %d bytes after the end of its stream", length-headerLen))
			return
		}
		if length > headerLen {
			c.rq[(c.rqHead+c.rqLen)%len(c.rq)] = message{idx: idx, off: headerLen, end: length}
			c.rqLen++
			signal(c.readable)
		} else {
			c.repost(idx)
		}
		if flags&flagFIN != 0 {
			c.peerFIN = true
			signal(c.readable)
		}
	}
	if c.discSeen && c.pLen == 0 && !c.peerGone {
		c.peerGone = true
		c.wakeAll()
	}
}

// repost posts receive buffer idx again and counts it as owed to the peer.
// After the connection ended the post fails, which is of no consequence.
// c.mu is held.
func (c *Conn) repost(idx int) {
	if c.postRecv(idx) {
		c.owed++
	}
}

// flushHeld posts again the receive buffers Read emptied (copyOut).
// Their posts wait for the next Write's post, the next Read, or the next
// wait of a call or of the event loop, whichever comes first: a post is a
// call into the provider (on verbs, into rdma-core), which a
// request/response exchange would otherwise pay between taking a request
// and posting its answer. c.mu is held.
func (c *Conn) flushHeld() {
	for _, idx := range c.held {
		c.repost(idx)
	}
	c.held = c.held[:0]
}

// releaseHeld posts the held buffers, if any, for a call or the event loop
// about to wait, and returns their credits if enough are owed: no answer
// is coming for them to wait behind. c.mu is held.
func (c *Conn) releaseHeld() {
	if len(c.held) > 0 {
		c.flushHeld()
		c.pump()
	}
}

// postRecv posts receive buffer idx and records its place in the post
// order. Once the connection is ending it posts nothing: a post that
// fails because the EP has left CONNECTED only says that its disconnect
// event is on the way. c.mu is held.
func (c *Conn) postRecv(idx int) bool {
	if c.peerGone || c.discSeen {
		return false
	}
	c.ciov[0] = c.reg.Triplet(uint64(idx*c.size), uint32(c.size))
	if err := c.ep.PostRecv(c.ciov[:], api.Cookie(idx), api.CompletionDefault); err != nil {
		if !errors.Is(err, api.ErrInvalidState) {
			c.fail(err)
		}
		return false
	}
	seq := c.pHead + c.pLen
	c.posted[seq%c.nrecv] = posted{idx: idx}
	c.seqOf[idx] = seq
	c.pLen++
	return true
}

// pump sends what is due and may go: the end mark once every byte before
// it is posted, and returned credits once creditBatch buffers are owed.
// Either may use the last credit. c.mu is held.
func (c *Conn) pump() {
	if c.peerGone || c.writing {
		return
	}
	if c.finPending && c.credits >= 1 && len(c.freeSend) > 0 {
		c.finPending = false
		c.finSent = true
		c.post(flagFIN)
	}
	if c.owed >= c.creditBatch() && c.credits >= 1 && len(c.freeSend) > 0 {
		c.post(0)
	}
}

// post sends a message without payload carrying the owed credits. c.mu
// is held; the caller has checked for a credit and a send buffer.
func (c *Conn) post(flags uint8) {
	idx := c.freeSend[len(c.freeSend)-1]
	c.freeSend = c.freeSend[:len(c.freeSend)-1]
	c.credits--
	putHeader(c.buffer(idx), uint32(c.owed), flags)
	c.owed = 0
	c.ciov[0] = c.reg.Triplet(uint64(idx*c.size), headerLen)
	if err := c.ep.PostSend(c.ciov[:], api.Cookie(idx), api.CompletionDefault); err != nil {
		c.freeSend = append(c.freeSend, idx)
		c.fail(err)
		return
	}
	c.inflight++
	signal(c.changed)
}

// fail ends the connection with err, unless it has already ended. A
// failure while the connection is ending on purpose is its ending, not
// an error. c.mu is held.
func (c *Conn) fail(err error) {
	if c.peerGone {
		return
	}
	c.peerGone = true
	var e *api.Error
	if errors.As(err, &e) && (e.Type == api.InvalidState || e.Type == api.InvalidHandle) && c.closing {
		err = nil
	}
	c.err = err
	c.wakeAll()
}

func (c *Conn) wakeAll() {
	signal(c.readable)
	signal(c.writable)
	signal(c.changed)
}

// creditBatch is how many owed credits make a message of their own: half
// the receive buffers, and at least two. Two, because such a message takes
// a receive buffer on the other side and so makes one credit owed there;
// a batch of one would bounce between two idle sides for ever. Half,
// because with at least four buffers a peer left with fewer than the two
// credits data needs (doc.go) is then always owed a batch, even while one
// message waits here half read.
func (c *Conn) creditBatch() int { return max(2, c.nrecv/2) }
