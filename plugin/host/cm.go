package host

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
	pb "github.com/godat/godat/plugin/proto"
)

type proxyPSP struct{ proxyBase }

func (s *proxyPSP) Query() (api.PSPParam, error) {
	q, err := queryAs(s, (*pb.QueryResp).GetPsp, "PSP")
	if err != nil {
		return api.PSPParam{}, err
	}
	return api.PSPParam{IA: s.ia, ConnQual: api.ConnQual(q.ConnQual), EVD: proxyOf[api.EVD](s.c, q.Evd), Flags: api.PSPFlags(q.Flags)}, nil
}

func (s *proxyPSP) Free() error { return s.c.free(s) }

type proxyRSP struct{ proxyBase }

func (s *proxyRSP) Query() (api.RSPParam, error) {
	q, err := queryAs(s, (*pb.QueryResp).GetRsp, "RSP")
	if err != nil {
		return api.RSPParam{}, err
	}
	return api.RSPParam{IA: s.ia, ConnQual: api.ConnQual(q.ConnQual), EVD: proxyOf[api.EVD](s.c, q.Evd), EP: s.c.epOf(q.Ep, s.ia)}, nil
}

func (s *proxyRSP) Free() error { return s.c.free(s) }

type proxyCR struct{ proxyBase }

func (r *proxyCR) Query() (api.CRParam, error) {
	q, err := queryAs(r, (*pb.QueryResp).GetCr, "CR")
	if err != nil {
		return api.CRParam{}, err
	}
	return api.CRParam{RemoteAddr: wire.AddrFromPB(q.RemoteAddr), RemotePortQual: api.ConnQual(q.RemotePortQual),
		PrivateData: q.PrivateData, LocalEP: r.c.epOf(q.LocalEp, r.ia)}, nil
}

// localMade returns the proxy of the CR's provider-made local EP, if any.
func (r *proxyCR) localMade() *proxyEP {
	resp, err := r.c.query(r)
	if err != nil || resp.Cr == nil {
		return nil
	}
	if e := r.c.proxyEPOf(resp.Cr.LocalEp, r.ia); e != nil && e.made {
		return e
	}
	return nil
}

// Accept marks the EP that takes the connection as connecting, so that a
// crash before ESTABLISHED still breaks it.
func (r *proxyCR) Accept(ep api.EP, pd []byte) error {
	if err := r.live(); err != nil {
		return err
	}
	he, _ := ep.(*proxyEP)
	if he == nil {
		he = r.localMade()
	}
	resp, err := r.c.rpc.Accept(bg, &pb.CRReq{Cr: r.id, Ep: idOf(ep), PrivateData: pd})
	if err := r.c.done(resp, err); err != nil {
		return err
	}
	r.c.forget(r)
	if he != nil {
		he.setConnecting()
	}
	return nil
}

func (r *proxyCR) Reject(pd []byte) error {
	if err := r.live(); err != nil {
		return err
	}
	local := r.localMade()
	resp, err := r.c.rpc.Reject(bg, &pb.CRReq{Cr: r.id, PrivateData: pd})
	if err := r.c.done(resp, err); err != nil {
		return err
	}
	r.c.forget(r)
	if local != nil {
		r.c.forget(local)
	}
	return nil
}

func (r *proxyCR) Handoff(q api.ConnQual) error {
	if err := r.live(); err != nil {
		return err
	}
	local := r.localMade()
	resp, err := r.c.rpc.Handoff(bg, &pb.CRReq{Cr: r.id, ConnQual: uint64(q)})
	if err := r.c.done(resp, err); err != nil {
		return err
	}
	r.c.forget(r)
	if local != nil {
		r.c.forget(local)
	}
	return nil
}
