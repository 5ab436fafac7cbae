package tcp

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/completion"
	"github.com/godat/godat/provider/kit/memreg"
)

// binding is what an RMR bind publishes; it holds one count of its LMR's
// bound RMRs.
type binding = memreg.Binding[*pz, *ep]

// CreateLMR registers memory in pz with privileges priv
// (dat_lmr_create(3DAT)); see memreg.LMRs.Create. An LMR is the kit's
// (memreg.LMRObject): a registration in the IA's memory table, which
// answers Query and Free itself.
func (i *ia) CreateLMR(pzArg api.PZ, region api.Region, priv api.MemPriv, va api.VAType) (api.LMR, error) {
	return i.lmrs.Create(pzArg, region, priv, va)
}

// rmr is a Remote Memory Region with EP scope (dat_rmr_create(3DAT)).
type rmr struct{ memreg.RMRBase[*ia, *pz, *ep] }

// CreateRMR creates an unbound RMR in the PZ (dat_rmr_create(3DAT)).
func (z *pz) CreateRMR() (api.RMR, error) {
	z.IA.mu.Lock()
	defer z.IA.mu.Unlock()
	return kit.Put[api.RMR](&z.IA.rmrs, &rmr{memreg.RMRBase[*ia, *pz, *ep]{IA: z.IA, PZ: z}})
}

// Query returns the RMR's parameters (dat_rmr_query(3DAT)); while unbound
// the triplet has zero length.
func (r *rmr) Query() (api.RMRParam, error) {
	r.IA.mu.Lock()
	defer r.IA.mu.Unlock()
	return r.Param(), nil
}

// Bind binds the RMR to the window t of lmr for remote access over ep's
// connection only, and returns the new context, a fresh random value
// (dat_rmr_bind(3DAT)). A zero-length t unbinds. The previous context stops
// working when Bind is called; the bind is a request on ep's queue that
// completes in order with the DTOs around it (RMR_BIND_COMPLETION on the
// request EVD), and the new context works once every request posted
// before it has been sent. Synchronous errors change nothing: another PZ
// (ErrProtectionViolation), t outside lmr or not naming it
// (ErrInvalidParameter), remote read without local read or remote write
// without local write (ErrPrivilegesViolation), ep neither CONNECTED nor
// DISCONNECTED (ErrInvalidState). On a DISCONNECTED EP it is flushed.
func (r *rmr) Bind(lmrArg api.LMR, t api.LMRTriplet, priv api.MemPriv, va api.VAType, epArg api.EP, cookie api.Cookie, flags api.CompletionFlags) (api.RMRContext, error) {
	if err := memreg.CheckPrivVA(priv, va, api.SubArg4, api.SubArg5); err != nil {
		return 0, err
	}
	p := epArg.(*ep)
	r.IA.mu.Lock()
	defer r.IA.mu.Unlock()
	l, err := r.Target(lmrArg, t, priv, p.PZ)
	if err != nil {
		return 0, err
	}
	w := reqWR{Request: completion.Request{Kind: completion.Bind, Cookie: cookie, Flags: flags}, rmr: r}
	switch p.State {
	case api.EPConnected:
		if p.reqsFull() {
			return 0, api.Errorf(api.InsufficientResources, api.NoSubtype, "the EP's request queue is full")
		}
	case api.EPDisconnected:
		w.RMRContext = r.IA.mem.FlushedContext(l)
		p.complete(&w, api.DTOErrFlushed)
		return w.RMRContext, nil
	default:
		return 0, p.StateErr("binding an RMR")
	}
	w.bind, w.RMRContext = r.IA.mem.StartBind(&r.Reg, l, t, priv, va, r.PZ, p, r)
	if err := p.postLocked(&w); err != nil {
		w.dropBind(r.IA)
		return 0, err
	}
	if c := p.c; c != nil {
		c.flush(false) // what the bind let start goes out now
	}
	return w.RMRContext, nil
}

// publishBind makes the binding of bind request w current. ia.mu is held.
func (w *reqWR) publishBind(i *ia) api.DTOStatus {
	return i.mem.FinishBind(&w.rmr.Reg, &w.bind, w.RMRContext, w.rmr.Freed)
}

// dropBind releases what an unexecuted bind request holds.
func (w *reqWR) dropBind(i *ia) { i.mem.DropBind(&w.bind, w.RMRContext) }

// unbind withdraws the RMR's binding at once. ia.mu is held.
func (r *rmr) unbind() { r.IA.mem.Unbind(&r.Reg) }

// Free destroys the RMR, unbinding it first (dat_rmr_free(3DAT)).
func (r *rmr) Free() error {
	r.IA.mu.Lock()
	defer r.IA.mu.Unlock()
	r.unbind()
	r.Freed = true
	r.IA.rmrs.Remove(r)
	return nil
}

// invalidatable returns the RMR a send-with-invalidate arriving at p may
// unbind, or nil: an RMR bound in p's PZ, to p or to no EP.
func (p *ep) invalidatable(ctx api.RMRContext) *rmr {
	r, _ := p.ia.mem.Invalidatable(ctx, p.PZ, p).(*rmr)
	return r
}
