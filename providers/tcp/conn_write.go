package tcp

import (
	"sync"
	"sync/atomic"

	"encoding/binary"
	"net"
	"syscall"
	"time"

	"github.com/godat/godat/provider/kit/ring"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/internal/sock"
	"github.com/godat/godat/provider/kit/sgl"
)

// sender is a connection's send side. Whoever sets wbusy (under ia.mu)
// owns the socket's send side and the scratch below until it clears
// wbusy: the writer goroutine, or a goroutine that posts, or the reader
// (direct writes, see flush). Fields are guarded by ia.mu unless noted.
type sender struct {
	tx     ring.Ring[txItem]
	txsegs [][]byte // scratch of pump, under ia.mu

	cond    *sync.Cond // wakes the writer
	wdone   chan struct{}
	wexited bool

	rc            syscall.RawConn // nil: no direct writes
	wbusy         bool            // a goroutine is writing
	wblock        bool            // the writer goroutine is writing, and may wait for room
	directRest    bool            // wvec holds the unwritten rest of a direct write
	txPend        atomic.Bool     // directRest, for pollers to see without the lock
	deferWake     int             // goroutines that flush before they release ia.mu
	wstage        [wstageLen]byte // one batch's headers and small payloads, packed (stage)
	wpos          int             // wstage[:wpos] is in use
	stageSliceIdx int             // index in wvec of the slice of wstage that ends at wpos; -1: none
	wvec          [][]byte
	wvec0         [][]byte // wvec's full backing array
	wbufs         net.Buffers
	wiov          []syscall.Iovec
	wrFn          func(uintptr) // writeNB's callback (made once: no allocation)
	wrN           int
	wrErr         syscall.Errno

	// The last frames, the ACK owed and DISCONNECT (lastFrames).
	wlast [2 * frameLen]byte
}

// txItem is a frame waiting for the writer: its header and the memory its
// payload comes from.
type txItem struct {
	hdr      [frameLen]byte
	segs     [][]byte
	readResp bool
}

// maxBatchSegs bounds the payload segments the writer hands to one writev.
const maxBatchSegs = 128

// enqueue appends a frame to the writer's queue and returns it for the
// caller to fill. ia.mu is held.
func (c *conn) enqueue(f *frame, segs [][]byte) *txItem {
	t := c.tx.PushBack()
	encodeFrame(t.hdr[:], f)
	t.segs = append(t.segs[:0], segs...)
	t.readResp = f.Type == frReadResp
	c.wake()
	return t
}

// writeLoop is the connection's writer: it sends queued frames in order,
// several per writev, straight from their memory, with an ACK if one is
// owed, whenever no other goroutine is writing directly (flush); it
// finishes what a direct write left unwritten; it ends the connection's
// sending side when the connection closes.
func (c *conn) writeLoop() {
	mu := &c.ia.mu
	mu.Lock()
	for {
		for c.wbusy || (!c.directRest && c.tx.Len() == 0 && !c.ackDue() && !c.closing) ||
			(c.directRest && c.isQuiet() && !c.closing) {
			// (The rest of a direct write on a quiet connection is
			// its pollers' to finish: pollTx.)
			c.cond.Wait()
		}
		if c.directRest {
			// The rest of a direct write: always finished, even when
			// closing, so that the stream stays whole.
			c.directRest, c.wbusy, c.wblock = false, true, true
			c.txPend.Store(false)
			mu.Unlock()
			err := c.writeVec()
			mu.Lock()
			c.wbusy, c.wblock = false, false
			if err != nil && !c.closing {
				c.ep.lost(c)
			}
			continue
		}
		if c.closing && c.discardQueued {
			for c.tx.Len() > 0 {
				t := c.tx.Front()
				if t.readResp && c.respCut == 0 {
					c.respCut = binary.BigEndian.Uint64(t.hdr[8:])
				}
				clear(t.segs)
				c.tx.PopFront()
			}
		}
		if c.closing && c.tx.Len() == 0 {
			sendDisconnect, fullClose := c.sendDisconnect, c.fullClose
			c.sendDisconnect = false
			n := 0
			if sendDisconnect {
				n = c.lastFrames()
			}
			mu.Unlock()
			if n > 0 {
				_, _ = c.nc.Write(c.wlast[:n])
			}
			mu.Lock()
			fullClose = fullClose || c.fullClose
			c.wexited = true
			mu.Unlock()
			if fullClose {
				_ = c.nc.Close()
			} else if hc, ok := c.nc.(interface{ CloseWrite() error }); ok {
				_ = hc.CloseWrite()
			} else {
				_ = c.nc.Close()
			}
			close(c.wdone)
			return
		}
		c.wbusy, c.wblock = true, true
		quick := c.batch()
		// The batch refers to wstage and to the DTOs' memory only: the
		// ring's slots may be reused while it is written.
		mu.Unlock()
		err := c.writeVec()
		if quick {
			c.quickAck()
		}
		mu.Lock()
		c.wbusy, c.wblock = false, false
		if err != nil && !c.closing {
			c.ep.lost(c)
		}
	}
}

// lastFrames encodes into wlast what a disconnecting side writes last and
// returns its length: the ACK it owes, if any, then DISCONNECT. Without the
// ACK the peer would flush, on DISCONNECT, requests whose data this side
// has placed and whose receives it may already have completed. The ACK
// covers no READ_REQ whose READ_RESP was discarded (respCut): the peer
// flushes that read and what follows it. ia.mu is held.
func (c *conn) lastFrames() int {
	n := 0
	placed := c.placed
	if c.respCut != 0 {
		placed = min(placed, c.respCut-1)
	}
	if placed > c.ackSent {
		c.ackSent, c.credSent = placed, c.recvPosted
		encodeFrame(c.wlast[:], &frame{Type: frAck, Flags: frFlagAck, Ack: placed, Credits: c.recvPosted})
		n = frameLen
	}
	encodeFrame(c.wlast[n:], &frame{Type: frDisc})
	return n + frameLen
}

// batch moves queued frames into wvec, with the ACK owed, if any, in the
// header of one of them (a receiver applies it once it has processed that
// frame) or, when none fits, as an ACK frame of its own. Headers, and
// payloads of inlineMax bytes or less, are copied into wstage, one after
// the other, so that a batch of small frames is a single buffer (one
// write system call); larger payloads are written from their memory.
// It reports whether a quick ACK is due once the batch is written
// (quickAck). ia.mu is held and the caller set wbusy.
func (c *conn) batch() (quick bool) {
	c.wvec = c.wvec0[:0]
	c.wpos, c.stageSliceIdx = 0, -1
	ack := c.ackDue() && !c.closing
	// Where the ACK goes: with no READ_RESP queued, as early as it can,
	// so that the peer learns of its completions and credits before the
	// frames that follow (which may prompt it to send): on the first
	// frame when that one is short, else in a frame ahead of it. With a
	// READ_RESP queued, on the last frame, since an ACK must not be
	// applied before the response of a read it covers.
	onFirst := false
	if ack && c.respQueued == 0 {
		if c.tx.Len() > 0 && binary.BigEndian.Uint32(c.tx.Front().hdr[4:]) <= ackRideMax {
			onFirst = true
		} else {
			c.appendAck()
			ack = false
		}
	}
	nsegs := 0
	var h *[frameLen]byte
	for c.tx.Len() > 0 && nsegs < maxBatchSegs {
		t := c.tx.Front()
		n := int(binary.BigEndian.Uint32(t.hdr[4:])) // the payload's length
		inline := n <= inlineMax && !t.readResp
		need := frameLen
		if inline {
			need += n
		}
		if c.wpos+need > len(c.wstage) {
			break // the next batch takes it
		}
		h = c.stageHdr(t.hdr[:])
		if onFirst {
			c.carryAck(h)
			onFirst, ack = false, false
		}
		for _, s := range t.segs {
			switch {
			case inline:
				c.stage(s)
			case len(s) > 0:
				c.wvec = append(c.wvec, s)
				c.stageSliceIdx = -1
			}
		}
		nsegs += 1 + len(t.segs)
		if t.readResp {
			c.respQueued--
		}
		sgl.Drop(t.segs)
		c.tx.PopFront()
	}
	if ack && c.tx.Len() == 0 {
		c.carryAck(h)
	}
	if c.rxBulk >= quickAckBytes {
		c.rxBulk = 0
		return true
	}
	return false
}

// quickAckBytes is how much payload a connection receives between two
// quick ACKs (quickAck).
const quickAckBytes = 256 << 10

// quickAck sets TCP_QUICKACK on the socket, after a write, on a
// connection that receives a stream. Linux takes a socket that sends
// data soon after receiving some for one side of an exchange of
// messages ("pingpong" mode) and delays its TCP acknowledgements, to let
// them ride on its answers. The ACK frames a stream's receiver writes
// make it look so, and the delayed acknowledgements then hold back the
// peer's sending (docs/performance.md). The option leaves that mode until
// the socket next answers soon after receiving, so it is set again after
// a batch whenever quickAckBytes more have come in: one system call per
// 256 KiB received at most, and almost never on an exchange of small
// messages.
func (c *conn) quickAck() {
	if c.rc != nil {
		_ = c.rc.Control(c.qaFn)
	}
}

// quickAckFD is quickAck's setsockopt.
func (c *conn) quickAckFD(fd uintptr) {
	err := unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1)
	if testHookQuickAck != nil {
		testHookQuickAck(err)
	}
}

// testHookQuickAck, set by tests only, sees each TCP_QUICKACK set, with
// its error.
var testHookQuickAck func(error)

// stage copies b into wstage at wpos, for a caller that checked the room,
// and adds it to the batch: as a longer last slice when that one ends
// where b goes.
func (c *conn) stage(b []byte) {
	p := c.wpos
	c.wpos += copy(c.wstage[p:], b)
	if k := len(c.wvec) - 1; k >= 0 && k == c.stageSliceIdx {
		c.wvec[k] = c.wvec[k][:len(c.wvec[k])+len(b)]
	} else if len(b) > 0 {
		c.wvec = append(c.wvec, c.wstage[p:c.wpos])
		c.stageSliceIdx = len(c.wvec) - 1
	}
}

// stageHdr stages the frame header h and returns its copy, which an ACK
// may still be put into.
func (c *conn) stageHdr(h []byte) *[frameLen]byte {
	p := c.wpos
	c.stage(h[:frameLen])
	return (*[frameLen]byte)(c.wstage[p:])
}

// zeroFrame is the blank a header is encoded over in wstage.
var zeroFrame [frameLen]byte

// wstageLen is the size of a batch's staging buffer: room for the headers
// of a full batch (maxBatchSegs) and some small payloads.
const wstageLen = 8 << 10

// inlineMax is the largest payload of a SEND or RDMA WRITE that a batch
// copies next to its header rather than writing it from the DTO's memory.
// For so little data the copy costs less than the extra segment of a
// vectored write. The copy is made
// while the DTO is outstanding, when the consumer may not change that
// memory. Read responses are never copied: their memory is the
// consumer's to write while a peer reads it, which the kernel's gather
// tolerates and a copy in Go would turn into a data race.
const inlineMax = 256

// ackRideMax is the largest payload of a frame whose header carries the
// ACK owed ahead of the rest of a batch: the peer applies an ACK after
// the frame's payload, and a long one would delay its completions.
const ackRideMax = 4 << 10

// credDelay is how long a credit update (when the peer may be out of
// credits) or the ACK of a polled receive waits for a frame to ride on.
const credDelay = 20 * time.Microsecond

// ackOwed is ackAt for an ACK whose wait has not been timed yet.
const ackOwed = 1

// ackPolls is how many polls pass between two looks at the clock while an
// ACK is left to pollers (reading the clock costs more than a poll that
// finds nothing).
const ackPolls = 32

// flush sends what is queued, and the ACK if one is owed and ack is set,
// from the calling goroutine with non-blocking writes, if no other
// goroutine is writing: a post then costs no hand-off to the writer.
// What the socket does not take at once is left to the writer goroutine,
// so flush never waits for the peer. ia.mu is held; flush releases it
// while it writes.
func (c *conn) flush(ack bool) {
	for range 4 {
		work := c.tx.Len() > 0 || (ack && c.ackDue())
		if !work {
			return
		}
		if c.wbusy || c.directRest {
			return // the writer in progress (or due) looks at the queue again
		}
		if c.rc == nil || !c.up || c.closing {
			c.cond.Signal()
			return
		}
		c.wbusy = true
		if !c.writeHeld(c.batch()) {
			return
		}
		if c.closing {
			c.cond.Broadcast()
			return
		}
	}
	if c.tx.Len() > 0 || c.ackDue() {
		c.cond.Signal()
	}
}

// pollTx lets a poller write, without waiting, what a quiet connection
// left to its pollers (txPend): the rest of a direct write (flush) and
// the frames a streaming consumer queued (ep.post), so that a polling
// consumer writes its own stream as it reads it, with no writer
// goroutine to wake and schedule. It returns whether an unwritten rest
// remains.
func (c *conn) pollTx() bool {
	if !c.txPend.Load() {
		return false
	}
	c.markPolled()
	defer c.markPolled() // (a long write counts as polling too)
	mu := &c.ia.mu
	mu.Lock()
	defer mu.Unlock()
	if c.wbusy || !c.up || c.closing {
		return c.directRest
	}
	if !c.isQuiet() {
		// The writer goroutine's again (it clears txPend when it
		// takes a rest; queued frames alone are simply its).
		if !c.directRest {
			c.txPend.Store(false)
		}
		c.cond.Signal()
		return c.directRest
	}
	if c.directRest {
		c.directRest, c.wbusy = false, true
		if !c.writeHeld(false) {
			return c.directRest
		}
	}
	c.txPend.Store(false)
	c.flush(true) // what is queued (behind the rest)
	return c.directRest
}

// writeHeld writes wvec without waiting, for a caller that set wbusy and
// holds ia.mu (released while it writes). What the socket does not take
// is left in wvec (directRest), for the writer goroutine or, on a quiet
// connection, for the pollers (pollTx), which spin anyway and so need no
// wake-up; an error breaks the connection. quick asks for a quick ACK
// after the write (batch says when). true: everything was written.
func (c *conn) writeHeld(quick bool) bool {
	mu := &c.ia.mu
	mu.Unlock()
	if testHookWriting != nil {
		testHookWriting(c)
	}
	done, err := c.writeNB()
	if quick {
		c.quickAck()
	}
	mu.Lock()
	c.wbusy = false
	switch {
	case err != nil:
		c.wvec = c.wvec0[:0]
		c.txPend.Store(false)
		if !c.closing {
			c.ep.lost(c)
		}
		c.cond.Broadcast()
		return false
	case !done:
		c.directRest = true
		c.txPend.Store(true)
		if !c.isQuiet() {
			c.cond.Signal()
		} else {
			c.kickWaiters()
		}
		return false
	}
	return true
}

// testHookWriting, set by tests only, sees each writeHeld with ia.mu
// released, before it writes.
var testHookWriting func(c *conn)

// writeNB writes wvec with one non-blocking writev and drops what was
// written from it; done reports that nothing is left.
func (c *conn) writeNB() (done bool, err error) {
	var n int
	if c.sk != nil {
		n, err = c.sk.WritevNB(c.wvec, &c.wiov, maxWriteNB)
	} else {
		c.wrN, c.wrErr = 0, 0
		if err = c.rc.Control(c.wrFn); err == nil && c.wrErr != 0 { // never waits: no need for the write lock
			err = c.wrErr
		}
		n = c.wrN
	}
	switch err {
	case nil:
	case syscall.EAGAIN, syscall.EINTR:
		n = 0
	default:
		return false, err
	}
	c.wvec = sock.Advance(c.wvec, n)
	if len(c.wvec) == 0 {
		c.wvec = c.wvec0[:0]
		return true, nil
	}
	return false, nil
}

// writevFD is writeNB's non-blocking writev of wvec, maxWriteNB bytes
// at most.
func (c *conn) writevFD(fd uintptr) {
	c.wrN, c.wrErr = sock.WritevNB(fd, c.wvec, &c.wiov, maxWriteNB)
}

// maxWriteNB bounds one non-blocking write. On loopback the kernel takes
// as much as the peer reads meanwhile, so an unbounded writev of a
// stream of large DTOs runs for milliseconds, with the poller away from
// its completions and many megabytes queued in the socket. 2 MiB keeps a
// polling stream fastest (1 MiB does as well, 256 KiB and 4 MiB worse;
// docs/performance.md).
const maxWriteNB = 2 << 20

// writeVec writes wvec with one vectored write.
func (c *conn) writeVec() error {
	var err error
	if c.sk != nil {
		_, err = c.sk.Writev(c.wvec)
	} else {
		c.wbufs = net.Buffers(c.wvec)
		_, err = c.wbufs.WriteTo(c.nc)
	}
	clear(c.wvec)
	c.wvec = c.wvec0[:0]
	return err
}
