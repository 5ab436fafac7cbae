package eventq

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/godat/godat/api"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeEVD stands in for a provider's EVD as the owner of a queue.
type fakeEVD struct{ api.EVD }

func dto(c api.Cookie) *api.Event {
	return &api.Event{Number: api.DTOCompletionEvent, DTO: api.DTOCompletionData{Cookie: c}}
}

func isErr(err error, t api.ReturnType, sub api.Subtype) bool {
	return errors.Is(err, &api.Error{Type: t, Sub: sub})
}

func TestFIFOAndOwner(t *testing.T) {
	owner := &fakeEVD{}
	q := New(4, owner)
	for c := api.Cookie(1); c <= 3; c++ {
		if r := q.Post(dto(c), true); r != Posted {
			t.Fatalf("Post = %v", r)
		}
	}
	if q.Len() != 3 || q.Cap() != 4 {
		t.Fatalf("len %d cap %d", q.Len(), q.Cap())
	}
	var ev api.Event
	for c := api.Cookie(1); c <= 3; c++ {
		if err := q.Dequeue(&ev); err != nil {
			t.Fatal(err)
		}
		if ev.DTO.Cookie != c || ev.EVD != owner {
			t.Fatalf("got cookie %d evd %v, want %d", ev.DTO.Cookie, ev.EVD, c)
		}
	}
	if err := q.Dequeue(&ev); !errors.Is(err, api.ErrQueueEmpty) {
		t.Fatalf("Dequeue on empty = %v", err)
	}
}

func TestOverflowDiscardsAndReportsOncePerEpisode(t *testing.T) {
	q := New(2, nil)
	q.Post(dto(1), true)
	q.Post(dto(2), true)
	if r := q.Post(dto(3), true); r != OverflowBegan {
		t.Fatalf("first overflow = %v", r)
	}
	if r := q.Post(dto(4), true); r != Overflowed {
		t.Fatalf("second overflow = %v", r)
	}
	if q.Dropped() != 2 {
		t.Fatalf("dropped = %d", q.Dropped())
	}
	var ev api.Event
	q.Dequeue(&ev)
	if ev.DTO.Cookie != 1 {
		t.Fatalf("cookie %d", ev.DTO.Cookie)
	}
	q.Post(dto(5), true)
	if r := q.Post(dto(6), true); r != OverflowBegan {
		t.Fatalf("overflow after room was made = %v, want a new episode", r)
	}
	q.Dequeue(&ev)
	q.Dequeue(&ev)
	if ev.DTO.Cookie != 5 {
		t.Fatalf("queued events changed: last cookie %d", ev.DTO.Cookie)
	}
}

func TestPostSEFullIsNotOverflow(t *testing.T) {
	q := New(1, nil)
	if err := q.PostSE(&api.Event{Number: api.SoftwareEvent}); err != nil {
		t.Fatal(err)
	}
	if err := q.PostSE(&api.Event{Number: api.SoftwareEvent}); !errors.Is(err, api.ErrQueueFull) {
		t.Fatalf("PostSE on full = %v", err)
	}
	if q.Dropped() != 0 {
		t.Fatal("PostSE counted a drop")
	}
	var ev api.Event
	q.Dequeue(&ev)
	if r := q.Post(dto(1), true); r != Posted {
		t.Fatalf("post after PostSE full = %v", r)
	}
}

func TestWaitReturnsQueuedEventsAtOnce(t *testing.T) {
	q := New(4, nil)
	q.Post(dto(1), false) // unsignalled events count toward the threshold
	q.Post(dto(2), true)
	var ev api.Event
	n, err := q.Wait(context.Background(), 2, &ev)
	if err != nil || n != 1 || ev.DTO.Cookie != 1 {
		t.Fatalf("Wait = %d, %v, cookie %d", n, err, ev.DTO.Cookie)
	}
}

func TestWaitThresholdAndNotification(t *testing.T) {
	q := New(8, nil)
	done := make(chan int)
	go func() {
		var ev api.Event
		n, err := q.Wait(context.Background(), 3, &ev)
		if err != nil {
			t.Error(err)
		}
		done <- n
	}()
	waitUntil(t, q.Waiting)
	q.Post(dto(1), true)
	q.Post(dto(2), true)
	q.Post(dto(3), false) // threshold met, but the event does not notify
	select {
	case <-done:
		t.Fatal("woken by a non-notifying event")
	case <-time.After(20 * time.Millisecond):
	}
	q.Post(dto(4), true)
	if n := <-done; n != 3 {
		t.Fatalf("nmore = %d, want 3", n)
	}
}

func TestWaitContext(t *testing.T) {
	q := New(2, nil)
	var ev api.Event
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	q.Post(dto(1), true)
	n, err := q.Wait(ctx, 2, &ev)
	if !errors.Is(err, api.ErrTimeoutExpired) || !errors.Is(err, context.DeadlineExceeded) || n != 1 {
		t.Fatalf("Wait with deadline = %d, %v", n, err)
	}
	if q.Len() != 1 {
		t.Fatal("timed-out Wait dequeued an event")
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() {
		waitUntil(t, q.Waiting)
		cancel2()
	}()
	if _, err := q.Wait(ctx2, 2, &ev); !errors.Is(err, api.ErrInterruptedCall) {
		t.Fatalf("Wait cancelled = %v", err)
	}
}

func TestOneWaiterAtATime(t *testing.T) {
	q := New(2, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ev api.Event
		q.Wait(ctx, 1, &ev)
	}()
	waitUntil(t, q.Waiting)
	var ev api.Event
	if _, err := q.Wait(context.Background(), 1, &ev); !isErr(err, api.InvalidState, api.SubStateEVDWaiter) {
		t.Fatalf("second Wait = %v", err)
	}
	if err := q.Dequeue(&ev); !isErr(err, api.InvalidState, api.SubStateEVDWaiter) {
		t.Fatalf("Dequeue with a waiter = %v", err)
	}
	cancel()
	wg.Wait()
}

func TestUnwaitable(t *testing.T) {
	q := New(2, nil)
	errc := blockedWait(t, q, 1)
	q.SetUnwaitable(true)
	if err := <-errc; !isErr(err, api.InvalidState, api.SubStateEVDUnwaitable) {
		t.Fatalf("woken waiter got %v", err)
	}
	var ev api.Event
	if _, err := q.Wait(context.Background(), 1, &ev); !isErr(err, api.InvalidState, api.SubStateEVDUnwaitable) {
		t.Fatalf("Wait on unwaitable = %v", err)
	}
	if q.State()&api.EVDStateUnwaitable == 0 {
		t.Fatal("state does not say unwaitable")
	}
	q.Post(dto(1), true)
	if err := q.Dequeue(&ev); err != nil {
		t.Fatalf("Dequeue on unwaitable = %v", err)
	}
	q.SetUnwaitable(false)
	q.Post(dto(2), true)
	if _, err := q.Wait(context.Background(), 1, &ev); err != nil || ev.DTO.Cookie != 2 {
		t.Fatalf("Wait after ClearUnwaitable = %v", err)
	}
}

func TestCloseAbortsWaiter(t *testing.T) {
	q := New(2, nil)
	errc := blockedWait(t, q, 1)
	q.Close()
	if err := <-errc; !errors.Is(err, api.ErrAbort) {
		t.Fatalf("waiter after Close got %v", err)
	}
	if r := q.Post(dto(1), true); r != Closed {
		t.Fatalf("Post after Close = %v", r)
	}
}

func TestWaitThresholdRange(t *testing.T) {
	q := New(2, nil)
	var ev api.Event
	for _, th := range []int{0, -1, 3} {
		if _, err := q.Wait(context.Background(), th, &ev); !errors.Is(err, api.ErrInvalidParameter) {
			t.Fatalf("threshold %d: %v", th, err)
		}
	}
}

func TestResizeKeepsEvents(t *testing.T) {
	q := New(3, nil)
	var ev api.Event
	q.Post(dto(1), true)
	q.Dequeue(&ev) // move head off zero
	for c := api.Cookie(2); c <= 4; c++ {
		q.Post(dto(c), true)
	}
	if err := q.Resize(2); !errors.Is(err, api.ErrInvalidState) {
		t.Fatalf("shrink below content = %v", err)
	}
	if err := q.Resize(0); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("Resize(0) = %v", err)
	}
	q.Post(dto(99), true) // overflow
	if err := q.Resize(5); err != nil {
		t.Fatal(err)
	}
	if r := q.Post(dto(5), true); r != Posted {
		t.Fatalf("post after grow = %v", r)
	}
	for c := api.Cookie(2); c <= 5; c++ {
		if err := q.Dequeue(&ev); err != nil || ev.DTO.Cookie != c {
			t.Fatalf("after resize got %d (%v), want %d", ev.DTO.Cookie, err, c)
		}
	}
	if q.Cap() != 5 {
		t.Fatalf("cap = %d", q.Cap())
	}
}

func TestCNOTriggeredOnlyWhenEnabledAndNoWaiter(t *testing.T) {
	owner := &fakeEVD{}
	q := New(4, owner)
	c := NewCNO(nil)
	q.SetCNO(c)
	q.Post(dto(1), false) // unsignalled: no trigger
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if evd, err := c.Wait(ctx); evd != nil || !errors.Is(err, api.ErrTimeoutExpired) {
		t.Fatalf("CNO wait after unsignalled event = %v, %v", evd, err)
	}
	q.SetEnabled(false)
	q.Post(dto(2), true)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	if evd, _ := c.Wait(ctx2); evd != nil {
		t.Fatal("disabled EVD triggered the CNO")
	}
	q.SetEnabled(true)
	q.Post(dto(3), true)
	if evd, err := c.Wait(context.Background()); evd != owner || err != nil {
		t.Fatalf("CNO wait = %v, %v", evd, err)
	}

	// A direct waiter on the EVD pre-empts the CNO.
	var ev api.Event
	for q.Dequeue(&ev) == nil {
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.Wait(context.Background(), 1, &ev)
	}()
	waitUntil(t, q.Waiting)
	q.Post(dto(4), true)
	<-done
	ctx3, cancel3 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel3()
	if evd, _ := c.Wait(ctx3); evd != nil {
		t.Fatal("CNO triggered although a waiter was blocked on the EVD")
	}
	c.Close()
	c.WaitIdle()
}

func TestCNOWaiterWokenAndAgentCalled(t *testing.T) {
	owner := &fakeEVD{}
	var mu sync.Mutex
	var got []api.EVD
	called := make(chan struct{}, 10)
	c := NewCNO(func(e api.EVD) {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
		called <- struct{}{}
	})
	q := New(4, owner)
	q.SetCNO(c)
	res := make(chan api.EVD)
	go func() {
		e, _ := c.Wait(context.Background())
		res <- e
	}()
	waitUntil(t, func() bool { return c.Waiters() == 1 })
	q.Post(dto(1), true)
	if e := <-res; e != owner {
		t.Fatalf("CNO wait returned %v", e)
	}
	<-called
	q.Post(dto(2), true)
	<-called
	c.Close()
	c.WaitIdle()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != owner {
		t.Fatalf("agent calls = %v", got)
	}
}

func TestCNOReleaseAndClose(t *testing.T) {
	c := NewCNO(nil)
	res := make(chan error)
	go func() {
		e, err := c.Wait(context.Background())
		if e != nil {
			t.Error("released waiter got an EVD")
		}
		res <- err
	}()
	waitUntil(t, func() bool { return c.Waiters() == 1 })
	c.ReleaseWaiters()
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := c.Wait(context.Background())
		res <- err
	}()
	waitUntil(t, func() bool { return c.Waiters() == 1 })
	c.Close()
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if e, err := NewCNO(nil).Wait(ctx); e != nil || !errors.Is(err, api.ErrInterruptedCall) {
		t.Fatalf("cancelled CNO wait = %v %v", e, err)
	}
}

func TestPostDequeueAllocatesNothing(t *testing.T) {
	q := New(16, &fakeEVD{})
	ev := dto(7)
	var out api.Event
	if a := testing.AllocsPerRun(1000, func() {
		q.Post(ev, true)
		q.Dequeue(&out)
	}); a != 0 {
		t.Fatalf("allocs/op = %v", a)
	}
}

func TestConcurrentPostersOneWaiter(t *testing.T) {
	const producers, per = 4, 500
	q := New(producers*per, nil)
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				q.Post(dto(api.Cookie(i)), true)
			}
		}()
	}
	var ev api.Event
	for got := 0; got < producers*per; got++ {
		if _, err := q.Wait(context.Background(), 1, &ev); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

// BenchmarkPostDequeue measures a post and a dequeue of one event, beside
// the same through a buffered Go channel of events, the plain-Go baseline.
func BenchmarkPostDequeue(b *testing.B) {
	b.Run("queue", func(b *testing.B) {
		q := New(64, &fakeEVD{})
		ev := dto(1)
		var out api.Event
		b.ReportAllocs()
		for b.Loop() {
			q.Post(ev, true)
			q.Dequeue(&out)
		}
	})
	b.Run("chan", func(b *testing.B) {
		c := make(chan api.Event, 64)
		ev := dto(1)
		var out api.Event
		b.ReportAllocs()
		for b.Loop() {
			c <- *ev
			out = <-c
		}
		_ = out
	})
}

// blockedWait starts a Wait on q for threshold events in a goroutine and
// returns, once q has it as its waiter, the channel that gets its error.
func blockedWait(t *testing.T, q *Queue, threshold int) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		var ev api.Event
		_, err := q.Wait(context.Background(), threshold, &ev)
		errc <- err
	}()
	waitUntil(t, q.Waiting)
	return errc
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestDrivenWait checks BeginWait, Check and EndWait: a wait whose caller
// blocks by itself and is kicked where Wait would be woken.
func TestDrivenWait(t *testing.T) {
	q := New(4, nil)
	var ev api.Event
	if done, _, err := q.BeginWait(1, &ev); !done || !errors.Is(err, api.ErrInternal) {
		t.Fatalf("BeginWait without a kick function: %v, %v", done, err)
	}
	kicks := 0
	q.SetKick(func() { kicks++ })
	if done, _, err := q.BeginWait(5, &ev); !done || !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("BeginWait past the queue length: %v, %v", done, err)
	}
	// An event already queued ends the wait at once.
	q.Post(&api.Event{Number: api.SoftwareEvent}, true)
	if done, n, err := q.BeginWait(1, &ev); !done || err != nil || n != 0 || ev.Number != api.SoftwareEvent {
		t.Fatalf("BeginWait with an event queued: %v, %d, %v", done, n, err)
	}
	// Waiting for two: the first post does not kick, the second does.
	if done, _, _ := q.BeginWait(2, &ev); done {
		t.Fatal("BeginWait on an empty queue is done")
	}
	if _, err := q.Wait(context.Background(), 1, &ev); !errors.Is(err, api.ErrInvalidState) {
		t.Fatalf("a second waiter: %v, want DAT_INVALID_STATE", err)
	}
	if err := q.Dequeue(&ev); !errors.Is(err, api.ErrInvalidState) {
		t.Fatalf("Dequeue during a wait: %v, want DAT_INVALID_STATE", err)
	}
	q.Post(&api.Event{Number: api.SoftwareEvent, Software: 1}, true)
	if done, _, _ := q.Check(&ev); done || kicks != 0 {
		t.Fatalf("below the threshold: done %v, %d kicks", done, kicks)
	}
	q.Post(&api.Event{Number: api.SoftwareEvent, Software: 2}, true)
	if kicks != 1 {
		t.Fatalf("%d kicks at the threshold, want 1", kicks)
	}
	if done, n, err := q.Check(&ev); !done || err != nil || n != 1 || ev.Software != 1 {
		t.Fatalf("Check at the threshold: %v, %d, %v, %+v", done, n, err, ev.Software)
	}
	if err := q.Dequeue(&ev); err != nil {
		t.Fatalf("Dequeue after the wait: %v", err)
	}
	// Unwaitable and Close kick and end the wait; EndWait abandons it.
	q.BeginWait(1, &ev)
	q.SetUnwaitable(true)
	if done, _, err := q.Check(&ev); kicks != 2 || !done || !errors.Is(err, api.ErrInvalidState) {
		t.Fatalf("unwaitable: %d kicks, %v, %v", kicks, done, err)
	}
	q.SetUnwaitable(false)
	q.BeginWait(1, &ev)
	if n := q.EndWait(); n != 0 {
		t.Fatalf("EndWait = %d", n)
	}
	if _, _, err := q.BeginWait(1, &ev); err != nil {
		t.Fatalf("BeginWait after EndWait: %v", err)
	}
	q.Close()
	if done, _, err := q.Check(&ev); kicks != 3 || !done || !errors.Is(err, api.ErrAbort) {
		t.Fatalf("closed: %d kicks, %v, %v", kicks, done, err)
	}
}

// Notify kicks a driven waiter (BeginWait) whose threshold the silently
// posted events meet, as it wakes one blocked in Wait: the verbs provider
// raises a solicited-wait CQ's notification this way, and its waiter
// sleeps on what the kick writes to.
func TestDrivenWaitNotify(t *testing.T) {
	q := New(4, nil)
	kicks := 0
	q.SetKick(func() { kicks++ })
	var ev api.Event
	if done, _, _ := q.BeginWait(1, &ev); done {
		t.Fatal("BeginWait on an empty queue is done")
	}
	q.Post(&api.Event{Number: api.SoftwareEvent}, false)
	if kicks != 0 {
		t.Fatalf("a silent post kicked the waiter %d times", kicks)
	}
	q.Notify()
	if kicks != 1 {
		t.Fatalf("Notify at the threshold kicked the waiter %d times, want 1", kicks)
	}
	if done, _, err := q.Check(&ev); !done || err != nil || ev.Number != api.SoftwareEvent {
		t.Fatalf("Check after Notify: %v, %v, %v", done, err, ev.Number)
	}
}

// Notify wakes a waiter whose threshold the queued (non-notifying) events
// meet, and triggers the CNO when nobody waits.
func TestQueueNotifyAfterSilentPost(t *testing.T) {
	owner := &fakeEVD{}
	q := New(4, owner)
	ev := api.Event{Number: api.SoftwareEvent}
	done := blockedWait(t, q, 2)
	q.Post(&ev, false)
	q.Post(&ev, false)
	select {
	case err := <-done:
		t.Fatalf("a silent post woke the waiter (%v)", err)
	case <-time.After(20 * time.Millisecond):
	}
	q.Notify()
	if err := <-done; err != nil {
		t.Fatalf("Wait after Notify: %v", err)
	}

	c := NewCNO(nil)
	q.SetCNO(c)
	q.Notify()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if e, err := c.Wait(ctx); err != nil || e != owner {
		t.Fatalf("CNO after Notify: %v, %v", e, err)
	}
}
