package plugin

import (
	"github.com/godat/godat/api"
	pb "github.com/godat/godat/plugin/proto"
)

type proxyPSP struct{ proxyBase }

func (s *proxyPSP) Query() (api.PSPParam, error) {
	r, err := s.c.query(s)
	if err != nil {
		return api.PSPParam{}, err
	}
	q := r.Psp
	if q == nil {
		return api.PSPParam{}, api.Errorf(api.InternalError, api.NoSubtype, "the plugin returned no PSP parameters")
	}
	return api.PSPParam{IA: s.ia, ConnQual: api.ConnQual(q.ConnQual), EVD: s.c.evdOf(q.Evd), Flags: api.PSPFlags(q.Flags)}, nil
}

func (s *proxyPSP) Free() error { return s.c.free(s) }

type proxyRSP struct{ proxyBase }

func (s *proxyRSP) Query() (api.RSPParam, error) {
	r, err := s.c.query(s)
	if err != nil {
		return api.RSPParam{}, err
	}
	q := r.Rsp
	if q == nil {
		return api.RSPParam{}, api.Errorf(api.InternalError, api.NoSubtype, "the plugin returned no RSP parameters")
	}
	return api.RSPParam{IA: s.ia, ConnQual: api.ConnQual(q.ConnQual), EVD: s.c.evdOf(q.Evd), EP: s.c.epOf(q.Ep, s.ia)}, nil
}

func (s *proxyRSP) Free() error { return s.c.free(s) }

type proxyCR struct{ proxyBase }

func (r *proxyCR) Query() (api.CRParam, error) {
	resp, err := r.c.query(r)
	if err != nil {
		return api.CRParam{}, err
	}
	q := resp.Cr
	if q == nil {
		return api.CRParam{}, api.Errorf(api.InternalError, api.NoSubtype, "the plugin returned no CR parameters")
	}
	return api.CRParam{RemoteAddr: addrFromPB(q.RemoteAddr), RemotePortQual: api.ConnQual(q.RemotePortQual),
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
