package memreg

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/epattr"
)

// zone is a provider's PZ for the LMRs tests; it only needs to be one.
type zone struct {
	api.PZ
	n int
}

// countLock is a mutex that counts how often it was taken.
type countLock struct {
	sync.Mutex
	n int
}

func (c *countLock) Lock() { c.Mutex.Lock(); c.n++ }

// fakeIA stands in for the provider's IA that LMR queries name.
type fakeIA struct{ api.IA }

func TestLMRs(t *testing.T) {
	mu := &countLock{}
	tab := New[*zone, *ep]()
	ia := &fakeIA{}
	lmrs := NewLMRs(ia, mu, tab, 2)
	z := &zone{n: 1}
	mem := make([]byte, 64)

	if _, err := lmrs.Create(nil, api.Region{Bytes: mem}, api.MemPrivLocalRead, api.VATypeVA); !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("nil PZ: %v", err)
	}
	if mu.n != 0 || lmrs.Len() != 0 {
		t.Fatalf("refused calls took the lock %d times and left %d LMRs", mu.n, lmrs.Len())
	}

	x, err := lmrs.Create(z, api.Region{Bytes: mem}, api.MemPrivLocalRead|api.MemPrivRemoteRead, api.VATypeZB)
	if err != nil {
		t.Fatal(err)
	}
	if x.HandleType() != api.HandleLMR || mu.n != 1 {
		t.Fatalf("handle type %v, lock taken %d times", x.HandleType(), mu.n)
	}
	prm, err := x.Query()
	if err != nil || prm.IA != api.IA(ia) || prm.PZ != api.PZ(z) || prm.Length != 64 || prm.RMRContext == 0 {
		t.Fatalf("Query = %+v, %v", prm, err)
	}
	if r := tab.LMR(prm.LMRContext); r == nil || &r.Mem[0] != &mem[0] {
		t.Fatal("the LMR's context does not reach its memory in the table")
	}

	// A region of another LMR: one of this set shares its memory, one of
	// another set's is no LMR of the IA.
	other := NewLMRs(ia, mu, New[*zone, *ep](), 0)
	y, err := other.Create(z, api.Region{Bytes: make([]byte, 8)}, api.MemPrivLocalRead, api.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lmrs.Create(z, api.Region{Type: api.MemTypeLMR, LMR: y}, api.MemPrivLocalRead, api.VATypeVA); !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("the region of another IA's LMR: %v", err)
	}
	dup, err := lmrs.Create(z, api.Region{Type: api.MemTypeLMR, LMR: x}, api.MemPrivLocalRead, api.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	if dp, _ := dup.Query(); dp.RegisteredAddress != api.AddrOf(mem) || dp.Length != 64 {
		t.Fatalf("an LMR of an LMR's region: %+v", dp)
	}
	if _, err := lmrs.Create(z, api.Region{Bytes: mem}, api.MemPrivLocalRead, api.VATypeVA); !errors.Is(err, api.ErrInsufficientResources) {
		t.Fatalf("a third LMR in a set of two: %v", err)
	}

	// Free: refused while an RMR is bound to it, then gone from the set
	// and the table.
	l := x.(*LMRObject[*zone, *ep])
	l.Reg.Bound = 1
	if err := x.Free(); !errors.Is(err, api.ErrInvalidState) || !lmrs.Has(l) {
		t.Fatalf("Free of a bound LMR: %v", err)
	}
	l.Reg.Bound = 0
	if err := x.Free(); err != nil || lmrs.Has(l) || tab.LMR(prm.LMRContext) != nil || tab.Window(prm.RMRContext) != nil {
		t.Fatalf("Free: %v; still in the set %v", err, lmrs.Has(l))
	}
}

// The RMR base names its handle type, and Param its IA, PZ and binding;
// Query reports Param, under the provider's lock.
func TestRMRBase(t *testing.T) {
	ia, z := &fakeIA{}, &zone{n: 1}
	var mu sync.Mutex
	r := &RMRBase[*fakeIA, *zone, *ep]{IA: ia, PZ: z, Mu: &mu}
	r.Reg.Context = 42
	prm := r.Param()
	if r.HandleType() != api.HandleRMR || prm.IA != api.IA(ia) || prm.PZ != api.PZ(z) || prm.RMRContext != 42 || prm.LMRTriplet.Length != 0 {
		t.Fatalf("HandleType %v, Param %+v", r.HandleType(), prm)
	}
	if q, err := r.Query(); err != nil || q != prm {
		t.Fatalf("Query = %+v, %v; want %+v", q, err, prm)
	}
	mu.Lock()
	queried := make(chan struct{})
	go func() {
		r.Query()
		close(queried)
	}()
	select {
	case <-queried:
		t.Fatal("Query ran without the provider's lock")
	case <-time.After(20 * time.Millisecond):
	}
	mu.Unlock()
	<-queried

	// Target: an LMR of the set, none, another PZ's EP, an unbind.
	tab := New[*zone, *ep]()
	lmrs := NewLMRs(ia, &sync.Mutex{}, tab, 0)
	mem := make([]byte, 64)
	x, err := lmrs.Create(z, api.Region{Bytes: mem}, api.MemPrivLocalRead|api.MemPrivLocalWrite, api.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	lp, _ := x.Query()
	win := api.LMRTriplet{LMRContext: lp.LMRContext, Addr: lp.RegisteredAddress, Length: 16}
	if l, err := r.Target(x, win, api.MemPrivRemoteRead, z); err != nil || l != &x.(*LMRObject[*zone, *ep]).Reg {
		t.Fatalf("Target of the set's LMR = %p, %v", l, err)
	}
	if _, err := r.Target(nil, win, api.MemPrivRemoteRead, z); !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("Target naming no LMR: %v", err)
	}
	if _, err := r.Target(x, win, api.MemPrivRemoteRead, &zone{n: 2}); !errors.Is(err, api.ErrProtectionViolation) {
		t.Fatalf("Target for an EP in another PZ: %v", err)
	}
	if l, err := r.Target(nil, api.LMRTriplet{}, 0, z); err != nil || l != nil {
		t.Fatalf("Target of an unbind = %p, %v", l, err)
	}
	if c := tab.FlushedContext(nil); c != 0 {
		t.Fatalf("a flushed unbind returns context %#x", c)
	}
	if c := tab.FlushedContext(&x.(*LMRObject[*zone, *ep]).Reg); c == 0 || tab.LMR(api.LMRContext(c)) != nil {
		t.Fatalf("a flushed bind returns context %#x, which must be non-zero and name nothing", c)
	}
}

// Bind decides from the EP's state: a full queue and a wrong state are
// refused with nothing bound or posted; a DISCONNECTED EP gets a flushed
// bind with no binding; a CONNECTED one a binding with a fresh context,
// which a failed post gives back. Release withdraws the binding and marks
// the RMR freed.
func TestRMRBind(t *testing.T) {
	ia, z := &fakeIA{}, &zone{n: 1}
	tab := New[*zone, *ep]()
	lmrs := NewLMRs(ia, &sync.Mutex{}, tab, 0)
	x, err := lmrs.Create(z, api.Region{Bytes: make([]byte, 64)}, api.MemPrivLocalRead|api.MemPrivLocalWrite, api.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	l := &x.(*LMRObject[*zone, *ep]).Reg
	lp, _ := x.Query()
	win := api.LMRTriplet{LMRContext: lp.LMRContext, Addr: lp.RegisteredAddress, Length: 16}
	r := &RMRBase[*fakeIA, *zone, *ep]{IA: ia, PZ: z, Mem: tab}
	to := &ep{1}
	var e epattr.Endpoint
	type posted struct {
		b *Binding[*zone, *ep]
		c api.RMRContext
	}
	var got []posted
	var postErr error
	post := func(b *Binding[*zone, *ep], c api.RMRContext) error {
		got = append(got, posted{b, c})
		return postErr
	}
	bind := func(full bool, priv api.MemPriv) (api.RMRContext, error) {
		got = got[:0]
		return r.Bind(x, win, priv, api.VATypeVA, to, &e, z, full, r, post)
	}

	e.State = api.EPConnected
	if _, err := bind(true, api.MemPrivRemoteRead); !errors.Is(err, api.ErrInsufficientResources) || len(got) != 0 || l.Bound != 0 {
		t.Fatalf("a full queue: %v, %d posts, LMR bound %d", err, len(got), l.Bound)
	}
	e.State = api.EPUnconnected
	if _, err := bind(false, api.MemPrivRemoteRead); !errors.Is(err, api.ErrInvalidState) || len(got) != 0 {
		t.Fatalf("an UNCONNECTED EP: %v, %d posts", err, len(got))
	}
	e.State = api.EPDisconnected
	if c, err := bind(true, api.MemPrivRemoteRead); err != nil || len(got) != 1 || got[0].b != nil || got[0].c != c || l.Bound != 0 {
		t.Fatalf("a DISCONNECTED EP: %#x, %v, posts %+v, LMR bound %d", c, err, got, l.Bound)
	}
	e.State = api.EPConnected
	c, err := bind(false, api.MemPrivRemoteRead)
	if err != nil || len(got) != 1 || got[0].b == nil || got[0].c != c || c == 0 || l.Bound != 1 {
		t.Fatalf("a CONNECTED EP: %#x, %v, posts %+v, LMR bound %d", c, err, got, l.Bound)
	}
	tab.FinishBind(&r.Reg, &got[0].b, c, false)
	if w := tab.Window(c); w == nil {
		t.Fatal("the finished bind's context names no window")
	}
	postErr = api.Errorf(api.InvalidState, api.NoSubtype, "refused")
	if _, err := bind(false, api.MemPrivRemoteRead); err != postErr || l.Bound != 0 || tab.Window(c) != nil {
		t.Fatalf("a refused post: %v, LMR bound %d (the old binding is withdrawn, the new one dropped)", err, l.Bound)
	}
	postErr = nil
	c, _ = bind(false, api.MemPrivRemoteRead)
	tab.FinishBind(&r.Reg, &got[0].b, c, false)
	r.Release()
	if !r.Freed || tab.Window(c) != nil || l.Bound != 0 {
		t.Fatalf("Release: freed %v, window %v, LMR bound %d", r.Freed, tab.Window(c), l.Bound)
	}
}
