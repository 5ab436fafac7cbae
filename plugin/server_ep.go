package plugin

import (
	"context"
	"net"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
	pb "github.com/godat/godat/plugin/proto"
)

func (s *server) ModifyEP(_ context.Context, r *pb.ModifyEPReq) (*pb.Result, error) {
	o, err := s.lookup(r.Ep, api.HandleEP)
	if err != nil {
		return s.result(err)
	}
	var p api.EPParam
	if q := r.Param; q != nil {
		if p.PZ, err = s.pzArg(q.Pz); err != nil {
			return s.result(err)
		}
		for dst, id := range map[*api.EVD]uint64{&p.RecvEVD: q.RecvEvd, &p.RequestEVD: q.RequestEvd, &p.ConnectEVD: q.ConnectEvd} {
			if *dst, err = s.evdArg(id); err != nil {
				return s.result(err)
			}
		}
		p.State, p.LocalPortQual, p.RemotePortQual = api.EPState(q.State), api.ConnQual(q.LocalPortQual), api.ConnQual(q.RemotePortQual)
		if q.LocalAddr != nil {
			p.LocalAddr = s.addrs.in(q.LocalAddr)
		}
		if q.RemoteAddr != nil {
			p.RemoteAddr = s.addrs.in(q.RemoteAddr)
		}
		if a := wire.EPAttrFromPB(q.Attr); a != nil {
			p.Attr = *a
		}
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
	o, err := s.lookup(r.Ep, api.HandleEP)
	if err != nil {
		return s.result(err)
	}
	ep := o.obj.(api.EP)
	if r.Dup != 0 {
		dup, err := s.lookup(r.Dup, api.HandleEP)
		if err != nil {
			return s.result(err)
		}
		return s.result(ep.DupConnect(dup.obj.(api.EP), api.Timeout(r.TimeoutNs), r.PrivateData, api.QOS(r.Qos)))
	}
	var remote net.Addr
	if r.Remote != nil {
		remote = s.addrs.in(r.Remote)
	}
	return s.result(ep.Connect(remote, api.ConnQual(r.ConnQual), api.Timeout(r.TimeoutNs), r.PrivateData, api.QOS(r.Qos), api.ConnectFlags(r.Flags)))
}

func (s *server) Disconnect(_ context.Context, r *pb.CloseReq) (*pb.Result, error) {
	o, err := s.lookup(r.Id, api.HandleEP)
	if err != nil {
		return s.result(err)
	}
	return s.result(o.obj.(api.EP).Disconnect(api.CloseFlags(r.Flags)))
}

func (s *server) ResetEP(_ context.Context, r *pb.Obj) (*pb.Result, error) {
	o, err := s.lookup(r.Id, api.HandleEP)
	if err != nil {
		return s.result(err)
	}
	return s.result(o.obj.(api.EP).Reset())
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
	o, err := s.lookup(r.Ep, api.HandleEP)
	if err != nil {
		return s.result(err)
	}
	return s.result(o.obj.(api.EP).SetWatermark(int(r.Soft), int(r.Hard)))
}
