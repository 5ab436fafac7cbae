package dispatch

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
)

// testEVD is a provider's EVD as the kit means it: the base embedded.
type testEVD struct {
	api.ContextSlot
	EVD
}

func (*testEVD) Free() error { return nil }

func TestEVDBase(t *testing.T) {
	var mu sync.Mutex
	async := &testEVD{}
	async.Init(async, nil, &mu, 4, 8, api.EVDAsync, nil)
	e := &testEVD{}
	e.Init(e, nil, &mu, 1, 8, api.EVDDTO|api.EVDSoftware, &async.EVD)
	var _ api.EVD = e

	// Events come out in order; an overflow names the EVD on the async EVD.
	ev := api.Event{Number: api.DTOCompletionEvent}
	e.Post(&ev, true)
	e.Post(&ev, true)
	var got api.Event
	if err := async.Dequeue(&got); err != nil || got.Number != api.AsyncEVDOverflowEvent || got.Async.Object != api.Object(e) {
		t.Fatalf("overflow report %+v, %v; want ASYNC_ERROR_EVD_OVERFLOW naming the EVD", got, err)
	}
	if n, err := e.Wait(context.Background(), 1, &got); err != nil || n != 0 || got.Number != api.DTOCompletionEvent {
		t.Fatalf("Wait: %d %+v %v", n, got, err)
	}
	if err := e.Resize(9); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("Resize above the limit: %v", err)
	}
	if err := e.Resize(2); err != nil {
		t.Errorf("Resize: %v", err)
	}
	p, err := e.Query()
	if err != nil || p.QLen != 2 || p.Flags != api.EVDDTO|api.EVDSoftware || p.CNO != nil {
		t.Fatalf("Query: %+v %v", p, err)
	}

	// The CNO link counts the EVDs a CNO has, for its Free.
	cno, _ := NewCNOObject(nil, false, nil, &mu, func(*CNOObject) {})
	if err := e.ModifyCNO(cno); err != nil {
		t.Fatalf("ModifyCNO: %v", err)
	}
	if err := cno.Free(); !errors.Is(err, api.ErrInvalidState) {
		t.Fatalf("Free of a CNO an EVD feeds: %v", err)
	}
	if p, _ := e.Query(); p.CNO != api.CNO(cno) {
		t.Fatalf("Query names CNO %v", p.CNO)
	}

	// Release ends it: waiters and calls fail, the CNO is free again.
	mu.Lock()
	err = e.Release()
	again := e.Release()
	mu.Unlock()
	if err != nil || !errors.Is(again, api.ErrInvalidHandle) || !e.Released() {
		t.Fatalf("Release: %v, again: %v", err, again)
	}
	if _, err := e.Query(); !errors.Is(err, api.ErrInvalidHandle) {
		t.Errorf("Query after Release: %v", err)
	}
	if err := e.ModifyCNO(nil); !errors.Is(err, api.ErrInvalidHandle) {
		t.Errorf("ModifyCNO after Release: %v", err)
	}
	if _, err := e.Wait(context.Background(), 1, &got); !errors.Is(err, api.ErrAbort) {
		t.Errorf("Wait after Release: %v", err)
	}
	if err := cno.Free(); err != nil {
		t.Errorf("Free of the CNO once the EVD is released: %v", err)
	}
}

func TestCNOTable(t *testing.T) {
	var mu sync.Mutex
	cnos := NewCNOs(nil, &mu, 2)
	prepared := 0
	cnos.Prepare = func(*CNOObject) { prepared++ }
	a, err := cnos.Create(nil)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	b, fd, err := cnos.CreateFD()
	if err != nil || fd < 0 {
		t.Fatalf("CreateFD: %v, descriptor %d", err, fd)
	}
	if _, err := cnos.Create(nil); !errors.Is(err, api.ErrInsufficientResources) {
		t.Fatalf("Create past the limit: %v", err)
	}
	if err := a.Free(); err != nil || cnos.Len() != 1 || prepared != 2 {
		t.Fatalf("Free: %v; %d left, %d prepared", err, cnos.Len(), prepared)
	}
	waiting := make(chan error)
	go func() { _, err := b.Wait(context.Background()); waiting <- err }()
	for b.(*CNOObject).n.C.Waiters() == 0 {
		runtime.Gosched()
	}
	mu.Lock()
	idle := cnos.CloseAll()
	mu.Unlock()
	idle()
	if err := <-waiting; err != nil {
		t.Fatalf("a waiter of a CNO closed with its IA: %v, want (nil, nil)", err)
	}
	if cnos.Len() != 0 || b.(*CNOObject).FD() != -1 {
		t.Fatalf("after CloseAll: %d CNOs, descriptor %d", cnos.Len(), b.(*CNOObject).FD())
	}
	if _, err := cnos.Create(nil); !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("Create after CloseAll: %v", err)
	}
}

// ownerIA stands for a provider's IA where only its identity matters.
type ownerIA struct {
	api.IA
	n int
}

// Create adds an EVD only to an open IA with room, with a CNO of that IA,
// and links the two.
func TestCreate(t *testing.T) {
	var mu sync.Mutex
	self, other := &ownerIA{n: 1}, &ownerIA{n: 2}
	var base kit.IA
	base.InitIA(&mu, nil)
	evds := kit.NewSet[*testEVD](api.HandleEVD, 1)
	made := 0
	mk := func() *testEVD {
		if mu.TryLock() {
			t.Error("make runs without the IA's lock")
			mu.Unlock()
		}
		made++
		e := &testEVD{}
		e.Init(e, self, &mu, 4, 8, api.EVDDTO, nil)
		return e
	}
	mine, _ := NewCNOObject(nil, false, self, &mu, func(*CNOObject) {})
	theirs, _ := NewCNOObject(nil, false, other, &mu, func(*CNOObject) {})

	if _, err := Create(self, &base, &evds, 9, 8, api.EVDDTO, nil, mk); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("qlen above the limit: %v", err)
	}
	if _, err := Create(self, &base, &evds, 4, 8, api.EVDDTO, theirs, mk); !errors.Is(err, api.ErrInvalidHandle) {
		t.Errorf("another IA's CNO: %v", err)
	}
	e, err := Create(self, &base, &evds, 4, 8, api.EVDDTO, mine, mk)
	if err != nil || !evds.Has(e.(*testEVD)) {
		t.Fatalf("Create: %v, %v; want an EVD in the table", e, err)
	}
	if p, _ := e.Query(); p.CNO != api.CNO(mine) {
		t.Errorf("the EVD feeds %v, want its CNO", p.CNO)
	}
	if e, err := Create(self, &base, &evds, 4, 8, api.EVDDTO, nil, mk); e != nil || !errors.Is(err, api.ErrInsufficientResources) {
		t.Errorf("full table: %v, %v", e, err)
	}
	mu.Lock()
	_ = base.BeginClose(api.CloseAbrupt)
	mu.Unlock()
	evds.Clear()
	if e, err := Create(self, &base, &evds, 4, 8, api.EVDDTO, nil, mk); e != nil || !errors.Is(err, api.ErrInvalidHandle) {
		t.Errorf("closed IA: %v, %v", e, err)
	}
	if made != 1 || evds.Len() != 0 {
		t.Errorf("make ran %d times, table holds %d; want 1 and 0", made, evds.Len())
	}
}

func TestPostAsync(t *testing.T) {
	var mu sync.Mutex
	async := &testEVD{}
	async.Init(async, nil, &mu, 4, 8, api.EVDAsync, nil)
	obj := &testEVD{}
	async.PostAsync(api.AsyncEPBrokenEvent, obj, api.ReasonEPTransferToError)
	var ev api.Event
	if err := async.Dequeue(&ev); err != nil || ev.Number != api.AsyncEPBrokenEvent ||
		ev.Async.Object != api.Object(obj) || ev.Async.Reason != api.ReasonEPTransferToError {
		t.Fatalf("PostAsync delivered %+v, %v", ev, err)
	}
}

// Free's common part refuses the async EVD, unchanged, and releases any
// other, once.
func TestReleaseUnlessAsync(t *testing.T) {
	var mu sync.Mutex
	async := &testEVD{}
	async.Init(async, nil, &mu, 4, 8, api.EVDAsync, nil)
	e := &testEVD{}
	e.Init(e, nil, &mu, 4, 8, api.EVDDTO, &async.EVD)
	if err := async.ReleaseUnlessAsync(); !errors.Is(err, api.ErrInvalidState) || async.Released() {
		t.Fatalf("the async EVD: %v, released %v", err, async.Released())
	}
	if err := e.ReleaseUnlessAsync(); err != nil || !e.Released() {
		t.Fatalf("an EVD: %v, released %v", err, e.Released())
	}
	if err := e.ReleaseUnlessAsync(); !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("again: %v", err)
	}
	if err := async.Release(); err != nil || async.ReleaseUnlessAsync() == nil {
		t.Fatal("the async EVD, released by its IA's close, is not released twice")
	}
}
