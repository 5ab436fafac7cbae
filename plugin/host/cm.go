package host

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
	pb "github.com/godat/godat/plugin/proto"
	"github.com/godat/godat/provider"
)

type proxyPSP struct{ proxyBase }

func (s *proxyPSP) Query() (api.PSPParam, error) {
	return queryTo(s, (*pb.QueryResp).GetPsp, "PSP", func(q *pb.PSPParam) api.PSPParam {
		return api.PSPParam{IA: s.ia, ConnQual: api.ConnQual(q.ConnQual), EVD: proxyOf[api.EVD](s.c, q.Evd), Flags: api.PSPFlags(q.Flags)}
	})
}

func (s *proxyPSP) Free() error { return s.c.free(s) }

type proxyRSP struct{ proxyBase }

func (s *proxyRSP) Query() (api.RSPParam, error) {
	return queryTo(s, (*pb.QueryResp).GetRsp, "RSP", func(q *pb.RSPParam) api.RSPParam {
		return api.RSPParam{IA: s.ia, ConnQual: api.ConnQual(q.ConnQual), EVD: proxyOf[api.EVD](s.c, q.Evd), EP: s.c.epOf(q.Ep, s.ia)}
	})
}

func (s *proxyRSP) Free() error { return s.c.free(s) }

type proxyCR struct{ proxyBase }

func (r *proxyCR) Query() (api.CRParam, error) {
	return queryTo(r, (*pb.QueryResp).GetCr, "CR", func(q *pb.CRParam) api.CRParam {
		return api.CRParam{RemoteAddr: wire.AddrFromPB(q.RemoteAddr), RemotePortQual: api.ConnQual(q.RemotePortQual),
			PrivateData: q.PrivateData, LocalEP: r.c.epOf(q.LocalEp, r.ia)}
	})
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
	return r.release(func() (*pb.Result, error) {
		return r.c.rpc.Reject(bg, &pb.CRReq{Cr: r.id, PrivateData: pd})
	})
}

// Refuse refuses the request as the plugin's provider does
// (provider.CRRefuser): the requester sees NON_PEER_REJECTED, or, from a
// plugin whose provider cannot refuse, PEER_REJECTED.
func (r *proxyCR) Refuse() error {
	return r.release(func() (*pb.Result, error) {
		return r.c.rpc.Reject(bg, &pb.CRReq{Cr: r.id, Refuse: true})
	})
}

var _ provider.CRRefuser = (*proxyCR)(nil)

func (r *proxyCR) Handoff(q api.ConnQual) error {
	return r.release(func() (*pb.Result, error) {
		return r.c.rpc.Handoff(bg, &pb.CRReq{Cr: r.id, ConnQual: uint64(q)})
	})
}

// release makes call, an RPC that ends the CR without an EP of the
// consumer's taking the connection (Reject, Handoff). When it succeeds the
// CR is forgotten, and so is the EP the provider made for it, if any.
func (r *proxyCR) release(call func() (*pb.Result, error)) error {
	if err := r.live(); err != nil {
		return err
	}
	local := r.localMade()
	resp, err := call()
	if err := r.c.done(resp, err); err != nil {
		return err
	}
	r.c.forget(r)
	if local != nil {
		r.c.forget(local)
	}
	return nil
}
