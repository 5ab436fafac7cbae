package tcp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/godat/godat/api"
)

// TestQuietMode checks the hand-over between pollers and the reader
// goroutines (see "Polling" in the package documentation): consumers that
// poll make their connections quiet (input unwatched), and whatever they
// do next — wait instead, or stop looking — nothing stalls and nothing
// owed is left unsent.
func TestQuietMode(t *testing.T) {
	var entered, left atomic.Int64
	testHookQuiet = func(_ *conn, in bool) {
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

// TestMixedModeStreams streams RDMA writes and sends of random sizes
// from the client while both consumers switch at random between polling
// (Dequeue) and waiting (Wait), so that the stream changes hands between
// pollers, driven waits and the reader and writer goroutines, in the
// middle of payloads too. Every byte must land where it belongs, the
// sends in order, and nothing may stall.
func TestMixedModeStreams(t *testing.T) {
	cli, srv := benchPair(t)
	const (
		nmsg   = 200
		maxLen = 192 << 10
		window = 8 // client requests outstanding
		nrecv  = 8 // server receives posted
	)
	// The plan, which both sides know: each message a write (to a region
	// of its own in the server's window) or a send; the last a send.
	type msg struct {
		write bool
		n     int
		off   int // a write's offset in the server's window
	}
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	plan := make([]msg, nmsg)
	winLen := 0
	for i := range plan {
		m := msg{write: rng.IntN(2) == 0 && i < nmsg-1, n: 1 + rng.IntN(maxLen)}
		if m.write {
			m.off = winLen
			winLen += m.n
		}
		plan[i] = m
	}
	fill := func(b []byte, i int) {
		for j := range b {
			b[j] = byte(i*131 + j*7 + j>>9)
		}
	}
	check := func(b []byte, i int, what string) error {
		for j := range b {
			if b[j] != byte(i*131+j*7+j>>9) {
				return fmt.Errorf("%s of message %d (%d bytes): byte %d is wrong", what, i, len(b), j)
			}
		}
		return nil
	}

	win := make([]byte, max(winLen, 1))
	wl, err := srv.ia.CreateLMR(srv.pz, api.Region{Type: api.MemTypeVirtual, Bytes: win}, api.MemPrivAll, api.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	wp, _ := wl.Query()
	rbuf := make([]byte, nrecv*maxLen)
	rl, err := srv.ia.CreateLMR(srv.pz, api.Region{Type: api.MemTypeVirtual, Bytes: rbuf}, api.MemPrivLocalWrite, api.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	rp, _ := rl.Query()
	sbuf := make([]byte, window*maxLen)
	sl, err := cli.ia.CreateLMR(cli.pz, api.Region{Type: api.MemTypeVirtual, Bytes: sbuf}, api.MemPrivLocalRead, api.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	sp, _ := sl.Query()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// next takes one event, polling or waiting as the side's current mode
	// says, and switches mode now and then.
	next := func(e api.EVD, poll *bool, r *rand.Rand, ev *api.Event) error {
		if r.IntN(8) == 0 {
			*poll = !*poll
		}
		if !*poll {
			_, err := e.Wait(ctx, 1, ev)
			return err
		}
		for i := 0; ; i++ {
			err := e.Dequeue(ev)
			if err == nil || !errors.Is(err, api.ErrQueueEmpty) {
				return err
			}
			if i&63 == 63 {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				runtime.Gosched()
			}
		}
	}

	srvErr := make(chan error, 1)
	go func() {
		srvErr <- func() error {
			r := rand.New(rand.NewPCG(9, uint64(time.Now().UnixNano())))
			poll := false
			slot := func(k int) []api.LMRTriplet {
				return []api.LMRTriplet{rp.Triplet(uint64(k%nrecv*maxLen), maxLen)}
			}
			for k := range nrecv {
				if err := srv.ep.PostRecv(slot(k), api.Cookie(k), api.CompletionDefault); err != nil {
					return err
				}
			}
			checked, got := 0, 0 // writes checked up to plan index; sends received
			var ev api.Event
			for i, m := range plan {
				if m.write {
					continue
				}
				if err := next(srv.recv, &poll, r, &ev); err != nil {
					return fmt.Errorf("server, waiting for message %d: %w", i, err)
				}
				d := ev.DTO
				if d.Status != api.DTOSuccess || d.Op != api.OpReceive || int(d.Cookie) != got || int(d.Length) != m.n {
					return fmt.Errorf("server: message %d (receive %d, %d bytes): got %+v", i, got, m.n, d)
				}
				k := got % nrecv
				if err := check(rbuf[k*maxLen:k*maxLen+m.n], i, "the send"); err != nil {
					return err
				}
				// The writes posted before this send are placed.
				for ; checked < i; checked++ {
					if w := plan[checked]; w.write {
						if err := check(win[w.off:w.off+w.n], checked, "the RDMA write"); err != nil {
							return err
						}
					}
				}
				if err := srv.ep.PostRecv(slot(got+nrecv), api.Cookie(got+nrecv), api.CompletionDefault); err != nil {
					return err
				}
				got++
			}
			return nil
		}()
	}()

	r := rand.New(rand.NewPCG(11, uint64(time.Now().UnixNano())))
	poll := false
	var ev api.Event
	done := 0
	for i, m := range plan {
		for i-done >= window {
			if err := next(cli.req, &poll, r, &ev); err != nil {
				t.Fatalf("client, waiting for completion %d: %v", done, err)
			}
			if ev.DTO.Status != api.DTOSuccess || int(ev.DTO.Cookie) != done {
				t.Fatalf("client: completion %d: %+v", done, ev.DTO)
			}
			done++
		}
		s := i % window * maxLen
		fill(sbuf[s:s+m.n], i)
		iov := []api.LMRTriplet{sp.Triplet(uint64(s), uint32(m.n))}
		if m.write {
			err = cli.ep.PostRDMAWrite(iov, api.Cookie(i), api.RMRTriplet{RMRContext: wp.RMRContext, Addr: wp.RegisteredAddress + api.VAddr(m.off), Length: uint32(m.n)}, api.CompletionDefault)
		} else {
			err = cli.ep.PostSend(iov, api.Cookie(i), api.CompletionDefault)
		}
		if err != nil {
			t.Fatalf("client: posting message %d: %v", i, err)
		}
	}
	for done < nmsg {
		if err := next(cli.req, &poll, r, &ev); err != nil {
			t.Fatalf("client, waiting for completion %d: %v", done, err)
		}
		if ev.DTO.Status != api.DTOSuccess || int(ev.DTO.Cookie) != done {
			t.Fatalf("client: completion %d: %+v", done, ev.DTO)
		}
		done++
	}
	if err := <-srvErr; err != nil {
		t.Fatal(err)
	}
}

// TestQuickAckOnStreams checks that a connection receiving a stream sets
// TCP_QUICKACK after it writes (see quickAck), and that one exchanging
// small messages does not.
func TestQuickAckOnStreams(t *testing.T) {
	var sets, fails atomic.Int64
	testHookQuickAck = func(err error) {
		if err != nil {
			fails.Add(1)
		} else {
			sets.Add(1)
		}
	}
	t.Cleanup(func() { testHookQuickAck = nil })
	cli, srv := benchPair(t)
	pingPong(t, cli, srv, 64, 500, true, true, nil) // 32,000 bytes each way
	if n := sets.Load() + fails.Load(); n != 0 {
		t.Fatalf("64-byte messages, %d bytes each way: %d quick ACKs, want none", 64*500, n)
	}
	pingPong(t, cli, srv, 100<<10, 20, true, false, nil) // 2,048,000 bytes each way
	if fails.Load() != 0 {
		t.Fatalf("%d of %d TCP_QUICKACK sets failed", fails.Load(), sets.Load()+fails.Load())
	}
	// Each side writes after each message it receives (an ACK, or its
	// answer), and every third 100 KiB message brings what it received
	// since its last quick ACK to quickAckBytes: 6 quick ACKs each.
	if n := sets.Load(); n < 12 {
		t.Fatalf("100 KiB messages, 2,048,000 bytes each way: %d quick ACKs, want at least 12", n)
	}
}

// TestLateCompletions checks the completions a polling consumer's ACKs
// leave late (see ackIn): a send whose ACK rides on the message the
// consumer polls for completes as a success, whatever the consumer does
// next: it waits on the request EVD, waits in a CNO (the reader's quiet
// check completes the send), asks for the EP's status, disconnects
// gracefully, or the peer breaks the connection. Each case starts right
// after an exchange whose ACK is still owed.
func TestLateCompletions(t *testing.T) {
	// The hooks see every connection of the test; they count for the
	// rig being set up.
	var cur atomic.Pointer[lateRig]
	testHookReapLate = func(c *conn) {
		if r := cur.Load(); r != nil {
			r.sawLate(c)
		}
	}
	testHookQuiet = func(_ *conn, in bool) {
		if r := cur.Load(); r != nil && in {
			r.entered.Add(1)
		}
	}
	t.Cleanup(func() { testHookReapLate, testHookQuiet = nil, nil })
	newRig := func() *lateRig {
		r := &lateRig{t: t}
		cur.Store(r)
		r.start()
		return r
	}
	r := newRig()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	r.lateExchange(10)
	if _, err := r.cli.req.Wait(ctx, 1, &r.ev); err != nil {
		t.Fatalf("Wait after a late ACK: %v", err)
	}
	r.wantSend("Wait after a late ACK", 10)
	r.drain()

	r.lateExchange(11)
	if _, _, idle, err := r.cli.ep.GetStatus(); err != nil || !idle {
		t.Fatalf("GetStatus after a late ACK: request queue idle %v, %v", idle, err)
	}
	nextEvent(t, r.cli.req, true, &r.ev)
	r.wantSend("GetStatus after a late ACK", 11)
	r.drain()

	// The CNO's consumer drives nothing: the reader's quiet check
	// completes the send, within quietMax of its next look.
	cno, err := r.cli.ia.CreateCNO(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cli.req.ModifyCNO(cno); err != nil {
		t.Fatal(err)
	}
	r.lateExchange(12)
	if e, err := cno.Wait(ctx); err != nil || e != r.cli.req {
		t.Fatalf("CNO wait after a late ACK: %v, %v", e, err)
	}
	nextEvent(t, r.cli.req, true, &r.ev)
	r.wantSend("CNO wait after a late ACK", 12)
	r.drain()
	if err := r.cli.req.ModifyCNO(nil); err != nil {
		t.Fatal(err)
	}
	if err := cno.Free(); err != nil {
		t.Fatal(err)
	}

	// A graceful disconnect has nothing outstanding to wait for.
	r.lateExchange(13)
	if err := r.cli.ep.Disconnect(api.CloseGraceful); err != nil {
		t.Fatal(err)
	}
	if prm, err := r.cli.ep.Query(); err != nil || prm.State == api.EPDisconnectPending {
		t.Fatalf("graceful disconnect after a late ACK: %v, %v", prm.State, err)
	}
	nextEvent(t, r.cli.req, false, &r.ev) // (a Wait bounded by eventTimeout)
	r.wantSend("graceful disconnect after a late ACK", 13)

	// A post that breaks the connection (its memory is not registered):
	// the earlier send still completes as a success, ahead of it. (The
	// extra receive gives the client the credit that lets its post
	// start, and fail, at once.)
	r = newRig()
	if err := r.srv.ep.PostRecv(r.siov, 0, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	r.lateExchange(20)
	bad := []api.LMRTriplet{{Addr: 1 << 40, Length: 64, LMRContext: 0xbad}}
	if err := r.cli.ep.PostSend(bad, 21, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, r.cli.req, true, &r.ev)
	r.wantSend("a breaking post after a late ACK", 20)
	nextEvent(t, r.cli.req, true, &r.ev)
	if r.ev.DTO.Cookie != 21 || r.ev.DTO.Status != api.DTOErrLocalProtection {
		t.Fatalf("send of unregistered memory: %+v", r.ev.DTO)
	}

	// The peer's socket closes without a DISCONNECT (its process
	// died): the send still completes as a success, ahead of the
	// flushed receive.
	r = newRig()
	r.lateExchange(14)
	if err := r.cli.ep.PostRecv(r.ciov, 15, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := r.sc.Load().nc.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.cli.connEVD.Wait(ctx, 1, &r.ev); err != nil || r.ev.Number != api.ConnectionBrokenEvent {
		t.Fatalf("the client saw %v, %v; want BROKEN", r.ev.Number, err)
	}
	nextEvent(t, r.cli.req, true, &r.ev)
	r.wantSend("the peer's disconnect after a late ACK", 14)
	nextEvent(t, r.cli.recv, true, &r.ev)
	if r.ev.DTO.Cookie != 15 || r.ev.DTO.Status != api.DTOErrFlushed {
		t.Fatalf("receive posted before the peer's disconnect: %+v", r.ev.DTO)
	}
}

// lateRig is a connected client and server whose client's connection
// has had ACKs left late (TestLateCompletions).
type lateRig struct {
	t          *testing.T
	cli, srv   *client
	ciov, siov []api.LMRTriplet
	ev         api.Event
	late       atomic.Int64         // the client's late ACKs
	cc         atomic.Pointer[conn] // the client's connection
	sc         atomic.Pointer[conn] // the server's
	entered    atomic.Int64         // connections that went quiet
	srvPort    atomic.Int64         // the server's service point
}

// sawLate counts a late ACK of the client's connection, the one whose
// remote port is the server's service point, and notes the connections.
func (r *lateRig) sawLate(c *conn) {
	if a, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok && int64(a.Port) == r.srvPort.Load() {
		r.cc.Store(c)
		r.late.Add(1)
	} else {
		r.sc.Store(c)
	}
}

// start connects the pair and exchanges messages, both sides polling,
// until the client's connection has left an ACK late (10 s at most).
func (r *lateRig) start() {
	t := r.t
	r.cli, r.srv = benchPair(t)
	prm, err := r.cli.ep.Query()
	if err != nil {
		t.Fatal(err)
	}
	r.srvPort.Store(int64(prm.RemotePortQual))
	for end := time.Now().Add(10 * time.Second); (r.entered.Load() == 0 || r.late.Load() == 0 || r.sc.Load() == nil) && time.Now().Before(end); {
		pingPong(t, r.cli, r.srv, 64, 200, true, true, nil)
	}
	if r.late.Load() == 0 || r.sc.Load() == nil {
		t.Fatal("polling consumers never had an ACK's completions left late")
	}
	r.ciov = []api.LMRTriplet{r.cli.lmr.Triplet(0, 64)}
	r.siov = []api.LMRTriplet{r.srv.lmr.Triplet(0, 64)}
}

// exchange sends a message from the client (cookie) and has the server,
// polling on a goroutine of its own, answer it; the client polls until
// the answer is in and reports whether the ACK of its send, which the
// answer carries, was left late and is still owed. The server's own
// send completes later (drain).
func (r *lateRig) exchange(cookie api.Cookie) bool {
	t := r.t
	t.Helper()
	before := r.late.Load()
	if err := r.cli.ep.PostRecv(r.ciov, 0, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := r.srv.ep.PostRecv(r.siov, 0, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	echo := make(chan error, 1)
	go func() {
		var ev api.Event
		for end := time.Now().Add(eventTimeout); ; {
			err := r.srv.recv.Dequeue(&ev)
			if err == nil {
				break
			}
			if time.Now().After(end) {
				echo <- errors.New("the server's receive never completed")
				return
			}
			if !errors.Is(err, api.ErrQueueEmpty) {
				echo <- err
				return
			}
		}
		if ev.DTO.Status != api.DTOSuccess {
			echo <- fmt.Errorf("server receive: %+v", ev.DTO)
			return
		}
		echo <- r.srv.ep.PostSend(r.siov, 1, api.CompletionDefault)
	}()
	if err := r.cli.ep.PostSend(r.ciov, cookie, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, r.cli.recv, true, &r.ev)
	if r.ev.DTO.Status != api.DTOSuccess {
		t.Fatalf("client receive: %+v", r.ev.DTO)
	}
	owed := r.late.Load() > before && r.cc.Load().reapLate.Load()
	if err := <-echo; err != nil {
		t.Fatal(err)
	}
	return owed
}

// lateExchange repeats exchange until its ACK is owed late (10 s at
// most), taking the completions of the tries where it was not.
func (r *lateRig) lateExchange(cookie api.Cookie) {
	t := r.t
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		if r.exchange(cookie) {
			return
		}
		nextEvent(t, r.cli.req, true, &r.ev)
		r.drain()
	}
	t.Fatalf("send %d: no ACK was left late in 10 s of exchanges", cookie)
}

// drain takes the completion of the server's answer.
func (r *lateRig) drain() {
	r.t.Helper()
	var ev api.Event
	nextEvent(r.t, r.srv.req, true, &ev)
	if ev.DTO.Status != api.DTOSuccess {
		r.t.Fatalf("server send: %+v", ev.DTO)
	}
}

// wantSend checks that r.ev is the successful completion of send cookie.
func (r *lateRig) wantSend(what string, cookie api.Cookie) {
	r.t.Helper()
	d := r.ev.DTO
	if r.ev.Number != api.DTOCompletionEvent || d.Cookie != cookie || d.Status != api.DTOSuccess || d.Op != api.OpSend {
		r.t.Fatalf("%s: the send completed as %v %+v", what, r.ev.Number, d)
	}
}

// TestCNOWaitHandsBack checks that a consumer who polled and then waits
// in a CNO gives its connections back to their readers, as an EVD Wait
// does: otherwise its completions wait for the reader's next quiet
// check, up to quietMax.
func TestCNOWaitHandsBack(t *testing.T) {
	var handed atomic.Int64
	testHookCNOHandBack = func(n int) { handed.Add(int64(n)) }
	t.Cleanup(func() { testHookCNOHandBack = nil })
	cli, srv := benchPair(t)
	pingPong(t, cli, srv, 64, 200, true, true, nil)
	// Attached after the polling, whose events would have left a trigger.
	cno := attachCNO(t, cli.ia, cli.recv)

	// The client waits in its CNO for a message the server sends.
	iov := []api.LMRTriplet{cli.lmr.Triplet(0, 64)}
	if err := cli.ep.PostRecv(iov, 11, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		evd, err := cno.Wait(ctx)
		if err == nil && evd == nil {
			err = errors.New("CNO wait returned no EVD")
		}
		got <- err
	}()
	if err := srv.ep.PostSend([]api.LMRTriplet{srv.lmr.Triplet(0, 64)}, 12, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	var ev api.Event
	if err := cli.recv.Dequeue(&ev); err != nil || ev.DTO.Cookie != 11 {
		t.Fatalf("after the CNO fired: %v %+v", err, ev.DTO)
	}
	if handed.Load() != 1 {
		t.Fatalf("the CNO wait handed back %d connections, want the 1 feeding its EVD", handed.Load())
	}
}

// TestMemoryWatcherWritesDoNotWait runs the RDMA-write ping-pong of dtest
// -W: each side watches the last byte of its landing area for the peer's
// write, and spins on Dequeue only for the completions of its own
// signalled writes (every one, or one in ten). Nobody polls while a side
// waits for the peer's write, so a quiet connection would leave that
// write in the socket until the reader's next quiet check: either the
// reader keeps watching, or the ACKs ride on the answers and each write
// arrives while its peer polls. (A check may still find one waiting when
// an answer comes later than credDelay, on a loaded machine: a few are
// allowed.)
func TestMemoryWatcherWritesDoNotWait(t *testing.T) {
	for _, every := range []int{1, 10} {
		t.Run(fmt.Sprintf("signal-every-%d", every), func(t *testing.T) { memoryWatcher(t, every, 0) })
	}
	// The server answers late: the ACK of each client write goes alone,
	// the client's poll for the write's completion takes it and stops,
	// and the answer comes while the client watches memory only.
	t.Run("late-answers", func(t *testing.T) { memoryWatcher(t, 1, 10*credDelay) })
}

func memoryWatcher(t *testing.T, signalEvery int, answerAfter time.Duration) {
	var stalls atomic.Int64
	testHookStall = func(*conn) { stalls.Add(1) }
	t.Cleanup(func() { testHookStall = nil })
	cli, srv := benchPair(t)
	const size, rounds = 64, 400
	ce, se := newRDMAEnd(t, cli, size), newRDMAEnd(t, srv, size)
	deadline := time.Now().Add(30 * time.Second)
	// watch spins on the landing area's last byte (an atomic load of
	// its word: the provider's reader stores it) without calling in.
	watch := func(e *rdmaEnd, tag byte) error {
		for spins := 1; ; spins++ {
			w := atomic.LoadUint32((*uint32)(unsafe.Pointer(&e.land[size-4])))
			if byte(w>>24) == tag {
				return nil
			}
			if spins&63 == 0 {
				runtime.Gosched()
				if time.Now().After(deadline) {
					return fmt.Errorf("the write of tag %d never landed", tag)
				}
			}
		}
	}
	// write posts the write of round i to the peer's area; every
	// signalEvery-th is signalled, and its completion is polled for.
	write := func(from, to *rdmaEnd, i int) error {
		from.src[size-1] = byte(1 + i%255)
		flags := api.CompletionSuppress
		if (i+1)%signalEvery == 0 {
			flags = api.CompletionDefault
		}
		if err := from.c.ep.PostRDMAWrite([]api.LMRTriplet{from.srcTri}, api.Cookie(i), to.dst, flags); err != nil {
			return err
		}
		if flags == api.CompletionSuppress {
			return nil
		}
		var ev api.Event
		for spins := 1; ; spins++ {
			if spins&63 == 0 {
				runtime.Gosched() // (the peer may share this P)
			}
			err := from.c.req.Dequeue(&ev)
			if err == nil {
				if ev.DTO.Status != api.DTOSuccess || ev.DTO.Cookie != api.Cookie(i) {
					return fmt.Errorf("write %d: %+v", i, ev.DTO)
				}
				return nil
			}
			if !errors.Is(err, api.ErrQueueEmpty) {
				return err
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("write %d never completed", i)
			}
		}
	}
	errc := make(chan error, 1)
	go func() {
		for i := range rounds {
			if err := watch(se, byte(1+i%255)); err != nil {
				errc <- err
				return
			}
			for t0 := time.Now(); time.Since(t0) < answerAfter; {
			}
			if err := write(se, ce, i); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for i := range rounds {
		if err := write(ce, se, i); err != nil {
			t.Fatal(err)
		}
		if err := watch(ce, byte(1+i%255)); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := stalls.Load(); n > rounds/20 {
		t.Fatalf("with a consumer that polls only for the completions of its writes (one in %d signalled), %d of %d writes waited in a quiet connection for the reader's check", signalEvery, n, rounds)
	}
}

// TestDrivenWaitSendsWriteACK checks that a consumer blocked in a driven
// Wait does not sit on the ACK of an RDMA write its wait placed: the ACK
// of a write read by a poller waits for the consumer's answer, and a
// blocked consumer answers nothing, so the wait sends it before it blocks
// again, not the reader's next quiet check.
func TestDrivenWaitSendsWriteACK(t *testing.T) {
	var late atomic.Int64
	testHookCheckAck = func() { late.Add(1) }
	t.Cleanup(func() { testHookCheckAck = nil })
	cli, srv := benchPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waited := make(chan error, 1)
	go func() {
		var ev api.Event
		_, err := srv.recv.Wait(ctx, 1, &ev) // blocks until cancel: nothing is sent
		waited <- err
	}()
	mem, err := api.AllocMemory(64)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Free()
	l, err := srv.ia.CreateLMR(srv.pz, api.Region{Type: api.MemTypeVirtual, Bytes: mem.Bytes()[:64]}, api.MemPrivAll, api.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Free()
	p, _ := l.Query()
	const rounds = 100
	var ev api.Event
	for i := range rounds {
		if err := cli.ep.PostRDMAWrite([]api.LMRTriplet{cli.lmr.Triplet(0, 64)}, api.Cookie(i), p.RemoteTriplet(0, 64), api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.req.Wait(ctx, 1, &ev); err != nil || ev.DTO.Status != api.DTOSuccess || ev.DTO.Cookie != api.Cookie(i) {
			t.Fatalf("write %d: %v %+v", i, err, ev.DTO)
		}
	}
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("the server's Wait ended with %v", err)
	}
	if n := late.Load(); n > rounds/10 {
		t.Fatalf("%d of %d write ACKs were left to the reader's quiet check", n, rounds)
	}
}

// TestDrivenWaitFinishesOthersWrite checks writes that another
// goroutine posts while the consumer is blocked in a driven Wait. The
// Wait made the connection quiet, so what is not written at once (the
// rest of a large write the socket did not take, or frames a streaming
// post queues) is left to pollers, and the blocked waiter is the poller
// that must write it, woken for it, not the reader's next quiet check a
// millisecond or more later.
// The quiet check's intervals are stretched 50 times: on a loaded machine
// a woken waiter can wait milliseconds for a CPU, and a look in that time
// would write what the waiter was woken to write.
func TestDrivenWaitFinishesOthersWrite(t *testing.T) {
	stretchQuiet(t, 50)
	var late atomic.Int64 // (the hook is set once: the readers of every pair read it)
	testHookRestLate = func(*conn) { late.Add(1) }
	t.Cleanup(func() { testHookRestLate = nil })
	t.Run("large", func(t *testing.T) { othersWrites(t, &late, 4<<20, 1) })
	t.Run("stream", func(t *testing.T) { othersWrites(t, &late, 4<<10, 16) })
}

// stretchQuiet multiplies the quiet check's intervals by k until the test
// ends. Like the test hooks, it is set before any connection exists.
func stretchQuiet(t *testing.T, k time.Duration) {
	c, m, s := quietCheck, quietMax, quietSoon
	quietCheck, quietMax, quietSoon = k*c, k*m, k*s
	t.Cleanup(func() { quietCheck, quietMax, quietSoon = c, m, s })
}

// othersWrites posts rounds of burst RDMA writes of size bytes from one
// goroutine while another waits for their completions in a driven Wait;
// late counts the quiet checks that found writing left to them.
func othersWrites(t *testing.T, late *atomic.Int64, size, burst int) {
	late.Store(0)
	const rounds = 40
	cli, srv := benchPair(t)
	ce, se := newRDMAEnd(t, cli, size), newRDMAEnd(t, srv, size)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, rounds+1) // (never blocks the waiter, even after a failure)
	go func() {
		var ev api.Event
		for i := range rounds * burst {
			if _, err := cli.req.Wait(ctx, 1, &ev); err != nil || ev.DTO.Status != api.DTOSuccess || ev.DTO.Cookie != api.Cookie(i) {
				done <- fmt.Errorf("write %d: %v %+v", i, err, ev.DTO)
				return
			}
			if i%burst == burst-1 {
				done <- nil
			}
		}
	}()
	for r := range rounds {
		time.Sleep(time.Millisecond) // (the Wait blocks before the posts)
		for k := range burst {
			if err := cli.ep.PostRDMAWrite([]api.LMRTriplet{ce.srcTri}, api.Cookie(r*burst+k), se.dst, api.CompletionDefault); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := late.Load(); n > rounds/10 {
		t.Fatalf("in %d rounds of writes posted beside a blocked driven Wait, the reader's quiet check wrote what was left %d times", rounds, n)
	}
}

// TestCNOWaitFinishesPollersWrite: on a quiet connection a post writes
// what the socket takes and leaves the rest of a long RDMA write to the
// pollers; a consumer that then blocks in a CNO wait instead of polling
// hands the connection back, and its writer must finish the write, with
// nothing else moving on the connection to prompt it.
func TestCNOWaitFinishesPollersWrite(t *testing.T) {
	const size = 32 << 20
	quiet, _ := watchQuiet(t)
	// Polls marked without pause keep the connection quiet until the
	// post (the quiet check would otherwise hand it back once the
	// ping-pong's pollers stop).
	stopMarks := sync.OnceFunc(every(0, func() {
		if c := quiet.Load(); c != nil {
			c.markPolled()
		}
	}))
	defer stopMarks()
	cli, srv := connectedPair(t, 64, size)
	c, poster, peer := makeQuietPair(t, quiet, cli, srv)
	_, rt := peer.window(size)
	cno := attachCNO(t, poster.ia, poster.req)
	if !c.isQuiet() {
		t.Fatal("the connection left quiet mode before the post, polls marked all along")
	}
	if err := poster.ep.PostRDMAWrite([]api.LMRTriplet{poster.lmr.Triplet(0, size)}, 22, rt, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	stopMarks()
	c.ia.mu.Lock()
	rest := c.directRest
	c.ia.mu.Unlock()
	if !rest {
		t.Fatal("the post's write on a quiet connection left no rest of a 32 MiB RDMA write")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if evd, err := cno.Wait(ctx); err != nil || evd != poster.req {
		t.Fatalf("the CNO wait for an RDMA write whose rest the pollers held: %v, %v (want the request EVD)", evd, err)
	}
	var ev api.Event
	if err := poster.req.Dequeue(&ev); err != nil || ev.DTO.Cookie != 22 || ev.DTO.Status != api.DTOSuccess {
		t.Fatalf("the RDMA write's completion: %v %+v", err, ev.DTO)
	}
}

// TestQuietCheckTakesStalledInput checks the quiet check's guard against
// pollers that come only between messages: their polls find nothing, and
// the message that arrives meanwhile waits in the socket. Once input has
// waited through a look with no poll reading any of it, the reader
// watches the socket again and takes it, however often the pollers poll.
func TestQuietCheckTakesStalledInput(t *testing.T) {
	quiet, left := watchQuiet(t)
	// A consumer that polls between messages, reduced to the mark its
	// polls leave (a poll that finds the socket empty reads nothing),
	// marking without pause: every look of the quiet check finds polls.
	defer every(0, func() {
		if c := quiet.Load(); c != nil {
			c.markPolled()
		}
	})()
	c, rx, tx := makeQuiet(t, quiet)
	for len(left) > 0 {
		<-left
	}
	postMessage(t, rx, tx)
	for limit := time.After(5 * time.Second); ; {
		select {
		case l := <-left:
			if l != c {
				continue
			}
		case <-limit:
			t.Fatal("the message waited in a quiet connection's socket while pollers polled between messages (5 s)")
		}
		break
	}
	expectMessage(t, rx, tx)
}

// TestQuietWithBlockedWriter checks that a transfer goes on without its
// consumers once they stop polling, when each end's writer goroutine is
// blocked in a write that the peer reads too slowly: pollers make the
// readers quiet in the middle of many large RDMA writes both ways, then
// stop calling in. A writer blocked for room is no poller at work: each
// reader must leave quiet mode and read, or neither writer ever gets
// room (dtest's default run hung so, once, in CI).
func TestQuietWithBlockedWriter(t *testing.T) {
	var quiet atomic.Int32
	testHookQuiet = func(c *conn, in bool) {
		if in {
			quiet.Add(1)
		}
	}
	t.Cleanup(func() { testHookQuiet = nil })
	cli, srv := benchPair(t)
	const size, writes = 128 << 20, 64
	ce, se := newRDMAEnd(t, cli, size), newRDMAEnd(t, srv, size)
	// Writes are placed in order: the last one's last byte lands last.
	landed := func(e *rdmaEnd, tag byte) bool {
		w := atomic.LoadUint32((*uint32)(unsafe.Pointer(&e.land[size-4])))
		return byte(w>>24) == tag
	}
	// round posts many writes each way (the readers look for pollers
	// between them), polls until both connections went quiet, and stops
	// calling in; it reports whether they went quiet before the writes
	// were done (else it showed nothing).
	round := func(r int) bool {
		ctag, stag := byte(2*r+1), byte(2*r+2)
		ce.src[size-1], se.src[size-1] = ctag, stag
		for _, e := range []*rdmaEnd{ce, se} {
			peer := se
			if e == se {
				peer = ce
			}
			for i := range writes {
				off := uint32(i) * (size / writes)
				src, dst := e.srcTri, peer.dst
				src.Addr += api.VAddr(off)
				dst.Addr += api.VAddr(off)
				src.Length, dst.Length = size/writes, size/writes
				if err := e.c.ep.PostRDMAWrite([]api.LMRTriplet{src}, api.Cookie(i), dst, api.CompletionSuppress); err != nil {
					t.Fatal(err)
				}
			}
		}
		quiet.Store(0)
		done := func() bool { return landed(se, ctag) && landed(ce, stag) }
		var wg sync.WaitGroup
		for _, e := range []*rdmaEnd{ce, se} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var ev api.Event
				for quiet.Load() < 2 && !done() {
					_ = e.c.req.Dequeue(&ev) // (nothing comes: the writes are suppressed)
				}
			}()
		}
		wg.Wait()
		shown := !done()
		for end := time.Now().Add(30 * time.Second); !done(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("round %d: with no consumer calling in, the writes stalled (the client's landed: %v, the server's: %v)", r, landed(se, ctag), landed(ce, stag))
			}
		}
		return shown
	}
	for r := range 5 {
		if round(r) {
			return
		}
	}
	t.Log("the writes were done before both connections went quiet: nothing shown")
}

// rdmaEnd is one end of an RDMA test: memory outside the Go heap (which
// the provider's goroutines write without the race detector seeing why
// it is safe) holding a landing area of size bytes and then a source as
// large, registered on the end's IA.
type rdmaEnd struct {
	c         *client
	land, src []byte
	srcTri    api.LMRTriplet // the source, for local use
	dst       api.RMRTriplet // the landing area, for the peer
}

func newRDMAEnd(t *testing.T, c *client, size int) *rdmaEnd {
	t.Helper()
	mem, err := api.AllocMemory(2 * size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Free() })
	b := mem.Bytes()[:2*size]
	l, err := c.ia.CreateLMR(c.pz, api.Region{Type: api.MemTypeVirtual, Bytes: b}, api.MemPrivAll, api.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Free() })
	p, _ := l.Query()
	return &rdmaEnd{c: c, land: b[:size], src: b[size:], srcTri: p.Triplet(uint64(size), uint32(size)), dst: p.RemoteTriplet(0, uint32(size))}
}

// TestQuietCheckLooksSoonAtWaitingInput checks the quiet check's second
// look: a look that finds input waiting while pollers seem at work (they
// read frames since the last look) looks again quietSoon later instead of
// after the doubled interval, and if no poll came meanwhile the reader
// takes the input. A consumer that polled for its own completions and
// then stopped to watch memory for the peer's next message (dtest -W)
// otherwise left that message in the socket for up to quietMax.
func TestQuietCheckLooksSoonAtWaitingInput(t *testing.T) {
	type look struct {
		pending bool
		next    time.Duration
	}
	quiet, left := watchQuiet(t)
	// Pollers that read frames until the message comes, reduced to the
	// marks their polls leave: one between every two looks, made by the
	// look itself (under ia.mu, after it has read the marks), so that no
	// scheduling delay on a loaded machine can leave a look without one.
	// They stop at the look that sees the message waiting.
	var polling atomic.Bool
	markPoll := func(c *conn) { c.rxPolls++; c.markPolled() }
	looks := make(chan look, 64)
	testHookLook = func(c *conn, pending bool, next time.Duration) {
		if c == quiet.Load() {
			if pending {
				polling.Store(false)
			} else if polling.Load() {
				markPoll(c)
			}
			select {
			case looks <- look{pending, next}:
			default:
			}
		}
	}
	t.Cleanup(func() { testHookLook = nil })
	c, rx, tx := makeQuiet(t, quiet)
	for len(left) > 0 || len(looks) > 0 {
		select {
		case <-left:
		case <-looks:
		}
	}
	c.ia.mu.Lock()
	polling.Store(true)
	markPoll(c)
	c.ia.mu.Unlock()
	postMessage(t, rx, tx)
	limit := time.After(5 * time.Second)
	saw := false
	for ended := false; !ended; {
		select {
		case l := <-looks:
			switch {
			case l.pending && !saw:
				saw = true
				if l.next != quietSoon {
					t.Fatalf("a look that found input waiting looks again after %v, want quietSoon (%v)", l.next, quietSoon)
				}
			case saw:
				t.Fatalf("the look after the one that found input waiting kept the connection quiet (next look after %v), with no poll since", l.next)
			}
		case l := <-left:
			ended = l == c
		case <-limit:
			t.Fatal("the message waited in a quiet connection's socket (5 s)")
		}
	}
	if !saw {
		t.Fatal("quiet mode ended before a look found the message waiting: the pollers' marks did not keep it")
	}
	expectMessage(t, rx, tx)
}

// TestQuietCheckKeepsWaiterDeadline checks a quiet check that ends quiet
// mode and sends an owed ACK against a waiter that makes the connection
// quiet again while that ACK is written (ia.mu is released for the
// write): the waiter's quiet mode must keep its read deadline, or the
// reader never looks again, and what the pollers left (the rest of a
// write, input) waits for ever. dtest's default run hung so in CI.
//
// The hooks are set once, before any connection exists (their readers
// read them), and act on the connection of the try in progress; each try
// is a subtest, whose connections are closed before the next begins.
func TestQuietCheckKeepsWaiterDeadline(t *testing.T) {
	r := &waiterRace{looks: make(chan *conn, 64)}
	r.quiet, r.left = watchQuiet(t)
	testHookLook = func(c *conn, _ bool, _ time.Duration) {
		select {
		case r.looks <- c:
		default:
		}
	}
	testHookCheckAck = func() {
		if c := r.watched.Load(); c != nil && !c.isQuiet() { // (the check that ends quiet mode has watched again)
			r.inEndCheck.Store(true)
		}
	}
	testHookWriting = func(c *conn) {
		if c == r.watched.Load() && r.inEndCheck.CompareAndSwap(true, false) {
			c.enterQuiet() // what a driven Wait does when it finds the connection watched
			r.raced.Store(true)
		}
	}
	t.Cleanup(func() { testHookLook, testHookCheckAck, testHookWriting = nil, nil, nil })
	for i := range 5 {
		shown := false
		t.Run(fmt.Sprint("try", i), func(t *testing.T) { shown = r.try(t) })
		if shown || t.Failed() {
			return
		}
	}
	t.Fatal("in 5 tries no quiet check that ended quiet mode sent the owed credit update: nothing shown")
}

// waiterRace is the state of TestQuietCheckKeepsWaiterDeadline's hooks.
type waiterRace struct {
	quiet             *atomic.Pointer[conn] // the first connection that went quiet in this try
	left              chan *conn            // connections that left quiet mode
	looks             chan *conn            // connections a quiet check kept quiet
	watched           atomic.Pointer[conn]  // the connection the hooks act on, once set
	inEndCheck, raced atomic.Bool
}

// try is one try; false: the quiet check that ends quiet mode had no ACK
// to send.
func (r *waiterRace) try(t *testing.T) bool {
	r.quiet.Store(nil)
	r.watched.Store(nil)
	r.inEndCheck.Store(false)
	r.raced.Store(false)
	qc, rx, _ := makeQuiet(t, r.quiet)
	// Pollers keep the connection quiet, then stop; once a look has
	// seen their last mark, the next one ends quiet mode.
	stop := every(100*time.Microsecond, qc.markPolled)
	time.Sleep(5 * time.Millisecond)
	stop()
	for len(r.looks) > 0 || len(r.left) > 0 {
		select {
		case <-r.looks:
		case <-r.left:
		}
	}
	for limit := time.After(5 * time.Second); ; {
		select {
		case c := <-r.looks:
			if c != qc {
				continue
			}
		case c := <-r.left:
			if c != qc {
				continue
			}
			return false // quiet mode ended already
		case <-limit:
			return false
		}
		break
	}
	r.watched.Store(qc)
	// A receive posted while the peer may be out of credits leaves the
	// credit update to the quiet check (no pollers call in).
	if err := rx.ep.PostRecv([]api.LMRTriplet{rx.lmr.Triplet(0, 64)}, 41, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	limit := time.After(5 * time.Second)
	for ends := 0; ends < 2; {
		select {
		case c := <-r.left:
			if c == qc {
				ends++
			}
		case <-limit:
			if !r.raced.Load() {
				return false
			}
			t.Fatal("after a waiter made the connection quiet while the quiet check that ended quiet mode wrote its ACK, the reader never looked again (5 s)")
		}
	}
	return r.raced.Load()
}

// watchQuiet sets testHookQuiet for a test: quiet holds the first
// connection that goes quiet, left receives those that leave quiet mode.
func watchQuiet(t *testing.T) (quiet *atomic.Pointer[conn], left chan *conn) {
	quiet, left = new(atomic.Pointer[conn]), make(chan *conn, 64)
	testHookQuiet = func(c *conn, in bool) {
		if in {
			quiet.CompareAndSwap(nil, c)
		} else {
			select {
			case left <- c:
			default:
			}
		}
	}
	t.Cleanup(func() { testHookQuiet = nil })
	return quiet, left
}

// makeQuiet connects a pair and runs polling ping-pongs until the
// connection in quiet (see watchQuiet) is quiet; rx is the end that
// connection belongs to, tx the other.
func makeQuiet(t *testing.T, quiet *atomic.Pointer[conn]) (c *conn, rx, tx *client) {
	t.Helper()
	cli, srv := benchPair(t)
	return makeQuietPair(t, quiet, cli, srv)
}

// makeQuietPair is makeQuiet on a pair of the caller's.
func makeQuietPair(t *testing.T, quiet *atomic.Pointer[conn], cli, srv *client) (c *conn, rx, tx *client) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; {
		pingPong(t, cli, srv, 64, 200, true, true, nil)
		if c = quiet.Load(); c != nil && c.isQuiet() {
			break
		}
		if time.Now().After(end) {
			t.Fatal("two polling consumers did not keep a connection quiet")
		}
	}
	rx, tx = srv, cli
	if prm, err := cli.ep.Query(); err == nil {
		if a, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok && a.Port == int(prm.RemotePortQual) {
			rx, tx = cli, srv // c is the client's
		}
	}
	return c, rx, tx
}

// postMessage sends a 64-byte message from tx to a receive rx posts
// (cookies 42 and 41); expectMessage checks that both completed.
func postMessage(t *testing.T, rx, tx *client) {
	t.Helper()
	if err := rx.ep.PostRecv([]api.LMRTriplet{rx.lmr.Triplet(0, 64)}, 41, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := tx.ep.PostSend([]api.LMRTriplet{tx.lmr.Triplet(0, 64)}, 42, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
}

func expectMessage(t *testing.T, rx, tx *client) {
	t.Helper()
	var ev api.Event
	nextEvent(t, rx.recv, true, &ev)
	if ev.DTO.Cookie != 41 || ev.DTO.Status != api.DTOSuccess {
		t.Fatalf("receive: %+v", ev.DTO)
	}
	nextEvent(t, tx.req, false, &ev)
	if ev.DTO.Cookie != 42 || ev.DTO.Status != api.DTOSuccess {
		t.Fatalf("send: %+v", ev.DTO)
	}
}

// attachCNO makes a CNO of ia without agent and makes evd feed it, both
// undone at the test's end.
func attachCNO(t *testing.T, ia api.IA, evd api.EVD) api.CNO {
	t.Helper()
	cno, err := ia.CreateCNO(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := evd.ModifyCNO(cno); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { evd.ModifyCNO(nil); cno.Free() })
	return cno
}

// every runs f on a goroutine of its own every d (with d 0, over and
// over, yielding between calls) until the function it returns is called,
// which waits for that goroutine to end.
func every(d time.Duration, f func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			if d == 0 {
				select {
				case <-quit:
					return
				default:
				}
				runtime.Gosched()
			} else {
				select {
				case <-quit:
					return
				case <-time.After(d):
				}
			}
			f()
		}
	}()
	return func() { close(quit); <-done }
}
