package dispatch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/eventq"
)

func TestCheckCreate(t *testing.T) {
	for _, tc := range []struct {
		qlen  int
		flags api.EVDFlags
		ok    bool
	}{
		{1, api.EVDDTO, true},
		{8, Streams, true},
		{0, api.EVDDTO, false},
		{9, api.EVDDTO, false},
		{1, 0, false},
		{1, api.EVDDTO | 0x8000, false},
	} {
		if err := CheckCreate(tc.qlen, 8, tc.flags); (err == nil) != tc.ok || (err != nil && !errors.Is(err, api.ErrInvalidParameter)) {
			t.Errorf("CheckCreate(%d, %#x) = %v; want ok %v", tc.qlen, uint32(tc.flags), err, tc.ok)
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
	if err := PostSE(q, api.EVDSoftware, nil); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("PostSE of nil: %v", err)
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
	a, b := NewCNO(nil, nil), NewCNO(nil, nil)
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
	//lint:ignore SA1012 checking the nil context error
	if _, err := b.Wait(nil); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("Wait(nil) = %v", err)
	}
}
