package kit_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/completion"
)

// Put adds while there is room and returns the object as the api type;
// on a full table it returns a nil interface, not a typed nil.
func TestPut(t *testing.T) {
	s := kit.NewSet[*int](api.HandlePZ, 1)
	x := new(int)
	got, err := kit.Put[any](&s, x)
	if err != nil || got != any(x) || !s.Has(x) {
		t.Fatalf("Put on an empty table: %v, %v, added %v", got, err, s.Has(x))
	}
	got, err = kit.Put[any](&s, new(int))
	if !errors.Is(err, api.ErrInsufficientResources) || got != nil || s.Len() != 1 {
		t.Fatalf("Put on a full table: %v (nil interface: %v), %v, %d objects", got, got == nil, err, s.Len())
	}
}

// Each reaches every object once, and the object it is given may leave
// the table, as an IA's Close has each object remove itself.
func TestEach(t *testing.T) {
	s := kit.NewSet[*int](api.HandleEP, 0)
	for i := range 5 {
		x := i
		s.Add(&x)
	}
	sum, calls := 0, 0
	s.Each(func(x *int) {
		sum += *x
		calls++
		s.Remove(x)
	})
	if sum != 10 || calls != 5 || s.Len() != 0 {
		t.Fatalf("Each: sum %d over %d calls, %d left", sum, calls, s.Len())
	}
}

func TestSetLimitAndInUse(t *testing.T) {
	eps := kit.NewSet[*int](api.HandleEP, 2)
	pzs := kit.NewSet[*int](api.HandlePZ, 0)
	if err := kit.InUse(&eps, &pzs); err != nil {
		t.Fatalf("InUse of empty tables: %v", err)
	}
	a, b, c := new(int), new(int), new(int)
	for _, x := range []*int{a, b} {
		if err := eps.Room(); err != nil {
			t.Fatalf("Room before Add: %v", err)
		}
		eps.Add(x)
	}
	err := eps.Room()
	if !errors.Is(err, api.ErrInsufficientResources) || !strings.Contains(err.Error(), "EPs (2)") {
		t.Fatalf("Room at the limit: %v, want ErrInsufficientResources naming EPs (2)", err)
	}
	if err := pzs.Room(); err != nil {
		t.Fatalf("Room without a limit: %v", err)
	}
	pzs.Add(c)
	err = kit.InUse(&eps, &pzs)
	var de *api.Error
	if !errors.As(err, &de) || de.Type != api.InvalidState || de.Sub != api.SubStateIAInUse {
		t.Fatalf("InUse: %v, want ErrInvalidState/SubStateIAInUse", err)
	}
	if !strings.Contains(err.Error(), "3 object(s): 2 EP, 1 PZ") {
		t.Fatalf("InUse message %q does not say what is left", err)
	}
	if !eps.Remove(a) || eps.Remove(a) || eps.Has(a) || !eps.Has(b) || eps.Len() != 1 {
		t.Fatal("Remove/Has/Len disagree")
	}
	n := 0
	for x := range eps.All() {
		eps.Remove(x)
		n++
	}
	pzs.Clear()
	if n != 1 || kit.InUse(&eps, &pzs) != nil {
		t.Fatalf("All visited %d, InUse after emptying: %v", n, kit.InUse(&eps, &pzs))
	}
}

// A provider that embeds the bases answers the optional calls it leaves
// out with DAT_MODEL_NOT_SUPPORTED, and its own methods win.
type ownSRQ struct{ kit.UnsupportedIA }

func (ownSRQ) CreateSRQ(api.PZ, api.SRQAttr) (api.SRQ, error) { return nil, nil }

func TestUnsupportedBases(t *testing.T) {
	var ia ownSRQ
	if _, err := ia.CreateSRQ(nil, api.SRQAttr{}); err != nil {
		t.Fatalf("the provider's own CreateSRQ lost to the base: %v", err)
	}
	_, fd, err := ia.CreateCNOFD()
	calls := map[string]error{
		"CreateCNOFD": err,
		"CreateRSP":   func() error { _, err := ia.CreateRSP(1, nil, nil); return err }(),
		"CreateEPWithSRQ": func() error {
			_, err := ia.CreateEPWithSRQ(nil, nil, nil, nil, nil, nil)
			return err
		}(),
		"CreateRMR":   func() error { _, err := kit.UnsupportedPZ{}.CreateRMR(); return err }(),
		"DupConnect":  kit.UnsupportedEP{}.DupConnect(nil, 0, nil, 0),
		"Handoff":     kit.UnsupportedCR{}.Handoff(1),
		"RecvQuery":   func() error { _, _, err := kit.UnsupportedEP{}.RecvQuery(); return err }(),
		"Unsupported": kit.Unsupported("a test feature"),
	}
	if fd != -1 {
		t.Errorf("CreateCNOFD returned descriptor %d, want -1", fd)
	}
	for name, err := range calls {
		if !errors.Is(err, api.ErrModelNotSupported) {
			t.Errorf("%s: %v, want ErrModelNotSupported", name, err)
		}
	}
}

// An EP may embed both UnsupportedEP and completion.Posts: no call of the
// one hides or clashes with a call of the other.
var _ interface {
	api.Object
	PostSend([]api.LMRTriplet, api.Cookie, api.CompletionFlags) error
	PostRDMAReadToRMR(api.RMRTriplet, api.Cookie, api.RMRTriplet, api.CompletionFlags) error
	PostSendWithInvalidate([]api.LMRTriplet, api.Cookie, api.CompletionFlags, bool, api.RMRContext) error
	RecvQuery() (int, int, error)
	DupConnect(api.EP, api.Timeout, []byte, api.QOS) error
} = &struct {
	api.Object
	kit.UnsupportedEP
	completion.Posts
}{}

type testIA struct{ kit.IA }

func TestIABase(t *testing.T) {
	var mu sync.Mutex
	var ia testIA
	async := new(struct{ api.EVD })
	ia.InitIA(&mu, async)
	if ia.HandleType() != api.HandleIA {
		t.Fatal("HandleType")
	}
	if e, err := ia.AsyncEVD(); err != nil || e != api.EVD(async) {
		t.Fatalf("AsyncEVD: %v, %v", e, err)
	}
	pzs := kit.NewSet[*int](api.HandlePZ, 0)
	pzs.Add(new(int))
	if err := ia.BeginClose(api.CloseGraceful, &pzs); !errors.Is(err, api.ErrInvalidState) || ia.Closed() {
		t.Fatalf("graceful close with a PZ left: %v, closed %v", err, ia.Closed())
	}
	if err := ia.BeginClose(api.CloseAbrupt, &pzs); err != nil || !ia.Closed() {
		t.Fatalf("abrupt close: %v, closed %v", err, ia.Closed())
	}
	if err := ia.BeginClose(api.CloseAbrupt); !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("second close: %v", err)
	}
	if _, err := ia.AsyncEVD(); !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("AsyncEVD after close: %v", err)
	}
}

// Live and LockClose take the IA's lock themselves: LockClose returns with
// it held only when the close begins.
func TestIALiveAndLockClose(t *testing.T) {
	var mu sync.Mutex
	var ia testIA
	ia.InitIA(&mu, new(struct{ api.EVD }))
	if err := ia.Live(); err != nil {
		t.Fatalf("Live on an open IA: %v", err)
	}
	pzs := kit.NewSet[*int](api.HandlePZ, 0)
	pzs.Add(new(int))
	if err := ia.LockClose(api.CloseGraceful, &pzs); !errors.Is(err, api.ErrInvalidState) {
		t.Fatalf("graceful LockClose with a PZ left: %v", err)
	}
	if !mu.TryLock() {
		t.Fatal("a failed LockClose kept the lock")
	}
	mu.Unlock()
	if err := ia.LockClose(api.CloseAbrupt, &pzs); err != nil {
		t.Fatalf("abrupt LockClose: %v", err)
	}
	if mu.TryLock() {
		t.Fatal("LockClose returned nil without the lock held")
	}
	kit.ClearAll(&pzs)
	mu.Unlock()
	if pzs.Len() != 0 {
		t.Fatalf("ClearAll left %d PZ(s)", pzs.Len())
	}
	if err := ia.Live(); !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("Live after close: %v", err)
	}
	if err := ia.LockClose(api.CloseAbrupt); !errors.Is(err, api.ErrInvalidHandle) || !mu.TryLock() {
		t.Fatalf("second LockClose: %v (or it kept the lock)", err)
	}
	mu.Unlock()
}

// WhileOpen runs f under the lock on an open IA only.
func TestIAWhileOpen(t *testing.T) {
	var mu sync.Mutex
	var ia testIA
	ia.InitIA(&mu, nil)
	ran := false
	want := errors.New("f's error")
	err := ia.WhileOpen(func() error {
		if mu.TryLock() {
			t.Error("f runs without the lock")
			mu.Unlock()
		}
		ran = true
		return want
	})
	if !ran || err != want {
		t.Fatalf("WhileOpen on an open IA: ran %v, %v", ran, err)
	}
	mu.Lock()
	_ = ia.BeginClose(api.CloseAbrupt)
	mu.Unlock()
	ran = false
	if err := ia.WhileOpen(func() error { ran = true; return nil }); ran || !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("WhileOpen on a closed IA: ran %v, %v", ran, err)
	}
}

// testPZ and otherPZ are PZs of two providers.
type testPZ struct{ api.ContextSlot }
type otherPZ struct{ api.ContextSlot }

func (*testPZ) HandleType() api.HandleType   { return api.HandlePZ }
func (*testPZ) Query() (api.PZParam, error)  { return api.PZParam{}, nil }
func (*testPZ) CreateRMR() (api.RMR, error)  { return nil, nil }
func (*testPZ) Free() error                  { return nil }
func (*otherPZ) HandleType() api.HandleType  { return api.HandlePZ }
func (*otherPZ) Query() (api.PZParam, error) { return api.PZParam{}, nil }
func (*otherPZ) CreateRMR() (api.RMR, error) { return nil, nil }
func (*otherPZ) Free() error                 { return nil }

func TestPZArg(t *testing.T) {
	z := &testPZ{}
	if got, err := kit.PZArg[*testPZ](z); err != nil || got != z {
		t.Fatalf("PZArg of the provider's PZ: %v, %v", got, err)
	}
	var nilPZ *testPZ
	for name, x := range map[string]api.PZ{"nil": nil, "typed nil": nilPZ, "another provider's": &otherPZ{}} {
		got, err := kit.PZArg[*testPZ](x)
		var de *api.Error
		if got != nil || !errors.As(err, &de) || de.Type != api.InvalidHandle || de.Sub != api.SubHandlePZ {
			t.Errorf("PZArg of a %s PZ: %v, %v; want nil and ErrInvalidHandle/SubHandlePZ", name, got, err)
		}
	}
}

// The PZ base answers for its handle type and names its IA in Query.
func TestPZBase(t *testing.T) {
	type fakeIA struct{ api.IA }
	ia := &fakeIA{}
	z := &kit.PZ[*fakeIA]{IA: ia}
	prm, err := z.Query()
	if z.HandleType() != api.HandlePZ || err != nil || prm.IA != api.IA(ia) {
		t.Fatalf("HandleType %v, Query %+v, %v", z.HandleType(), prm, err)
	}
}

// Free runs check and release with the lock held, and a refusing check
// leaves the object in its table with nothing released.
func TestFree(t *testing.T) {
	var mu sync.Mutex
	s := kit.NewSet[*int](api.HandleSRQ, 0)
	x := new(int)
	s.Add(x)
	held := func() bool {
		if mu.TryLock() {
			mu.Unlock()
			return false
		}
		return true
	}
	released := false
	refuse := func() error {
		if !held() {
			t.Error("check ran without the lock")
		}
		return api.Errorf(api.InvalidState, api.SubStateSRQInUse, "in use")
	}
	if err := kit.Free(&mu, &s, x, refuse, func() { released = true }); !errors.Is(err, api.ErrInvalidState) || !s.Has(x) || released {
		t.Fatalf("Free refused by its check: %v, still in the table %v, released %v", err, s.Has(x), released)
	}
	release := func() {
		if !held() {
			t.Error("release ran without the lock")
		}
		released = true
	}
	if err := kit.Free(&mu, &s, x, func() error { return nil }, release); err != nil || s.Has(x) || !released {
		t.Fatalf("Free: %v, still in the table %v, released %v", err, s.Has(x), released)
	}
	y := new(int)
	s.Add(y)
	if err := kit.Free(&mu, &s, y, nil, nil); err != nil || s.Len() != 0 || held() {
		t.Fatalf("Free with neither function: %v, %d left, lock held after %v", err, s.Len(), held())
	}
}

// Create adds under the lock and, on a full table, returns a nil
// interface as Put does.
func TestCreate(t *testing.T) {
	var mu sync.Mutex
	s := kit.NewSet[*int](api.HandlePZ, 1)
	x := new(int)
	if got, err := kit.Create[any](&mu, &s, x); err != nil || got != any(x) || !s.Has(x) {
		t.Fatalf("Create: %v, %v", got, err)
	}
	if got, err := kit.Create[any](&mu, &s, new(int)); !errors.Is(err, api.ErrInsufficientResources) || got != nil {
		t.Fatalf("Create on a full table: %v, %v", got, err)
	}
	if !mu.TryLock() {
		t.Fatal("Create left the lock held")
	}
}
