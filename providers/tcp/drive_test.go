package tcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/godat/godat/api"
)

// TestDrivenWait checks the ways a wait whose goroutine drives the
// connections feeding its EVD (drive.go) ends: a message, several for a
// threshold, the context's deadline or cancellation, SetUnwaitable, the
// peer disconnecting, and the IA closing.
func TestDrivenWait(t *testing.T) {
	cli, srv := benchPair(t)
	send := func(cookie api.Cookie) {
		t.Helper()
		if err := srv.ep.PostSend([]api.LMRTriplet{srv.lmr.Triplet(0, 64)}, cookie, api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
	}
	recv := func(cookie api.Cookie) {
		t.Helper()
		if err := cli.ep.PostRecv([]api.LMRTriplet{cli.lmr.Triplet(0, 64)}, cookie, api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
	}
	bg := context.Background()
	var ev api.Event

	// The deadline passes with nothing arriving.
	ctx, cancel := context.WithTimeout(bg, 30*time.Millisecond)
	_, err := cli.recv.Wait(ctx, 1, &ev)
	cancel()
	if !errors.Is(err, api.ErrTimeoutExpired) {
		t.Fatalf("Wait past its deadline: %v, want DAT_TIMEOUT_EXPIRED", err)
	}

	// Cancelled while blocked.
	ctx, cancel = context.WithCancel(bg)
	time.AfterFunc(30*time.Millisecond, cancel)
	_, err = cli.recv.Wait(ctx, 1, &ev)
	if !errors.Is(err, api.ErrInterruptedCall) {
		t.Fatalf("cancelled Wait: %v, want DAT_INTERRUPTED_CALL", err)
	}

	// A message arrives while blocked; then three for a threshold of 3.
	recv(1)
	time.AfterFunc(30*time.Millisecond, func() { send(2) })
	if _, err := cli.recv.Wait(bg, 1, &ev); err != nil || ev.DTO.Cookie != 1 || ev.DTO.Status != api.DTOSuccess {
		t.Fatalf("Wait for a message: %v %+v", err, ev.DTO)
	}
	for c := api.Cookie(3); c < 6; c++ {
		recv(c)
	}
	go func() {
		for c := api.Cookie(6); c < 9; c++ {
			time.Sleep(10 * time.Millisecond)
			send(c)
		}
	}()
	n, err := cli.recv.Wait(bg, 3, &ev)
	if err != nil || n != 2 || ev.DTO.Cookie != 3 {
		t.Fatalf("Wait(threshold 3) = %d, %v, cookie %d; want 2 more, cookie 3", n, err, ev.DTO.Cookie)
	}
	for c := api.Cookie(4); c < 6; c++ {
		if err := cli.recv.Dequeue(&ev); err != nil || ev.DTO.Cookie != c {
			t.Fatalf("Dequeue: %v, cookie %d, want %d", err, ev.DTO.Cookie, c)
		}
	}
	for i := 0; i < 4; i++ { // the server's send completions
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		_, err := srv.req.Wait(ctx, 1, &ev)
		cancel()
		if err != nil || ev.DTO.Status != api.DTOSuccess {
			t.Fatalf("server send %d: %v %+v", i, err, ev.DTO)
		}
	}

	// Made unwaitable while blocked.
	time.AfterFunc(30*time.Millisecond, func() { cli.recv.SetUnwaitable() })
	if _, err := cli.recv.Wait(bg, 1, &ev); !errors.Is(err, api.ErrInvalidState) {
		t.Fatalf("Wait on an EVD made unwaitable: %v, want DAT_INVALID_STATE", err)
	}
	if err := cli.recv.ClearUnwaitable(); err != nil {
		t.Fatal(err)
	}

	// The peer disconnects while a receive is posted: it is flushed.
	recv(10)
	time.AfterFunc(30*time.Millisecond, func() { srv.ep.Disconnect(api.CloseAbrupt) })
	ctx, cancel = context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	if _, err := cli.recv.Wait(ctx, 1, &ev); err != nil || ev.DTO.Cookie != 10 || ev.DTO.Status != api.DTOErrFlushed {
		t.Fatalf("Wait across the peer's disconnect: %v %+v, want the receive FLUSHED", err, ev.DTO)
	}

	// The IA closes under a blocked waiter.
	done := make(chan error, 1)
	go func() {
		_, err := cli.recv.Wait(ctx, 1, &ev)
		done <- err
	}()
	time.Sleep(30 * time.Millisecond)
	if err := cli.ia.Close(api.CloseAbrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Wait on a closed IA succeeded")
		}
	case <-ctx.Done():
		t.Fatal("closing the IA did not end a blocked Wait")
	}
}

// TestDrivenWaitNoAllocs checks that waits that drive their connections
// allocate nothing in steady state: one goroutine plays both sides of a
// send/recv round trip, each side waiting (and so driving) in turn.
func TestDrivenWaitNoAllocs(t *testing.T) {
	cli, srv := benchPair(t)
	ctx := context.Background()
	ciov := []api.LMRTriplet{cli.lmr.Triplet(0, 64)}
	siov := []api.LMRTriplet{srv.lmr.Triplet(0, 64)}
	var ev api.Event
	wait := func(e api.EVD) {
		if _, err := e.Wait(ctx, 1, &ev); err != nil || ev.DTO.Status != api.DTOSuccess {
			t.Fatalf("Wait: %v %+v", err, ev.DTO)
		}
	}
	// postRecvSend posts a receive (cookie recv) and a send (cookie send)
	// of iov on ep.
	postRecvSend := func(ep api.EP, iov []api.LMRTriplet, recv, send api.Cookie) {
		if err := ep.PostRecv(iov, recv, api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		if err := ep.PostSend(iov, send, api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
	}
	// The server's send completes when the client's next send carries
	// the ACK: the server collects it one round later.
	round := func() {
		postRecvSend(cli.ep, ciov, 2, 3)
		wait(srv.recv)
		wait(srv.req)
		postRecvSend(srv.ep, siov, 1, 4)
		wait(cli.recv)
		wait(cli.req)
	}
	postRecvSend(srv.ep, siov, 1, 4)
	if err := cli.ep.PostRecv(ciov, 2, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	wait(cli.recv)
	for range 50 {
		round()
	}
	if allocs := testing.AllocsPerRun(200, round); allocs != 0 {
		t.Fatalf("%v allocations per round trip", allocs)
	}
}

// drivenSockets counts the sockets registered in the process's driver
// epoll instances, which /proc/self/fdinfo shows as instances that hold
// an eventfd (the kick) and no other epoll instance (the runtime's poller
// holds those).
func drivenSockets(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	kind := func(fd string) string {
		l, _ := os.Readlink("/proc/self/fd/" + fd)
		switch {
		case l == "anon_inode:[eventpoll]":
			return "epoll"
		case l == "anon_inode:[eventfd]":
			return "eventfd"
		case strings.HasPrefix(l, "socket:"):
			return "socket"
		}
		return ""
	}
	n := 0
	for _, f := range fds {
		if kind(f.Name()) != "epoll" {
			continue
		}
		b, err := os.ReadFile("/proc/self/fdinfo/" + f.Name())
		if err != nil {
			continue // closed meanwhile
		}
		count := map[string]int{}
		for _, line := range strings.Split(string(b), "\n") {
			if w := strings.Fields(line); len(w) > 1 && w[0] == "tfd:" {
				count[kind(w[1])]++
			}
		}
		if count["eventfd"] > 0 && count["epoll"] == 0 {
			n += count["socket"]
		}
	}
	return n
}

// TestDrivenWaitDisarms checks that a driven wait's sockets are in its
// epoll instance while it blocks and leave it when the wait ends: a
// registration costs every segment that arrives a callback, which a
// consumer polling afterwards would pay.
func TestDrivenWaitDisarms(t *testing.T) {
	cli, srv := benchPair(t)
	if err := cli.ep.PostRecv([]api.LMRTriplet{cli.lmr.Triplet(0, 64)}, 1, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan int, 1)
	go func() {
		// Until the waiter has armed its socket (or 10 s), then send.
		n := 0
		for end := time.Now().Add(10 * time.Second); n == 0 && time.Now().Before(end); time.Sleep(time.Millisecond) {
			n = drivenSockets(t)
		}
		blocked <- n
		_ = srv.ep.PostSend([]api.LMRTriplet{srv.lmr.Triplet(0, 64)}, 2, api.CompletionDefault)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ev api.Event
	if _, err := cli.recv.Wait(ctx, 1, &ev); err != nil || ev.DTO.Cookie != 1 || ev.DTO.Status != api.DTOSuccess {
		t.Fatalf("Wait: %v %+v", err, ev.DTO)
	}
	if n := <-blocked; n == 0 {
		t.Fatal("no socket was registered while the wait blocked")
	}
	if n := drivenSockets(t); n != 0 {
		t.Fatalf("%d sockets still registered after the wait", n)
	}
}

// TestDriverKickBeforePark: a kick that comes after the waiter said it
// would block (parked) and before it blocks is not lost. The runtime's
// poller learns of the epoll instance's readiness before the block
// resets it, as happens when a reader goroutine posts, or the wait's
// deadline passes, while the waiter is on its way to blocking; the block
// must end at once. (Lost, it took every later kick with it, since the
// kick had cleared parked: a Wait hung past its deadline.)
func TestDriverKickBeforePark(t *testing.T) {
	d, err := newDriver()
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	d.parked.Store(true)
	d.kick()
	// Let the kick's notification be queued well before the block.
	time.Sleep(50 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- d.park() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("park: %v", err)
		}
	case <-time.After(2 * time.Second):
		d.close() // ends the blocked park
		<-done
		t.Fatal("park blocked although a kick came after parked was set")
	}
}

// TestDriverCloseWakesPark: close ends a park at whatever point of its way
// to epoll_wait(2) the waiter is, with no timeout to fall back on. (Had
// close closed the kick eventfd under a waiter that had looked and not
// yet blocked, the kick would have left the epoll instance with it.)
func TestDriverCloseWakesPark(t *testing.T) {
	for i := 0; i < 2000; i++ {
		d, err := newDriver()
		if err != nil {
			t.Fatal(err)
		}
		d.parked.Store(true)
		done := make(chan error, 1)
		go func() { done <- d.park() }()
		for range i % 50 {
			runtime.Gosched()
		}
		d.close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: close did not end the park", i)
		}
		if d.kickFD != -1 {
			t.Fatalf("round %d: the kick eventfd is still open", i)
		}
	}
}

// TestDrivenWaitBulkBothWays runs dtest's default exchange: each end
// streams large RDMA writes at the other and blocks in Wait for the last
// one's completion, then sends a message and blocks for the peer's. Each
// end's writer then waits for room while its consumer waits to be woken:
// the reading that frees the room must go on all the same, on both ends.
func TestDrivenWaitBulkBothWays(t *testing.T) {
	cli, srv := benchPair(t)
	const size, burst, rounds = 4 << 20, 10, 20
	ce, se := newRDMAEnd(t, cli, size), newRDMAEnd(t, srv, size)
	run := func(from, to *rdmaEnd) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var ev api.Event
		for r := range rounds {
			if err := from.c.ep.PostRecv([]api.LMRTriplet{from.c.lmr.Triplet(0, 64)}, api.Cookie(r), api.CompletionDefault); err != nil {
				return err
			}
			for i := range burst {
				flags := api.CompletionSuppress
				if i == burst-1 {
					flags = api.CompletionDefault
				}
				if err := from.c.ep.PostRDMAWrite([]api.LMRTriplet{from.srcTri}, api.Cookie(i), to.dst, flags); err != nil {
					return err
				}
			}
			if _, err := from.c.req.Wait(ctx, 1, &ev); err != nil || ev.DTO.Status != api.DTOSuccess {
				return fmt.Errorf("round %d: the last write's completion: %v %+v", r, err, ev.DTO)
			}
			// Then reads of the peer's memory, one at a time.
			for i := range 4 {
				if err := from.c.ep.PostRDMARead([]api.LMRTriplet{from.srcTri}, api.Cookie(100+i), to.dst, api.CompletionDefault); err != nil {
					return err
				}
				if i&1 == 1 {
					time.Sleep(time.Duration(r%3) * time.Millisecond)
				}
				if _, err := from.c.req.Wait(ctx, 1, &ev); err != nil || ev.DTO.Status != api.DTOSuccess {
					return fmt.Errorf("round %d: read %d: %v %+v", r, i, err, ev.DTO)
				}
			}
			if err := from.c.ep.PostSend([]api.LMRTriplet{from.c.lmr.Triplet(64, 64)}, 0, api.CompletionSuppress); err != nil {
				return err
			}
			if _, err := from.c.recv.Wait(ctx, 1, &ev); err != nil || ev.DTO.Status != api.DTOSuccess {
				return fmt.Errorf("round %d: the peer's message: %v %+v", r, err, ev.DTO)
			}
		}
		return nil
	}
	errc := make(chan error, 1)
	go func() { errc <- run(se, ce) }()
	if err := run(ce, se); err != nil {
		t.Error("client:", err)
	}
	if err := <-errc; err != nil {
		t.Error("server:", err)
	}
}
