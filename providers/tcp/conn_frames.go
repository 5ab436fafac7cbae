package tcp

import (
	"io"
	"syscall"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/completion"
	"github.com/godat/godat/provider/kit/sgl"
	"github.com/godat/godat/provider/kit/srqattr"
)

// handle processes one frame; false ends the reader. ia.mu is held; it
// is released only while a payload that is not yet buffered is read.
func (c *conn) handle(f *frame, polled bool) bool {
	switch f.Type {
	case frSend, frSendInv, frWrite, frReadResp:
		var dst [][]byte
		var ok bool
		switch f.Type {
		case frWrite:
			dst, ok = c.beginWrite(f)
		case frReadResp:
			dst, ok = c.beginReadResp(f)
		default:
			dst, ok = c.beginSend(f)
		}
		if !ok {
			return false
		}
		c.rxBulk += uint64(f.Len)
		c.rxPayload = payload{active: true, f: *f, all: dst, dst: dst, left: uint64(f.Len)}
		return c.continuePayload(polled)
	case frReadReq:
		return c.onReadReq(f)
	case frAck:
		return c.onAck(f)
	case frNak:
		return c.onNak(f)
	case frDisc:
		return c.onDisc()
	}
	if !c.closing {
		c.ep.lost(c)
	}
	return false
}

// payload is the frame whose payload is being read: where the rest of it
// goes. It belongs to the holder of the receive token; a poller may leave
// it unfinished (active) for the next holder.
type payload struct {
	active bool
	f      frame
	all    [][]byte // the destination segments, cleared at the end
	dst    [][]byte // what is left of them
	left   uint64
}

// continuePayload reads the rest of the current payload, to the end (the
// reader) or as far as the socket has it now (a poller: the payload may
// stay active), then completes the frame. false ends the connection's
// reading. ia.mu is held; it is released while the socket is read, not
// while a payload already in the read-ahead buffer is copied (the common
// small message then costs one lock hold from header to completion).
func (c *conn) continuePayload(polled bool) bool {
	mu := &c.ia.mu
	var err error
	switch {
	case c.rxPayload.left <= uint64(c.rbEnd-c.rbStart):
		_, err = c.fillNB() // all buffered: no system call
	case polled:
		var done bool
		mu.Unlock()
		done, err = c.fillNB()
		mu.Lock()
		if err == nil && !done {
			return true
		}
	default:
		mu.Unlock()
		err = c.readInto(c.rxPayload.dst, c.rxPayload.left)
		mu.Lock()
	}
	f := c.rxPayload.f
	sgl.Drop(c.rxPayload.all)
	c.rxPayload = payload{}
	switch f.Type {
	case frWrite:
		return c.endWrite(&f, err)
	case frReadResp:
		return c.endReadResp(&f, err)
	}
	return c.endSend(&f, err, polled)
}

// fillNB reads what it can of the current payload without waiting:
// buffered bytes, then straight from the socket into the destination.
func (c *conn) fillNB() (done bool, err error) {
	for c.rxPayload.left > 0 {
		if len(c.rxPayload.dst) == 0 {
			return false, errBadFrame
		}
		s := c.rxPayload.dst[0]
		if len(s) == 0 {
			c.rxPayload.dst = c.rxPayload.dst[1:]
			continue
		}
		s = s[:min(uint64(len(s)), c.rxPayload.left)]
		var m int
		if c.rbStart < c.rbEnd {
			m = copy(s, c.rb[c.rbStart:c.rbEnd])
			c.rbStart += m
		} else {
			k, e := c.readNB(s)
			switch {
			case e == syscall.EAGAIN || e == syscall.EINTR:
				return false, nil
			case e != nil:
				return false, e
			case k == 0:
				return false, io.EOF
			}
			m = k
		}
		c.rxPayload.left -= uint64(m)
		c.rxPayload.dst[0] = c.rxPayload.dst[0][m:]
	}
	return true, nil
}

// admit reports whether request frame f is to be processed: the
// connection is not closing and f carries the next sequence number, which
// it takes. A frame out of sequence breaks the connection. ia.mu is held.
func (c *conn) admit(f *frame) bool {
	if c.closing {
		return false
	}
	if f.Seq != c.rxSeq+1 {
		c.ep.lost(c)
		return false
	}
	c.rxSeq = f.Seq
	return true
}

// refuse answers request seq with a NAK of status st and breaks the
// connection; the NAK is written after the frames already queued. ia.mu
// is held.
func (c *conn) refuse(seq uint64, st api.DTOStatus) {
	c.enqueue(&frame{Type: frNak, Seq: seq, Status: uint16(st)}, nil)
	c.ep.breakConn(c, false)
}

// beginSend checks a SEND or SEND_INV and takes its receive; it returns
// the memory the message goes to. ia.mu is held.
func (c *conn) beginSend(f *frame) ([][]byte, bool) {
	p := c.ep
	if !c.admit(f) {
		return nil, false
	}
	var rw *recvWR
	if s := p.SRQ; s != nil {
		if s.Len() == 0 && c.ackDue() {
			c.cond.Signal() // the ACK owed must not wait for the SRQ
		}
		for s.Len() == 0 && !c.closing {
			c.ia.srqCond.Wait()
		}
		if c.closing {
			return nil, false
		}
		rw = s.Take()
	} else {
		if p.recvs.Len() == 0 {
			p.lost(c) // the peer sent without a credit
			return nil, false
		}
		rw = p.recvs.Take()
	}
	c.cur.Cookie, c.cur.Flags = rw.Cookie, rw.Flags
	dst, room, ok := p.ia.mem.Gather(c.rsegs[:0], rw.IOV, srqattr.RecvPZ(p.SRQ, p.PZ), api.MemPrivLocalWrite)
	c.rsegs = dst[:0]
	inval := f.Type == frSendInv
	var bad api.DTOStatus
	switch {
	case !ok:
		bad = api.DTOErrLocalProtection
		p.completeRecv(&c.cur, bad, 0, api.OpReceive, 0, true)
		c.refuse(f.Seq, api.DTOErrRemoteResponder)
	case uint64(f.Len) > room:
		bad = api.DTOErrLocalLength
		p.completeRecv(&c.cur, bad, 0, api.OpReceive, 0, true)
		c.refuse(f.Seq, api.DTOErrRemoteResponder)
	case inval && p.invalidatable(api.RMRContext(f.RKey)) == nil:
		bad = api.DTOErrLocalProtection
		p.completeRecv(&c.cur, bad, 0, api.OpReceive, 0, true)
		c.refuse(f.Seq, api.DTOErrRemoteAccess)
	}
	if bad != api.DTOSuccess {
		clear(dst)
		return nil, false
	}
	c.inRecv = true
	return dst, true
}

// payloadRead says whether the payload the reader was reading arrived
// whole on a connection still in use. A failed read breaks the connection
// unless it is already closing. ia.mu is held.
func (c *conn) payloadRead(err error) bool {
	if err != nil && !c.closing {
		c.ep.lost(c)
	}
	return err == nil && !c.closing
}

// endSend completes the receive of a SEND whose payload was read (err:
// or not); polled says that a poller read it. ia.mu is held.
func (c *conn) endSend(f *frame, err error, polled bool) bool {
	p := c.ep
	inval := f.Type == frSendInv
	if !c.payloadRead(err) || !c.inRecv {
		return false
	}
	c.inRecv = false
	op, rctx := api.OpReceive, api.RMRContext(0)
	if inval {
		if r := p.invalidatable(api.RMRContext(f.RKey)); r != nil {
			r.Unbind()
		}
		op, rctx = api.OpReceiveWithInvalidate, api.RMRContext(f.RKey)
	}
	// A buffer taken from an SRQ counts against the EP's watermarks
	// until its completion; a hard one exceeded breaks the connection
	// once the message is complete.
	hard := p.SRQ != nil && p.watermarks(1)
	p.completeRecv(&c.cur, api.DTOSuccess, uint64(f.Len), op, rctx, f.Flags&frFlagSolicited != 0)
	if hard {
		p.breakConn(c, false)
		return false
	}
	c.placed = f.Seq
	return c.ackIn(f, polled && c.rxWoke)
}

// beginWrite checks a WRITE and returns the memory its data goes to.
// ia.mu is held.
func (c *conn) beginWrite(f *frame) ([][]byte, bool) {
	p := c.ep
	if !c.admit(f) {
		return nil, false
	}
	rt := api.RMRTriplet{Addr: api.VAddr(f.Addr), Length: f.Len, RMRContext: api.RMRContext(f.RKey)}
	dst, ok := p.ia.mem.Remote(rt, uint64(f.Len), api.MemPrivRemoteWrite, p.PZ, p)
	if !ok {
		c.refuse(f.Seq, api.DTOErrRemoteAccess)
		return nil, false
	}
	if f.Len == 0 {
		return nil, true
	}
	c.rsegs = append(c.rsegs[:0], dst)
	return c.rsegs, true
}

// endWrite acknowledges a WRITE whose data was read (err: or not).
// ia.mu is held.
func (c *conn) endWrite(f *frame, err error) bool {
	if !c.payloadRead(err) {
		return false
	}
	c.placed = f.Seq
	c.rxWrite = true
	return c.ackIn(f, false)
}

// onReadReq checks a READ_REQ and queues its response. ia.mu is held.
func (c *conn) onReadReq(f *frame) bool {
	p := c.ep
	if !c.admit(f) {
		return false
	}
	if c.respQueued >= c.readsIn {
		p.lost(c) // the peer has more reads outstanding than it may
		return false
	}
	rt := api.RMRTriplet{Addr: api.VAddr(f.Addr), Length: f.RLen, RMRContext: api.RMRContext(f.RKey)}
	src, ok := p.ia.mem.Remote(rt, uint64(f.RLen), api.MemPrivRemoteRead, p.PZ, p)
	if !ok {
		c.refuse(f.Seq, api.DTOErrRemoteAccess)
		return false
	}
	c.rsegs = append(c.rsegs[:0], src)
	c.enqueue(&frame{Type: frReadResp, Seq: f.Seq, Len: f.RLen}, c.rsegs)
	clear(c.rsegs)
	c.respQueued++
	c.placed = f.Seq
	return c.ackIn(f, false)
}

// beginReadResp checks a READ_RESP and returns the memory of its read.
// ia.mu is held.
func (c *conn) beginReadResp(f *frame) ([][]byte, bool) {
	p := c.ep
	if c.closing {
		return nil, false
	}
	if f.Seq == 0 || !p.acknowledge(c, f.Seq-1) {
		p.lost(c)
		return nil, false
	}
	w := p.reqs.Front()
	if w == nil || !w.sent || w.seq != f.Seq || (w.Kind != completion.Read && w.Kind != completion.ReadToRMR) || f.Len != w.Remote.Length {
		p.lost(c)
		return nil, false
	}
	c.rsegs = append(c.rsegs[:0], w.segs...)
	return c.rsegs, true
}

// endReadResp completes the read whose response was read (err: or not).
// ia.mu is held.
func (c *conn) endReadResp(f *frame, err error) bool {
	if !c.payloadRead(err) {
		return false
	}
	p := c.ep
	w := p.reqs.Front()
	w.done = true
	c.inFlight--
	c.acked = f.Seq
	if f.Flags&frFlagAck != 0 {
		return c.ackIn(f, false) // (which reaps and pumps)
	}
	p.reap()
	p.pump()
	return true
}

// onAck applies an ACK frame. ia.mu is held.
func (c *conn) onAck(f *frame) bool {
	if c.closing {
		return false
	}
	return c.ackIn(f, false)
}

// ackIn applies the acknowledgement a processed frame carries, if any:
// requests it covers complete, sends its credits allow go out. A credit
// count that goes down or an ACK the stream does not allow breaks the
// connection (false). ia.mu is held.
//
// late says that the frame was a message a polling consumer is about to
// see. On a quiet connection with no request waiting to start, the
// requests the ACK covers are then marked finished but completed later
// (reapLate): after the consumer's next post has written its frame, or
// at its next poll or wait, or at the reader's quiet check. The
// consumer's answer to the message leaves first, and the completions,
// which it rarely needs before answering, cost its critical path
// nothing. Every path that counts or flushes the requests completes
// them first.
func (c *conn) ackIn(f *frame, late bool) bool {
	if f.Flags&frFlagAck == 0 {
		return true
	}
	p := c.ep
	if f.Credits < c.credits {
		p.lost(c)
		return false
	}
	if late && p.State == api.EPConnected && c.nextTx == p.reqs.Len() && c.isQuiet() {
		// Nothing waits to start: only completions are due, and they
		// can wait for the consumer's answer (reapLate).
		if !p.ackMark(c, f.Ack) {
			p.lost(c)
			return false
		}
		c.credits = f.Credits
		if !c.reapLate.Load() {
			c.reapLate.Store(true)
		}
		if testHookReapLate != nil {
			testHookReapLate(c)
		}
		return true
	}
	if !p.acknowledge(c, f.Ack) {
		p.lost(c)
		return false
	}
	c.credits = f.Credits
	p.pump()
	return true
}

// testHookReapLate, set by tests only, sees each ACK whose completions
// are left late, with its connection.
var testHookReapLate func(*conn)

// settleReap completes the requests a late ACK finished (see ackIn).
// ia.mu is held.
func (c *conn) settleReap() {
	if c.reapLate.Load() {
		c.reapLate.Store(false) // (reap clears it too, on the EP's connection)
		c.ep.reap()
	}
}

// settleOwed is settleReap for a caller without ia.mu.
func (c *conn) settleOwed() {
	if c.reapLate.Load() {
		c.ia.mu.Lock()
		c.settleReap()
		c.ia.mu.Unlock()
	}
}

// onNak fails the request a NAK names and breaks the connection. ia.mu
// is held.
func (c *conn) onNak(f *frame) bool {
	p := c.ep
	if c.closing {
		return false
	}
	if f.Seq == 0 || !p.acknowledge(c, f.Seq-1) {
		p.lost(c)
		return false
	}
	if w := p.reqs.Front(); w != nil && w.sent && w.seq == f.Seq {
		w.failed, w.status = true, api.DTOStatus(f.Status)
	}
	p.breakConn(c, true)
	return false
}

// onDisc handles the peer's DISCONNECT. ia.mu is held.
func (c *conn) onDisc() bool {
	if !c.closing {
		c.ep.peerDisconnected(c)
	}
	return false
}
