package dispatch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/eventq"
)

func TestCheckCreate(t *testing.T) {
	for _, tc := range []struct {
		qlen int
		ok   bool
	}{{1, true}, {8, true}, {0, false}, {9, false}} {
		if err := CheckCreate(tc.qlen, 8); (err == nil) != tc.ok || (err != nil && !errors.Is(err, api.ErrInvalidParameter)) {
			t.Errorf("CheckCreate(%d) = %v; want ok %v", tc.qlen, err, tc.ok)
		}
	}
}

func TestPostOverflow(t *testing.T) {
	async := eventq.New(2, nil)
	q := eventq.New(1, nil)
	ev := api.Event{Number: api.DTOCompletionEvent}
	for range 3 {
		Post(q, &ev, true, nil, async)
	}
	if q.Len() != 1 || async.Len() != 1 {
		t.Fatalf("after 3 posts to a queue of 1: %d queued, %d overflow reports; want 1 and 1", q.Len(), async.Len())
	}
	var got api.Event
	if err := async.Dequeue(&got); err != nil || got.Number != api.AsyncEVDOverflowEvent || got.Async.Reason != api.ReasonEVDOverflow {
		t.Fatalf("overflow report %+v, %v", got, err)
	}
	for range 3 {
		Post(async, &ev, true, nil, async) // the async EVD does not report on itself
	}
	if async.Len() != 2 || async.Dropped() != 1 {
		t.Fatalf("async queue holds %d and dropped %d; want 2 and 1", async.Len(), async.Dropped())
	}
}

func TestPostSE(t *testing.T) {
	q := eventq.New(1, nil)
	if err := PostSE(q, api.EVDDTO, &api.Event{}); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("PostSE without the software stream: %v", err)
	}
	if err := PostSE(q, api.EVDSoftware, &api.Event{Number: api.DTOCompletionEvent, Software: 7}); err != nil {
		t.Fatal(err)
	}
	var got api.Event
	if err := q.Dequeue(&got); err != nil || got.Number != api.SoftwareEvent || got.Software != 7 {
		t.Errorf("software event %+v, %v", got, err)
	}
}

func TestAttachAndFree(t *testing.T) {
	a, b := CNO{C: eventq.NewCNO(nil)}, CNO{C: eventq.NewCNO(nil)}
	defer a.C.Close()
	defer b.C.Close()
	q := eventq.New(1, nil)
	cur := Attach(q, nil, &a)
	if cur != &a || a.EVDs != 1 {
		t.Fatalf("attached: %p (want %p), %d EVDs", cur, &a, a.EVDs)
	}
	if err := a.Free(); !errors.Is(err, api.ErrInvalidState) {
		t.Fatalf("Free of a fed CNO: %v", err)
	}
	done := make(chan api.EVD, 1)
	go func() {
		evd, _ := a.Wait(context.Background())
		done <- evd
	}()
	for a.C.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	cur = Attach(q, cur, &b)
	if a.EVDs != 0 || b.EVDs != 1 || cur != &b {
		t.Fatalf("moved: a %d, b %d EVDs", a.EVDs, b.EVDs)
	}
	if evd := <-done; evd != nil {
		t.Errorf("a waiter on a CNO left without EVDs got %v; want nil", evd)
	}
	if Attach(q, cur, nil) != nil || b.EVDs != 0 {
		t.Fatal("detach")
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
}

// fakeIA stands for a provider's IA; fakeCNO for a CNO of another kind.
type (
	fakeIA  struct{ api.IA }
	fakeCNO struct{ api.CNO }
)

func wantErr(t *testing.T, err error, typ api.ReturnType, sub api.Subtype, what string) {
	t.Helper()
	if !errors.Is(err, &api.Error{Type: typ, Sub: sub}) {
		t.Fatalf("%s: %v; want %v (%v)", what, err, typ, sub)
	}
}

func TestCNOObject(t *testing.T) {
	ia, other := &fakeIA{}, &fakeIA{}
	var mu sync.Mutex
	var released []*CNOObject
	o, _ := NewCNOObject(nil, false, ia, &mu, func(c *CNOObject) {
		if mu.TryLock() {
			mu.Unlock()
			t.Error("release called without the provider lock")
		}
		released = append(released, c)
	})
	if o.HandleType() != api.HandleCNO {
		t.Errorf("HandleType %v", o.HandleType())
	}
	agent := func(api.EVD) {}
	if err := o.ModifyAgent(agent); err != nil {
		t.Fatal(err)
	}
	p, err := o.Query()
	if err != nil || p.IA != ia || p.Agent == nil {
		t.Fatalf("Query: %+v, %v", p, err)
	}

	mu.Lock()
	if c, err := AsCNO(nil, ia); c != nil || err != nil {
		t.Errorf("AsCNO(nil) = %p, %v", c, err)
	}
	_, errForeign := AsCNO(fakeCNO{}, ia)
	_, errNilObj := AsCNO((*CNOObject)(nil), ia)
	_, errOtherIA := AsCNO(o, other)
	c, err := AsCNO(o, ia)
	mu.Unlock()
	wantErr(t, errForeign, api.InvalidHandle, api.SubHandleCNO, "AsCNO of a CNO of another kind")
	wantErr(t, errNilObj, api.InvalidHandle, api.SubHandleCNO, "AsCNO of a nil *CNOObject")
	wantErr(t, errOtherIA, api.InvalidHandle, api.SubHandleCNO, "AsCNO for another IA")
	if err != nil || c != &o.n || c.Owner != o {
		t.Fatalf("AsCNO = %p, %v; want the object's state", c, err)
	}

	q := eventq.New(1, nil)
	mu.Lock()
	cur := Attach(q, nil, c)
	mu.Unlock()
	wantErr(t, o.Free(), api.InvalidState, api.SubStateCNOInUse, "Free of a CNO an EVD feeds")
	if _, err := o.Query(); err != nil {
		t.Fatalf("Query after a refused Free: %v", err)
	}
	mu.Lock()
	Attach(q, cur, nil)
	mu.Unlock()

	done := make(chan error, 1)
	go func() {
		_, err := o.Wait(context.Background())
		done <- err
	}()
	for o.n.C.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	wantErr(t, o.Free(), api.InvalidState, api.SubStateCNOInUse, "Free of a CNO a goroutine waits on")
	o.n.C.ReleaseWaiters()
	if err := <-done; err != nil {
		t.Fatalf("released waiter: %v", err)
	}

	if err := o.Free(); err != nil {
		t.Fatalf("Free: %v", err)
	}
	if len(released) != 1 || released[0] != o {
		t.Fatalf("release calls: %v", released)
	}
	_, err = o.Query()
	wantErr(t, err, api.InvalidHandle, api.SubHandleCNO, "Query after Free")
	wantErr(t, o.Free(), api.InvalidHandle, api.SubHandleCNO, "second Free")
	mu.Lock()
	_, err = AsCNO(o, ia)
	mu.Unlock()
	wantErr(t, err, api.InvalidHandle, api.SubHandleCNO, "AsCNO of a freed CNO")
	if len(released) != 1 {
		t.Fatalf("release called %d times", len(released))
	}
}

func TestCNOObjectClose(t *testing.T) {
	ia := &fakeIA{}
	var mu sync.Mutex
	o, _ := NewCNOObject(nil, false, ia, &mu, nil)
	done := make(chan api.EVD, 1)
	go func() {
		evd, _ := o.Wait(context.Background())
		done <- evd
	}()
	for o.n.C.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	o.Close()
	_, err := AsCNO(o, ia)
	mu.Unlock()
	o.WaitIdle()
	if evd := <-done; evd != nil {
		t.Errorf("waiter on a closed CNO got %v; want nil", evd)
	}
	wantErr(t, err, api.InvalidHandle, api.SubHandleCNO, "AsCNO of a CNO closed with its IA")
	_, err = o.Query()
	wantErr(t, err, api.InvalidHandle, api.SubHandleCNO, "Query of a CNO closed with its IA")
	wantErr(t, o.Free(), api.InvalidHandle, api.SubHandleCNO, "Free of a CNO closed with its IA")
}

// TestCNOResults checks that a failed constructor gives a nil interface
// (not a typed nil) and descriptor -1, and a CNO with a descriptor gives
// its descriptor.
func TestCNOResults(t *testing.T) {
	fail := api.Errorf(api.InsufficientResources, api.NoSubtype, "no descriptors")
	if c, err := CNOResult(nil, fail); c != nil || err != fail {
		t.Fatalf("CNOResult on error = %v, %v", c, err)
	}
	if c, fd, err := FDCNOResult(nil, fail); c != nil || fd != -1 || err != fail {
		t.Fatalf("FDCNOResult on error = %v, %d, %v", c, fd, err)
	}
	var mu sync.Mutex
	o, err := NewCNOObject(nil, true, &fakeIA{}, &mu, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, fd, err := FDCNOResult(o, nil)
	if c != o || fd < 0 || fd != o.FD() || err != nil {
		t.Fatalf("FDCNOResult = %v, %d, %v; want the CNO and its descriptor", c, fd, err)
	}
	if err := o.Free(); err != nil {
		t.Fatal(err)
	}
	if o.FD() != -1 {
		t.Fatal("a freed CNO still reports a descriptor")
	}
}

func TestCheckOpen(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if n, err := CheckOpen(ctx, api.OpenParams{}, 8); err != nil || n != 1 {
		t.Errorf("no queue length asked: %d, %v; want 1", n, err)
	}
	if n, err := CheckOpen(ctx, api.OpenParams{AsyncEVDQLen: 8}, 8); err != nil || n != 8 {
		t.Errorf("the largest queue length: %d, %v", n, err)
	}
	if _, err := CheckOpen(ctx, api.OpenParams{AsyncEVDQLen: 9}, 8); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("too long a queue: %v", err)
	}
	cancel()
	if _, err := CheckOpen(ctx, api.OpenParams{}, 8); err == nil {
		t.Error("an ended context opens")
	}
}
