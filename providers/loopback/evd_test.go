package loopback

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/godat/godat/api"
)

func TestEVDOverflowReportsOncePerEpisode(t *testing.T) {
	a, b := newNode(t), newNode(t)
	small := a.evd(2, api.EVDDTO)
	ea, err := a.ia.CreateEP(a.pz, a.recv, small, a.connEVD, nil)
	must(t, err, "CreateEP")
	eb := b.ep(nil)
	q := b.listen(api.PSPConsumer)
	must(t, b.request(ea, q).Accept(eb, nil), "Accept")
	a.expect(a.connEVD, api.ConnectionEstablishedEvent)

	src := a.region(8, api.MemPrivAll)
	dst := b.region(8, api.MemPrivAll)
	for c := api.Cookie(1); c <= 4; c++ {
		must(t, ea.PostRDMAWrite(src.iov(0, 8), c, dst.rtr(0, 8), 0), "PostRDMAWrite")
	}
	ev := a.expect(a.async, api.AsyncEVDOverflowEvent)
	if ev.Async.Object != small || ev.Async.Reason != api.ReasonEVDOverflow {
		t.Fatalf("overflow event %+v, want the small EVD", ev.Async)
	}
	a.none(a.async, "one overflow event per episode")
	a.expectDTO(small, 1, api.DTOSuccess)
	a.expectDTO(small, 2, api.DTOSuccess)
	a.none(small, "the overflowing completions were discarded")
	// Room again: a new overflow is a new episode.
	for c := api.Cookie(5); c <= 7; c++ {
		must(t, ea.PostRDMAWrite(src.iov(0, 8), c, dst.rtr(0, 8), 0), "PostRDMAWrite")
	}
	a.expect(a.async, api.AsyncEVDOverflowEvent)
	if prm, err := small.Query(); err != nil || prm.QLen != 2 {
		t.Fatalf("Query %+v %v", prm, err)
	}
	must(t, small.Resize(8), "Resize")
	a.expectDTO(small, 5, api.DTOSuccess)
}

func TestEVDSoftwareWaitAndStates(t *testing.T) {
	n := newNode(t)
	e := n.evd(2, api.EVDSoftware)
	if err := n.recv.PostSE(&api.Event{Number: api.SoftwareEvent}); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("PostSE on an EVD without the software stream: %v", err)
	}
	must(t, e.PostSE(&api.Event{Number: api.SoftwareEvent, Software: "one"}), "PostSE")
	must(t, e.PostSE(&api.Event{Number: api.SoftwareEvent, Software: "two"}), "PostSE")
	if err := e.PostSE(&api.Event{Number: api.SoftwareEvent}); !errors.Is(err, api.ErrQueueFull) {
		t.Fatalf("PostSE on a full EVD: %v", err)
	}
	n.none(n.async, "a full PostSE is no overflow")
	wantErr(t, e.Resize(1), api.InvalidState, api.NoSubtype, "Resize below the queued count")
	var ev api.Event
	nmore, err := e.Wait(context.Background(), 2, &ev)
	if err != nil || nmore != 1 || ev.Software != "one" || ev.EVD != e {
		t.Fatalf("Wait = %d %v %+v", nmore, err, ev)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if nmore, err := e.Wait(ctx, 2, &ev); !errors.Is(err, api.ErrTimeoutExpired) || nmore != 1 {
		t.Fatalf("Wait past the deadline = %d %v", nmore, err)
	}
	must(t, e.SetUnwaitable(), "SetUnwaitable")
	wantErr(t, func() error { _, err := e.Wait(context.Background(), 1, &ev); return err }(), api.InvalidState, api.SubStateEVDUnwaitable, "Wait on an unwaitable EVD")
	must(t, e.Dequeue(&ev), "Dequeue on an unwaitable EVD")
	must(t, e.ClearUnwaitable(), "ClearUnwaitable")
	must(t, e.Disable(), "Disable")
	prm, err := e.Query()
	must(t, err, "Query")
	if prm.State&api.EVDStateDisabled == 0 || prm.State&api.EVDStateWaitable == 0 || prm.Flags != api.EVDSoftware {
		t.Fatalf("EVD params %+v", prm)
	}
	must(t, e.Enable(), "Enable")
}

func TestEVDFreeAbortsWaiterAndInUse(t *testing.T) {
	n := newNode(t)
	e := n.evd(4, api.EVDDTO)
	ep, err := n.ia.CreateEP(n.pz, e, nil, nil, nil)
	must(t, err, "CreateEP")
	wantErr(t, e.Free(), api.InvalidState, api.SubStateEVDInUse, "Free of an EVD an EP reports to")
	must(t, ep.Free(), "EP.Free")
	wantErr(t, n.async.Free(), api.InvalidState, api.SubStateEVDInUse, "Free of the async EVD")
	must(t, e.Free(), "Free")
}

func TestCNOWithProviderEVDs(t *testing.T) {
	n := newNode(t)
	var mu sync.Mutex
	var calls []api.EVD
	called := make(chan struct{}, 8)
	c, err := n.ia.CreateCNO(func(e api.EVD) {
		mu.Lock()
		calls = append(calls, e)
		mu.Unlock()
		called <- struct{}{}
	})
	must(t, err, "CreateCNO")
	e, err := n.ia.CreateEVD(4, c, api.EVDSoftware)
	must(t, err, "CreateEVD with a CNO")
	wantErr(t, c.Free(), api.InvalidState, api.SubStateCNOInUse, "Free of a CNO an EVD feeds")
	prm, err := e.Query()
	must(t, err, "Query")
	if prm.CNO != c {
		t.Fatalf("EVD reports CNO %v", prm.CNO)
	}
	cnoWait := func(ctx context.Context) api.EVD {
		w, _ := c.Wait(ctx)
		return w
	}
	got := inBackground(cnoWait)
	must(t, e.PostSE(&api.Event{Number: api.SoftwareEvent}), "PostSE")
	if w := <-got; w != e {
		t.Fatalf("CNO.Wait returned %v, want the EVD", w)
	}
	<-called
	// Detach: a waiter is released with nil.
	got = inBackground(cnoWait)
	must(t, e.ModifyCNO(nil), "ModifyCNO(nil)")
	if w := <-got; w != nil {
		t.Fatalf("released CNO waiter got %v", w)
	}
	must(t, c.Free(), "CNO.Free")
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 1 || calls[0] != e {
		t.Fatalf("agent calls %v", calls)
	}
}

func TestCNOWaiterReleasedByIAClose(t *testing.T) {
	n := newNode(t)
	c, err := n.ia.CreateCNO(nil)
	must(t, err, "CreateCNO")
	_, err = n.ia.CreateEVD(4, c, api.EVDSoftware)
	must(t, err, "CreateEVD")
	done := make(chan error, 1)
	go func() {
		_, err := c.Wait(context.Background())
		done <- err
	}()
	time.Sleep(5 * time.Millisecond)
	must(t, n.ia.Close(api.CloseAbrupt), "Close")
	if err := <-done; err != nil && !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("CNO waiter after Close: %v", err)
	}
}
