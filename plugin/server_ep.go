package plugin

import (
	"context"
	"net"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
	pb "github.com/godat/godat/plugin/proto"
)

func (s *server) ModifyEP(_ context.Context, r *pb.ModifyEPReq) (*pb.Result, error) {
	q := r.Param
	if q == nil {
		q = &pb.EPParam{} // nothing to change: every field zero
	}
	a := args{s: s}
	o := a.obj(r.Ep, api.HandleEP)
	p := api.EPParam{PZ: a.pz(q.Pz), RecvEVD: a.evd(q.RecvEvd), RequestEVD: a.evd(q.RequestEvd), ConnectEVD: a.evd(q.ConnectEvd),
		State: api.EPState(q.State), LocalPortQual: api.ConnQual(q.LocalPortQual), RemotePortQual: api.ConnQual(q.RemotePortQual)}
	if a.err != nil {
		return s.result(a.err)
	}
	if q.LocalAddr != nil {
		p.LocalAddr = s.addrs.in(q.LocalAddr)
	}
	if q.RemoteAddr != nil {
		p.RemoteAddr = s.addrs.in(q.RemoteAddr)
	}
	if attr := wire.EPAttrFromPB(q.Attr); attr != nil {
		p.Attr = *attr
	}
	return s.result(o.obj.(api.EP).Modify(api.EPParamMask(r.Mask), &p))
}

func (s *server) EPStatus(_ context.Context, r *pb.Obj) (*pb.EPStatusResp, error) {
	o, err := s.lookup(r.Id, api.HandleEP)
	if err != nil {
		return &pb.EPStatusResp{Err: wire.ErrToPB(err)}, nil
	}
	st, ri, qi, err := o.obj.(api.EP).GetStatus()
	return &pb.EPStatusResp{Err: wire.ErrToPB(err), State: uint32(st), RecvIdle: ri, RequestIdle: qi, Seq: s.drainAll()}, nil
}

func (s *server) Connect(_ context.Context, r *pb.ConnectReq) (*pb.Result, error) {
	a := args{s: s}
	o := a.obj(r.Ep, api.HandleEP)
	var dup *servedObj
	if r.Dup != 0 {
		dup = a.obj(r.Dup, api.HandleEP)
	}
	if a.err != nil {
		return s.result(a.err)
	}
	ep := o.obj.(api.EP)
	if dup != nil {
		return s.result(ep.DupConnect(dup.obj.(api.EP), api.Timeout(r.TimeoutNs), r.PrivateData, api.QOS(r.Qos)))
	}
	var remote net.Addr
	if r.Remote != nil {
		remote = s.addrs.in(r.Remote)
	}
	return s.result(ep.Connect(remote, api.ConnQual(r.ConnQual), api.Timeout(r.TimeoutNs), r.PrivateData, api.QOS(r.Qos), api.ConnectFlags(r.Flags)))
}

func (s *server) Disconnect(_ context.Context, r *pb.CloseReq) (*pb.Result, error) {
	return callOn(s, r.Id, api.HandleEP, func(ep api.EP) error { return ep.Disconnect(api.CloseFlags(r.Flags)) })
}

func (s *server) ResetEP(_ context.Context, r *pb.Obj) (*pb.Result, error) {
	return callOn(s, r.Id, api.HandleEP, api.EP.Reset)
}

func (s *server) RecvQuery(_ context.Context, r *pb.Obj) (*pb.RecvQueryResp, error) {
	o, err := s.lookup(r.Id, api.HandleEP)
	if err != nil {
		return &pb.RecvQueryResp{Err: wire.ErrToPB(err)}, nil
	}
	n, span, err := o.obj.(api.EP).RecvQuery()
	return &pb.RecvQueryResp{Err: wire.ErrToPB(err), NbufsAllocated: int64(n), BufsAllocSpan: int64(span), Seq: s.drainAll()}, nil
}

func (s *server) SetWatermark(_ context.Context, r *pb.WatermarkReq) (*pb.Result, error) {
	return callOn(s, r.Ep, api.HandleEP, func(ep api.EP) error { return ep.SetWatermark(int(r.Soft), int(r.Hard)) })
}
