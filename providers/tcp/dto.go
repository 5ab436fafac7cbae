package tcp

import (
	"fmt"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/completion"
	"github.com/godat/godat/provider/kit/sgl"
)

// Data transfer. A posted request joins the EP's request queue (ep.reqs)
// and stays there until it completes, so completions come out in post
// order. pump starts the requests in order as far as the credits, the RDMA
// read limit and barrier fences allow: it checks the local triplets, takes
// a sequence number and queues the frame for the writer. Requests complete
// from the front of the queue when the peer acknowledges them (ACK), when
// their read response has been placed, or, for binds, at once.

// reqWR is a posted request: a DTO or an RMR bind.
type reqWR struct {
	completion.Request
	rmr  *rmr
	bind *binding

	seq    uint64   // sequence number once sent
	n      uint64   // bytes transferred
	segs   [][]byte // a read's local memory
	sent   bool     // the frame is queued or written
	done   bool     // complete; waits to reach the front
	failed bool     // completes with status
	status api.DTOStatus
}

// recvWR is a posted receive.
type recvWR = completion.Recv

// PostRequest queues a DTO request that one of the five post calls of
// completion.Posts, which ep embeds, built. They are valid in CONNECTED;
// in DISCONNECTED the request is flushed at once; otherwise
// ErrInvalidState. A send completes once the peer has placed the message
// in a receive (the peer's ACK) or with the peer's error status; it waits
// while the peer has no receive posted (receive credits), and the requests
// posted after it wait behind it. An RDMA write completes once the peer
// has placed its bytes; an RDMA read's response is read from the socket
// straight into its local IOV, and a read into an RMR needs a window of
// this EP's IA that the EP could reach with remote write (otherwise it
// completes with DTOErrLocalProtection). A context the peer refuses
// completes the request with DTOErrRemoteAccess, changes no byte and
// breaks the connection.
func (p *ep) PostRequest(r completion.Request) error {
	w := reqWR{Request: r}
	return p.post(&w)
}

func (p *ep) post(w *reqWR) error {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	c := p.c
	if c == nil {
		return p.postLocked(w)
	}
	defer c.settleReap() // once the frame is written (flush)
	c.deferWake++
	err := p.postLocked(w)
	c.deferWake--
	if c.txSeq-c.acked > 1 && c.tx.Len() > 0 && !c.wbusy {
		// Earlier requests are in flight: the consumer is streaming.
		// What it posts is written in batches, several frames per
		// writev, while it goes on posting: on a quiet connection by
		// its next poll or wait (pollTx), since a writer goroutine
		// would only take a CPU from pollers that spin anyway;
		// elsewhere by the writer goroutine.
		if c.isQuiet() {
			c.txPend.Store(true)
			// Looked at again after txPend is set: a handBack that
			// ended quiet mode meanwhile either sees txPend or is seen
			// here, so the frames are never left to pollers that are
			// gone.
			if c.isQuiet() {
				return err
			}
		}
		c.cond.Signal()
		return err
	}
	c.flush(true)
	return err
}

// postLocked queues w and starts what can start. ia.mu is held.
func (p *ep) postLocked(w *reqWR) error {
	switch p.State {
	case api.EPConnected:
	case api.EPDisconnected:
		p.complete(w, api.DTOErrFlushed)
		return nil
	default:
		return p.StateErr(w.Kind.Posting())
	}
	if p.reqsFull() {
		return api.Errorf(api.InsufficientResources, api.NoSubtype,
			fmt.Sprintf("%d requests are outstanding, the EP's maximum", p.reqs.Len()))
	}
	s := p.reqs.PushBack()
	iov, segs := append(s.IOV[:0], w.IOV...), s.segs[:0]
	*s = *w
	s.IOV, s.segs = iov, segs
	p.pump()
	return nil
}

// reqsFull reports whether the EP has MaxRequestDTOs requests
// outstanding; requests a late ACK finished are completed first, as they
// hold no room. ia.mu is held.
func (p *ep) reqsFull() bool {
	if p.reqs.Len() >= p.Attr.MaxRequestDTOs {
		p.settleLate()
	}
	return p.reqs.Len() >= p.Attr.MaxRequestDTOs
}

// settleLate completes the requests a late ACK on the EP's connection
// finished (conn.settleReap), before their number is counted or
// reported. ia.mu is held.
func (p *ep) settleLate() {
	if c := p.c; c != nil {
		c.settleReap()
	}
}

// pump starts queued requests in order while it may. ia.mu is held.
func (p *ep) pump() {
	c := p.c
	if c == nil || !c.up || c.closing {
		return
	}
	for c.nextTx < p.reqs.Len() {
		w := p.reqs.At(c.nextTx)
		if w.Flags&api.CompletionBarrierFence != 0 && c.inFlight > 0 {
			return
		}
		switch w.Kind {
		case completion.Send:
			if !c.peerSRQ && c.sendsSent >= c.credits {
				return
			}
		case completion.Read, completion.ReadToRMR:
			if c.inFlight >= c.readsOut {
				return
			}
		}
		c.nextTx++
		if st := p.start(c, w); st != api.DTOSuccess {
			w.failed, w.status = true, st
			p.breakConn(c, true)
			return
		}
	}
	if !c.reapLate.Load() {
		p.reap() // (else the one that settles the late ACK does)
	}
}

// start checks w's local memory and queues its frame, or runs a bind. It
// returns the status a failed request completes with. ia.mu is held.
func (p *ep) start(c *conn, w *reqWR) api.DTOStatus {
	i := p.ia
	switch w.Kind {
	case completion.Bind:
		w.done = true
		if st := w.publishBind(i); st != api.DTOSuccess {
			w.failed, w.status = true, st
		}
		return api.DTOSuccess
	case completion.Send, completion.Write:
		src, n, ok := i.mem.Gather(c.txsegs[:0], w.IOV, p.PZ, api.MemPrivLocalRead)
		c.txsegs = src[:0]
		limit, f := c.maxMsg, frame{Type: frSend, Len: uint32(n)}
		if w.Kind == completion.Write {
			limit = c.maxRDMA
			f = frame{Type: frWrite, Len: uint32(n), Addr: uint64(w.Remote.Addr), RKey: uint32(w.Remote.RMRContext)}
		} else if w.Invalidate {
			f.Type, f.RKey = frSendInv, uint32(w.RMRContext)
		}
		switch {
		case !ok:
			sgl.Drop(src)
			return api.DTOErrLocalProtection
		case n > uint64(limit):
			sgl.Drop(src)
			return api.DTOErrLocalLength
		}
		if w.Flags&api.CompletionSolicitedWait != 0 {
			f.Flags = frFlagSolicited
		}
		c.txSeq++
		f.Seq, w.seq, w.n, w.sent = c.txSeq, c.txSeq, n, true
		if w.Kind == completion.Send {
			c.sendsSent++
		}
		c.enqueue(&f, src) // (copies src)
		sgl.Drop(src)
	case completion.Read, completion.ReadToRMR:
		n := uint64(w.Remote.Length)
		if w.Kind == completion.Read {
			dst, _, ok := i.mem.Gather(w.segs[:0], w.IOV, p.PZ, api.MemPrivLocalWrite)
			w.segs = dst
			if !ok {
				return api.DTOErrLocalProtection
			}
			trim(&w.segs, n)
		} else {
			dst, ok := i.mem.Remote(w.Local, n, api.MemPrivRemoteWrite, p.PZ, p)
			if !ok {
				return api.DTOErrLocalProtection
			}
			w.segs = append(w.segs[:0], dst)
		}
		if n > uint64(c.maxRDMA) {
			return api.DTOErrLocalLength
		}
		c.txSeq++
		w.seq, w.n, w.sent = c.txSeq, n, true
		c.inFlight++
		c.enqueue(&frame{Type: frReadReq, Seq: c.txSeq, Addr: uint64(w.Remote.Addr), RKey: uint32(w.Remote.RMRContext), RLen: w.Remote.Length}, nil)
	}
	return api.DTOSuccess
}

// trim shortens segs to n bytes in all.
func trim(segs *[][]byte, n uint64) {
	s := *segs
	for k := range s {
		if uint64(len(s[k])) >= n {
			s[k] = s[k][:n]
			clear(s[k+1:])
			*segs = s[:k+1]
			return
		}
		n -= uint64(len(s[k]))
	}
}

// acknowledge applies a cumulative acknowledgement of every request up to
// seq and completes what reached the front. It reports false for an
// acknowledgement the protocol does not allow (beyond what was sent,
// behind an earlier one, or past a read without its response). ia.mu is
// held.
func (p *ep) acknowledge(c *conn, seq uint64) bool {
	if !p.ackMark(c, seq) {
		return false
	}
	p.reap()
	return true
}

// ackMark is acknowledge without the completions: it marks the requests
// up to seq finished. ia.mu is held.
func (p *ep) ackMark(c *conn, seq uint64) bool {
	if seq > c.txSeq || seq < c.acked {
		return false
	}
	c.acked = seq
	for k := 0; k < c.nextTx; k++ {
		w := p.reqs.At(k)
		if !w.sent || w.done {
			continue
		}
		if w.seq > seq {
			break
		}
		if w.Kind == completion.Read || w.Kind == completion.ReadToRMR {
			return false
		}
		w.done = true
	}
	return true
}

// reap completes the finished requests at the front of the queue; a
// graceful disconnect waiting for them goes ahead once none is left.
// ia.mu is held.
func (p *ep) reap() {
	c := p.c
	if c != nil && c.reapLate.Load() {
		c.reapLate.Store(false)
	}
	for p.reqs.Len() > 0 {
		w := p.reqs.Front()
		if !w.done {
			break
		}
		st := api.DTOSuccess
		if w.failed {
			st = w.status
		}
		p.complete(w, st)
		w.release()
		p.reqs.PopFront()
		if c != nil && c.nextTx > 0 {
			c.nextTx--
		}
	}
	if p.State == api.EPDisconnectPending && p.reqs.Len() == 0 {
		p.disconnectNow()
	}
}

// release drops what a finished request refers to, so that a reused slot
// keeps no memory alive.
func (w *reqWR) release() {
	sgl.Drop(w.segs)
	w.segs = w.segs[:0]
	w.rmr, w.bind = nil, nil
	w.sent, w.done, w.failed = false, false, false
}

// complete posts the completion of request w: no event for a success with
// CompletionSuppress, no notification for a success with
// CompletionUnsignalled. ia.mu is held.
func (p *ep) complete(w *reqWR, st api.DTOStatus) {
	var ev api.Event
	if post, notify := w.Event(&ev, p, w.rmr, st, w.n); post {
		p.RequestEVD.post(&ev, notify)
	}
}

// PostRecv posts a receive buffer (dat_ep_post_recv(3DAT)). It is valid in
// every state: in DISCONNECTED the receive is flushed at once; otherwise it
// waits for a message. Each receive is one credit for the peer's sends.
// An EP on an SRQ takes no receives of its own (ErrInvalidState); more
// than MaxRecvDTOs outstanding is ErrInsufficientResources. The triplets
// are checked when a message arrives.
func (p *ep) PostRecv(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	if ok, err := p.recvs.Post(p.State, p.SRQ != nil, p.Attr.MaxRecvDTOs, recvWR{Cookie: cookie, Flags: flags, IOV: iov}, p.flushRecv); !ok {
		return err
	}
	if p.watermarks(p.heldRecvs()) {
		p.breakConn(p.c, false)
		return nil
	}
	if c := p.c; c != nil && c.up && !c.closing {
		c.recvPosted++
		// The new credit rides on the next frame or ACK this side sends.
		// If the peer has used every credit it knows of, it may be
		// waiting for one: the update goes out by itself after
		// credDelay unless something carries it first.
		if int64(c.credSent)-int64(c.recvPosted)+int64(p.recvs.Len()) <= 0 {
			c.deferAck()
		}
	}
	return nil
}

// completeRecv posts the completion of a receive. A success notifies
// unless posted unsignalled, or the EP is configured for solicited wait
// and the send was not solicited. ia.mu is held.
func (p *ep) completeRecv(rw *recvWR, st api.DTOStatus, n uint64, op api.DTOOp, rctx api.RMRContext, solicited bool) {
	var ev api.Event
	notify := rw.Event(&ev, p, p.Attr.RecvCompletionFlags, st, n, op, rctx, solicited)
	p.RecvEVD.post(&ev, notify)
	if notify && p.c != nil {
		p.c.rxWoke = true
	}
}

// flushRecv completes a receive flushed by the end of a connection or
// posted to a DISCONNECTED EP. ia.mu is held.
func (p *ep) flushRecv(rw *recvWR) {
	p.completeRecv(rw, api.DTOErrFlushed, 0, api.OpReceive, 0, false)
}

// flush completes every outstanding request (with its failure status if it
// has one, else DTOErrFlushed), then the receive being filled, then every
// posted receive, in post order. ia.mu is held.
func (p *ep) flush() {
	p.reap() // requests a late ACK finished completed as successes
	for p.reqs.Len() > 0 {
		w := p.reqs.Front()
		st := api.DTOErrFlushed
		if w.failed {
			st = w.status
		}
		if w.Kind == completion.Bind {
			w.dropBind(p.ia)
		}
		p.complete(w, st)
		w.release()
		p.reqs.PopFront()
	}
	if c := p.c; c != nil {
		c.nextTx = 0
		if c.inRecv {
			c.inRecv = false
			p.flushRecv(&c.cur)
		}
	}
	p.recvs.Flush(p.flushRecv)
}
