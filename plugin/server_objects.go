package plugin

import (
	"context"
	"fmt"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
	pb "github.com/godat/godat/plugin/proto"
)

func (s *server) CreateRMR(_ context.Context, r *pb.Obj) (*pb.CreateResp, error) {
	o, err := s.lookup(r.Id, api.HandlePZ)
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	rmr, err := o.obj.(api.PZ).CreateRMR()
	return s.create(rmr, api.HandleRMR, o.ia, err)
}

// freedByFree are the kinds of object the Free call frees; the IA closes,
// CRs end by accept, reject or handoff, and the CNO is the server's own.
var freedByFree = map[api.HandleType]bool{
	api.HandlePZ: true, api.HandleEVD: true, api.HandleEP: true, api.HandlePSP: true,
	api.HandleRSP: true, api.HandleLMR: true, api.HandleRMR: true, api.HandleSRQ: true,
}

func (s *server) Free(_ context.Context, r *pb.Obj) (*pb.Result, error) {
	o, err := s.getObj(r.Id)
	if err != nil {
		return s.result(err)
	}
	f, ok := o.obj.(interface{ Free() error })
	if !ok || !freedByFree[o.typ] {
		return s.result(api.Errorf(api.InvalidHandle, api.NoSubtype, fmt.Sprintf("a %s cannot be freed this way", o.typ)))
	}
	if err := f.Free(); err != nil {
		return s.result(err)
	}
	if o.typ == api.HandleEVD {
		// Events queued before the free are the consumer's no longer.
		s.detachEVD(o.id)
		s.remove(o)
		return s.result(nil)
	}
	seq := s.drainAll()
	s.remove(o)
	return &pb.Result{Seq: seq}, nil
}

func (s *server) Query(_ context.Context, r *pb.Obj) (*pb.QueryResp, error) {
	o, err := s.getObj(r.Id)
	if err != nil {
		return &pb.QueryResp{Err: wire.ErrToPB(err)}, nil
	}
	resp := &pb.QueryResp{}
	switch x := o.obj.(type) {
	case api.EP:
		var p api.EPParam
		if p, err = x.Query(); err == nil {
			resp.Ep = &pb.EPParam{State: uint32(p.State), LocalAddr: s.addrs.out(p.LocalAddr), LocalPortQual: uint64(p.LocalPortQual),
				RemoteAddr: s.addrs.out(p.RemoteAddr), RemotePortQual: uint64(p.RemotePortQual), Pz: s.idOf(p.PZ, o.ia),
				RecvEvd: s.idOf(p.RecvEVD, o.ia), RequestEvd: s.idOf(p.RequestEVD, o.ia), ConnectEvd: s.idOf(p.ConnectEVD, o.ia),
				Srq: s.idOf(p.SRQ, o.ia), Attr: wire.EPAttrToPB(&p.Attr)}
		}
	case api.LMR:
		var p api.LMRParam
		if p, err = x.Query(); err == nil {
			resp.Lmr = &pb.LMRParam{MemType: uint32(p.MemType), Length: p.Length, Pz: s.idOf(p.PZ, o.ia), Priv: uint32(p.Priv),
				VaType: uint32(p.VAType), LmrContext: uint32(p.LMRContext), RmrContext: uint32(p.RMRContext),
				RegisteredSize: p.RegisteredSize, RegisteredAddress: uint64(p.RegisteredAddress)}
		}
	case api.RMR:
		var p api.RMRParam
		if p, err = x.Query(); err == nil {
			resp.Rmr = &pb.RMRParam{Pz: s.idOf(p.PZ, o.ia), LmrTriplet: wire.LMRTripletToPB(p.LMRTriplet), Priv: uint32(p.Priv),
				RmrContext: uint32(p.RMRContext), Scope: uint32(p.Scope), VaType: uint32(p.VAType)}
		}
	case api.SRQ:
		var p api.SRQParam
		if p, err = x.Query(); err == nil {
			resp.Srq = &pb.SRQParam{State: uint32(p.State), Pz: s.idOf(p.PZ, o.ia), MaxRecvDtos: int64(p.MaxRecvDTOs),
				MaxRecvIov: int64(p.MaxRecvIOV), LowWatermark: int64(p.LowWatermark), AvailableDtoCount: int64(p.AvailableDTOCount),
				OutstandingDtoCount: int64(p.OutstandingDTOCount)}
		}
	case api.PSP:
		var p api.PSPParam
		if p, err = x.Query(); err == nil {
			resp.Psp = &pb.PSPParam{ConnQual: uint64(p.ConnQual), Evd: s.idOf(p.EVD, o.ia), Flags: uint32(p.Flags)}
		}
	case api.RSP:
		var p api.RSPParam
		if p, err = x.Query(); err == nil {
			resp.Rsp = &pb.RSPParam{ConnQual: uint64(p.ConnQual), Evd: s.idOf(p.EVD, o.ia), Ep: s.idOf(p.EP, o.ia)}
		}
	case api.CR:
		var p api.CRParam
		if p, err = x.Query(); err == nil {
			resp.Cr = &pb.CRParam{RemoteAddr: s.addrs.out(p.RemoteAddr), RemotePortQual: uint64(p.RemotePortQual),
				PrivateData: p.PrivateData, LocalEp: s.idOf(p.LocalEP, o.ia)}
		}
	default:
		err = api.Errorf(api.InvalidHandle, api.NoSubtype, fmt.Sprintf("a %s is not queried this way", o.typ))
	}
	resp.Err = wire.ErrToPB(err)
	return resp, nil
}

func (s *server) ResizeEVD(_ context.Context, r *pb.ResizeReq) (*pb.Result, error) {
	return callOn(s, r.Id, api.HandleEVD, func(evd api.EVD) error { return evd.Resize(int(r.N)) })
}

func (s *server) Bind(_ context.Context, r *pb.BindReq) (*pb.BindResp, error) {
	a := args{s: s}
	o, lmr, ep := a.obj(r.Rmr, api.HandleRMR), a.lmr(r.Lmr), a.ep(r.Ep)
	if a.err != nil {
		return &pb.BindResp{Err: wire.ErrToPB(a.err)}, nil
	}
	ctx, err := o.obj.(api.RMR).Bind(lmr, wire.LMRTripletFromPB(r.Triplet), api.MemPriv(r.Priv), api.VAType(r.VaType), ep,
		api.Cookie(r.Cookie), api.CompletionFlags(r.Flags))
	return &pb.BindResp{Err: wire.ErrToPB(err), RmrContext: uint32(ctx), Seq: s.drainAll()}, nil
}

func (s *server) ResizeSRQ(_ context.Context, r *pb.ResizeReq) (*pb.Result, error) {
	return callOn(s, r.Id, api.HandleSRQ, func(srq api.SRQ) error { return srq.Resize(int(r.N)) })
}

func (s *server) SetLW(_ context.Context, r *pb.ResizeReq) (*pb.Result, error) {
	return callOn(s, r.Id, api.HandleSRQ, func(srq api.SRQ) error { return srq.SetLW(int(r.N)) })
}
