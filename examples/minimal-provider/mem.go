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
	return kit.Create[api.RMR](&fabric.Mutex, &z.IA.rmrs, &rmr{memreg.RMRBase[*ia, *pz, *ep]{IA: z.IA, PZ: z, Mem: z.IA.mem, Mu: &fabric.Mutex}})
}

// Bind binds the RMR to the window t of the LMR for ep's connection, or
// unbinds it for an empty t (dat_rmr_bind(3DAT)). The old context stops
// working at once; the new one works from the bind's completion, which
// is a request on ep's queue like any DTO.
func (r *rmr) Bind(lm api.LMR, t api.LMRTriplet, priv api.MemPriv, va api.VAType, e api.EP, cookie api.Cookie, flags api.CompletionFlags) (api.RMRContext, error) {
	defer lock()()
	p := e.(*ep)
	// The kit checks the bind and starts it; it becomes a request on p's
	// queue like any DTO, whose post refuses it when the queue is full.
	return r.RMRBase.Bind(lm, t, priv, va, p, &p.Endpoint, p.PZ, false, r, func(b *memreg.Binding[*pz, *ep], c api.RMRContext) error {
		return p.postLocked(&reqWR{Request: completion.Request{Kind: completion.Bind, Cookie: cookie, Flags: flags, RMRContext: c}, rmr: r, bind: b})
	})
}

// drop releases what a bind that does not run holds: its context and its
// count on the LMR.
func (w *reqWR) drop(i *ia) { i.mem.DropBind(&w.bind, w.RMRContext) }

func (r *rmr) Free() error { return kit.Free(&fabric.Mutex, &r.IA.rmrs, r, nil, r.Release) }
