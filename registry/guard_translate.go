package registry

import (
	"github.com/godat/godat/api"
)

// guardOf returns the guard of provider object p, or nil.
func (ia *iaGuard) guardOf(p any) guarded {
	if p == nil {
		return nil
	}
	if g, ok := ia.objs.Load(p); ok {
		return g.(guarded)
	}
	return nil
}

// asGuard returns the guard of provider object p as the same interface,
// or nil when p is nil or has no guard: parameters and events hand the
// consumer guards, never the provider's own objects. Each api object
// interface has a Query of its own result type, so the one guard type
// that implements T is the guard of T's objects (asGuard of an api.PZ
// finds only a *pzGuard).
func asGuard[T any](ia *iaGuard, p T) T {
	g, _ := ia.guardOf(p).(T)
	return g
}

// asIA returns ia for the provider's IA in a parameter: each guard
// belongs to one IA.
func (ia *iaGuard) asIA(p api.IA) api.IA {
	if p == nil {
		return nil
	}
	return ia
}

// asEP returns the guard of provider EP p, adopting an EP the provider
// made itself; nil if there is none.
func (ia *iaGuard) asEP(p api.EP) api.EP {
	if g := ia.epOf(p); g != nil {
		return g
	}
	return nil
}

func (ia *iaGuard) epOf(p api.EP) *epGuard {
	if p == nil {
		return nil
	}
	if g, ok := ia.guardOf(p).(*epGuard); ok {
		return g
	}
	return ia.adoptEP(p)
}

// adoptEVD wraps a provider EVD and caches its queue length.
func (ia *iaGuard) adoptEVD(p api.EVD) *evdGuard {
	g := &evdGuard{p: p}
	if prm, err := p.Query(); err == nil {
		g.qlen.Store(int64(prm.QLen))
		g.flags = prm.Flags
	}
	ia.register(p, g, api.HandleEVD)
	return g
}

// translate rewrites the provider objects in a dequeued event into guards.
func (ia *iaGuard) translate(ev *api.Event, evd *evdGuard) {
	ev.EVD = evd
	switch ev.Number.Stream() {
	case api.EVDDTO:
		ev.DTO.EP = evd.dtoEP(ev.DTO.EP)
	case api.EVDRMRBind:
		ev.RMRBind.RMR = asGuard(ia, ev.RMRBind.RMR)
	case api.EVDConnection:
		ev.Conn.EP = ia.asEP(ev.Conn.EP)
	case api.EVDAsync:
		ev.Async.Object = asGuard(ia, ev.Async.Object)
	case api.EVDCR:
		providerEP := false
		if g, ok := ia.guardOf(ev.CR.PSP).(*pspGuard); ok {
			ev.CR.PSP, providerEP = g, g.flags == api.PSPProvider
		} else {
			ev.CR.PSP = nil
		}
		ev.CR.RSP = asGuard(ia, ev.CR.RSP)
		ev.CR.CR = ia.adoptCR(ev.CR.CR, providerEP)
	}
}

// adoptCR wraps a CR the provider created for a connection request;
// providerEP says that it arrived on a PSPProvider service point, whose
// EP returns to the provider if the request is rejected or handed off.
func (ia *iaGuard) adoptCR(p api.CR, providerEP bool) api.CR {
	if p == nil {
		return nil
	}
	if g, ok := ia.guardOf(p).(*crGuard); ok {
		return g
	}
	g := &crGuard{p: p, providerEP: providerEP}
	g.ia, g.typ, g.id = ia, api.HandleCR, nextHandleID.Add(1)
	if actual, loaded := ia.objs.LoadOrStore(any(p), g); loaded {
		return actual.(*crGuard)
	}
	return g
}

// adoptEP wraps an EP the provider created itself (PSPProvider), with the
// same bookkeeping as an EP the consumer created.
func (ia *iaGuard) adoptEP(p api.EP) *epGuard {
	prm, err := p.Query()
	if err != nil {
		return nil
	}
	g := &epGuard{p: p}
	g.ia, g.typ, g.id = ia, api.HandleEP, nextHandleID.Add(1)
	g.pz, _ = ia.guardOf(prm.PZ).(*pzGuard)
	g.recv, _ = ia.guardOf(prm.RecvEVD).(*evdGuard)
	g.req, _ = ia.guardOf(prm.RequestEVD).(*evdGuard)
	g.conn, _ = ia.guardOf(prm.ConnectEVD).(*evdGuard)
	g.srq, _ = ia.guardOf(prm.SRQ).(*srqGuard)
	g.setLimits(prm.Attr)
	if actual, loaded := ia.objs.LoadOrStore(any(p), g); loaded {
		return actual.(*epGuard)
	}
	g.use(1)
	return g
}
