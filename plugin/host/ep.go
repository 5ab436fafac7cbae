package host

import (
	"net"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
	pb "github.com/godat/godat/plugin/proto"
)

type proxyEP struct {
	proxyBase
	made bool // the provider created it for a connection request
	t    epTrack
}

func (e *proxyEP) Query() (api.EPParam, error) {
	q, err := queryAs(e, (*pb.QueryResp).GetEp, "EP")
	if err != nil {
		return api.EPParam{}, err
	}
	p := api.EPParam{IA: e.ia, State: api.EPState(q.State), LocalAddr: wire.AddrFromPB(q.LocalAddr), LocalPortQual: api.ConnQual(q.LocalPortQual),
		RemoteAddr: wire.AddrFromPB(q.RemoteAddr), RemotePortQual: api.ConnQual(q.RemotePortQual), PZ: proxyOf[api.PZ](e.c, q.Pz),
		RecvEVD: proxyOf[api.EVD](e.c, q.RecvEvd), RequestEVD: proxyOf[api.EVD](e.c, q.RequestEvd),
		ConnectEVD: proxyOf[api.EVD](e.c, q.ConnectEvd), SRQ: proxyOf[api.SRQ](e.c, q.Srq)}
	if a := wire.EPAttrFromPB(q.Attr); a != nil {
		p.Attr = *a
	}
	e.t.mu.Lock()
	e.t.maxReq, e.t.maxRecv = p.Attr.MaxRequestDTOs, p.Attr.MaxRecvDTOs
	e.t.mu.Unlock()
	return p, nil
}

func (e *proxyEP) Modify(mask api.EPParamMask, p *api.EPParam) error {
	if err := e.live(); err != nil {
		return err
	}
	if p == nil {
		return api.Errorf(api.InvalidParameter, api.SubArg3, "EP parameters are nil")
	}
	q := &pb.EPParam{State: uint32(p.State), LocalAddr: wire.AddrToPB(p.LocalAddr), LocalPortQual: uint64(p.LocalPortQual),
		RemoteAddr: wire.AddrToPB(p.RemoteAddr), RemotePortQual: uint64(p.RemotePortQual), Pz: idOf(p.PZ),
		RecvEvd: idOf(p.RecvEVD), RequestEvd: idOf(p.RequestEVD), ConnectEvd: idOf(p.ConnectEVD), Srq: idOf(p.SRQ),
		Attr: wire.EPAttrToPB(&p.Attr)}
	r, err := e.c.rpc.ModifyEP(bg, &pb.ModifyEPReq{Ep: e.id, Mask: uint64(mask), Param: q})
	if err := e.c.done(r, err); err != nil {
		return err
	}
	e.t.mu.Lock()
	if mask&api.EPFieldRecvEVD != 0 {
		e.t.recvEVD, _ = p.RecvEVD.(*proxyEVD)
	}
	if mask&api.EPFieldRequestEVD != 0 {
		e.t.reqEVD, _ = p.RequestEVD.(*proxyEVD)
	}
	if mask&api.EPFieldConnectEVD != 0 {
		e.t.cnEVD, _ = p.ConnectEVD.(*proxyEVD)
	}
	e.t.mu.Unlock()
	return nil
}

func (e *proxyEP) GetStatus() (api.EPState, bool, bool, error) {
	if err := e.live(); err != nil {
		return 0, false, false, err
	}
	r, err := e.c.rpc.EPStatus(bg, &pb.Obj{Id: e.id})
	if err := e.c.done(r, err); err != nil {
		return 0, false, false, err
	}
	return api.EPState(r.State), r.RecvIdle, r.RequestIdle, nil
}

func (e *proxyEP) Connect(remote net.Addr, q api.ConnQual, timeout api.Timeout, pd []byte, qos api.QOS, flags api.ConnectFlags) error {
	if err := e.live(); err != nil {
		return err
	}
	e.setConnecting()
	r, err := e.c.rpc.Connect(bg, &pb.ConnectReq{Ep: e.id, Remote: wire.AddrToPB(remote), ConnQual: uint64(q), TimeoutNs: int64(timeout),
		PrivateData: pd, Qos: uint32(qos), Flags: uint32(flags)})
	return e.afterConnect(e.c.done(r, err))
}

// afterConnect undoes setConnecting when the call failed; a connection
// that was refused at once also leaves the EP where it was.
func (e *proxyEP) afterConnect(err error) error {
	if err != nil {
		e.t.mu.Lock()
		e.t.inConn = false
		e.t.mu.Unlock()
	}
	return err
}

func (e *proxyEP) DupConnect(dup api.EP, timeout api.Timeout, pd []byte, qos api.QOS) error {
	if err := e.live(); err != nil {
		return err
	}
	d := idOf(dup)
	if d == 0 {
		return badHandle("the duplicate EP")
	}
	e.setConnecting()
	r, err := e.c.rpc.Connect(bg, &pb.ConnectReq{Ep: e.id, Dup: d, TimeoutNs: int64(timeout), PrivateData: pd, Qos: uint32(qos)})
	return e.afterConnect(e.c.done(r, err))
}

func (e *proxyEP) Disconnect(flags api.CloseFlags) error {
	if err := e.live(); err != nil {
		return err
	}
	e.t.mu.Lock()
	e.t.established = false
	e.t.mu.Unlock()
	r, err := e.c.rpc.Disconnect(bg, &pb.CloseReq{Id: e.id, Flags: uint32(flags)})
	return e.c.done(r, err)
}

func (e *proxyEP) Reset() error {
	if err := e.live(); err != nil {
		return err
	}
	e.t.mu.Lock()
	e.t.established = false
	e.t.mu.Unlock()
	r, err := e.c.rpc.ResetEP(bg, &pb.Obj{Id: e.id})
	return e.c.done(r, err)
}

func (e *proxyEP) Free() error { return e.c.free(e) }

// post records the DTO as outstanding and posts it: through the
// submission ring when the EP is connected and surely within its limits
// (the provider then has no reason to refuse it), else by a call that
// returns the provider's answer. A queue full of suppressed requests is
// not surely within its limits: their successes bring no event, so only
// the provider knows whether they are done. If the plugin dies while the post is under way,
// the post counts as accepted: the DTO completes flushed like everything
// else outstanding.
func (e *proxyEP) post(s *wire.Submission, op api.DTOOp) error {
	if err := e.live(); err != nil {
		return err
	}
	t := &e.t
	recv := isRecv(op)
	t.mu.Lock()
	q, limit := &t.reqs, t.maxReq
	if recv {
		q, limit = &t.recvs, t.maxRecv
	}
	suppressed := api.CompletionFlags(s.Flags)&api.CompletionSuppress != 0
	tok, sure := q.add(api.Cookie(s.Cookie), op, nil, suppressed, limit)
	r := e.c.ringsP.Load()
	fast := r != nil && !e.c.postByCall && t.established && len(s.IOV) <= wire.SQMaxIOV && sure && q.r.Len() <= limit
	t.mu.Unlock()
	if fast {
		s.EP = e.id
		_, ok := r.Submit(s, e.c.dead.Load)
		if ok {
			wire.WakeIf(r.U32(wire.OffSQSleeping), e.c.sqBell)
		}
		if e.c.dead.Load() {
			// The plugin may have died before taking it: wait for the
			// crash to be dealt with, then flush what is left.
			<-e.c.crashDone
			e.flush()
			return nil
		}
		if ok {
			return nil
		}
		// The ring stayed full: post by a call instead.
	}
	req := &pb.PostReq{Id: e.id, Op: uint32(op), Iov: wire.LMRTripletsToPB(s.IOV), Cookie: s.Cookie, Flags: s.Flags,
		Remote: wire.RMRTripletToPB(s.Remote)}
	switch s.Kind {
	case wire.SubSendInv:
		req.WithInvalidate, req.Invalidate, req.InvalidateRmr = true, s.Invalidate, uint32(s.InvRMR)
	case wire.SubReadToRMR:
		req.LocalRmr, req.ToRmr, req.Iov = wire.RMRTripletToPB(s.Local), true, nil
	}
	resp, err := e.c.rpc.Post(bg, req)
	if err != nil && e.c.lostDuring(err) {
		e.flush()
		return nil
	}
	if err := e.c.done(resp, err); err != nil {
		t.mu.Lock()
		q.failed(tok)
		t.mu.Unlock()
		return err
	}
	return nil
}

func (e *proxyEP) PostSend(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	s := wire.Submission{Kind: wire.SubSend, Flags: uint32(flags), Cookie: uint64(cookie), IOV: iov}
	return e.post(&s, api.OpSend)
}

func (e *proxyEP) PostSendWithInvalidate(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags, invalidate bool, rmr api.RMRContext) error {
	s := wire.Submission{Kind: wire.SubSendInv, Flags: uint32(flags), Cookie: uint64(cookie), IOV: iov, Invalidate: invalidate, InvRMR: rmr}
	return e.post(&s, api.OpSend)
}

func (e *proxyEP) PostRecv(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	s := wire.Submission{Kind: wire.SubRecv, Flags: uint32(flags), Cookie: uint64(cookie), IOV: iov}
	return e.post(&s, api.OpReceive)
}

func (e *proxyEP) PostRDMAWrite(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	s := wire.Submission{Kind: wire.SubWrite, Flags: uint32(flags), Cookie: uint64(cookie), IOV: iov, Remote: remote}
	return e.post(&s, api.OpRDMAWrite)
}

func (e *proxyEP) PostRDMARead(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	s := wire.Submission{Kind: wire.SubRead, Flags: uint32(flags), Cookie: uint64(cookie), IOV: iov, Remote: remote}
	return e.post(&s, api.OpRDMARead)
}

func (e *proxyEP) PostRDMAReadToRMR(local api.RMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	s := wire.Submission{Kind: wire.SubReadToRMR, Flags: uint32(flags), Cookie: uint64(cookie), Local: local, Remote: remote}
	return e.post(&s, api.OpRDMARead)
}

func (e *proxyEP) RecvQuery() (int, int, error) {
	if err := e.live(); err != nil {
		return 0, 0, err
	}
	r, err := e.c.rpc.RecvQuery(bg, &pb.Obj{Id: e.id})
	if err := e.c.done(r, err); err != nil {
		return 0, 0, err
	}
	return int(r.NbufsAllocated), int(r.BufsAllocSpan), nil
}

func (e *proxyEP) SetWatermark(soft, hard int) error {
	if err := e.live(); err != nil {
		return err
	}
	r, err := e.c.rpc.SetWatermark(bg, &pb.WatermarkReq{Ep: e.id, Soft: int64(soft), Hard: int64(hard)})
	return e.c.done(r, err)
}
