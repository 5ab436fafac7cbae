package minimal

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/completion"
	"github.com/godat/godat/provider/kit/memreg"
	"github.com/godat/godat/provider/kit/sgl"
)

// Data transfer. A request runs while it is posted, under fab's lock: its
// bytes are copied and its completions posted before the post returns.
// A send that finds no receive at the peer waits at the head of the
// request queue, the requests posted after it behind it, until the peer
// posts a receive. Local triplets are checked when the request runs (a
// receive's when a message arrives), through the IA's memreg table; a
// failure completes the request with an error and breaks the connection.

// reqWR is a posted request: a DTO or an RMR bind.
type reqWR struct {
	kind   completion.Kind
	cookie api.Cookie
	flags  api.CompletionFlags
	iov    []api.LMRTriplet
	remote api.RMRTriplet
	local  api.RMRTriplet // a read into an RMR: the local window
	inval  bool           // a send that invalidates the peer's RMR rctx
	rctx   api.RMRContext // ... or a bind's new context
	rmr    *rmr
	bind   *memreg.Binding[*pz, *ep]
}

// recvWR is a posted receive.
type recvWR struct {
	cookie api.Cookie
	flags  api.CompletionFlags
	iov    []api.LMRTriplet
}

func (p *ep) PostSend(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	return p.post(&reqWR{kind: completion.Send, cookie: cookie, flags: flags, iov: iov})
}

func (p *ep) PostSendWithInvalidate(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags, inval bool, rctx api.RMRContext) error {
	return p.post(&reqWR{kind: completion.Send, cookie: cookie, flags: flags, iov: iov, inval: inval, rctx: rctx})
}

func (p *ep) PostRDMAWrite(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	return p.post(&reqWR{kind: completion.Write, cookie: cookie, flags: flags, iov: iov, remote: remote})
}

func (p *ep) PostRDMARead(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	return p.post(&reqWR{kind: completion.Read, cookie: cookie, flags: flags, iov: iov, remote: remote})
}

func (p *ep) PostRDMAReadToRMR(local api.RMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	return p.post(&reqWR{kind: completion.ReadToRMR, cookie: cookie, flags: flags, local: local, remote: remote})
}

func (p *ep) post(w *reqWR) error { defer lock()(); return p.postLocked(w) }

// postLocked runs w, queues it, or flushes it on a DISCONNECTED EP.
func (p *ep) postLocked(w *reqWR) error {
	switch p.State {
	case api.EPConnected:
	case api.EPDisconnected:
		p.complete(w, api.DTOErrFlushed, 0)
		return nil
	default:
		return p.StateErr(w.kind.Posting())
	}
	if p.reqs.Len() == 0 && p.exec(w, false) {
		return nil
	}
	if p.reqs.Len() >= p.Attr.MaxRequestDTOs {
		return api.Errorf(api.InsufficientResources, api.NoSubtype, "the EP's request queue is full")
	}
	s := p.reqs.PushBack()
	iov := append(s.iov[:0], w.iov...)
	*s = *w
	s.iov = iov
	return nil
}

// pump runs queued requests until one waits again, and finishes a
// graceful disconnect once none is left.
func (p *ep) pump() {
	for p.reqs.Len() > 0 && (p.State == api.EPConnected || p.State == api.EPDisconnectPending) {
		if !p.exec(p.reqs.Front(), true) {
			return
		}
	}
	if p.State == api.EPDisconnectPending && p.reqs.Len() == 0 {
		p.endPair(api.ConnectionDisconnectedEvent)
	}
}

// exec runs w and reports whether it ran: false for a send with no
// receive at the peer. A queued w is the queue's front, popped once it runs.
func (p *ep) exec(w *reqWR, queued bool) bool {
	if w.kind == completion.Send && p.peer.recvs.Len() == 0 {
		// A send that would fail locally fails now; a good one waits.
		if _, n, ok := p.ia.mem.Gather(nil, w.iov, p.pz, api.MemPrivLocalRead); ok && n <= uint64(p.Attr.MaxMessageSize) {
			return false
		}
	}
	if queued {
		p.reqs.PopFront()
	}
	switch w.kind {
	case completion.Send:
		p.send(w)
	case completion.Bind:
		p.complete(w, p.ia.mem.FinishBind(&w.rmr.reg, &w.bind, w.rctx, w.rmr.freed), 0)
	default:
		p.rdma(w)
	}
	w.rmr, w.bind = nil, nil // a reused queue slot must not keep them
	return true
}

// send delivers a message into the peer's next receive. A receive that
// cannot take it fails, and the send with it.
func (p *ep) send(w *reqWR) {
	src, n, ok := p.ia.mem.Gather(nil, w.iov, p.pz, api.MemPrivLocalRead)
	if !ok || n > uint64(p.Attr.MaxMessageSize) {
		p.fail(w, localErr(ok))
		return
	}
	q := p.peer
	rw := *q.recvs.Front()
	q.recvs.PopFront()
	dst, room, ok := q.ia.mem.Gather(nil, rw.iov, q.pz, api.MemPrivLocalWrite)
	var target *rmr
	if w.inval {
		target, _ = q.ia.mem.Invalidatable(w.rctx, q.pz, q).(*rmr)
	}
	rst, st := api.DTOSuccess, api.DTOErrRemoteResponder
	switch {
	case !ok:
		rst = api.DTOErrLocalProtection
	case n > room:
		rst = api.DTOErrLocalLength
	case w.inval && target == nil:
		rst, st = api.DTOErrLocalProtection, api.DTOErrRemoteAccess
	}
	if rst != api.DTOSuccess {
		q.completeRecv(&rw, rst, 0, api.OpReceive, 0, true)
		p.fail(w, st)
		return
	}
	sgl.Copy(dst, src)
	op, rctx := api.OpReceive, api.RMRContext(0)
	if w.inval {
		q.ia.mem.Unbind(&target.reg)
		op, rctx = api.OpReceiveWithInvalidate, w.rctx
	}
	q.completeRecv(&rw, api.DTOSuccess, n, op, rctx, w.flags&api.CompletionSolicitedWait != 0)
	p.complete(w, api.DTOSuccess, n)
}

// rdma runs an RDMA write or read: the remote window must be one the
// peer's memreg table grants over this connection.
func (p *ep) rdma(w *reqWR) {
	n, need, local := uint64(w.remote.Length), api.MemPrivRemoteRead, api.MemPrivLocalWrite
	if w.kind == completion.Write {
		need, local = api.MemPrivRemoteWrite, api.MemPrivLocalRead
	}
	var segs [][]byte
	ok := true
	if w.kind == completion.ReadToRMR { // into a window of this IA
		var dst []byte
		dst, ok = p.ia.mem.Remote(w.local, n, api.MemPrivRemoteWrite, p.pz, p)
		segs = [][]byte{dst}
	} else {
		var m uint64
		if segs, m, ok = p.ia.mem.Gather(nil, w.iov, p.pz, local); w.kind == completion.Write {
			n = m
		}
	}
	if !ok || n > uint64(p.Attr.MaxRDMASize) {
		p.fail(w, localErr(ok))
		return
	}
	span, ok := p.peer.ia.mem.Remote(w.remote, n, need, p.peer.pz, p.peer)
	if !ok {
		p.fail(w, api.DTOErrRemoteAccess)
		return
	}
	if w.kind == completion.Write {
		sgl.Gather(span, segs)
	} else {
		sgl.Scatter(segs, span)
	}
	p.complete(w, api.DTOSuccess, n)
}

// localErr is the status of a DTO whose local side fails: a protection
// error if its triplets did not pass (ok false), else a length error.
func localErr(ok bool) api.DTOStatus {
	if !ok {
		return api.DTOErrLocalProtection
	}
	return api.DTOErrLocalLength
}

// fail completes w with st and breaks the connection on both sides.
func (p *ep) fail(w *reqWR, st api.DTOStatus) {
	w.drop(p.ia)
	p.complete(w, st, 0)
	p.endPair(api.ConnectionBrokenEvent)
}

// complete posts w's completion on the request EVD, unless suppressed.
func (p *ep) complete(w *reqWR, st api.DTOStatus, n uint64) {
	var ev api.Event
	if post, notify := completion.Request(&ev, p, w.rmr, w.kind, w.cookie, w.flags, st, n); post {
		p.reqEVD.post(&ev, notify)
	}
}

// PostRecv posts a receive (dat_ep_post_recv(3DAT)), in any state: on a
// DISCONNECTED EP it is flushed at once; otherwise a send waiting at the
// peer runs into it now.
func (p *ep) PostRecv(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	defer lock()()
	if p.State == api.EPDisconnected {
		p.completeRecv(&recvWR{cookie: cookie, flags: flags}, api.DTOErrFlushed, 0, api.OpReceive, 0, false)
		return nil
	}
	if p.recvs.Len() >= p.Attr.MaxRecvDTOs {
		return api.Errorf(api.InsufficientResources, api.NoSubtype, "the EP has MaxRecvDTOs receives posted")
	}
	s := p.recvs.PushBack()
	s.cookie, s.flags, s.iov = cookie, flags, append(s.iov[:0], iov...)
	p.watermarks()
	if q := p.peer; q != nil {
		q.pump()
	}
	return nil
}

func (p *ep) completeRecv(rw *recvWR, st api.DTOStatus, n uint64, op api.DTOOp, rctx api.RMRContext, solicited bool) {
	var ev api.Event
	notify := completion.Receive(&ev, p, rw.cookie, rw.flags, p.Attr.RecvCompletionFlags, st, n, op, rctx, solicited)
	p.recvEVD.post(&ev, notify)
}

// flush completes every outstanding request, then every receive, with
// DTOErrFlushed, in post order.
func (p *ep) flush() {
	for p.reqs.Len() > 0 {
		w := p.reqs.Front()
		p.reqs.PopFront()
		w.drop(p.ia)
		p.complete(w, api.DTOErrFlushed, 0)
		w.rmr = nil
	}
	for p.recvs.Len() > 0 {
		rw := p.recvs.Front()
		p.recvs.PopFront()
		p.completeRecv(rw, api.DTOErrFlushed, 0, api.OpReceive, 0, false)
	}
}
