package registry

import (
	"github.com/godat/godat/api"
)

// The guards of connection management: PSPs, RSPs and connection
// requests.

// pspGuard guards a public service point.
type pspGuard struct {
	hdr
	p     api.PSP
	evd   *evdGuard
	flags api.PSPFlags
}

func (g *pspGuard) Query() (api.PSPParam, error) {
	return query(&g.hdr, opPSPQuery, g.p.Query, func(p *api.PSPParam) { p.IA = g.ia.asIA(p.IA); p.EVD = asGuard(g.ia, p.EVD) })
}

func (g *pspGuard) Free() error {
	return free(g, opPSPFree, g.p, api.NoSubtype, g.p.Free, &g.evd.users)
}

// rspGuard guards a reserved service point.
type rspGuard struct {
	hdr
	p   api.RSP
	evd *evdGuard
}

func (g *rspGuard) Query() (api.RSPParam, error) {
	return query(&g.hdr, opRSPQuery, g.p.Query, func(p *api.RSPParam) { p.IA = g.ia.asIA(p.IA); p.EVD = asGuard(g.ia, p.EVD); p.EP = g.ia.asEP(p.EP) })
}

func (g *rspGuard) Free() error {
	return free(g, opRSPFree, g.p, api.NoSubtype, g.p.Free, &g.evd.users)
}

// crGuard guards a connection request. It is retired when the request is
// accepted, rejected or handed off, as dat_cr_accept(3DAT) destroys it.
type crGuard struct {
	hdr
	p          api.CR
	providerEP bool // the CR's local EP was created by the provider for a PSP
}

// dropProviderEP retires the guard of the provider-created local EP of a
// CR that is being rejected or handed off: dat_cr_reject(3DAT) returns that
// EP to the provider, so the consumer's handle dies and stops holding its
// PZ and EVDs in use. ep is the provider's EP, read before the call.
func (g *crGuard) dropProviderEP(ep api.EP) {
	if !g.providerEP || ep == nil {
		return
	}
	if e, ok := g.ia.guardOf(ep).(*epGuard); ok {
		g.ia.retire(ep, e)
		e.use(-1)
	}
}

// localEP returns the provider's local EP of the request, if any.
func (g *crGuard) localEP() api.EP {
	if !g.providerEP {
		return nil
	}
	prm, err := g.p.Query()
	if err != nil {
		return nil
	}
	return prm.LocalEP
}

func (g *crGuard) Query() (api.CRParam, error) {
	return query(&g.hdr, opCRQuery, g.p.Query, func(p *api.CRParam) { p.LocalEP = g.ia.asEP(p.LocalEP) })
}

func (g *crGuard) Accept(ep api.EP, privateData []byte) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opCRAccept, &g.hdr, h.start(opCRAccept), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	gep, err := own[*epGuard](g.ia, ep, true, api.SubHandleEP, "EP")
	if err != nil {
		return err
	}
	if err := g.ia.checkPrivateData(privateData, api.SubArg3); err != nil {
		return err
	}
	var pep api.EP
	if gep != nil {
		pep = gep.p
	}
	return release(g, g.p, api.NoSubtype, func() error { return g.p.Accept(pep, privateData) })
}

func (g *crGuard) Reject(privateData []byte) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opCRReject, &g.hdr, h.start(opCRReject), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	if err := g.ia.checkPrivateData(privateData, api.SubArg2); err != nil {
		return err
	}
	ep := g.localEP()
	err = release(g, g.p, api.NoSubtype, func() error { return g.p.Reject(privateData) })
	if err == nil {
		g.dropProviderEP(ep)
	}
	return err
}

func (g *crGuard) Handoff(q api.ConnQual) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opCRHandoff, &g.hdr, h.start(opCRHandoff), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	ep := g.localEP()
	err = release(g, g.p, api.NoSubtype, func() error { return g.p.Handoff(q) })
	if err == nil {
		g.dropProviderEP(ep)
	}
	return err
}
