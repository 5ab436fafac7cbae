//go:build verbs && cgo

package verbs

/*
#include "shim.h"
*/
import "C"

import (
	"github.com/godat/godat/api"
)

// reqWR is a posted request (send, RDMA) as its completion needs it.
type reqWR struct {
	seq    uint64
	cookie api.Cookie
	op     api.DTOOp
	length uint32
	flags  api.CompletionFlags
	rmr    *rmr // the RMR of a bind, or nil
}

// recvWR is a posted receive.
type recvWR struct {
	seq    uint64
	cookie api.Cookie
	flags  api.CompletionFlags
}

// wcStatus maps a verbs completion status to DAT's.
func wcStatus(s C.enum_ibv_wc_status) api.DTOStatus {
	switch s {
	case C.IBV_WC_SUCCESS:
		return api.DTOSuccess
	case C.IBV_WC_WR_FLUSH_ERR:
		return api.DTOErrFlushed
	case C.IBV_WC_LOC_LEN_ERR:
		return api.DTOErrLocalLength
	case C.IBV_WC_LOC_QP_OP_ERR:
		return api.DTOErrLocalEP
	case C.IBV_WC_LOC_PROT_ERR, C.IBV_WC_LOC_ACCESS_ERR:
		return api.DTOErrLocalProtection
	case C.IBV_WC_BAD_RESP_ERR:
		return api.DTOErrBadResponse
	case C.IBV_WC_REM_ACCESS_ERR:
		return api.DTOErrRemoteAccess
	case C.IBV_WC_REM_INV_REQ_ERR, C.IBV_WC_REM_OP_ERR:
		return api.DTOErrRemoteResponder
	case C.IBV_WC_RNR_RETRY_EXC_ERR:
		return api.DTOErrReceiverNotReady
	case C.IBV_WC_MW_BIND_ERR:
		return api.RMROperationFailed
	}
	return api.DTOErrTransport
}

// complete turns one work completion into the DTO completion events it
// stands for: requests posted before it that were not signalled
// (CompletionSuppress) complete silently, in order. ia.mu is held.
func (i *ia) complete(wc *C.struct_ibv_wc) {
	p := i.qps[uint32(wc.qp_num)]
	if p == nil {
		return // the EP is gone; its completions go with it
	}
	st := wcStatus(wc.status)
	seq := uint64(wc.wr_id)
	var ev api.Event
	ev.Number = api.DTOCompletionEvent
	ev.DTO.EP = p
	ev.DTO.Status = st
	hard := false
	if seq&(recvBit|srqBit) == recvBit|srqBit {
		if p.SRQ == nil {
			return
		}
		cookie, ok := p.SRQ.taken(int(seq &^ (recvBit | srqBit)))
		if !ok {
			return
		}
		ev.DTO.Cookie, ev.DTO.Op = cookie, api.OpReceive
		if st == api.DTOSuccess {
			ev.DTO.Length = uint32(wc.byte_len)
			hard = p.watermarks(1)
		}
		p.RecvEVD.deliver(&ev, p.recvNotifies(st, true))
	} else if seq&recvBit != 0 {
		r := p.recvs.Front()
		for r != nil && r.seq != seq {
			p.recvs.PopFront() // cannot happen: receives are always signalled
			r = p.recvs.Front()
		}
		if r == nil {
			return
		}
		ev.DTO.Cookie, ev.DTO.Op = r.cookie, api.OpReceive
		if st == api.DTOSuccess {
			ev.DTO.Length = uint32(wc.byte_len)
			if wc.wc_flags&withInv != 0 {
				key := uint32(C.gd_wc_invalidated(wc))
				ev.DTO.Op, ev.DTO.RMRContext = api.OpReceiveWithInvalidate, api.RMRContext(key)
				i.invalidated(key)
			}
		}
		notify := p.recvNotifies(st, r.flags&api.CompletionUnsignalled == 0)
		p.recvs.PopFront()
		p.RecvEVD.deliver(&ev, notify)
	} else {
		r := p.reqs.Front()
		for r != nil && r.seq != seq {
			p.reqs.PopFront() // a suppressed request that succeeded
			r = p.reqs.Front()
		}
		if r == nil {
			return
		}
		ev.DTO.Cookie, ev.DTO.Op = r.cookie, r.op
		if st == api.DTOSuccess {
			ev.DTO.Length = r.length
		}
		if r.rmr != nil {
			ev = api.Event{Number: api.RMRBindCompletionEvent, RMRBind: api.RMRBindCompletionData{RMR: r.rmr, Cookie: r.cookie, Status: st}}
		}
		notify := r.flags&api.CompletionUnsignalled == 0
		suppress := r.flags&api.CompletionSuppress != 0 && st == api.DTOSuccess
		p.reqs.PopFront()
		if !suppress {
			p.RequestEVD.deliver(&ev, notify)
		}
		if p.discWait && p.reqs.Len() == 0 {
			// A graceful Disconnect waited for this one.
			p.endDiscWait()
			p.shutdown()
		}
	}
	if hard || st != api.DTOSuccess && st != api.DTOErrFlushed {
		// (hard: a buffer taken from the SRQ went above the hard
		// watermark; the message is complete, the connection breaks.)
		p.broken()
	}
}

// withInv are the completion flags that mark a received send with
// invalidate: IBV_WC_WITH_INV, and the kernel's IB_WC_WITH_INVALIDATE bit
// (1<<2, IBV_WC_IP_CSUM_OK in libibverbs) that rxe passes through
// untranslated. The checksum flag has no meaning on an RC receive.
const withInv = C.IBV_WC_WITH_INV | 1<<2

// recvBit marks the work request ids of receives.
const recvBit = 1 << 63

// fillSGEs copies iov into the EP's C array of SGEs and returns the
// total length.
func (p *ep) fillSGEs(iov []api.LMRTriplet) uint32 {
	var total uint32
	for k, t := range iov {
		s := &p.sges[k]
		s.addr = C.uint64_t(t.Addr)
		s.length = C.uint32_t(t.Length)
		s.lkey = C.uint32_t(t.LMRContext)
		total += t.Length
	}
	return total
}

func sendFlags(f api.CompletionFlags) C.int {
	var v C.int
	if f&api.CompletionSuppress == 0 {
		v |= C.IBV_SEND_SIGNALED
	}
	if f&api.CompletionBarrierFence != 0 {
		v |= C.IBV_SEND_FENCE
	}
	if f&api.CompletionSolicitedWait != 0 {
		v |= C.IBV_SEND_SOLICITED
	}
	return v
}

// recvNotifies says whether the completion of a receive with status st
// notifies, signalled saying whether its flags ask for that. On a CQ armed
// for solicited completions only (cq.solOnly: the receive queues of
// solicited-wait EPs alone use it) a successful one does not: the work
// completion does not say whether the message was solicited, but the
// CQ's notification does, and the watcher raises it once the completions
// are queued (cq.watch). A failed receive notifies as any other. ia.mu is
// held.
func (p *ep) recvNotifies(st api.DTOStatus, signalled bool) bool {
	if !signalled {
		return false
	}
	if e := p.RecvEVD; st == api.DTOSuccess && e != nil && e.cq != nil && e.cq.solOnly.Load() {
		return false
	}
	return true
}

// signal returns the send flags of a request posted with flags. A
// suppressed request is posted without IBV_SEND_SIGNALED, but not more
// than half the request queue in a row: the device frees the send queue
// entries of unsignalled requests, and godat its request slots (complete),
// only when a later request's completion comes, so a consumer that
// suppresses every completion would otherwise find its queue full for
// good. The completion of such a request stays silent (complete). ia.mu
// is held.
func (p *ep) signal(flags api.CompletionFlags) C.int {
	sf := sendFlags(flags)
	if sf&C.IBV_SEND_SIGNALED == 0 {
		p.unsignalled++
		if p.unsignalled < max(1, p.Attr.MaxRequestDTOs/2) {
			return sf
		}
		sf |= C.IBV_SEND_SIGNALED
	}
	p.unsignalled = 0
	return sf
}

// postReq posts a request. inv makes a send a send-with-invalidate of the
// peer's key remote.RMRContext.
func (p *ep) postReq(op api.DTOOp, opcode C.int, inv bool, iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	i := p.ia
	i.mu.Lock()
	if e := p.RequestEVD; p.reqs.Len() >= p.Attr.MaxRequestDTOs && e != nil {
		// Suppressed requests that succeeded hold their slots until a
		// later completion is polled (signal), and a consumer that
		// learns of its writes from memory may never poll: look in the
		// CQ before refusing the post, waiting for a drain already
		// running (its goroutine may be preempted; drain takes ia.mu).
		i.mu.Unlock()
		e.drain(false)
		i.mu.Lock()
	}
	defer i.mu.Unlock()
	if p.qp == nil {
		return errEPGone
	}
	switch p.State {
	case api.EPConnected:
	case api.EPDisconnected:
		// Accepted and flushed at once (dat_ep_post_send(3DAT)); the QP,
		// in its error state, is not asked.
		p.flushNow(p.RequestEVD, op, cookie, flags)
		return nil
	default:
		return api.Errorf(api.InvalidState, p.State.StateSubtype(), "a request may be posted only on a connected EP")
	}
	if p.reqs.Len() >= p.Attr.MaxRequestDTOs {
		return api.Errorf(api.InsufficientResources, api.SubResourceTEP, "the request queue is full")
	}
	need := api.MemPrivLocalRead
	if op == api.OpRDMARead {
		need = api.MemPrivLocalWrite
	}
	byVA, err := i.checkIOV(iov, p.PZ, need)
	if err != nil {
		return err
	}
	n := p.fillSGEs(iov)
	p.reqSeq++
	var sg *C.struct_ibv_sge
	if len(iov) > 0 {
		sg = &p.sges[0]
	}
	sf := p.signal(flags)
	if p.fenceNext {
		sf |= C.IBV_SEND_FENCE
	}
	if op != api.OpRDMARead && n <= p.inline && byVA {
		sf |= C.IBV_SEND_INLINE
	}
	rc := postSend(p.qp, C.uint64_t(p.reqSeq), opcode, sf, sg, C.int(len(iov)), C.uint64_t(remote.Addr), C.uint32_t(remote.RMRContext), inv)
	p.fenceNext = false
	if rc != 0 {
		return api.Errorf(api.InsufficientResources, api.SubResourceTEP, "ibv_post_send: "+errnoText(syscallErrno(rc)))
	}
	w := p.reqs.PushBack()
	*w = reqWR{seq: p.reqSeq, cookie: cookie, op: op, length: n, flags: flags}
	if e := p.RequestEVD; e != nil && e.cq != nil {
		e.cq.markActive()
	}
	return nil
}

// PostSend sends the bytes iov names (dat_ep_post_send(3DAT)).
func (p *ep) PostSend(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	return p.postReq(api.OpSend, C.IBV_WR_SEND, false, iov, cookie, api.RMRTriplet{}, flags)
}

// PostSendWithInvalidate sends and, with invalidate, invalidates the
// peer's window rmr on delivery (dat_ep_post_send_with_invalidate).
func (p *ep) PostSendWithInvalidate(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags, invalidate bool, rmr api.RMRContext) error {
	return p.postReq(api.OpSend, C.IBV_WR_SEND, invalidate, iov, cookie, api.RMRTriplet{RMRContext: rmr}, flags)
}

// PostRDMAWrite writes iov into the peer's window (dat_ep_post_rdma_write(3DAT)).
func (p *ep) PostRDMAWrite(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	return p.postReq(api.OpRDMAWrite, C.IBV_WR_RDMA_WRITE, false, iov, cookie, remote, flags)
}

// PostRDMARead reads the peer's window into iov (dat_ep_post_rdma_read(3DAT)).
func (p *ep) PostRDMARead(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	return p.postReq(api.OpRDMARead, C.IBV_WR_RDMA_READ, false, iov, cookie, remote, flags)
}

// PostRDMAReadToRMR reads the peer's window into a window of one of the
// IA's own RMRs (dat_ep_post_rdma_read_to_rmr). A device cannot use a
// window's key for local access, so the local window is translated to the
// LMR it is bound to; it must grant remote write, as the page requires.
func (p *ep) PostRDMAReadToRMR(local api.RMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	i := p.ia
	i.mu.Lock()
	r := i.rkeys[uint32(local.RMRContext)]
	var t api.LMRTriplet
	ok := r != nil && r.bound && r.lmr != nil && r.priv&api.MemPrivRemoteWrite != 0
	if ok {
		addr := local.Addr
		if r.va == api.VATypeZB {
			addr += r.t.Addr
		}
		ok = addr >= r.t.Addr && uint64(addr-r.t.Addr)+uint64(local.Length) <= uint64(r.t.Length)
		t = api.LMRTriplet{Addr: addr, Length: local.Length, LMRContext: r.lmr.param.LMRContext}
	}
	i.mu.Unlock()
	if !ok {
		return api.Errorf(api.ProtectionViolation, api.NoSubtype, "the local RMR triplet names no window of the IA with remote write that holds it")
	}
	p.iov1[0] = t
	return p.postReq(api.OpRDMARead, C.IBV_WR_RDMA_READ, false, p.iov1[:], cookie, remote, flags)
}

// PostRecv posts a receive buffer (dat_ep_post_recv(3DAT)); allowed
// before the EP is connected, as on RDMA hardware.
func (p *ep) PostRecv(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	i := p.ia
	i.mu.Lock()
	defer i.mu.Unlock()
	if p.qp == nil {
		return errEPGone
	}
	if p.SRQ != nil {
		return api.Errorf(api.InvalidState, api.NoSubtype, "the EP takes its receives from an SRQ; post them there")
	}
	if p.State == api.EPDisconnected {
		p.flushNow(p.RecvEVD, api.OpReceive, cookie, flags)
		return nil
	}
	if p.recvs.Len() >= p.Attr.MaxRecvDTOs {
		return api.Errorf(api.InsufficientResources, api.SubResourceTEP, "the receive queue is full")
	}
	if _, err := i.checkIOV(iov, p.PZ, api.MemPrivLocalWrite); err != nil {
		return err
	}
	if e := p.RecvEVD; e != nil && e.cq != nil && !e.cq.posted.Load() {
		if rc := e.cq.firstPost(); rc != 0 {
			return api.Errorf(api.InsufficientResources, api.SubResourceTEVD, "ibv_req_notify_cq: "+errnoText(syscallErrno(rc)))
		}
	}
	p.fillSGEs(iov)
	p.recvSeq++
	seq := p.recvSeq | recvBit
	var sg *C.struct_ibv_sge
	if len(iov) > 0 {
		sg = &p.sges[0]
	}
	if rc := postRecv(p.qp, nil, C.uint64_t(seq), sg, C.int(len(iov))); rc != 0 {
		return api.Errorf(api.InsufficientResources, api.SubResourceTEP, "ibv_post_recv: "+errnoText(syscallErrno(rc)))
	}
	w := p.recvs.PushBack()
	*w = recvWR{seq: seq, cookie: cookie, flags: flags}
	if p.watermarks(p.recvs.Len()) {
		p.broken()
	}
	return nil
}

// flushNow completes a DTO posted on a DISCONNECTED EP with FLUSHED at
// once. ia.mu is held.
func (p *ep) flushNow(e *evd, op api.DTOOp, cookie api.Cookie, flags api.CompletionFlags) {
	ev := api.Event{Number: api.DTOCompletionEvent, DTO: api.DTOCompletionData{EP: p, Cookie: cookie, Status: api.DTOErrFlushed, Op: op}}
	e.post(&ev, flags&api.CompletionUnsignalled == 0)
}
