package memreg

import (
	"errors"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
)

func TestRegisterDeregister(t *testing.T) {
	tab := New[*pz, *ep]()
	z := &pz{1}
	mem := make([]byte, 64)
	var l LMR[*pz]
	tab.Register(&l, mem, api.MemTypeVirtual, api.MemPrivLocalRead|api.MemPrivRemoteRead, api.VATypeZB, z)
	if tab.LMR(l.LMRContext) != &l.Region || l.RMRContext == 0 {
		t.Fatalf("registered LMR: context %d -> %p (want %p), RMR context %d", l.LMRContext, tab.LMR(l.LMRContext), &l.Region, l.RMRContext)
	}
	if w := tab.Window(l.RMRContext); w == nil || w.Priv != api.MemPrivRemoteRead || w.Base != 0 {
		t.Fatalf("the LMR's own window is %+v", w)
	}
	if p := l.Param(); p.Length != 64 || p.RegisteredAddress != 0 || p.LMRContext != l.LMRContext {
		t.Errorf("Param = %+v", p)
	}
	if err := tab.CheckSegments([]api.LMRTriplet{{LMRContext: l.LMRContext, Addr: 60, Length: 4}, {}}); err != nil {
		t.Errorf("CheckSegments inside: %v", err)
	}
	if err := tab.CheckSegments([]api.LMRTriplet{{LMRContext: l.LMRContext, Addr: 61, Length: 4}}); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("CheckSegments outside: %v", err)
	}
	l.Bound = 1
	if err := tab.Deregister(&l); !errors.Is(err, api.ErrInvalidState) || tab.LMR(l.LMRContext) == nil {
		t.Fatalf("Deregister of a bound LMR: %v", err)
	}
	l.Bound = 0
	if err := tab.Deregister(&l); err != nil || tab.LMR(l.LMRContext) != nil || tab.Window(l.RMRContext) != nil {
		t.Fatalf("Deregister: %v; contexts still work", err)
	}
}

func TestMemory(t *testing.T) {
	src := &LMR[*pz]{Region: Region[*pz]{Mem: make([]byte, 8)}}
	for _, tc := range []struct {
		r    api.Region
		src  *LMR[*pz]
		want error
	}{
		{api.Region{Type: api.MemTypeVirtual, Bytes: make([]byte, 1)}, nil, nil},
		{api.Region{Type: api.MemTypeVirtual}, nil, api.ErrInvalidParameter},
		{api.Region{Type: api.MemTypeSharedVirtual, Bytes: make([]byte, 1)}, nil, api.ErrInvalidState},
		{api.Region{Type: api.MemTypeLMR}, src, nil},
		{api.Region{Type: api.MemTypeLMR}, nil, api.ErrInvalidHandle},
		{api.Region{Type: 0x4000}, nil, api.ErrInvalidParameter},
	} {
		_, err := Memory(tc.r, tc.src)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("Memory(type %#x) = %v; want %v", uint32(tc.r.Type), err, tc.want)
		}
	}
}

func TestBinding(t *testing.T) {
	tab := New[*pz, *ep]()
	z, e1, e2 := &pz{1}, &ep{1}, &ep{2}
	mem := make([]byte, 64)
	var l LMR[*pz]
	tab.Register(&l, mem, api.MemTypeVirtual, api.MemPrivLocalRead|api.MemPrivLocalWrite, api.VATypeZB, z)
	tr := api.LMRTriplet{LMRContext: l.LMRContext, Addr: 16, Length: 16}

	for _, tc := range []struct {
		pz   *pz
		tr   api.LMRTriplet
		want error
	}{
		{z, tr, nil},
		{&pz{2}, tr, api.ErrProtectionViolation},
		{z, api.LMRTriplet{LMRContext: l.LMRContext + 1, Addr: 16, Length: 16}, api.ErrInvalidParameter},
		{z, api.LMRTriplet{LMRContext: l.LMRContext, Addr: 60, Length: 16}, api.ErrInvalidParameter},
	} {
		err := CheckBind(&l, tc.pz, tc.tr, api.MemPrivRemoteWrite)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("CheckBind(%+v) = %v; want %v", tc.tr, err, tc.want)
		}
	}
	ro := LMR[*pz]{Region: Region[*pz]{Mem: mem, Priv: api.MemPrivLocalRead, PZ: z}}
	if err := CheckBind(&ro, z, api.LMRTriplet{Length: 1}, api.MemPrivRemoteWrite); !errors.Is(err, api.ErrPrivilegesViolation) {
		t.Errorf("remote write over a read-only LMR: %v", err)
	}

	var r RMR[*pz, *ep]
	owner := new(int)
	b, c := tab.NewBinding(&l, tr, api.MemPrivRemoteWrite, api.VATypeZB, z, e1, owner)
	if l.Bound != 1 || tab.Window(c) != nil {
		t.Fatalf("prepared binding: bound %d, context published %v", l.Bound, tab.Window(c) != nil)
	}
	tab.Rebind(&r, b, c)
	if got, ok := tab.Remote(api.RMRTriplet{RMRContext: c, Addr: 0, Length: 16}, 16, api.MemPrivRemoteWrite, z, e1); !ok || &got[0] != &mem[16] {
		t.Fatal("the bound window does not reach the LMR's bytes 16..31")
	}
	if tab.Invalidatable(c, z, e1) != owner || tab.Invalidatable(c, z, e2) != nil || tab.Invalidatable(l.RMRContext, z, e1) != nil {
		t.Error("Invalidatable: want the owner for the bound EP only")
	}
	if p := r.Param(); p.RMRContext != c || p.LMRTriplet != tr || p.Priv != api.MemPrivRemoteWrite {
		t.Errorf("Param = %+v", p)
	}

	b2, c2 := tab.NewBinding(&l, tr, api.MemPrivRemoteWrite, api.VATypeZB, z, e1, owner)
	tab.Drop(b2, c2)
	if l.Bound != 1 {
		t.Errorf("after Drop, bound %d; want 1", l.Bound)
	}
	tab.Rebind(&r, nil, 0) // unbind
	if l.Bound != 0 || r.Cur != nil || tab.Window(c) != nil || r.Context != c {
		t.Errorf("after unbind: bound %d, binding %v, old context works %v, stale context %d (want %d)", l.Bound, r.Cur, tab.Window(c) != nil, r.Context, c)
	}
	if s := tab.StaleContext(); s == 0 || tab.Window(s) != nil {
		t.Errorf("StaleContext %d names a window or is 0", s)
	}
}

// A bind checked by BindTarget, started by StartBind and then finished,
// dropped or overtaken by the RMR's free keeps the LMR's count and the
// contexts right.
func TestBindLifecycle(t *testing.T) {
	tab := New[*pz, *ep]()
	z, e := &pz{1}, &ep{1}
	var l LMR[*pz]
	tab.Register(&l, make([]byte, 64), api.MemTypeVirtual, api.MemPrivLocalRead|api.MemPrivLocalWrite, api.VATypeZB, z)
	tr := api.LMRTriplet{LMRContext: l.LMRContext, Addr: 0, Length: 16}

	if got, err := BindTarget(&l, api.LMRTriplet{}, api.MemPrivRemoteRead, z, z); got != nil || err != nil {
		t.Fatalf("BindTarget of an unbind = %v, %v; want no LMR, no error", got, err)
	}
	if _, err := BindTarget(nil, tr, api.MemPrivRemoteRead, z, z); !errors.Is(err, api.ErrInvalidHandle) {
		t.Errorf("BindTarget without a live LMR: %v", err)
	}
	if _, err := BindTarget(&l, tr, api.MemPrivRemoteRead, z, &pz{2}); !errors.Is(err, api.ErrProtectionViolation) {
		t.Errorf("BindTarget with the EP in another PZ: %v", err)
	}
	if _, err := BindTarget(&l, api.LMRTriplet{LMRContext: l.LMRContext, Addr: 60, Length: 16}, api.MemPrivRemoteRead, z, z); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("BindTarget outside the LMR: %v", err)
	}
	target, err := BindTarget(&l, tr, api.MemPrivRemoteRead, z, z)
	if err != nil || target != &l {
		t.Fatalf("BindTarget = %v, %v", target, err)
	}

	var r RMR[*pz, *ep]
	b, c := tab.StartBind(&r, target, tr, api.MemPrivRemoteRead, api.VATypeVA, z, e, "owner")
	if b == nil || c == 0 || l.Bound != 1 || r.VA != api.VATypeVA || tab.Window(c) != nil {
		t.Fatalf("StartBind: binding %v, context %d, bound %d, VA %v, window published early %v", b, c, l.Bound, r.VA, tab.Window(c) != nil)
	}
	if tab.FinishBind(&r, &b, c, false) != api.DTOSuccess || b != nil || r.Cur == nil || tab.Window(c) == nil || l.Bound != 1 {
		t.Fatalf("FinishBind: binding left %v, current %v, bound %d", b, r.Cur, l.Bound)
	}

	// A second bind withdraws the first at once; dropping it leaves the RMR unbound.
	b, c2 := tab.StartBind(&r, target, tr, api.MemPrivRemoteRead, api.VATypeZB, z, e, "owner")
	if tab.Window(c) != nil || r.Cur != nil || l.Bound != 1 {
		t.Fatalf("StartBind over a binding: old context works %v, current %v, bound %d", tab.Window(c) != nil, r.Cur, l.Bound)
	}
	tab.DropBind(&b, c2)
	tab.DropBind(&b, c2)
	if b != nil || l.Bound != 0 {
		t.Fatalf("DropBind twice: binding %v, bound %d", b, l.Bound)
	}

	// A bind whose RMR was freed before it ran fails and holds nothing.
	b, c3 := tab.StartBind(&r, target, tr, api.MemPrivRemoteRead, api.VATypeZB, z, e, "owner")
	if tab.FinishBind(&r, &b, c3, true) != api.RMROperationFailed || b != nil || l.Bound != 0 || r.Cur != nil {
		t.Fatalf("FinishBind of a freed RMR: binding %v, bound %d, current %v", b, l.Bound, r.Cur)
	}
	if b, c := tab.StartBind(&r, nil, api.LMRTriplet{}, 0, api.VATypeZB, z, e, "owner"); b != nil || c != 0 {
		t.Fatalf("StartBind of an unbind = %v, %d", b, c)
	}
}

// CreateLMR registers and adds an LMR only when its memory resolves and
// the table has room.
func TestCreateLMR(t *testing.T) {
	type provLMR struct{ reg LMR[*pz] }
	tab := New[*pz, *ep]()
	lmrs := kit.NewSet[*provLMR](api.HandleLMR, 1)
	z := &pz{1}
	made := 0
	mk := func() (*provLMR, *LMR[*pz]) { made++; l := &provLMR{}; return l, &l.reg }
	if _, err := CreateLMR(tab, &lmrs, api.Region{Type: api.MemTypeVirtual}, nil, api.MemPrivLocalRead, api.VATypeZB, z, mk); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("CreateLMR without memory: %v", err)
	}
	l, err := CreateLMR(tab, &lmrs, api.Region{Type: api.MemTypeVirtual, Bytes: make([]byte, 16)}, nil, api.MemPrivLocalRead, api.VATypeZB, z, mk)
	if err != nil || !lmrs.Has(l) || tab.LMR(l.reg.LMRContext) == nil || l.reg.Region.PZ != z {
		t.Fatalf("CreateLMR: %v; in the set %v, registered %v", err, lmrs.Has(l), err == nil && tab.LMR(l.reg.LMRContext) != nil)
	}
	if _, err := CreateLMR(tab, &lmrs, api.Region{Type: api.MemTypeLMR}, &l.reg, api.MemPrivLocalRead, api.VATypeZB, z, mk); !errors.Is(err, api.ErrInsufficientResources) {
		t.Fatalf("CreateLMR in a full table: %v", err)
	}
	if made != 1 || tab.LMRs() != 1 {
		t.Fatalf("make ran %d times, %d LMRs registered; want 1 and 1", made, tab.LMRs())
	}
}
