//go:build verbs && cgo

package verbs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/thread"
	"github.com/godat/godat/providers/verbs"
)

// openRaw opens the test IA through the provider itself, not the
// registry, so that its objects are the provider's own (the verbs
// package's test hooks look inside them).
func openRaw(t *testing.T) api.IA {
	t.Helper()
	ia, err := verbs.Provider{}.Open(context.Background(), api.OpenParams{Name: "verbs-raw", Params: vmIP().String(), AsyncEVDQLen: 16, ThreadSafe: true})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := ia.Close(api.CloseAbrupt); err != nil && !errors.Is(err, api.ErrInvalidHandle) {
			t.Errorf("close: %v", err)
		}
	})
	return ia
}

// openRawEVD opens a raw IA (openRaw) and an EVD of it for eight DTO
// completions and software events.
func openRawEVD(t *testing.T) (api.IA, api.EVD) {
	t.Helper()
	ia := openRaw(t)
	evd, err := ia.CreateEVD(8, nil, api.EVDDTO|api.EVDSoftware)
	if err != nil {
		t.Fatal(err)
	}
	return ia, evd
}

type waitResult struct {
	ev  api.Event
	err error
}

// waitParked starts a Wait on e and returns once it blocks on the CQ's
// completion channel; its result comes on the channel returned.
func waitParked(t *testing.T, ctx context.Context, e api.EVD) <-chan waitResult {
	t.Helper()
	res := make(chan waitResult, 1)
	go func() {
		var r waitResult
		_, r.err = e.Wait(ctx, 1, &r.ev)
		res <- r
	}()
	for end := time.Now().Add(10 * time.Second); !verbs.WaitParked(e); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the Wait never blocked on the completion channel")
		}
	}
	return res
}

// result is the outcome of a Wait started by waitParked, bounded so that
// a Wait that is never woken fails the test instead of hanging it.
func result(t *testing.T, res <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the Wait was not woken")
		return waitResult{}
	}
}

// TestWaitTakesItsOwnNotifications checks that a blocked Wait is woken
// by the completion channel itself: the receive's notification is taken
// by the waiting goroutine, never by the CQ's watcher, round after round.
func TestWaitTakesItsOwnNotifications(t *testing.T) {
	needDevice(t)
	client, server := connectSides(t, newSideOn(t, openRaw(t)), newSideOn(t, openRaw(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for round := range 5 {
		cookie := api.Cookie(7) // (posted by connectSides)
		if round > 0 {
			cookie = api.Cookie(100 + round)
			if err := server.ep.PostRecv([]api.LMRTriplet{server.seg(0, 64)}, cookie, 0); err != nil {
				t.Fatal(err)
			}
		}
		res := waitParked(t, ctx, server.evd)
		w0, d0 := verbs.CQNotes(server.evd)
		if err := client.ep.PostSend([]api.LMRTriplet{client.seg(0, 8)}, 1, 0); err != nil {
			t.Fatal(err)
		}
		r := result(t, res)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.ev.Number != api.DTOCompletionEvent || r.ev.DTO.Cookie != cookie || r.ev.DTO.Status != api.DTOSuccess {
			t.Fatalf("round %d: event %v %+v, want the receive %d", round, r.ev.Number, r.ev.DTO, cookie)
		}
		w1, d1 := verbs.CQNotes(server.evd)
		if w1 != w0 || d1 == d0 {
			t.Fatalf("round %d: notifications taken by the watcher %d→%d, by the waiter %d→%d; want the waiter's alone", round, w0, w1, d0, d1)
		}
		client.wait(t, api.DTOCompletionEvent)
	}
}

// TestBlockedWaitEnds checks the ways a Wait blocked on the completion
// channel ends other than a completion: its context, a software event,
// Free of the EVD and the IA's close; and that a wait after a cancelled
// one blocks again rather than returning at once (no kick left over).
// Each is a bounded no-hang check; the package's TestMain checks that no
// goroutine is left behind.
func TestBlockedWaitEnds(t *testing.T) {
	needDevice(t)
	ia, evd := openRawEVD(t)

	ctx, cancel := context.WithCancel(context.Background())
	res := waitParked(t, ctx, evd)
	cancel()
	if r := result(t, res); !errors.Is(r.err, api.ErrInterruptedCall) {
		t.Fatalf("a cancelled Wait returned %v, want ErrInterruptedCall", r.err)
	}

	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	var ev api.Event
	if _, err := evd.Wait(short, 1, &ev); !errors.Is(err, api.ErrTimeoutExpired) {
		t.Fatalf("a Wait after a cancelled one returned %v, want ErrTimeoutExpired after 50 ms", err)
	}

	res = waitParked(t, context.Background(), evd)
	if err := evd.PostSE(&api.Event{Number: api.SoftwareEvent, Software: "hi"}); err != nil {
		t.Fatal(err)
	}
	if r := result(t, res); r.err != nil || r.ev.Number != api.SoftwareEvent || r.ev.Software != "hi" {
		t.Fatalf("Wait after PostSE: %v %+v", r.err, r.ev)
	}

	res = waitParked(t, context.Background(), evd)
	if err := evd.Free(); err != nil {
		t.Fatal(err)
	}
	if r := result(t, res); !errors.Is(r.err, api.ErrAbort) {
		t.Fatalf("a Wait on a freed EVD returned %v, want ErrAbort", r.err)
	}

	evd2, err := ia.CreateEVD(8, nil, api.EVDDTO)
	if err != nil {
		t.Fatal(err)
	}
	res = waitParked(t, context.Background(), evd2)
	if err := ia.Close(api.CloseAbrupt); err != nil {
		t.Fatal(err)
	}
	if r := result(t, res); !errors.Is(r.err, api.ErrAbort) {
		t.Fatalf("a Wait on a closed IA returned %v, want ErrAbort", r.err)
	}
}

// TestWatcherAfterWaits checks that the CQ's watcher gets the completion
// channel back from the waits: at once when the EVD comes to feed a CNO
// (which then hears of the next completion), and a Wait after that takes
// it again; not within a few milliseconds of the last wait; and by itself
// after waits stop, so that completions reach the queue with nobody
// waiting or polling.
func TestWatcherAfterWaits(t *testing.T) {
	needDevice(t)
	client, server := connectSides(t, newSideOn(t, openRaw(t)), newSideOn(t, openRaw(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cno, err := server.ia.CreateCNO(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := server.evd.ModifyCNO(cno); err != nil {
		t.Fatal(err)
	}
	if !verbs.WatcherOwns(server.evd) {
		t.Fatal("the watcher did not get the channel back when the EVD came to feed a CNO")
	}
	send := func() {
		t.Helper()
		if err := client.ep.PostSend([]api.LMRTriplet{client.seg(0, 8)}, 1, 0); err != nil {
			t.Fatal(err)
		}
		client.wait(t, api.DTOCompletionEvent)
	}
	send() // to receive 7
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		e, err := cno.Triggered()
		if err != nil {
			t.Fatal(err)
		}
		if e == server.evd {
			break
		}
		if e != nil || time.Now().After(end) {
			t.Fatalf("the receive triggered %v, want the EVD", e)
		}
	}
	server.wait(t, api.DTOCompletionEvent)

	if err := server.evd.ModifyCNO(nil); err != nil {
		t.Fatal(err)
	}
	if err := server.ep.PostRecv([]api.LMRTriplet{server.seg(0, 64)}, 8, 0); err != nil {
		t.Fatal(err)
	}
	res := waitParked(t, ctx, server.evd)
	_, d0 := verbs.CQNotes(server.evd)
	send()
	if r := result(t, res); r.err != nil || r.ev.DTO.Cookie != 8 {
		t.Fatalf("Wait: %v %+v", r.err, r.ev.DTO)
	}
	ended := time.Now()
	if _, d1 := verbs.CQNotes(server.evd); d1 == d0 {
		t.Fatal("the Wait after the CNO was detached did not take the notification itself")
	}
	// The waits keep the channel a while after the last one (waitHold,
	// 20 ms), so that waits a few milliseconds apart do not hand it to
	// the watcher and back each time. (Checked only if the look comes
	// within 15 ms: the VM may be slow.)
	time.Sleep(5 * time.Millisecond)
	if owns := verbs.WatcherOwns(server.evd); owns && time.Since(ended) < 15*time.Millisecond {
		t.Fatalf("the watcher had the channel back %v after the last wait", time.Since(ended))
	}

	// Owning the channel is not enough for the notification checked
	// below: the watcher arms the CQ once it runs, and a completion that
	// comes before that reaches the queue through its drain instead.
	for end := time.Now().Add(10 * time.Second); !verbs.WatcherArmed(server.evd); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the watcher did not get the channel back and arm the CQ after the waits stopped")
		}
	}
	if err := server.ep.PostRecv([]api.LMRTriplet{server.seg(0, 64)}, 9, 0); err != nil {
		t.Fatal(err)
	}
	w0, _ := verbs.CQNotes(server.evd)
	send()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if w, _ := verbs.CQNotes(server.evd); w > w0 {
			break
		}
		if time.Now().After(end) {
			t.Fatal("no notification reached the watcher")
		}
	}
	// The watcher counts the notification before it drains the CQ, and a
	// Dequeue that finds it draining does not wait for it: poll.
	var ev api.Event
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		err := server.evd.Dequeue(&ev)
		if err == nil && ev.DTO.Cookie == 9 {
			break
		}
		if err == nil || !errors.Is(err, api.ErrQueueEmpty) || time.Now().After(end) {
			t.Fatalf("Dequeue: %v %+v", err, ev.DTO)
		}
	}
}

// TestWatcherAfterQuickWaits checks that Waits that find their event
// already queued keep the hand-back of the completion channel going: after
// a stretch of them, the watcher gets the channel back.
func TestWatcherAfterQuickWaits(t *testing.T) {
	needDevice(t)
	_, evd := openRawEVD(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	se := &api.Event{Number: api.SoftwareEvent}
	res := waitParked(t, ctx, evd) // (the waits take the channel)
	if err := evd.PostSE(se); err != nil {
		t.Fatal(err)
	}
	if r := result(t, res); r.err != nil {
		t.Fatal(r.err)
	}
	var ev api.Event
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		if err := evd.PostSE(se); err != nil {
			t.Fatal(err)
		}
		if _, err := evd.Wait(ctx, 1, &ev); err != nil {
			t.Fatal(err)
		}
	}
	for end := time.Now().Add(10 * time.Second); !verbs.WatcherOwns(evd); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the watcher did not get the channel back after Waits that found their events queued")
		}
	}
}

// TestPollingLooksBackOff checks that a consumer that keeps polling an
// EVD keeps its CQ unarmed at the price of few looks: each look that
// finds it still polling waits twice as long for the next, up to 16 ms,
// so that 300 ms of polling cost a few tens of timer wake-ups, not one a
// millisecond (each preempts the consumer on a small machine).
func TestPollingLooksBackOff(t *testing.T) {
	needDevice(t)
	client, server := connectSides(t, newSideOn(t, openRaw(t)), newSideOn(t, openRaw(t)))
	var ev api.Event
	// poll polls the server's EVD until the time given; true: an event came.
	poll := func(until time.Time) bool {
		for time.Now().Before(until) {
			err := server.evd.Dequeue(&ev)
			if err == nil {
				return true
			}
			if !errors.Is(err, api.ErrQueueEmpty) {
				t.Fatal(err)
			}
		}
		return false
	}
	// The server polls before the client's message comes (to receive 7,
	// posted by connectSides), so that its notification finds a poller
	// and the watcher leaves the CQ to it.
	poll(time.Now().Add(5 * time.Millisecond))
	if err := client.ep.PostSend([]api.LMRTriplet{client.seg(0, 8)}, 1, 0); err != nil {
		t.Fatal(err)
	}
	if !poll(time.Now().Add(10*time.Second)) || ev.DTO.Cookie != 7 {
		t.Fatalf("the polled receive: %+v", ev)
	}
	from := verbs.PollLooks(server.evd)
	const span = 300 * time.Millisecond
	poll(time.Now().Add(span))
	looks := verbs.PollLooks(server.evd) - from
	if looks == 0 {
		t.Fatal("the CQ was never left to the polling consumer")
	}
	if looks > 40 {
		t.Fatalf("%d looks at the CQ in %v of steady polling; want a few tens at most", looks, span)
	}
	t.Logf("%d looks in %v of polling", looks, span)
}

// TestPostsKeepWatcherAside checks that a consumer that posts requests and
// has not yet come for their completions keeps the CQ unarmed, as one
// that polls does: the watcher takes the first notification and then
// leaves the completions to the consumer's Dequeue or Wait, instead of
// waking at each one to drain the CQ under ia.mu, which the consumer's
// next post holds through its cgo call (a stream's writer on rxe spent
// its posts waking the watcher that way). No completion may be lost: the
// consumer then dequeues them all, in order.
func TestPostsKeepWatcherAside(t *testing.T) {
	needDevice(t)
	client, server := connectSides(t, newSideOn(t, openRaw(t)), newSideOn(t, openRaw(t)))
	for end := time.Now().Add(10 * time.Second); !verbs.WatcherArmed(client.evd); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the watcher did not arm the client's CQ after the connection's Waits")
		}
	}
	const n = 40 // (fewer than the EVD's 64 entries: nothing dequeues meanwhile)
	notes, _ := verbs.CQNotes(client.evd)
	// A post that comes long after the one before may find the spell of
	// work ended and the CQ armed again (after 16 to 31 ms): each such
	// gap may cost a notification, on a machine slow enough to make one.
	// Otherwise the watcher takes the first post's and, where the channel
	// changes hands around it, one or two more: 40 before the fix.
	slow, last := 0, time.Now()
	for i := range n {
		now := time.Now()
		if now.Sub(last) > 10*time.Millisecond {
			slow++
		}
		last = now
		if err := writeAndLand(t, client, server, byte(1+i), api.Cookie(i), 0); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		time.Sleep(300 * time.Microsecond) // (time for a notification to reach the watcher)
	}
	after, _ := verbs.CQNotes(client.evd)
	if woke := after - notes; woke > uint64(4+slow) {
		t.Errorf("the watcher took %d notifications during %d posts that nobody reaped yet (%d of them more than 10 ms after the last); want at most %d", woke, n, slow, 4+slow)
	} else {
		t.Logf("%d watcher notifications during %d posts (%d more than 10 ms after the last)", woke, n, slow)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ev api.Event
	for i := range n {
		if _, err := client.evd.Wait(ctx, 1, &ev); err != nil {
			t.Fatalf("completion %d: %v", i, err)
		}
		if ev.Number != api.DTOCompletionEvent || ev.DTO.Cookie != api.Cookie(i) || ev.DTO.Status != api.DTOSuccess {
			t.Fatalf("completion %d: %+v", i, ev)
		}
	}
}

// TestIdleWaitSleeps checks that a Wait blocked on an idle EVD leaves its
// thread asleep in poll(2) until something happens: no timer wakes it
// (one did, every 50 ms, as a backstop for a destroy it might have
// missed).
func TestIdleWaitSleeps(t *testing.T) {
	needDevice(t)
	_, evd := openRawEVD(t)
	res := make(chan waitResult, 1)
	tid, _ := thread.Go(func() {
		var r waitResult
		_, r.err = evd.Wait(context.Background(), 1, &r.ev)
		res <- r
	})
	thread.StaysAsleep(t, tid, unix.SYS_PPOLL, 300*time.Millisecond)
	if err := evd.PostSE(&api.Event{Number: api.SoftwareEvent, Software: "wake"}); err != nil {
		t.Fatal(err)
	}
	if r := result(t, res); r.err != nil || r.ev.Software != "wake" {
		t.Fatalf("Wait after PostSE: %v %+v", r.err, r.ev)
	}
}
