package loopback

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/completion"
	"github.com/godat/godat/provider/kit/memreg"
)

// Memory: LMRs, RMRs, and the windows through which peers reach memory.
// The lookups and checks are those of package memreg, over the IA's table.

// binding is what an RMR bind publishes: the window, and the LMR and
// triplet it lies in. A binding holds one count of its LMR's bound RMRs.
type binding = memreg.Binding[*pz, *ep]

// gather resolves local triplets of a DTO against the IA's LMRs (see
// memreg.Table.Gather).
func (i *ia) gather(segs [][]byte, iov []api.LMRTriplet, z *pz, need api.MemPriv) ([][]byte, uint64, bool) {
	return i.mem.Gather(segs, iov, z, need)
}

// remoteSpan resolves an RMR triplet arriving at p over its connection:
// the context must name a window of p's IA that grants need, is in p's PZ,
// and is not bound to another EP, and the n bytes at t.Addr must lie in it.
// A zero-length access touches nothing and is not checked.
func (p *ep) remoteSpan(t api.RMRTriplet, n uint64, need api.MemPriv) ([]byte, bool) {
	return p.ia.mem.Remote(t, n, need, p.PZ, p)
}

// invalidatable returns the RMR a send-with-invalidate arriving at p may
// unbind, or nil: ctx must name an RMR (not an LMR's own context) bound in
// p's PZ, to p or to no EP.
func (p *ep) invalidatable(ctx api.RMRContext) *rmr {
	r, _ := p.ia.mem.Invalidatable(ctx, p.PZ, p).(*rmr)
	return r
}

// CreateLMR registers memory in pz with privileges priv
// (dat_lmr_create(3DAT)); see memreg.LMRs.Create. An LMR is the kit's
// (memreg.LMRObject): a registration in the IA's memory table, which
// answers Query and Free itself.
func (i *ia) CreateLMR(pzArg api.PZ, region api.Region, priv api.MemPriv, va api.VAType) (api.LMR, error) {
	return i.lmrs.Create(pzArg, region, priv, va)
}

// rmr is a Remote Memory Region (dat_rmr_create(3DAT)): a memory window
// bound to one EP at a time (RMRScopeEP).
type rmr struct{ memreg.RMRBase[*ia, *pz, *ep] }

// CreateRMR creates an unbound RMR in the PZ (dat_rmr_create(3DAT)).
func (z *pz) CreateRMR() (api.RMR, error) {
	return kit.Create[api.RMR](&fabric.mu, &z.IA.rmrs, &rmr{memreg.RMRBase[*ia, *pz, *ep]{IA: z.IA, PZ: z, Mem: z.IA.mem, Mu: &fabric.mu}})
}

// Bind binds the RMR to the window t of lmr, for remote access with the
// remote privileges in priv over ep's connection only, and returns the new
// context, a fresh random value (dat_rmr_bind(3DAT)). A zero-length t
// unbinds and returns 0. The previous context stops working when Bind is
// called. The bind is a request on ep's queue: it completes with an
// RMR_BIND_COMPLETION event on the request EVD, in order with the DTOs
// around it, and the new context works from its completion (at once unless
// a send ahead of it waits for a receive). Synchronous errors, with nothing
// changed: the LMR or EP in another PZ (ErrProtectionViolation), t not
// inside the LMR or not naming it (ErrInvalidParameter), remote read
// without the LMR's local read or remote write without its local write
// (ErrPrivilegesViolation), ep not CONNECTED or DISCONNECTED
// (ErrInvalidState). On a DISCONNECTED EP the bind is flushed and the RMR
// is left as it was.
func (r *rmr) Bind(lmrArg api.LMR, t api.LMRTriplet, priv api.MemPriv, va api.VAType, epArg api.EP, cookie api.Cookie, flags api.CompletionFlags) (api.RMRContext, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	p := epArg.(*ep)
	full := p.reqs.Len() > 0 && p.reqs.Len() >= p.Attr.MaxRequestDTOs
	// The binding's count on the LMR is held by the request until it runs
	// or is flushed.
	return r.RMRBase.Bind(lmrArg, t, priv, va, p, &p.Endpoint, p.PZ, full, r, func(b *binding, c api.RMRContext) error {
		return p.postLocked(&reqWR{Request: completion.Request{Kind: completion.Bind, Cookie: cookie, Flags: flags, RMRContext: c}, rmr: r, bind: b})
	})
}

// execBind publishes the binding of a bind request and completes it.
// fabric.mu is held.
func (p *ep) execBind(w *reqWR) {
	r := w.rmr
	p.complete(w, r.IA.mem.FinishBind(&r.Reg, &w.bind, w.RMRContext, r.Freed), 0)
}

// dropBind releases what a bind request holds when it does not run: its
// reserved context and its count on the LMR.
func (w *reqWR) dropBind(i *ia) { i.mem.DropBind(&w.bind, w.RMRContext) }

// Free destroys the RMR, unbinding it first (dat_rmr_free(3DAT)).
func (r *rmr) Free() error { return kit.Free(&fabric.mu, &r.IA.rmrs, r, nil, r.Release) }
