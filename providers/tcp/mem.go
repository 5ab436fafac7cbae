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
	return kit.Create[api.RMR](&z.IA.mu, &z.IA.rmrs, &rmr{memreg.RMRBase[*ia, *pz, *ep]{IA: z.IA, PZ: z, Mem: z.IA.mem, Mu: &z.IA.mu}})
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
	p := epArg.(*ep)
	r.IA.mu.Lock()
	defer r.IA.mu.Unlock()
	c, err := r.RMRBase.Bind(lmrArg, t, priv, va, p, &p.Endpoint, p.PZ, p.State == api.EPConnected && p.reqsFull(), r, func(b *binding, c api.RMRContext) error {
		return p.postLocked(&reqWR{Request: completion.Request{Kind: completion.Bind, Cookie: cookie, Flags: flags, RMRContext: c}, rmr: r, bind: b})
	})
	if conn := p.c; err == nil && conn != nil {
		conn.flush(false) // what the bind let start goes out now
	}
	return c, err
}

// publishBind makes the binding of bind request w current. ia.mu is held.
func (w *reqWR) publishBind(i *ia) api.DTOStatus {
	return i.mem.FinishBind(&w.rmr.Reg, &w.bind, w.RMRContext, w.rmr.Freed)
}

// dropBind releases what an unexecuted bind request holds.
func (w *reqWR) dropBind(i *ia) { i.mem.DropBind(&w.bind, w.RMRContext) }

// Free destroys the RMR, unbinding it first (dat_rmr_free(3DAT)).
func (r *rmr) Free() error { return kit.Free(&r.IA.mu, &r.IA.rmrs, r, nil, r.Release) }

// invalidatable returns the RMR a send-with-invalidate arriving at p may
// unbind, or nil: an RMR bound in p's PZ, to p or to no EP.
func (p *ep) invalidatable(ctx api.RMRContext) *rmr {
	r, _ := p.ia.mem.Invalidatable(ctx, p.PZ, p).(*rmr)
	return r
}
