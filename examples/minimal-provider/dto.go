package minimal

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/completion"
	"github.com/godat/godat/provider/kit/memreg"
	"github.com/godat/godat/provider/kit/sgl"
)

// Data transfer. A request runs while it is posted, under fabric's lock: its
// bytes are copied and its completions posted before the post returns.
// A send that finds no receive at the peer waits at the head of the
// request queue, the requests posted after it behind it, until the peer
// posts a receive. Local triplets are checked when the request runs (a
// receive's when a message arrives), through the IA's memreg table; a
// failure completes the request with an error and breaks the connection.

// reqWR is a posted request: a DTO or an RMR bind.
type reqWR struct {
	completion.Request
	rmr  *rmr
	bind *memreg.Binding[*pz, *ep]
}

// recvWR is a posted receive.
type recvWR = completion.Recv

// PostRequest runs or queues the request a DTO post call built; the kit's
// completion.Posts, which ep embeds, makes the calls.
func (p *ep) PostRequest(r completion.Request) error {
	defer lock()()
	w := reqWR{Request: r}
	return p.postLocked(&w)
}

// postLocked runs w, queues it, or flushes it on a DISCONNECTED EP.
func (p *ep) postLocked(w *reqWR) error {
	switch p.State {
	case api.EPConnected:
	case api.EPDisconnected:
		p.complete(w, api.DTOErrFlushed, 0)
		return nil
	default:
		return p.StateErr(w.Kind.Posting())
	}
	if p.reqs.Len() == 0 && p.exec(w, false) {
		return nil
	}
	if p.reqs.Len() >= p.Attr.MaxRequestDTOs {
		return api.Errorf(api.InsufficientResources, api.NoSubtype, "the EP's request queue is full")
	}
	s := p.reqs.PushBack()
	iov := append(s.IOV[:0], w.IOV...)
	*s = *w
	s.IOV = iov
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
	if w.Kind == completion.Send && p.peer.recvs.Len() == 0 {
		// A send that would fail locally fails now; a good one waits.
		if _, n, ok := p.ia.mem.Gather(nil, w.IOV, p.PZ, api.MemPrivLocalRead); ok && n <= uint64(p.Attr.MaxMessageSize) {
			return false
		}
	}
	if queued {
		p.reqs.PopFront()
	}
	switch w.Kind {
	case completion.Send:
		p.send(w)
	case completion.Bind:
		p.complete(w, p.ia.mem.FinishBind(&w.rmr.Reg, &w.bind, w.RMRContext, w.rmr.Freed), 0)
	default:
		p.rdma(w)
	}
	w.rmr, w.bind = nil, nil // a reused queue slot must not keep them
	return true
}

// send delivers a message into the peer's next receive. A receive that
// cannot take it fails, and the send with it.
func (p *ep) send(w *reqWR) {
	src, n, ok := p.ia.mem.Gather(nil, w.IOV, p.PZ, api.MemPrivLocalRead)
	if !ok || n > uint64(p.Attr.MaxMessageSize) {
		p.fail(w, localErr(ok))
		return
	}
	q := p.peer
	rw := *q.recvs.Take()
	dst, room, ok := q.ia.mem.Gather(nil, rw.IOV, q.PZ, api.MemPrivLocalWrite)
	var target *rmr
	if w.Invalidate {
		target, _ = q.ia.mem.Invalidatable(w.RMRContext, q.PZ, q).(*rmr)
	}
	rst, st := api.DTOSuccess, api.DTOErrRemoteResponder
	switch {
	case !ok:
		rst = api.DTOErrLocalProtection
	case n > room:
		rst = api.DTOErrLocalLength
	case w.Invalidate && target == nil:
		rst, st = api.DTOErrLocalProtection, api.DTOErrRemoteAccess
	}
	if rst != api.DTOSuccess {
		q.RecvEVD.DeliverRecv(&rw, q, q.Attr.RecvCompletionFlags, rst, 0, api.OpReceive, 0, true)
		p.fail(w, st)
		return
	}
	sgl.Copy(dst, src)
	op, rctx := api.OpReceive, api.RMRContext(0)
	if w.Invalidate {
		q.ia.mem.Unbind(&target.Reg)
		op, rctx = api.OpReceiveWithInvalidate, w.RMRContext
	}
	q.RecvEVD.DeliverRecv(&rw, q, q.Attr.RecvCompletionFlags, api.DTOSuccess, n, op, rctx, w.Flags&api.CompletionSolicitedWait != 0)
	p.complete(w, api.DTOSuccess, n)
}

// rdma runs an RDMA write or read: the remote window must be one the
// peer's memreg table grants over this connection.
func (p *ep) rdma(w *reqWR) {
	n, need, local := uint64(w.Remote.Length), api.MemPrivRemoteRead, api.MemPrivLocalWrite
	if w.Kind == completion.Write {
		need, local = api.MemPrivRemoteWrite, api.MemPrivLocalRead
	}
	var segs [][]byte
	ok := true
	if w.Kind == completion.ReadToRMR { // into a window of this IA
		var dst []byte
		dst, ok = p.ia.mem.Remote(w.Local, n, api.MemPrivRemoteWrite, p.PZ, p)
		segs = [][]byte{dst}
	} else {
		var m uint64
		if segs, m, ok = p.ia.mem.Gather(nil, w.IOV, p.PZ, local); w.Kind == completion.Write {
			n = m
		}
	}
	if !ok || n > uint64(p.Attr.MaxRDMASize) {
		p.fail(w, localErr(ok))
		return
	}
	span, ok := p.peer.ia.mem.Remote(w.Remote, n, need, p.peer.PZ, p.peer)
	if !ok {
		p.fail(w, api.DTOErrRemoteAccess)
		return
	}
	if w.Kind == completion.Write {
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
	if post, notify := w.Event(&ev, p, w.rmr, st, n); post {
		p.RequestEVD.Deliver(&ev, notify)
	}
}

// PostRecv posts a receive (dat_ep_post_recv(3DAT)), in any state: on a
// DISCONNECTED EP it is flushed at once; otherwise a send waiting at the
// peer runs into it now.
func (p *ep) PostRecv(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	defer lock()()
	if ok, err := p.recvs.Post(p.State, false, p.Attr.MaxRecvDTOs, recvWR{Cookie: cookie, Flags: flags, IOV: iov}, p.flushRecv); !ok {
		return err
	}
	p.watermarks()
	if q := p.peer; q != nil {
		q.pump()
	}
	return nil
}

// flushRecv completes a receive flushed by the end of a connection or
// posted to a DISCONNECTED EP.
func (p *ep) flushRecv(rw *recvWR) { p.RecvEVD.FlushRecv(rw, p) }

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
	p.recvs.Flush(p.flushRecv)
}
