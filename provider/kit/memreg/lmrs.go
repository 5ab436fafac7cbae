package memreg

import (
	"sync"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/epattr"
)

// Zone is what the memory objects need of a provider's PZ type: a
// comparable api.PZ (a pointer to the provider's pz).
type Zone interface {
	comparable
	api.PZ
}

// LMRs is an IA's set of LMRs for a provider whose LMRs are registrations
// in a Table and nothing more, as a software provider's are: it creates
// them (dat_lmr_create(3DAT)), and each answers HandleType, Query and
// Free itself, so the provider writes no LMR type. Its lock, given to
// NewLMRs, is the provider's, the one it holds while it uses the Table.
// Its LMRs point back to it: keep it in the IA and do not copy it once it
// has made one.
type LMRs[PZ Zone, EP comparable] struct {
	kit.Set[*LMRObject[PZ, EP]]
	ia  api.IA
	mu  sync.Locker
	mem *Table[PZ, EP]
}

// NewLMRs returns an empty set of ia's LMRs, registered in mem under mu,
// holding at most limit of them (0: no limit).
func NewLMRs[PZ Zone, EP comparable](ia api.IA, mu sync.Locker, mem *Table[PZ, EP], limit int) LMRs[PZ, EP] {
	return LMRs[PZ, EP]{Set: kit.NewSet[*LMRObject[PZ, EP]](api.HandleLMR, limit), ia: ia, mu: mu, mem: mem}
}

// Create registers memory in the PZ pzArg with privileges priv and VA type
// va (dat_lmr_create(3DAT)): MemTypeVirtual takes any Go slice,
// MemTypeSharedVirtual a slice inside api.AllocMemory memory, MemTypeLMR
// the memory of another LMR of the set. With VATypeVA triplets carry
// process addresses (api.AddrOf), with VATypeZB offsets. An LMR with a
// remote privilege gets a random RMR context that reaches the whole
// region until it is freed. priv and va are the guard's to check
// (api.CheckPrivVA), as api/doc.go says of every argument. Errors are
// those of kit.PZArg and CreateLMR; on an error nothing is made.
func (s *LMRs[PZ, EP]) Create(pzArg api.PZ, region api.Region, priv api.MemPriv, va api.VAType) (api.LMR, error) {
	z, err := kit.PZArg[PZ](pzArg)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var src *LMR[PZ]
	if l, ok := region.LMR.(*LMRObject[PZ, EP]); ok && l != nil && l.set == s {
		src = &l.Reg
	}
	l, err := CreateLMR(s.mem, &s.Set, region, src, priv, va, z, func() (*LMRObject[PZ, EP], *LMR[PZ]) {
		l := &LMRObject[PZ, EP]{pz: z, set: s}
		return l, &l.Reg
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// LMRObject is an LMR of an LMRs set: its registration, which the
// provider's data path finds through the Table, and the PZ it is in.
type LMRObject[PZ Zone, EP comparable] struct {
	api.ContextSlot
	Reg LMR[PZ]
	pz  PZ
	set *LMRs[PZ, EP]
}

// HandleType reports HandleLMR (dat_get_handle_type(3DAT)).
func (l *LMRObject[PZ, EP]) HandleType() api.HandleType { return api.HandleLMR }

// Query returns the LMR's parameters (dat_lmr_query(3DAT)), all fixed when
// it was created.
func (l *LMRObject[PZ, EP]) Query() (api.LMRParam, error) {
	prm := l.Reg.Param()
	prm.IA, prm.PZ = l.set.ia, l.pz
	return prm, nil
}

// Free deregisters the LMR (dat_lmr_free(3DAT)): ErrInvalidState
// (SubStateLMRInUse) while an RMR is bound to it, or a bind to it is
// queued. Its contexts stop working at once.
func (l *LMRObject[PZ, EP]) Free() error {
	l.set.mu.Lock()
	defer l.set.mu.Unlock()
	if err := l.set.mem.Deregister(&l.Reg); err != nil {
		return err
	}
	l.set.Remove(l)
	return nil
}

// RMRBase is the part of an RMR (dat_rmr_create(3DAT)) that every
// software provider writes alike: the handle, its IA and PZ, the binding
// state, Query, and the mark a bind still queued at Free checks
// (FinishBind). A provider's RMR type embeds it and adds Bind and Free.
type RMRBase[I api.IA, PZ Zone, EP comparable] struct {
	api.ContextSlot
	IA    I
	PZ    PZ
	Mem   *Table[PZ, EP] // the IA's table, where bindings are published
	Mu    sync.Locker    // the provider's lock, which guards the binding
	Reg   RMR[PZ, EP]
	Freed bool // Free has run
}

// Query returns the RMR's parameters, Param under Mu
// (dat_rmr_query(3DAT)).
func (r *RMRBase[I, PZ, EP]) Query() (api.RMRParam, error) {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	return r.Param(), nil
}

// Unbind withdraws the RMR's binding: its context stops working at once.
// The caller holds the lock that guards the binding.
func (r *RMRBase[I, PZ, EP]) Unbind() { r.Mem.Unbind(&r.Reg) }

// Release is what dat_rmr_free(3DAT) does to the RMR's binding: it is
// withdrawn at once, and a bind still queued finds the RMR freed when it
// runs (FinishBind). The caller holds the lock that guards the binding.
func (r *RMRBase[I, PZ, EP]) Release() {
	r.Unbind()
	r.Freed = true
}

// HandleType reports HandleRMR (dat_get_handle_type(3DAT)).
func (r *RMRBase[I, PZ, EP]) HandleType() api.HandleType { return api.HandleRMR }

// Target resolves lmrArg, an LMR an LMRs set made (any other value names
// no LMR), and makes BindTarget's checks for a bind of the window t of it
// to r, over an EP in epPZ: it returns the LMR to bind, nil for an unbind.
func (r *RMRBase[I, PZ, EP]) Target(lmrArg api.LMR, t api.LMRTriplet, priv api.MemPriv, epPZ PZ) (*LMR[PZ], error) {
	var named *LMR[PZ]
	if l, ok := lmrArg.(*LMRObject[PZ, EP]); ok && l != nil {
		named = &l.Reg
	}
	return BindTarget(named, t, priv, r.PZ, epPZ)
}

// Bind is dat_rmr_bind(3DAT) as a software provider makes it, under the
// provider's lock, for owner, the provider's RMR, over ep, whose state is
// e, whose PZ is epPZ, and whose request queue is full or not; the guard
// has checked priv and va (api.CheckPrivVA). After the checks of Target,
// and ErrInsufficientResources for a CONNECTED EP with a full queue or
// ErrInvalidState for an EP neither CONNECTED nor DISCONNECTED, it starts
// the bind (StartBind) and hands post the binding and its new context, for
// the provider to post as a request on ep's queue. On a DISCONNECTED EP
// nothing is bound: post gets no binding and the context the flushed
// completion reports, and the provider's post completes it as flushed. If
// post fails, what the bind holds is released (DropBind) and the RMR is as
// it was but unbound.
func (r *RMRBase[I, PZ, EP]) Bind(lmrArg api.LMR, t api.LMRTriplet, priv api.MemPriv, va api.VAType, ep EP, e *epattr.Endpoint, epPZ PZ, full bool, owner any,
	post func(*Binding[PZ, EP], api.RMRContext) error) (api.RMRContext, error) {
	l, err := r.Target(lmrArg, t, priv, epPZ)
	if err != nil {
		return 0, err
	}
	switch e.State {
	case api.EPConnected:
		if full {
			return 0, api.Errorf(api.InsufficientResources, api.NoSubtype, "the EP's request queue is full")
		}
	case api.EPDisconnected:
		c := r.Mem.FlushedContext(l)
		return c, post(nil, c)
	default:
		return 0, e.StateErr("binding an RMR")
	}
	b, c := r.Mem.StartBind(&r.Reg, l, t, priv, va, r.PZ, ep, owner)
	if err := post(b, c); err != nil {
		r.Mem.DropBind(&b, c)
		return 0, err
	}
	return c, nil
}

// Param returns the RMR's parameters (dat_rmr_query(3DAT)); while it is
// unbound the triplet has zero length and the context is the stale last
// one. The caller holds the lock that guards the binding.
func (r *RMRBase[I, PZ, EP]) Param() api.RMRParam {
	prm := r.Reg.Param()
	prm.IA, prm.PZ = r.IA, r.PZ
	return prm
}
