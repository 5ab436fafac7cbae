package loopback

import (
	"fmt"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/memreg"
)

// Memory: LMRs, RMRs, and the windows through which peers reach memory.
// The lookups and checks are those of package memreg, over the IA's table.

// window is remotely accessible memory of an IA: an LMR's own context or
// a bound RMR (Owner is then the *rmr).
type window = memreg.Window[*pz, *ep]

// binding is what an RMR bind publishes: the window, and the LMR and
// triplet it lies in. A binding holds one count of its LMR's bound RMRs.
type binding struct {
	window
	lmr *lmr
	t   api.LMRTriplet
}

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
	return p.ia.mem.Remote(t, n, need, p.pz, p)
}

// invalidatable returns the RMR a send-with-invalidate arriving at p may
// unbind, or nil: ctx must name an RMR (not an LMR's own context) bound in
// p's PZ, to p or to no EP.
func (p *ep) invalidatable(ctx api.RMRContext) *rmr {
	w := p.ia.mem.Window(ctx)
	if w == nil || w.PZ != p.pz || (w.EP != nil && w.EP != p) {
		return nil
	}
	r, _ := w.Owner.(*rmr)
	return r
}

// lmr is a Local Memory Region (dat_lmr_create(3DAT)).
type lmr struct {
	api.ContextSlot
	ia      *ia
	pz      *pz
	mem     []byte
	memType api.MemType
	priv    api.MemPriv
	va      api.VAType
	base    api.VAddr // registered address: AddrOf(mem) for VATypeVA, 0 for VATypeZB
	lctx    api.LMRContext
	rctx    api.RMRContext // 0 without remote privileges
	bound   int            // RMRs bound (or being bound) to it
	freed   bool
	region  memreg.Region[*pz]
}

var errLMRFreed = api.Errorf(api.InvalidHandle, api.SubHandleLMR, "LMR was freed")

// CreateLMR registers memory in pz with privileges priv
// (dat_lmr_create(3DAT)). MemTypeVirtual takes any Go slice,
// MemTypeSharedVirtual a slice inside api.AllocMemory memory
// (ErrInvalidState otherwise), MemTypeLMR the memory of another LMR. With
// VATypeVA triplets carry process addresses (api.AddrOf); with VATypeZB
// offsets from the start. An LMR granting remote read or write gets a
// random RMR context that reaches the whole region until the LMR is freed.
func (i *ia) CreateLMR(pzArg api.PZ, region api.Region, priv api.MemPriv, va api.VAType) (api.LMR, error) {
	if priv&^api.MemPrivAll != 0 {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg6, fmt.Sprintf("memory privileges %#x name unknown bits", uint32(priv)))
	}
	if va != api.VATypeVA && va != api.VATypeZB {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg7, fmt.Sprintf("VA type %d is unknown", va))
	}
	fab.mu.Lock()
	defer fab.mu.Unlock()
	if i.closed {
		return nil, errIAClosed
	}
	z, err := asPZ(pzArg, i)
	if err != nil {
		return nil, err
	}
	if z == nil {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandlePZ, "PZ handle is nil")
	}
	var mem []byte
	switch region.Type {
	case api.MemTypeVirtual:
		mem = region.Bytes
	case api.MemTypeSharedVirtual:
		mem = region.Bytes
		if _, _, ok := api.MemoryOf(mem); !ok && len(mem) > 0 {
			return nil, api.Errorf(api.InvalidState, api.NoSubtype, "shared virtual memory must lie inside api.AllocMemory memory")
		}
	case api.MemTypeLMR:
		src, ok := region.LMR.(*lmr)
		if !ok || src == nil || src.freed || src.ia != i {
			return nil, api.Errorf(api.InvalidHandle, api.SubHandleLMR, "region LMR is not a live LMR of this IA")
		}
		mem = src.mem
	default:
		return nil, api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("memory type %#x is unknown", uint32(region.Type)))
	}
	if len(mem) == 0 {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg3, "the region to register is empty")
	}
	if len(i.lmrs) >= maxObjects {
		return nil, tooMany("LMRs")
	}
	l := &lmr{ia: i, pz: z, mem: mem, memType: region.Type, priv: priv, va: va}
	if va == api.VATypeVA {
		l.base = api.AddrOf(mem)
	}
	l.region = memreg.Region[*pz]{Mem: mem, Base: l.base, Priv: priv, PZ: z}
	l.lctx = i.mem.AddLMR(&l.region)
	if priv&remotePriv != 0 {
		l.rctx = i.mem.Reserve()
		i.mem.Publish(l.rctx, &window{Mem: mem, Base: l.base, Priv: priv & remotePriv, PZ: z})
	}
	i.lmrs[l] = struct{}{}
	z.users++
	return l, nil
}

// HandleType reports HandleLMR (dat_get_handle_type(3DAT)).
func (l *lmr) HandleType() api.HandleType { return api.HandleLMR }

// Query returns the LMR's parameters (dat_lmr_query(3DAT)).
func (l *lmr) Query() (api.LMRParam, error) {
	fab.mu.Lock()
	defer fab.mu.Unlock()
	if l.freed {
		return api.LMRParam{}, errLMRFreed
	}
	n := uint64(len(l.mem))
	return api.LMRParam{IA: l.ia, MemType: l.memType, Length: n, PZ: l.pz, Priv: l.priv, VAType: l.va,
		LMRContext: l.lctx, RMRContext: l.rctx, RegisteredSize: n, RegisteredAddress: l.base}, nil
}

// Free deregisters the LMR (dat_lmr_free(3DAT)): ErrInvalidState
// (SubStateLMRInUse) while an RMR is bound to it. Its LMR and RMR contexts
// stop working at once: later DTOs naming them fail with protection errors.
func (l *lmr) Free() error {
	fab.mu.Lock()
	defer fab.mu.Unlock()
	if l.freed {
		return errLMRFreed
	}
	if l.bound > 0 {
		return api.Errorf(api.InvalidState, api.SubStateLMRInUse, fmt.Sprintf("%d RMR(s) are bound to the LMR", l.bound))
	}
	l.freed = true
	delete(l.ia.lmrs, l)
	l.ia.mem.RemoveLMR(l.lctx)
	if l.rctx != 0 {
		l.ia.mem.Release(l.rctx)
	}
	l.pz.users--
	return nil
}

// rmr is a Remote Memory Region (dat_rmr_create(3DAT)): a memory window
// bound to one EP at a time (RMRScopeEP).
type rmr struct {
	api.ContextSlot
	ia    *ia
	pz    *pz
	ctx   api.RMRContext // current context, or the stale last one
	cur   *binding       // published binding; nil while unbound
	va    api.VAType
	freed bool
}

var errRMRFreed = api.Errorf(api.InvalidHandle, api.SubHandleRMR, "RMR was freed")

// CreateRMR creates an unbound RMR in the PZ (dat_rmr_create(3DAT)).
func (z *pz) CreateRMR() (api.RMR, error) {
	fab.mu.Lock()
	defer fab.mu.Unlock()
	if z.freed {
		return nil, errPZFreed
	}
	if len(z.ia.rmrs) >= maxObjects {
		return nil, tooMany("RMRs")
	}
	r := &rmr{ia: z.ia, pz: z}
	z.ia.rmrs[r] = struct{}{}
	z.users++
	return r, nil
}

// HandleType reports HandleRMR (dat_get_handle_type(3DAT)).
func (r *rmr) HandleType() api.HandleType { return api.HandleRMR }

// Query returns the RMR's parameters (dat_rmr_query(3DAT)); while unbound
// the triplet has zero length and the context is the stale last one.
func (r *rmr) Query() (api.RMRParam, error) {
	fab.mu.Lock()
	defer fab.mu.Unlock()
	if r.freed {
		return api.RMRParam{}, errRMRFreed
	}
	prm := api.RMRParam{IA: r.ia, PZ: r.pz, RMRContext: r.ctx, Scope: api.RMRScopeEP, VAType: r.va}
	if b := r.cur; b != nil {
		prm.LMRTriplet, prm.Priv = b.t, b.Priv
	}
	return prm, nil
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
	if priv&^api.MemPrivAll != 0 {
		return 0, api.Errorf(api.InvalidParameter, api.SubArg4, fmt.Sprintf("memory privileges %#x name unknown bits", uint32(priv)))
	}
	if va != api.VATypeVA && va != api.VATypeZB {
		return 0, api.Errorf(api.InvalidParameter, api.SubArg5, fmt.Sprintf("VA type %d is unknown", va))
	}
	fab.mu.Lock()
	defer fab.mu.Unlock()
	if r.freed {
		return 0, errRMRFreed
	}
	p, err := asEP(epArg, r.ia)
	if err != nil {
		return 0, err
	}
	if p == nil {
		return 0, api.Errorf(api.InvalidHandle, api.SubHandleEP, "EP handle is nil")
	}
	var l *lmr
	if t.Length > 0 {
		var ok bool
		if l, ok = lmrArg.(*lmr); !ok || l == nil || l.freed || l.ia != r.ia {
			return 0, api.Errorf(api.InvalidHandle, api.SubHandleLMR, "not a live LMR of this IA")
		}
		if err := r.checkBind(l, t, priv); err != nil {
			return 0, err
		}
	}
	if p.pz != r.pz {
		return 0, api.Errorf(api.ProtectionViolation, api.NoSubtype, "the EP is in another protection zone than the RMR")
	}
	w := reqWR{kind: reqBind, cookie: cookie, flags: flags, rmr: r}
	switch p.state {
	case api.EPConnected:
		if p.reqs.Len() > 0 && p.reqs.Len() >= p.attr.MaxRequestDTOs {
			return 0, api.Errorf(api.InsufficientResources, api.NoSubtype, "the EP's request queue is full")
		}
	case api.EPDisconnected:
		if l != nil {
			w.rctx = r.ia.mem.Reserve()
			r.ia.mem.Release(w.rctx) // flushed: the context never works
		}
		p.complete(&w, api.DTOErrFlushed, 0)
		return w.rctx, nil
	default:
		return 0, p.stateErr("binding an RMR")
	}
	r.unbind()
	r.va = va
	if l != nil {
		mem, _ := memreg.Span(l.mem, l.base, t.Addr, uint64(t.Length))
		b := &binding{window: window{Mem: mem, Priv: priv, PZ: r.pz, EP: p, Owner: r}, lmr: l, t: t}
		if va == api.VATypeVA {
			b.Base = api.AddrOf(mem)
		}
		w.bind, w.rctx = b, r.ia.mem.Reserve()
		l.bound++ // held by the request until it runs or is flushed
	}
	if err := p.postLocked(&w); err != nil {
		w.dropBind(r.ia)
		return 0, err
	}
	return w.rctx, nil
}

// checkBind applies the synchronous checks of a bind to l.
func (r *rmr) checkBind(l *lmr, t api.LMRTriplet, priv api.MemPriv) error {
	switch {
	case l.pz != r.pz:
		return api.Errorf(api.ProtectionViolation, api.NoSubtype, "the LMR is in another protection zone than the RMR")
	case t.LMRContext != l.lctx:
		return api.Errorf(api.InvalidParameter, api.SubArg2, "the triplet does not name the LMR")
	case priv&api.MemPrivRemoteRead != 0 && l.priv&api.MemPrivLocalRead == 0:
		return api.Errorf(api.PrivilegesViolation, api.SubPrivilegesRDMARead, "remote read needs the LMR's local read privilege")
	case priv&api.MemPrivRemoteWrite != 0 && l.priv&api.MemPrivLocalWrite == 0:
		return api.Errorf(api.PrivilegesViolation, api.SubPrivilegesRDMAWrite, "remote write needs the LMR's local write privilege")
	}
	if _, ok := memreg.Span(l.mem, l.base, t.Addr, uint64(t.Length)); !ok {
		return api.Errorf(api.InvalidParameter, api.SubArg2, "the triplet lies outside the LMR")
	}
	return nil
}

// execBind publishes the binding of a bind request and completes it.
// fab.mu is held.
func (p *ep) execBind(w *reqWR) {
	r := w.rmr
	if r.freed {
		w.dropBind(r.ia)
		p.complete(w, api.RMROperationFailed, 0)
		return
	}
	r.unbind()
	if w.bind != nil {
		r.cur, r.ctx = w.bind, w.rctx // the request's hold on the LMR passes to the RMR
		r.ia.mem.Publish(r.ctx, &r.cur.window)
		w.bind = nil
	}
	p.complete(w, api.DTOSuccess, 0)
}

// dropBind releases what a bind request holds when it does not run: its
// reserved context and its count on the LMR.
func (w *reqWR) dropBind(i *ia) {
	if w.bind != nil {
		i.mem.Release(w.rctx)
		w.bind.lmr.bound--
		w.bind = nil
	}
}

// unbind withdraws the RMR's binding: its context stops working at once.
// fab.mu is held.
func (r *rmr) unbind() {
	if r.cur == nil {
		return
	}
	r.ia.mem.Release(r.ctx)
	r.cur.lmr.bound--
	r.cur = nil
}

// Free destroys the RMR, unbinding it first (dat_rmr_free(3DAT)).
func (r *rmr) Free() error {
	fab.mu.Lock()
	defer fab.mu.Unlock()
	if r.freed {
		return errRMRFreed
	}
	r.unbind()
	r.freed = true
	delete(r.ia.rmrs, r)
	r.pz.users--
	return nil
}
