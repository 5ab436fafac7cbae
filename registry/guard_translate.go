package registry

import (
	"github.com/godat/godat/api"
)

// guardOf returns the guard of provider object p, or nil.
func (ia *gIA) guardOf(p any) guarded {
	if p == nil {
		return nil
	}
	if g, ok := ia.objs.Load(p); ok {
		return g.(guarded)
	}
	return nil
}

func (ia *gIA) asPZ(p api.PZ) api.PZ {
	if g, ok := ia.guardOf(p).(*gPZ); ok {
		return g
	}
	return nil
}

func (ia *gIA) asEVD(p api.EVD) api.EVD {
	if g, ok := ia.guardOf(p).(*gEVD); ok {
		return g
	}
	return nil
}

func (ia *gIA) asCNO(p api.CNO) api.CNO {
	if g, ok := ia.guardOf(p).(*gCNO); ok {
		return g
	}
	return nil
}

func (ia *gIA) asSRQ(p api.SRQ) api.SRQ {
	if g, ok := ia.guardOf(p).(*gSRQ); ok {
		return g
	}
	return nil
}

func (ia *gIA) asIA(p api.IA) api.IA {
	if p == nil {
		return nil
	}
	return ia
}

func (ia *gIA) asEP(p api.EP) api.EP {
	if g := ia.epOf(p); g != nil {
		return g
	}
	return nil
}

func (ia *gIA) epOf(p api.EP) *gEP {
	if p == nil {
		return nil
	}
	if g, ok := ia.guardOf(p).(*gEP); ok {
		return g
	}
	return ia.adoptEP(p)
}

func (ia *gIA) asRMR(p api.RMR) api.RMR {
	if g, ok := ia.guardOf(p).(*gRMR); ok {
		return g
	}
	return nil
}

func (ia *gIA) asObject(p api.Object) api.Object {
	if g, ok := ia.guardOf(p).(api.Object); ok {
		return g
	}
	return nil
}

// adoptEVD wraps a provider EVD and caches its queue length.
func (ia *gIA) adoptEVD(p api.EVD) *gEVD {
	g := &gEVD{p: p}
	if prm, err := p.Query(); err == nil {
		g.qlen.Store(int64(prm.QLen))
		g.flags = prm.Flags
	}
	ia.register(p, g, api.HandleEVD)
	return g
}

// translate rewrites the provider objects in a dequeued event into guards.
func (ia *gIA) translate(ev *api.Event, evd *gEVD) {
	ev.EVD = evd
	switch ev.Number.Stream() {
	case api.EVDDTO:
		ev.DTO.EP = evd.dtoEP(ev.DTO.EP)
	case api.EVDRMRBind:
		ev.RMRBind.RMR = ia.asRMR(ev.RMRBind.RMR)
	case api.EVDConnection:
		ev.Conn.EP = ia.asEP(ev.Conn.EP)
	case api.EVDAsync:
		ev.Async.Object = ia.asObject(ev.Async.Object)
	case api.EVDCR:
		providerEP := false
		if g, ok := ia.guardOf(ev.CR.PSP).(*gPSP); ok {
			ev.CR.PSP, providerEP = g, g.flags == api.PSPProvider
		} else {
			ev.CR.PSP = nil
		}
		if g, ok := ia.guardOf(ev.CR.RSP).(*gRSP); ok {
			ev.CR.RSP = g
		} else {
			ev.CR.RSP = nil
		}
		ev.CR.CR = ia.adoptCR(ev.CR.CR, providerEP)
	}
}

// adoptCR wraps a CR the provider created for a connection request;
// providerEP says that it arrived on a PSPProvider service point, whose
// EP returns to the provider if the request is rejected or handed off.
func (ia *gIA) adoptCR(p api.CR, providerEP bool) api.CR {
	if p == nil {
		return nil
	}
	if g, ok := ia.guardOf(p).(*gCR); ok {
		return g
	}
	g := &gCR{p: p, providerEP: providerEP}
	g.ia, g.typ, g.id = ia, api.HandleCR, nextHandleID.Add(1)
	if actual, loaded := ia.objs.LoadOrStore(any(p), g); loaded {
		return actual.(*gCR)
	}
	return g
}

// adoptEP wraps an EP the provider created itself (PSPProvider), with the
// same bookkeeping as an EP the consumer created.
func (ia *gIA) adoptEP(p api.EP) *gEP {
	prm, err := p.Query()
	if err != nil {
		return nil
	}
	g := &gEP{p: p}
	g.ia, g.typ, g.id = ia, api.HandleEP, nextHandleID.Add(1)
	g.pz, _ = ia.guardOf(prm.PZ).(*gPZ)
	g.recv, _ = ia.guardOf(prm.RecvEVD).(*gEVD)
	g.req, _ = ia.guardOf(prm.RequestEVD).(*gEVD)
	g.conn, _ = ia.guardOf(prm.ConnectEVD).(*gEVD)
	g.srq, _ = ia.guardOf(prm.SRQ).(*gSRQ)
	g.setLimits(prm.Attr)
	if actual, loaded := ia.objs.LoadOrStore(any(p), g); loaded {
		return actual.(*gEP)
	}
	g.use(1)
	return g
}
