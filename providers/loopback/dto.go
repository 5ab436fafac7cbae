package loopback

import (
	"fmt"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/completion"
	"github.com/godat/godat/provider/kit/sgl"
	"github.com/godat/godat/provider/kit/srqattr"
)

// Data transfer operations. A request is executed when it is posted,
// under fabric.mu: the bytes are copied and the completions posted before the
// post returns. The only exception is a send that finds no receive at the
// peer (see the package documentation on RNR): it waits at the head of the
// EP's request queue, and the requests posted after it wait behind it, until
// the peer posts a receive.

// reqWR is a posted request: a DTO or an RMR bind.
type reqWR struct {
	completion.Request
	rmr  *rmr     // bind
	bind *binding // bind: what to publish (it holds its LMR's bound count); nil to unbind
}

// The five DTO post calls build their request and run or queue it (post).
// They are valid in CONNECTED; in DISCONNECTED the request is flushed at
// once; otherwise ErrInvalidState. The guard has refused an IOV longer
// than an RDMA write's remote window, or too short for a read's
// (ErrLength). Errors in the data path complete the request with an error
// status and break the connection: an invalid local triplet, a receive too
// small at the peer, or a peer context that does not grant the access over
// the whole range in the peer EP's PZ (and, for an RMR bound to an EP, to
// the peer EP), which is DTOErrRemoteAccess with no byte written. They are
// written here rather than taken from completion.Posts, whose interface
// call and copies cost about a tenth of a 64-byte RDMA write
// (docs/decisions.md, "The provider kit").

// PostSend sends the bytes iov names (dat_ep_post_send(3DAT)).
func (p *ep) PostSend(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	w := reqWR{Request: completion.Request{Kind: completion.Send, Cookie: cookie, Flags: flags, IOV: iov}}
	return p.post(&w)
}

// PostSendWithInvalidate sends like PostSend and, if invalidate is set,
// unbinds the peer's RMR rmr when the message is delivered; the peer's
// receive completes as OpReceiveWithInvalidate carrying rmr
// (dat_ep_post_send_with_invalidate, DAT 2.0).
func (p *ep) PostSendWithInvalidate(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags, invalidate bool, rmr api.RMRContext) error {
	w := reqWR{Request: completion.Request{Kind: completion.Send, Cookie: cookie, Flags: flags, IOV: iov, Invalidate: invalidate, RMRContext: rmr}}
	return p.post(&w)
}

// PostRDMAWrite writes the bytes iov names to the peer's memory at remote
// (dat_ep_post_rdma_write(3DAT)).
func (p *ep) PostRDMAWrite(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	w := reqWR{Request: completion.Request{Kind: completion.Write, Cookie: cookie, Flags: flags, IOV: iov, Remote: remote}}
	return p.post(&w)
}

// PostRDMARead reads remote.Length bytes of the peer's memory into iov
// (dat_ep_post_rdma_read(3DAT)).
func (p *ep) PostRDMARead(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	w := reqWR{Request: completion.Request{Kind: completion.Read, Cookie: cookie, Flags: flags, IOV: iov, Remote: remote}}
	return p.post(&w)
}

// PostRDMAReadToRMR reads remote.Length bytes of the peer's memory into a
// local window (dat_ep_post_rdma_read_to_rmr, DAT 2.0). The local context
// must be one of this IA's, in the EP's PZ, bound to this EP if bound to
// an EP at all, and grant remote write (the response writes it as a peer
// would); otherwise the read completes with DTOErrLocalProtection.
func (p *ep) PostRDMAReadToRMR(local api.RMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	w := reqWR{Request: completion.Request{Kind: completion.ReadToRMR, Cookie: cookie, Flags: flags, Local: local, Remote: remote}}
	return p.post(&w)
}

// post runs the state rules of a request post and executes or queues it.
func (p *ep) post(w *reqWR) error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	return p.postLocked(w)
}

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
	return p.enqueue(w)
}

// enqueue appends a copy of w, IOV included, to the request queue.
func (p *ep) enqueue(w *reqWR) error {
	if p.reqs.Len() >= p.Attr.MaxRequestDTOs {
		return api.Errorf(api.InsufficientResources, api.NoSubtype,
			fmt.Sprintf("%d requests already wait for receives at the peer", p.reqs.Len()))
	}
	s := p.reqs.PushBack()
	iov := append(s.IOV[:0], w.IOV...)
	*s = *w
	s.IOV = iov
	return nil
}

// pump executes queued requests until one blocks again, after the peer
// posted a receive; it completes a graceful disconnect waiting for them.
// fabric.mu is held.
func (p *ep) pump() {
	for p.reqs.Len() > 0 && (p.State == api.EPConnected || p.State == api.EPDisconnectPending) {
		if !p.exec(p.reqs.Front(), true) {
			return
		}
	}
	if p.State == api.EPDisconnectPending && p.reqs.Len() == 0 {
		p.disconnectPair()
	}
}

// exec executes w and reports whether it is done; false means it is a send
// with no receive at the peer and nothing happened. When queued is set, w
// is the front of the request queue and is removed from it once it runs.
// fabric.mu is held; p is CONNECTED or DISCONNECT_PENDING.
func (p *ep) exec(w *reqWR, queued bool) bool {
	if w.Kind == completion.Send {
		if !p.execSend(w, queued) {
			return false
		}
	} else {
		if queued {
			p.reqs.PopFront()
		}
		switch w.Kind {
		case completion.Write:
			p.execRDMA(w, true)
		case completion.Read:
			p.execRDMA(w, false)
		case completion.ReadToRMR:
			p.execReadToRMR(w)
		case completion.Bind:
			p.execBind(w)
		}
	}
	w.rmr, w.bind = nil, nil // a reused queue slot must not keep them alive
	return true
}

func (p *ep) execSend(w *reqWR, queued bool) bool {
	src, n, ok := p.ia.gather(fabric.segA[:0], w.IOV, p.PZ, api.MemPrivLocalRead)
	defer clear(src) // the scratch list must not keep consumer memory alive
	st := api.DTOSuccess
	switch {
	case !ok:
		st = api.DTOErrLocalProtection
	case n > uint64(p.Attr.MaxMessageSize):
		st = api.DTOErrLocalLength
	}
	q := p.peer
	if st == api.DTOSuccess && q.nextRecv() == nil {
		return false // receiver not ready: wait for a receive
	}
	if queued {
		p.reqs.PopFront()
	}
	if st != api.DTOSuccess {
		p.fail(w, st)
		return true
	}
	rw := q.takeRecv()
	dst, room, ok := q.ia.gather(fabric.segB[:0], rw.IOV, srqattr.RecvPZ(q.SRQ, q.PZ), api.MemPrivLocalWrite)
	defer clear(dst)
	switch {
	case !ok:
		q.completeRecv(rw, api.DTOErrLocalProtection, 0, api.OpReceive, 0, true)
		p.fail(w, api.DTOErrRemoteResponder)
	case n > room:
		q.completeRecv(rw, api.DTOErrLocalLength, 0, api.OpReceive, 0, true)
		p.fail(w, api.DTOErrRemoteResponder)
	case w.Invalidate && q.invalidatable(w.RMRContext) == nil:
		q.completeRecv(rw, api.DTOErrLocalProtection, 0, api.OpReceive, 0, true)
		p.fail(w, api.DTOErrRemoteAccess)
	default:
		sgl.Copy(dst, src)
		op, rctx := api.OpReceive, api.RMRContext(0)
		if w.Invalidate {
			q.invalidatable(w.RMRContext).Unbind()
			op, rctx = api.OpReceiveWithInvalidate, w.RMRContext
		}
		// A buffer taken from an SRQ counts against the receiver's
		// watermarks until its completion; a hard one exceeded breaks
		// the connection once the message is complete.
		hard := q.SRQ != nil && q.watermarks(1)
		q.completeRecv(rw, api.DTOSuccess, n, op, rctx, w.Flags&api.CompletionSolicitedWait != 0)
		p.complete(w, api.DTOSuccess, n)
		if hard {
			q.breakConnection()
		}
	}
	return true
}

// execRDMA runs an RDMA write, the bytes w.iov names into the peer's
// window at w.remote, or (write false) an RDMA read, w.remote.Length bytes
// of that window into w.iov. The two differ only in the privileges they
// need and the direction of the copy. fabric.mu is held.
func (p *ep) execRDMA(w *reqWR, write bool) {
	local, remote := api.MemPrivLocalWrite, api.MemPrivRemoteRead
	if write {
		local, remote = api.MemPrivLocalRead, api.MemPrivRemoteWrite
	}
	segs, n, ok := p.ia.gather(fabric.segA[:0], w.IOV, p.PZ, local)
	defer clear(segs)
	if !write {
		n = uint64(w.Remote.Length)
	}
	if !p.localOK(w, ok, n) {
		return
	}
	span, ok := p.peer.remoteSpan(w.Remote, n, remote)
	if !ok {
		p.fail(w, api.DTOErrRemoteAccess)
		return
	}
	if write {
		sgl.Gather(span, segs)
	} else {
		sgl.Scatter(segs, span)
	}
	p.complete(w, api.DTOSuccess, n)
}

func (p *ep) execReadToRMR(w *reqWR) {
	n := uint64(w.Remote.Length)
	dst, ok := p.remoteSpan(w.Local, n, api.MemPrivRemoteWrite) // a window of our own IA
	if !p.localOK(w, ok, n) {
		return
	}
	src, ok := p.peer.remoteSpan(w.Remote, n, api.MemPrivRemoteRead)
	if !ok {
		p.fail(w, api.DTOErrRemoteAccess)
		return
	}
	copy(dst, src)
	p.complete(w, api.DTOSuccess, n)
}

// localOK fails RDMA request w when its local memory was refused (ok
// false) or its n bytes exceed MaxRDMASize, and reports whether w goes on.
// fabric.mu is held.
func (p *ep) localOK(w *reqWR, ok bool, n uint64) bool {
	switch {
	case !ok:
		p.fail(w, api.DTOErrLocalProtection)
	case n > uint64(p.Attr.MaxRDMASize):
		p.fail(w, api.DTOErrLocalLength)
	default:
		return true
	}
	return false
}

// fail completes w with status st and breaks the connection.
func (p *ep) fail(w *reqWR, st api.DTOStatus) {
	if w.Kind == completion.Bind {
		w.dropBind(p.ia)
	}
	p.complete(w, st, 0)
	p.breakConnection()
}

// complete posts the completion of request w to the request EVD: no event
// for a success with CompletionSuppress, no notification for a success
// with CompletionUnsignalled. fabric.mu is held.
func (p *ep) complete(w *reqWR, st api.DTOStatus, n uint64) {
	var ev api.Event
	if post, notify := w.Event(&ev, p, w.rmr, st, n); post {
		p.RequestEVD.Deliver(&ev, notify)
	}
}

// PostRecv posts a receive buffer (dat_ep_post_recv(3DAT)). It is valid in
// every state: in DISCONNECTED the receive is flushed at once; otherwise it
// waits for a message, and a send waiting at the peer is delivered into it
// now. An EP on an SRQ takes no receives of its own (ErrInvalidState); more
// than MaxRecvDTOs outstanding receives is ErrInsufficientResources. The
// triplets are checked when a message arrives.
func (p *ep) PostRecv(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if ok, err := p.recvs.Post(p.State, p.SRQ != nil, p.Attr.MaxRecvDTOs, recvWR{Cookie: cookie, Flags: flags, IOV: iov}, p.flushRecv); !ok {
		return err
	}
	if p.watermarks(p.recvs.Len()) {
		p.breakConnection()
		return nil
	}
	if q := p.peer; q != nil && q.reqs.Len() > 0 {
		q.pump()
	}
	return nil
}

// nextRecv returns the receive the next message to p would use, or nil.
func (p *ep) nextRecv() *recvWR {
	if p.SRQ != nil {
		return p.SRQ.Front()
	}
	return p.recvs.Front()
}

// takeRecv removes and returns the next receive, which must exist. The
// result stays valid until the next receive is posted.
func (p *ep) takeRecv() *recvWR {
	if s := p.SRQ; s != nil {
		return s.Take()
	}
	return p.recvs.Take()
}

// completeRecv posts the completion of a receive to the receive EVD
// (dispatch.EVDObject.DeliverRecv). fabric.mu is held.
func (p *ep) completeRecv(rw *recvWR, st api.DTOStatus, n uint64, op api.DTOOp, rctx api.RMRContext, solicited bool) {
	p.RecvEVD.DeliverRecv(rw, p, p.Attr.RecvCompletionFlags, st, n, op, rctx, solicited)
}

// flushRecv completes a receive flushed by the end of a connection or
// posted to a DISCONNECTED EP. fabric.mu is held.
func (p *ep) flushRecv(rw *recvWR) { p.RecvEVD.FlushRecv(rw, p) }

// flush completes every outstanding request, then every posted receive,
// with DTOErrFlushed, in post order. fabric.mu is held.
func (p *ep) flush() {
	for p.reqs.Len() > 0 {
		w := p.reqs.Front()
		p.reqs.PopFront()
		if w.Kind == completion.Bind {
			w.dropBind(p.ia)
		}
		p.complete(w, api.DTOErrFlushed, 0)
		w.rmr, w.bind = nil, nil
	}
	p.recvs.Flush(p.flushRecv)
}
