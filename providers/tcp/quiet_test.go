package tcp

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godat/godat/api"
)

// TestQuietMode checks the hand-over between pollers and the reader
// goroutines (see "Polling" in the package documentation): consumers that
// poll make their connections quiet (input unwatched), and whatever they
// do next — wait instead, or stop looking — nothing stalls and nothing
// owed is left unsent.
func TestQuietMode(t *testing.T) {
	var entered, left atomic.Int64
	testHookQuiet = func(in bool) {
		if in {
			entered.Add(1)
		} else {
			left.Add(1)
		}
	}
	t.Cleanup(func() { testHookQuiet = nil })
	cli, srv := benchPair(t)

	// Both sides poll until the readers notice (they run when the
	// scheduler lets them, which two spinning consumers on two Ps make
	// rare), 10 s at most.
	for end := time.Now().Add(10 * time.Second); entered.Load() == 0 && time.Now().Before(end); {
		pingPong(t, cli, srv, 64, 200, true, true, nil)
	}
	if entered.Load() == 0 {
		t.Fatal("two polling consumers did not make any connection quiet")
	}
	// The server waits now, the client keeps polling; then both wait;
	// then both poll again, and finally a large message each way.
	// (A waiting consumer drives its connections too — drive.go — so
	// they may stay quiet.)
	pingPong(t, cli, srv, 64, 200, true, false, nil)
	pingPong(t, cli, srv, 64, 200, false, false, nil)
	pingPong(t, cli, srv, 64, 500, true, true, nil)
	pingPong(t, cli, srv, 100<<10, 20, true, false, nil)

	// A poller that takes a receive and then stops looking altogether:
	// the ACK it owes still reaches the peer, whose send completes.
	pingPong(t, cli, srv, 64, 500, true, true, nil)
	iov := []api.LMRTriplet{cli.lmr.Triplet(0, 64)}
	if err := cli.ep.PostRecv(iov, 7, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := srv.ep.PostSend([]api.LMRTriplet{srv.lmr.Triplet(0, 64)}, 8, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	var ev api.Event
	nextEvent(t, cli.recv, true, &ev)
	if ev.DTO.Cookie != 7 || ev.DTO.Status != api.DTOSuccess {
		t.Fatalf("client receive: %+v", ev.DTO)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := srv.req.Wait(ctx, 1, &ev); err != nil {
		t.Fatalf("the server's send never completed (its ACK was left owed): %v", err)
	}
	if ev.DTO.Cookie != 8 || ev.DTO.Status != api.DTOSuccess {
		t.Fatalf("server send: %+v", ev.DTO)
	}

	// A poller that stops while the peer goes on sending: the reader
	// takes over, and a later Wait finds the message.
	pingPong(t, cli, srv, 64, 500, true, true, nil)
	if err := cli.ep.PostRecv(iov, 9, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * quietMax) // the client's consumer is busy elsewhere
	if err := srv.ep.PostSend([]api.LMRTriplet{srv.lmr.Triplet(0, 64)}, 10, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.req.Wait(ctx, 1, &ev); err != nil || ev.DTO.Status != api.DTOSuccess {
		t.Fatalf("server send to a consumer that stopped polling: %v %+v", err, ev.DTO)
	}
	if _, err := cli.recv.Wait(ctx, 1, &ev); err != nil || ev.DTO.Cookie != 9 {
		t.Fatalf("client receive after polling stopped: %v %+v", err, ev.DTO)
	}
	if left.Load() == 0 {
		t.Fatal("no connection left quiet mode when its consumers stopped polling")
	}
}
