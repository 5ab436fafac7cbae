package tcp

import (
	"fmt"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/memreg"
)

// window is remotely accessible memory of an IA: an LMR's own context or a
// bound RMR (Owner is then the *rmr).
type window = memreg.Window[*pz, *ep]

// binding is what an RMR bind publishes; it holds one count of its LMR's
// bound RMRs.
type binding struct {
	window
	lmr *lmr
	t   api.LMRTriplet
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
	base    api.VAddr
	lctx    api.LMRContext
	rctx    api.RMRContext
	bound   int // RMRs bound, or binds queued, to it
	region  memreg.Region[*pz]
}

// CreateLMR registers memory in pz with privileges priv
// (dat_lmr_create(3DAT)). MemTypeVirtual takes any Go slice,
// MemTypeSharedVirtual a slice inside api.AllocMemory memory, MemTypeLMR
// the memory of another LMR. With VATypeVA triplets carry process
// addresses (api.AddrOf), with VATypeZB offsets. An LMR with a remote
// privilege gets a random RMR context reaching the whole region until the
// LMR is freed.
func (i *ia) CreateLMR(pzArg api.PZ, region api.Region, priv api.MemPriv, va api.VAType) (api.LMR, error) {
	if priv&^api.MemPrivAll != 0 {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg6, fmt.Sprintf("memory privileges %#x name unknown bits", uint32(priv)))
	}
	if va != api.VATypeVA && va != api.VATypeZB {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg7, fmt.Sprintf("VA type %d is unknown", va))
	}
	z := pzOf(pzArg)
	if z == nil {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandlePZ, "PZ handle is nil")
	}
	i.mu.Lock()
	defer i.mu.Unlock()
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
		if !ok || src == nil || src.ia != i {
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
	return l, nil
}

// HandleType reports HandleLMR (dat_get_handle_type(3DAT)).
func (l *lmr) HandleType() api.HandleType { return api.HandleLMR }

// Query returns the LMR's parameters (dat_lmr_query(3DAT)).
func (l *lmr) Query() (api.LMRParam, error) {
	n := uint64(len(l.mem))
	return api.LMRParam{IA: l.ia, MemType: l.memType, Length: n, PZ: l.pz, Priv: l.priv, VAType: l.va,
		LMRContext: l.lctx, RMRContext: l.rctx, RegisteredSize: n, RegisteredAddress: l.base}, nil
}

// Free deregisters the LMR (dat_lmr_free(3DAT)): ErrInvalidState
// (SubStateLMRInUse) while an RMR is bound to it. Its contexts stop working
// at once.
func (l *lmr) Free() error {
	l.ia.mu.Lock()
	defer l.ia.mu.Unlock()
	if l.bound > 0 {
		return api.Errorf(api.InvalidState, api.SubStateLMRInUse, fmt.Sprintf("%d RMR(s) are bound to the LMR", l.bound))
	}
	delete(l.ia.lmrs, l)
	l.ia.mem.RemoveLMR(l.lctx)
	if l.rctx != 0 {
		l.ia.mem.Release(l.rctx)
	}
	return nil
}

// rmr is a Remote Memory Region with EP scope (dat_rmr_create(3DAT)).
type rmr struct {
	api.ContextSlot
	ia    *ia
	pz    *pz
	ctx   api.RMRContext // current context, or the stale last one
	cur   *binding
	va    api.VAType
	freed bool
}

// CreateRMR creates an unbound RMR in the PZ (dat_rmr_create(3DAT)).
func (z *pz) CreateRMR() (api.RMR, error) {
	z.ia.mu.Lock()
	defer z.ia.mu.Unlock()
	if len(z.ia.rmrs) >= maxObjects {
		return nil, tooMany("RMRs")
	}
	r := &rmr{ia: z.ia, pz: z}
	z.ia.rmrs[r] = struct{}{}
	return r, nil
}

// HandleType reports HandleRMR (dat_get_handle_type(3DAT)).
func (r *rmr) HandleType() api.HandleType { return api.HandleRMR }

// Query returns the RMR's parameters (dat_rmr_query(3DAT)); while unbound
// the triplet has zero length.
func (r *rmr) Query() (api.RMRParam, error) {
	r.ia.mu.Lock()
	defer r.ia.mu.Unlock()
	prm := api.RMRParam{IA: r.ia, PZ: r.pz, RMRContext: r.ctx, Scope: api.RMRScopeEP, VAType: r.va}
	if b := r.cur; b != nil {
		prm.LMRTriplet, prm.Priv = b.t, b.Priv
	}
	return prm, nil
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
	if priv&^api.MemPrivAll != 0 {
		return 0, api.Errorf(api.InvalidParameter, api.SubArg4, fmt.Sprintf("memory privileges %#x name unknown bits", uint32(priv)))
	}
	if va != api.VATypeVA && va != api.VATypeZB {
		return 0, api.Errorf(api.InvalidParameter, api.SubArg5, fmt.Sprintf("VA type %d is unknown", va))
	}
	p, _ := epArg.(*ep)
	if p == nil {
		return 0, api.Errorf(api.InvalidHandle, api.SubHandleEP, "EP handle is nil")
	}
	r.ia.mu.Lock()
	defer r.ia.mu.Unlock()
	var l *lmr
	if t.Length > 0 {
		var ok bool
		if l, ok = lmrArg.(*lmr); !ok || l == nil || l.ia != r.ia {
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
		if p.reqs.Len() >= p.attr.MaxRequestDTOs {
			return 0, api.Errorf(api.InsufficientResources, api.NoSubtype, "the EP's request queue is full")
		}
	case api.EPDisconnected:
		if l != nil {
			w.rctx = r.ia.mem.Reserve()
			r.ia.mem.Release(w.rctx)
		}
		p.complete(&w, api.DTOErrFlushed)
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
		l.bound++
	}
	if err := p.postLocked(&w); err != nil {
		w.dropBind(r.ia)
		return 0, err
	}
	if c := p.c; c != nil {
		c.flush(false) // what the bind let start goes out now
	}
	return w.rctx, nil
}

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

// publishBind makes the binding of bind request w current. ia.mu is held.
func (w *reqWR) publishBind(i *ia) api.DTOStatus {
	r := w.rmr
	if r.freed {
		w.dropBind(i)
		return api.RMROperationFailed
	}
	r.unbind()
	if w.bind != nil {
		r.cur, r.ctx = w.bind, w.rctx
		i.mem.Publish(r.ctx, &r.cur.window)
		w.bind = nil
	}
	return api.DTOSuccess
}

// dropBind releases what an unexecuted bind request holds.
func (w *reqWR) dropBind(i *ia) {
	if w.bind != nil {
		i.mem.Release(w.rctx)
		w.bind.lmr.bound--
		w.bind = nil
	}
}

// unbind withdraws the RMR's binding at once. ia.mu is held.
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
	r.ia.mu.Lock()
	defer r.ia.mu.Unlock()
	r.unbind()
	r.freed = true
	delete(r.ia.rmrs, r)
	return nil
}

// invalidatable returns the RMR a send-with-invalidate arriving at p may
// unbind, or nil: an RMR bound in p's PZ, to p or to no EP.
func (p *ep) invalidatable(ctx api.RMRContext) *rmr {
	w := p.ia.mem.Window(ctx)
	if w == nil || w.PZ != p.pz || (w.EP != nil && w.EP != p) {
		return nil
	}
	r, _ := w.Owner.(*rmr)
	return r
}
