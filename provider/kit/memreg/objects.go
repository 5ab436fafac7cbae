package memreg

import (
	"fmt"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
)

// The LMR and RMR objects of a software provider, as far as they are the
// same in every provider: what they register in a Table, the checks of
// dat_lmr_create(3DAT) and dat_rmr_bind(3DAT), and the bookkeeping of
// binding and unbinding. The provider keeps an LMR or RMR value in its own
// object, beside its handle, IA and PZ, and calls these under the same lock
// it holds for the Table.

// RemotePriv is the set of privileges that make memory reachable by a
// peer.
const RemotePriv = api.MemPrivRemoteRead | api.MemPrivRemoteWrite

// LMR is the registered state of a Local Memory Region.
type LMR[PZ comparable] struct {
	Region     Region[PZ] // the memory as the data path sees it; the table points here
	MemType    api.MemType
	VA         api.VAType
	LMRContext api.LMRContext
	RMRContext api.RMRContext // 0 without a remote privilege
	Bound      int            // RMRs bound, or binds queued, to it
}

// Memory returns the bytes region names for dat_lmr_create(3DAT):
// MemTypeVirtual any Go slice, MemTypeSharedVirtual a slice inside
// api.AllocMemory memory (ErrInvalidState otherwise), MemTypeLMR the
// memory of src, the region's LMR, which the provider has resolved (nil
// if region.LMR is not one of the IA's live LMRs: ErrInvalidHandle). Empty
// memory is ErrInvalidParameter.
func Memory[PZ comparable](region api.Region, src *LMR[PZ]) ([]byte, error) {
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
		if src == nil {
			return nil, api.Errorf(api.InvalidHandle, api.SubHandleLMR, "region LMR is not a live LMR of this IA")
		}
		mem = src.Region.Mem
	default:
		return nil, api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("memory type %#x is unknown", uint32(region.Type)))
	}
	if len(mem) == 0 {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg3, "the region to register is empty")
	}
	return mem, nil
}

// Register fills l for memory mem of type typ registered in pz with
// privileges priv and VA type va, and adds it to the table: triplets
// address mem by process addresses (VATypeVA) or by offsets (VATypeZB). An
// LMR with a remote privilege gets a random RMR context that reaches the
// whole region, with its remote privileges, until Deregister.
func (t *Table[PZ, EP]) Register(l *LMR[PZ], mem []byte, typ api.MemType, priv api.MemPriv, va api.VAType, pz PZ) {
	var base api.VAddr
	if va == api.VATypeVA {
		base = api.AddrOf(mem)
	}
	*l = LMR[PZ]{Region: Region[PZ]{Mem: mem, Base: base, Priv: priv, PZ: pz}, MemType: typ, VA: va}
	l.LMRContext = t.AddLMR(&l.Region)
	if priv&RemotePriv != 0 {
		l.RMRContext = t.Reserve()
		t.Publish(l.RMRContext, &Window[PZ, EP]{Mem: mem, Base: base, Priv: priv & RemotePriv, PZ: pz})
	}
}

// Deregister removes l from the table (dat_lmr_free(3DAT)): its contexts
// stop working at once. While an RMR is bound to l it is ErrInvalidState
// (SubStateLMRInUse) and nothing changes.
func (t *Table[PZ, EP]) Deregister(l *LMR[PZ]) error {
	if l.Bound > 0 {
		return api.Errorf(api.InvalidState, api.SubStateLMRInUse, fmt.Sprintf("%d RMR(s) are bound to the LMR", l.Bound))
	}
	t.RemoveLMR(l.LMRContext)
	if l.RMRContext != 0 {
		t.Release(l.RMRContext)
	}
	return nil
}

// Param returns the LMR's parameters (dat_lmr_query(3DAT)) but for the IA
// and PZ, which the provider fills in.
func (l *LMR[PZ]) Param() api.LMRParam {
	n := uint64(len(l.Region.Mem))
	return api.LMRParam{MemType: l.MemType, Length: n, Priv: l.Region.Priv, VAType: l.VA,
		LMRContext: l.LMRContext, RMRContext: l.RMRContext, RegisteredSize: n, RegisteredAddress: l.Region.Base}
}

// CheckSegments checks, for dat_lmr_sync_rdma_read(3DAT) and
// dat_lmr_sync_rdma_write(3DAT), that each non-empty segment names an LMR
// of the table, in any PZ, and lies inside it (ErrInvalidParameter).
func (t *Table[PZ, EP]) CheckSegments(segs []api.LMRTriplet) error {
	for k, tr := range segs {
		if tr.Length == 0 {
			continue
		}
		r := t.LMR(tr.LMRContext)
		if r == nil {
			return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("segment %d names no LMR of the IA", k))
		}
		if _, ok := Span(r.Mem, r.Base, tr.Addr, uint64(tr.Length)); !ok {
			return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("segment %d lies outside its LMR", k))
		}
	}
	return nil
}

// RMR is the binding state of a Remote Memory Region with EP scope
// (dat_rmr_create(3DAT)).
type RMR[PZ, EP comparable] struct {
	Context api.RMRContext   // the current context, or the stale last one
	Cur     *Binding[PZ, EP] // the published binding; nil while unbound
	VA      api.VAType
}

// Binding is what an RMR bind publishes: the window, and the LMR and
// triplet it lies in. A binding holds one count of its LMR's Bound from
// NewBinding until Drop or Unbind.
type Binding[PZ, EP comparable] struct {
	Window[PZ, EP]
	LMR     *LMR[PZ]
	Triplet api.LMRTriplet
}

// Param returns the RMR's parameters (dat_rmr_query(3DAT)) but for the IA
// and PZ: while unbound the triplet has zero length and the context is the
// stale last one.
func (r *RMR[PZ, EP]) Param() api.RMRParam {
	prm := api.RMRParam{RMRContext: r.Context, Scope: api.RMRScopeEP, VAType: r.VA}
	if b := r.Cur; b != nil {
		prm.LMRTriplet, prm.Priv = b.Triplet, b.Priv
	}
	return prm
}

// CheckBind applies the synchronous checks of dat_rmr_bind(3DAT) to a
// bind of the window t of l, for an RMR in PZ pz, granting priv: l in
// another PZ is ErrProtectionViolation; t not naming l or not inside it
// ErrInvalidParameter; remote read without l's local read, or remote
// write without its local write, ErrPrivilegesViolation.
func CheckBind[PZ comparable](l *LMR[PZ], pz PZ, t api.LMRTriplet, priv api.MemPriv) error {
	switch {
	case l.Region.PZ != pz:
		return api.Errorf(api.ProtectionViolation, api.NoSubtype, "the LMR is in another protection zone than the RMR")
	case t.LMRContext != l.LMRContext:
		return api.Errorf(api.InvalidParameter, api.SubArg2, "the triplet does not name the LMR")
	case priv&api.MemPrivRemoteRead != 0 && l.Region.Priv&api.MemPrivLocalRead == 0:
		return api.Errorf(api.PrivilegesViolation, api.SubPrivilegesRDMARead, "remote read needs the LMR's local read privilege")
	case priv&api.MemPrivRemoteWrite != 0 && l.Region.Priv&api.MemPrivLocalWrite == 0:
		return api.Errorf(api.PrivilegesViolation, api.SubPrivilegesRDMAWrite, "remote write needs the LMR's local write privilege")
	}
	if _, ok := Span(l.Region.Mem, l.Region.Base, t.Addr, uint64(t.Length)); !ok {
		return api.Errorf(api.InvalidParameter, api.SubArg2, "the triplet lies outside the LMR")
	}
	return nil
}

// BindTarget applies the synchronous checks of dat_rmr_bind(3DAT) to a
// bind of the window t for an RMR in rmrPZ over an EP in epPZ, and
// returns the LMR to bind: nil for an unbind (t of zero length, whatever
// l is). l is the LMR the call names, nil when it names no live LMR of
// the IA, which for a non-empty t is ErrInvalidHandle (SubHandleLMR); then
// CheckBind; an EP in another PZ than the RMR is ErrProtectionViolation.
func BindTarget[PZ comparable](l *LMR[PZ], t api.LMRTriplet, priv api.MemPriv, rmrPZ, epPZ PZ) (*LMR[PZ], error) {
	if t.Length == 0 {
		l = nil
	} else {
		if l == nil {
			return nil, api.Errorf(api.InvalidHandle, api.SubHandleLMR, "not a live LMR of this IA")
		}
		if err := CheckBind(l, rmrPZ, t, priv); err != nil {
			return nil, err
		}
	}
	if epPZ != rmrPZ {
		return nil, api.Errorf(api.ProtectionViolation, api.NoSubtype, "the EP is in another protection zone than the RMR")
	}
	return l, nil
}

// StartBind begins a bind of r that BindTarget has passed, once the
// provider has decided to queue it: r's current binding is withdrawn at
// once (its context stops working) and r takes va; for l not nil it
// prepares the new binding (NewBinding), which FinishBind publishes when
// the request runs and DropBind releases if it never does. For an unbind
// (l nil) it returns no binding and context 0.
func (t *Table[PZ, EP]) StartBind(r *RMR[PZ, EP], l *LMR[PZ], tr api.LMRTriplet, priv api.MemPriv, va api.VAType, pz PZ, ep EP, owner any) (*Binding[PZ, EP], api.RMRContext) {
	t.Unbind(r)
	r.VA = va
	if l == nil {
		return nil, 0
	}
	return t.NewBinding(l, tr, priv, va, pz, ep, owner)
}

// FinishBind ends a queued bind of r when the request runs and returns
// the status its completion reports: when r has been freed meanwhile
// (gone) it releases the prepared binding *b (DropBind) and returns
// RMROperationFailed; otherwise it publishes *b under c as r's binding
// (Rebind; a nil *b is an unbind) and returns DTOSuccess. *b is nil on
// return.
func (t *Table[PZ, EP]) FinishBind(r *RMR[PZ, EP], b **Binding[PZ, EP], c api.RMRContext, gone bool) api.DTOStatus {
	if gone {
		t.DropBind(b, c)
		return api.RMROperationFailed
	}
	t.Rebind(r, *b, c) // the binding's hold on its LMR passes to r
	*b = nil
	return api.DTOSuccess
}

// DropBind releases what a queued bind that will not run holds, its
// prepared binding *b (if any) with context c, and sets *b to nil, so
// that a second call does nothing.
func (t *Table[PZ, EP]) DropBind(b **Binding[PZ, EP], c api.RMRContext) {
	if *b != nil {
		t.Drop(*b, c)
		*b = nil
	}
}

// NewBinding prepares the bind of the window t of l, which CheckBind has
// passed, for remote access with priv in pz over ep's connection only;
// owner is the provider's RMR. It reserves the new context, which works
// from Rebind on, and takes a count of l's Bound.
func (t *Table[PZ, EP]) NewBinding(l *LMR[PZ], tr api.LMRTriplet, priv api.MemPriv, va api.VAType, pz PZ, ep EP, owner any) (*Binding[PZ, EP], api.RMRContext) {
	mem, _ := Span(l.Region.Mem, l.Region.Base, tr.Addr, uint64(tr.Length))
	b := &Binding[PZ, EP]{Window: Window[PZ, EP]{Mem: mem, Priv: priv, PZ: pz, EP: ep, Owner: owner}, LMR: l, Triplet: tr}
	if va == api.VATypeVA {
		b.Base = api.AddrOf(mem)
	}
	l.Bound++
	return b, t.Reserve()
}

// Drop releases what a prepared binding holds when its bind does not run:
// its reserved context c and its count on the LMR.
func (t *Table[PZ, EP]) Drop(b *Binding[PZ, EP], c api.RMRContext) {
	t.Release(c)
	b.LMR.Bound--
}

// Unbind withdraws r's binding, if any: its context stops working at once.
func (t *Table[PZ, EP]) Unbind(r *RMR[PZ, EP]) {
	if r.Cur == nil {
		return
	}
	t.Release(r.Context)
	r.Cur.LMR.Bound--
	r.Cur = nil
}

// Rebind withdraws r's binding and, unless b is nil (an unbind), publishes
// b under its reserved context c as r's new binding; b's count on its LMR
// passes to r.
func (t *Table[PZ, EP]) Rebind(r *RMR[PZ, EP], b *Binding[PZ, EP], c api.RMRContext) {
	t.Unbind(r)
	if b != nil {
		r.Cur, r.Context = b, c
		t.Publish(c, &b.Window)
	}
}

// FlushedContext is the context a bind flushed on a DISCONNECTED EP
// returns: 0 for an unbind (target nil), otherwise a StaleContext, so
// that the bind's context never works.
func (t *Table[PZ, EP]) FlushedContext(target *LMR[PZ]) api.RMRContext {
	if target == nil {
		return 0
	}
	return t.StaleContext()
}

// StaleContext returns a fresh random context that names nothing and
// never will: the context a flushed bind returns.
func (t *Table[PZ, EP]) StaleContext() api.RMRContext {
	c := t.Reserve()
	t.Release(c)
	return c
}

// Invalidatable returns the owner of the RMR a send-with-invalidate
// arriving at ep in pz may unbind, or nil: c must name a bound RMR (not an
// LMR's own context) in pz, bound to ep or to no EP.
func (t *Table[PZ, EP]) Invalidatable(c api.RMRContext, pz PZ, ep EP) any {
	var zeroEP EP
	w := t.windows[c]
	if w == nil || w.PZ != pz || (w.EP != zeroEP && w.EP != ep) {
		return nil
	}
	return w.Owner
}

// CreateLMR is the end of dat_lmr_create(3DAT) once the provider has the
// PZ and has checked priv and va (api.CheckPrivVA): it resolves the memory
// region names (Memory; src is the registration of the LMR region.LMR
// names when that is a live LMR of the IA, else nil), checks that lmrs
// has room, and then makes the provider's LMR with make, which returns it
// and its registration, registers it in t (Register) and adds it to lmrs.
// make runs only once nothing can fail; on an error nothing is made.
func CreateLMR[L, PZ, EP comparable](t *Table[PZ, EP], lmrs *kit.Set[L], region api.Region, src *LMR[PZ], priv api.MemPriv, va api.VAType, pz PZ, make func() (L, *LMR[PZ])) (L, error) {
	var none L
	mem, err := Memory(region, src)
	if err != nil {
		return none, err
	}
	if err := lmrs.Room(); err != nil {
		return none, err
	}
	l, reg := make()
	t.Register(reg, mem, region.Type, priv, va, pz)
	lmrs.Add(l)
	return l, nil
}
