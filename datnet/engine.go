package datnet

import (
	"context"
	"errors"
	"fmt"

	"github.com/godat/godat/api"
)

// start begins the connection's event loop; the connection is established
// and the peer's hello read.
func (c *Conn) start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancelRun = cancel
	c.runDone = make(chan struct{})
	go c.run(ctx)
}

// run takes every event of the connection's EVD until Close cancels ctx:
// the loop is what makes progress when neither Read nor Write is called
// (returning credits, completing sends, noticing a disconnect).
func (c *Conn) run(ctx context.Context) {
	defer close(c.runDone)
	var ev api.Event
	for {
		_, err := c.evd.Wait(ctx, 1, &ev)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.mu.Lock()
			c.fail(err)
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		c.handle(&ev)
		for c.evd.Dequeue(&ev) == nil {
			c.handle(&ev)
		}
		c.pump()
		c.mu.Unlock()
	}
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
		if d.Status != api.DTOSuccess {
			if d.Status != api.DTOErrFlushed {
				c.fail(fmt.Errorf("receive completed with %v", d.Status))
			}
			return
		}
		if d.Length < headerLen {
			c.fail(fmt.Errorf("a message of %d bytes, shorter than its header", d.Length))
			return
		}
		credits, flags := parseHeader(c.buffer(idx))
		if credits > 0 {
			c.credits += int(credits)
			signal(c.writable)
			signal(c.changed)
		}
		if int(d.Length) > headerLen && !c.peerFIN {
			c.rq[(c.rqHead+c.rqLen)%len(c.rq)] = message{idx: idx, off: headerLen, end: int(d.Length)}
			c.rqLen++
			signal(c.readable)
		} else {
			c.repost(idx)
		}
		if flags&flagFIN != 0 {
			c.peerFIN = true
			signal(c.readable)
		}
	case api.ConnectionDisconnectedEvent, api.ConnectionBrokenEvent:
		c.peerGone = true
		c.wakeAll()
	}
}

// repost posts receive buffer idx again and counts it as owed to the peer.
// After the connection ended the post fails, which is of no consequence.
// c.mu is held.
func (c *Conn) repost(idx int) {
	if c.peerGone {
		return
	}
	c.ciov[0] = c.reg.Triplet(uint64(idx*c.size), uint32(c.size))
	if err := c.ep.PostRecv(c.ciov[:], api.Cookie(idx), api.CompletionDefault); err != nil {
		c.fail(err)
		return
	}
	c.owed++
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
