package minimal

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/completion"
	"github.com/godat/godat/provider/kit/memreg"
)

// lmr is a local memory region: the kit's, registered in the IA's memreg
// table; it answers Query and Free itself.
type lmr = memreg.LMRObject[*pz, *ep]

func (i *ia) CreateLMR(z api.PZ, r api.Region, priv api.MemPriv, va api.VAType) (api.LMR, error) {
	return i.lmrs.Create(z, r, priv, va)
}

// rmr is a remote memory region, bound to one EP at a time.
type rmr struct {
	api.ContextSlot
	ia    *ia
	pz    *pz
	reg   memreg.RMR[*pz, *ep]
	freed bool // a bind still queued then fails
}

func (z *pz) CreateRMR() (api.RMR, error) {
	defer lock()()
	return kit.Put[api.RMR](&z.IA.rmrs, &rmr{ia: z.IA, pz: z})
}
func (r *rmr) HandleType() api.HandleType { return api.HandleRMR }

func (r *rmr) Query() (api.RMRParam, error) {
	defer lock()()
	p := r.reg.Param()
	p.IA, p.PZ = r.ia, r.pz
	return p, nil
}

// Bind binds the RMR to the window t of the LMR for ep's connection, or
// unbinds it for an empty t (dat_rmr_bind(3DAT)). The old context stops
// working at once; the new one works from the bind's completion, which
// is a request on ep's queue like any DTO.
func (r *rmr) Bind(lm api.LMR, t api.LMRTriplet, priv api.MemPriv, va api.VAType, e api.EP, cookie api.Cookie, flags api.CompletionFlags) (api.RMRContext, error) {
	defer lock()()
	p, named := e.(*ep), (*memreg.LMR[*pz])(nil)
	if l, ok := lm.(*lmr); ok && l != nil {
		named = &l.Reg // the guard has checked that it is live and of this IA
	}
	l, err := memreg.BindTarget(named, t, priv, r.pz, p.PZ)
	if err != nil {
		return 0, err
	}
	w := reqWR{Request: completion.Request{Kind: completion.Bind, Cookie: cookie, Flags: flags}, rmr: r}
	switch p.State {
	case api.EPConnected:
	case api.EPDisconnected: // flushed: a new context would never work
		if l != nil {
			w.RMRContext = r.ia.mem.StaleContext()
		}
		p.complete(&w, api.DTOErrFlushed, 0)
		return w.RMRContext, nil
	default:
		return 0, p.StateErr("binding an RMR")
	}
	w.bind, w.RMRContext = r.ia.mem.StartBind(&r.reg, l, t, priv, va, r.pz, p, r)
	if err := p.postLocked(&w); err != nil {
		w.drop(r.ia)
		return 0, err
	}
	return w.RMRContext, nil
}

// drop releases what a bind that does not run holds: its context and its
// count on the LMR.
func (w *reqWR) drop(i *ia) { i.mem.DropBind(&w.bind, w.RMRContext) }

func (r *rmr) Free() error {
	defer lock()()
	r.ia.mem.Unbind(&r.reg)
	r.freed = true
	r.ia.rmrs.Remove(r)
	return nil
}
