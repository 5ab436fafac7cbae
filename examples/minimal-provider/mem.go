package minimal

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/completion"
	"github.com/godat/godat/provider/kit/memreg"
)

// CreateLMR makes the kit's LMR (memreg.LMRObject), registered in the
// IA's memreg table; it answers Query and Free itself.
func (i *ia) CreateLMR(z api.PZ, r api.Region, priv api.MemPriv, va api.VAType) (api.LMR, error) {
	return i.lmrs.Create(z, r, priv, va)
}

// rmr is a remote memory region, bound to one EP at a time.
type rmr struct{ memreg.RMRBase[*ia, *pz, *ep] }

func (z *pz) CreateRMR() (api.RMR, error) {
	defer lock()()
	return kit.Put[api.RMR](&z.IA.rmrs, &rmr{memreg.RMRBase[*ia, *pz, *ep]{IA: z.IA, PZ: z}})
}

func (r *rmr) Query() (api.RMRParam, error) {
	defer lock()()
	return r.Param(), nil
}

// Bind binds the RMR to the window t of the LMR for ep's connection, or
// unbinds it for an empty t (dat_rmr_bind(3DAT)). The old context stops
// working at once; the new one works from the bind's completion, which
// is a request on ep's queue like any DTO.
func (r *rmr) Bind(lm api.LMR, t api.LMRTriplet, priv api.MemPriv, va api.VAType, e api.EP, cookie api.Cookie, flags api.CompletionFlags) (api.RMRContext, error) {
	defer lock()()
	p := e.(*ep)
	l, err := r.Target(lm, t, priv, p.PZ) // the guard has checked that lm is live and of this IA
	if err != nil {
		return 0, err
	}
	w := reqWR{Request: completion.Request{Kind: completion.Bind, Cookie: cookie, Flags: flags}, rmr: r}
	switch p.State {
	case api.EPConnected:
	case api.EPDisconnected:
		w.RMRContext = r.IA.mem.FlushedContext(l)
		p.complete(&w, api.DTOErrFlushed, 0)
		return w.RMRContext, nil
	default:
		return 0, p.StateErr("binding an RMR")
	}
	w.bind, w.RMRContext = r.IA.mem.StartBind(&r.Reg, l, t, priv, va, r.PZ, p, r)
	if err := p.postLocked(&w); err != nil {
		w.drop(r.IA)
		return 0, err
	}
	return w.RMRContext, nil
}

// drop releases what a bind that does not run holds: its context and its
// count on the LMR.
func (w *reqWR) drop(i *ia) { i.mem.DropBind(&w.bind, w.RMRContext) }

func (r *rmr) Free() error {
	defer lock()()
	r.IA.mem.Unbind(&r.Reg)
	r.Freed = true
	r.IA.rmrs.Remove(r)
	return nil
}
