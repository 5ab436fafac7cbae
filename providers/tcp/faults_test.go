package tcp

// Fault tests: what a consumer sees when the peer process dies, the TCP
// connection is reset, nobody listens, the address does not answer, the
// passive side never accepts, or the connection ends while RDMA reads are
// in flight. Each asserts the DAT connection event (dat_ep_connect(3DAT),
// dat_cr_accept(3DAT), dat_ep_disconnect(3DAT)) and the completion of every
// outstanding DTO: each completes exactly once, in post order, SUCCESS or
// FLUSHED as the case allows. No test asserts a duration except that an
// event that must wait for a timeout did not come before it; every wait has
// a generous deadline that only keeps a broken provider from hanging the
// run. goleak (TestMain) checks that no goroutine outlives a test.
//
// A peer process that dies is detected because the kernel closes its
// sockets (FIN, or RST when unread data remains), which is what
// TestFaultPeerKilled exercises. A peer that goes silent instead (its host
// gone, the network cut) is found by the IA's peer_timeout (options.go):
// TestNetnsSilentPeer in options_test.go.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// hangDeadline bounds each wait for an event that must come.
const hangDeadline = 30 * time.Second

// openIA opens a "tcp" IA of this package's configuration, closed when t
// ends.
func openIA(t testing.TB) api.IA {
	t.Helper()
	ia, err := registry.Open(context.Background(), "tcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ia.Close(api.CloseAbrupt) })
	return ia
}

// newEndpoint creates a client EP on ia with EVDs of qlen events and a
// buffer of size bytes (registered with local privileges only).
func newEndpoint(t testing.TB, ia api.IA, qlen, size int) *client {
	t.Helper()
	c := &client{t: t, ia: ia, buf: make([]byte, size)}
	var err error
	if c.pz, err = ia.CreatePZ(); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*api.EVD{&c.recv, &c.req, &c.connEVD} {
		if *e, err = ia.CreateEVD(qlen, nil, api.EVDDTO|api.EVDConnection|api.EVDRMRBind); err != nil {
			t.Fatal(err)
		}
	}
	if c.ep, err = ia.CreateEP(c.pz, c.recv, c.req, c.connEVD, nil); err != nil {
		t.Fatal(err)
	}
	l, err := ia.CreateLMR(c.pz, api.Region{Type: api.MemTypeVirtual, Bytes: c.buf}, api.MemPrivLocalRead|api.MemPrivLocalWrite, api.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	c.lmrs = append(c.lmrs, l)
	if c.lmr, err = l.Query(); err != nil {
		t.Fatal(err)
	}
	return c
}

// free frees c's objects, for a test that makes many clients on one IA
// (an IA's close frees them otherwise).
func (c *client) free() {
	c.t.Helper()
	objs := []interface{ Free() error }{c.ep}
	for _, l := range c.lmrs {
		objs = append(objs, l)
	}
	objs = append(objs, c.recv, c.req, c.connEVD, c.pz)
	for _, o := range objs {
		if err := o.Free(); err != nil {
			c.t.Errorf("free %T: %v", o, err)
		}
	}
}

// window registers a buffer of size bytes of c's PZ with every privilege
// and returns it with the RMR triplet a peer uses to reach it.
func (c *client) window(size int) ([]byte, api.RMRTriplet) {
	c.t.Helper()
	b := make([]byte, size)
	l, err := c.ia.CreateLMR(c.pz, api.Region{Type: api.MemTypeVirtual, Bytes: b}, api.MemPrivAll, api.VATypeVA)
	if err != nil {
		c.t.Fatal(err)
	}
	c.lmrs = append(c.lmrs, l)
	p, err := l.Query()
	if err != nil {
		c.t.Fatal(err)
	}
	return b, api.RMRTriplet{RMRContext: p.RMRContext, Addr: p.RegisteredAddress, Length: uint32(size)}
}

// waitEvents waits for n events on e.
func waitEvents(t testing.TB, e api.EVD, n int, what string) []api.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangDeadline)
	defer cancel()
	evs := make([]api.Event, 0, n)
	for len(evs) < n {
		var ev api.Event
		if _, err := e.Wait(ctx, 1, &ev); err != nil {
			t.Fatalf("%s: %d of %d events, then %v", what, len(evs), n, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// expectQuiet checks that no event is queued on e.
func expectQuiet(t testing.TB, e api.EVD, what string) {
	t.Helper()
	var ev api.Event
	if err := e.Dequeue(&ev); !errors.Is(err, api.ErrQueueEmpty) {
		t.Fatalf("%s: unexpected event %v (DTO cookie %d status %v), %v", what, ev.Number, ev.DTO.Cookie, ev.DTO.Status, err)
	}
}

// checkCompletions checks that evs complete the DTOs cookies names, in
// order and each once: a run of SUCCESS, then only FLUSHED. It returns
// the number of successes.
func checkCompletions(t testing.TB, evs []api.Event, cookies []api.Cookie, what string) int {
	t.Helper()
	if len(evs) != len(cookies) {
		t.Fatalf("%s: %d completions for %d DTOs", what, len(evs), len(cookies))
	}
	ok := 0
	for k, ev := range evs {
		if ev.Number != api.DTOCompletionEvent {
			t.Fatalf("%s: event %d is %v, want a DTO completion", what, k, ev.Number)
		}
		if ev.DTO.Cookie != cookies[k] {
			t.Fatalf("%s: completion %d has cookie %d, want %d (post order)", what, k, ev.DTO.Cookie, cookies[k])
		}
		switch {
		case ev.DTO.Status == api.DTOSuccess && ok == k:
			ok++
		case ev.DTO.Status == api.DTOErrFlushed:
		default:
			t.Fatalf("%s: completion %d (cookie %d) has status %v after %d successes; want SUCCESS then FLUSHED only",
				what, k, ev.DTO.Cookie, ev.DTO.Status, ok)
		}
	}
	return ok
}

// expectFlushed waits for the completions of the DTOs cookies names on e
// and checks that every one is FLUSHED, in post order.
func expectFlushed(t testing.TB, e api.EVD, cookies []api.Cookie, what string) {
	t.Helper()
	if n := checkCompletions(t, waitEvents(t, e, len(cookies), what+" completions"), cookies, what); n != 0 {
		t.Fatalf("%s: %d completed successfully, want every one FLUSHED", what, n)
	}
}

// expectEnded checks that c's EP is DISCONNECTED and that none of its EVDs
// holds an event: an EP whose connection ended and whose DTOs completed.
func expectEnded(t testing.TB, c *client, what string) {
	t.Helper()
	expectState(t, c.ep, api.EPDisconnected, what)
	for _, e := range []api.EVD{c.connEVD, c.req, c.recv} {
		expectQuiet(t, e, what)
	}
}

// cookieRange returns the cookies first, first+1, ... first+n-1.
func cookieRange(first, n int) []api.Cookie {
	c := make([]api.Cookie, n)
	for i := range c {
		c[i] = api.Cookie(first + i)
	}
	return c
}

// expectState checks the EP's state.
func expectState(t testing.TB, ep api.EP, want api.EPState, what string) {
	t.Helper()
	st, _, _, err := ep.GetStatus()
	if err != nil {
		t.Fatal(err)
	}
	if st != want {
		t.Fatalf("%s: EP state %v, want %v", what, st, want)
	}
}

// helperSession starts the helper process and connects a client to it:
// ESTABLISHED, then the helper's window message.
func helperSession(t *testing.T) (*helperProc, *client, api.RMRTriplet) {
	t.Helper()
	h := startHelperProc(t)
	c := newEndpoint(t, openIA(t), 512, 256<<10)
	if err := c.ep.PostRecv([]api.LMRTriplet{c.lmr.Triplet(0, 64)}, 1, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	c.connect(h.port, "fault")
	if ev := c.expect(c.connEVD, api.ConnectionEstablishedEvent, "ESTABLISHED"); string(ev.Conn.PrivateData) != "welcome fault" {
		t.Fatalf("accept private data %q", ev.Conn.PrivateData)
	}
	c.dto(c.recv, 1, api.DTOSuccess, "the window message")
	win := helperWin(c.buf)
	return h, c, win
}

// waitStopped waits until every thread of process pid is stopped.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(hangDeadline)
	for {
		tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "stat"))
		if err != nil || len(tasks) == 0 {
			t.Fatalf("listing the threads of %d: %v", pid, err)
		}
		stopped := 0
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			// The state follows the parenthesised command name.
			if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
				stopped++
			}
		}
		if stopped == len(tasks) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFaultPeerKilled kills the peer process while DTOs are outstanding:
// the survivor gets BROKEN and every outstanding DTO completes once, in
// post order, FLUSHED (or SUCCESS for those the peer acknowledged before
// it died). It extends TestTwoProcess's kill (one idle receive) to a
// stream of RDMA writes, reads, a send and receives.
func TestFaultPeerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second process")
	}
	t.Run("stopped then killed", func(t *testing.T) {
		// The peer is stopped (SIGSTOP) before the DTOs are posted, so it
		// can acknowledge none of them: every one must be FLUSHED. The
		// kill leaves unread data in its socket, so the kernel resets the
		// connection.
		h, c, win := helperSession(t)
		pid := h.proc.Pid
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.proc.Kill() }) // runs before the helper's own cleanup
		waitStopped(t, pid)

		recvs := cookieRange(100, 8)
		for i, ck := range recvs {
			if err := c.ep.PostRecv([]api.LMRTriplet{c.lmr.Triplet(uint64(i)*4096, 4096)}, ck, api.CompletionDefault); err != nil {
				t.Fatal(err)
			}
		}
		var reqs []api.Cookie
		for i := range 32 {
			ck := api.Cookie(200 + i)
			if err := c.ep.PostRDMAWrite([]api.LMRTriplet{c.lmr.Triplet(64<<10, win.Length)}, ck, win, api.CompletionDefault); err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, ck)
		}
		for i := range 4 {
			ck := api.Cookie(300 + i)
			if err := c.ep.PostRDMARead([]api.LMRTriplet{c.lmr.Triplet(128<<10, win.Length)}, ck, win, api.CompletionDefault); err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, ck)
		}
		if err := c.ep.PostSend([]api.LMRTriplet{c.lmr.Triplet(192<<10, 100)}, 400, api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, 400)

		if err := h.proc.Kill(); err != nil {
			t.Fatal(err)
		}
		c.expect(c.connEVD, api.ConnectionBrokenEvent, "BROKEN when the stopped peer is killed")
		// The peer was stopped before they were posted: it acknowledged none.
		expectFlushed(t, c.req, reqs, "requests")
		expectFlushed(t, c.recv, recvs, "receives")
		expectEnded(t, c, "after BROKEN")
	})

	t.Run("killed mid-stream", func(t *testing.T) {
		// A stream of RDMA writes is under way (the first has completed)
		// when the peer is killed: a run of SUCCESS, then FLUSHED.
		h, c, win := helperSession(t)
		recvs := cookieRange(100, 4)
		for i, ck := range recvs {
			if err := c.ep.PostRecv([]api.LMRTriplet{c.lmr.Triplet(uint64(i)*4096, 4096)}, ck, api.CompletionDefault); err != nil {
				t.Fatal(err)
			}
		}
		reqs := cookieRange(1000, 256)
		for _, ck := range reqs {
			if err := c.ep.PostRDMAWrite([]api.LMRTriplet{c.lmr.Triplet(64<<10, win.Length)}, ck, win, api.CompletionDefault); err != nil {
				t.Fatal(err)
			}
		}
		first := c.dto(c.req, reqs[0], api.DTOSuccess, "the first RDMA write")
		if err := h.proc.Kill(); err != nil {
			t.Fatal(err)
		}
		c.expect(c.connEVD, api.ConnectionBrokenEvent, "BROKEN when the peer is killed mid-stream")
		evs := append([]api.Event{first}, waitEvents(t, c.req, len(reqs)-1, "request completions")...)
		n := checkCompletions(t, evs, reqs, "RDMA writes")
		t.Logf("%d of %d RDMA writes completed before the kill, %d were flushed", n, len(reqs), len(reqs)-n)
		expectFlushed(t, c.recv, recvs, "receives")
		expectEnded(t, c, "after BROKEN")
	})
}

// postOutstanding posts, on a connected EP whose peer is a raw socket that
// never answers, four receives (cookies 10-13), an RDMA write (20), an RDMA
// read (21) and a send (22, which waits for a credit the raw peer never
// grants). It returns the request and receive cookies.
func postOutstanding(t *testing.T, c *client) (reqs, recvs []api.Cookie) {
	t.Helper()
	recvs = cookieRange(10, 4)
	for i, ck := range recvs {
		if err := c.ep.PostRecv([]api.LMRTriplet{c.lmr.Triplet(uint64(i)*1024, 1024)}, ck, api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
	}
	remote := api.RMRTriplet{RMRContext: 0x1234, Addr: 0x10000, Length: 4096}
	if err := c.ep.PostRDMAWrite([]api.LMRTriplet{c.lmr.Triplet(64<<10, 4096)}, 20, remote, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := c.ep.PostRDMARead([]api.LMRTriplet{c.lmr.Triplet(128<<10, 4096)}, 21, remote, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := c.ep.PostSend([]api.LMRTriplet{c.lmr.Triplet(192<<10, 100)}, 22, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	return []api.Cookie{20, 21, 22}, recvs
}

// awaitReadReq reads frames from the raw peer's socket until the READ_REQ
// arrives (after the WRITE and its payload): both requests are then on
// the wire, not merely queued.
func awaitReadReq(t *testing.T, nc net.Conn) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(hangDeadline))
	defer nc.SetReadDeadline(time.Time{})
	var h [frameLen]byte
	sawWrite := false
	for {
		if _, err := io.ReadFull(nc, h[:]); err != nil {
			t.Fatalf("reading the EP's frames: %v", err)
		}
		f, err := decodeFrame(h[:], &limits{maxMsg: 1 << 20, maxRDMA: 1 << 20})
		if err != nil {
			t.Fatalf("the EP sent a malformed frame: %v", err)
		}
		switch f.Type {
		case frWrite:
			sawWrite = true
			if _, err := io.CopyN(io.Discard, nc, int64(f.Len)); err != nil {
				t.Fatal(err)
			}
		case frReadReq:
			if !sawWrite {
				t.Fatal("READ_REQ before the WRITE posted ahead of it")
			}
			return
		case frAck:
		default:
			t.Fatalf("unexpected frame %+v", f)
		}
	}
}

// resetConn closes nc with SO_LINGER 0: the kernel sends RST.
func resetConn(t *testing.T, nc net.Conn) {
	t.Helper()
	if err := nc.(*net.TCPConn).SetLinger(0); err != nil {
		t.Fatal(err)
	}
	if err := nc.Close(); err != nil {
		t.Fatal(err)
	}
}

// expectResetOutcome checks what c sees once its peer reset the
// connection: BROKEN, every outstanding DTO FLUSHED in post order.
func expectResetOutcome(t *testing.T, c *client, reqs, recvs []api.Cookie) {
	t.Helper()
	c.expect(c.connEVD, api.ConnectionBrokenEvent, "BROKEN after the reset")
	expectFlushed(t, c.req, reqs, "requests")   // the peer acknowledged none
	expectFlushed(t, c.recv, recvs, "receives") // the peer sent nothing
	expectEnded(t, c, "after BROKEN")
}

// TestFaultConnectionReset resets (RST) a connection from a raw peer that
// completed the handshake as a godat peer would, with DTOs outstanding.
func TestFaultConnectionReset(t *testing.T) {
	t.Run("requester resets", func(t *testing.T) {
		// The EP accepted the raw peer's request.
		s := newServer(t)
		nc := rawConnect(t, s)
		reqs, recvs := postOutstanding(t, s.client)
		awaitReadReq(t, nc)
		resetConn(t, nc)
		expectResetOutcome(t, s.client, reqs, recvs)
		goodPair(t, s) // the IA and its PSP are unaffected
	})
	t.Run("listener resets", func(t *testing.T) {
		// The EP connected to a raw listener that accepted it.
		conns := make(chan net.Conn, 1)
		release := make(chan struct{})
		var once sync.Once
		q := rawListener(t, func(nc net.Conn) {
			var b [hsLen + maxPrivateData]byte
			if _, err := io.ReadFull(nc, b[:hsLen]); err != nil {
				return
			}
			m, err := decodeHS(b[:hsLen], maxPrivateData)
			if err != nil || m.Type != hsHello {
				return
			}
			if _, err := io.ReadFull(nc, b[:m.PDLen]); err != nil {
				return
			}
			encodeHS(b[:hsLen], &hsMsg{Version: wireVersion, Type: hsAccept, MaxMsg: 1 << 20, MaxRDMA: 1 << 20, ReadsIn: 4, ReadsOut: 4, PortQual: 4791})
			if _, err := nc.Write(b[:hsLen]); err != nil {
				return
			}
			if _, err := io.ReadFull(nc, b[:hsLen]); err != nil { // READY
				return
			}
			conns <- nc
			<-release // the test resets nc; rawListener then closes it again
		})
		t.Cleanup(func() { once.Do(func() { close(release) }) }) // before rawListener's cleanup
		c := newClient(t, openIA(t))
		c.connect(q, "reset me")
		c.expect(c.connEVD, api.ConnectionEstablishedEvent, "ESTABLISHED with the raw listener")
		var nc net.Conn
		select {
		case nc = <-conns:
		case <-time.After(hangDeadline):
			t.Fatal("the raw listener did not get READY")
		}
		reqs, recvs := postOutstanding(t, c)
		awaitReadReq(t, nc)
		resetConn(t, nc)
		once.Do(func() { close(release) })
		expectResetOutcome(t, c, reqs, recvs)
	})
}

// TestFaultNobodyListens connects to the port of a PSP that was freed:
// NON_PEER_REJECTED, the EP DISCONNECTED; after Reset the same EP connects
// to a live PSP. (TestTwoProcess covers a port never listened on, and
// TestNetnsTwoHosts a closed port of another host.)
func TestFaultNobodyListens(t *testing.T) {
	s := newServer(t)
	_, psp, q := listenAny(t, s.ia, 4)
	if err := psp.Free(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, openIA(t))
	c.connect(q, "anyone?")
	c.expect(c.connEVD, api.ConnectionNonPeerRejectedEvent, "connecting to the port of a freed PSP")
	expectState(t, c.ep, api.EPDisconnected, "after NON_PEER_REJECTED")
	expectQuiet(t, c.connEVD, "after NON_PEER_REJECTED")

	if err := c.ep.Reset(); err != nil {
		t.Fatal(err)
	}
	expectState(t, c.ep, api.EPUnconnected, "after Reset")
	s.establish(c, s.client, "again", "the connection after Reset")
}

// TestFaultAcceptTimeout: the passive side does not accept in time. The
// requester's connect ends (TIMED_OUT after its timeout, or DISCONNECTED
// when it gives up itself); accepting the stale request afterwards still
// returns success, and the accepting EP gets ACCEPT_COMPLETION_ERROR, moves
// to DISCONNECTED and its posted receive is flushed (dat_cr_accept(3DAT)).
func TestFaultAcceptTimeout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout api.Timeout
		giveUp  bool // the requester disconnects instead of timing out
	}{
		{"requester times out", time.Second, false},
		{"requester disconnects", api.TimeoutInfinite, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			if err := s.ep.PostRecv([]api.LMRTriplet{s.lmr.Triplet(0, 64)}, 5, api.CompletionDefault); err != nil {
				t.Fatal(err)
			}
			c := newClient(t, openIA(t))
			a, _, _ := s.ia.Query()
			start := time.Now()
			if err := c.ep.Connect(a.Address, s.q, tc.timeout, []byte("wait for me"), api.QOSBestEffort, api.ConnectDefault); err != nil {
				t.Fatal(err)
			}
			ev := s.expect(s.crEVD, api.ConnectionRequestEvent, "the request nobody accepts yet")
			if tc.giveUp {
				if err := c.ep.Disconnect(api.CloseAbrupt); err != nil {
					t.Fatal(err)
				}
				c.expect(c.connEVD, api.ConnectionDisconnectedEvent, "DISCONNECTED after giving up")
			} else {
				c.expect(c.connEVD, api.ConnectionTimedOutEvent, "TIMED_OUT while the request waits")
				if d := time.Since(start); d < tc.timeout {
					t.Fatalf("TIMED_OUT after %v, before the %v timeout", d, tc.timeout)
				}
			}
			expectState(t, c.ep, api.EPDisconnected, "the requester")

			if err := ev.CR.CR.Accept(s.ep, []byte("too late")); err != nil {
				t.Fatalf("Accept of the abandoned request: %v", err)
			}
			s.expect(s.connEVD, api.ConnectionAcceptCompletionErrorEvent, "accepting the abandoned request")
			s.dto(s.recv, 5, api.DTOErrFlushed, "the receive of the EP whose accept failed")
			expectState(t, s.ep, api.EPDisconnected, "the accepting EP")
			expectQuiet(t, c.connEVD, "the requester after giving up")
			goodPair(t, s) // the PSP keeps serving
		})
	}
}

// connectedPair connects two EPs of two IAs on 127.0.0.1.
func connectedPair(t testing.TB, qlen, size int) (cli, srv *client) {
	t.Helper()
	s := newServer(t)
	srv = newEndpoint(t, s.ia, qlen, size)
	cli = newEndpoint(t, openIA(t), qlen, size)
	s.establish(cli, srv, "pair", "the pair")
	return cli, srv
}

// TestFaultDisconnectDuringReads disconnects while many large RDMA reads
// are outstanding (more than may be in flight at once, so some wait in the
// queue): every read completes exactly once, in post order, SUCCESS (with
// the window's bytes) or FLUSHED, then both sides get DISCONNECTED; Free
// does not hang and no goroutine is left.
func TestFaultDisconnectDuringReads(t *testing.T) {
	const (
		nreads = 64
		size   = 256 << 10
	)
	for _, tc := range []struct {
		name      string
		responder bool // the target disconnects, not the requester
		graceful  bool
		afterOne  bool // wait for the first read to complete first
	}{
		{name: "requester abrupt at once"},
		{name: "requester abrupt after the first read", afterOne: true},
		{name: "responder abrupt at once", responder: true},
		{name: "requester graceful", graceful: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli, srv := connectedPair(t, 4*nreads, nreads*size)
			win, rt := srv.window(size)
			for i := range win {
				win[i] = byte(i*13 + i>>11)
			}
			cookies := cookieRange(1, nreads)
			for i, ck := range cookies {
				if err := cli.ep.PostRDMARead([]api.LMRTriplet{cli.lmr.Triplet(uint64(i)*size, size)}, ck, rt, api.CompletionDefault); err != nil {
					t.Fatal(err)
				}
			}
			var evs []api.Event
			if tc.afterOne {
				evs = append(evs, cli.dto(cli.req, cookies[0], api.DTOSuccess, "the first read"))
			}
			flags := api.CloseAbrupt
			if tc.graceful {
				flags = api.CloseGraceful
			}
			who := cli.ep
			if tc.responder {
				who = srv.ep
			}
			if err := who.Disconnect(flags); err != nil {
				t.Fatal(err)
			}
			evs = append(evs, waitEvents(t, cli.req, nreads-len(evs), "read completions")...)
			n := checkCompletions(t, evs, cookies, "RDMA reads")
			if tc.graceful && n != nreads {
				t.Fatalf("graceful disconnect: %d of %d reads succeeded, want all", n, nreads)
			}
			for k := range n {
				if evs[k].DTO.Length != size || evs[k].DTO.Op != api.OpRDMARead {
					t.Fatalf("read %d: length %d op %v", k, evs[k].DTO.Length, evs[k].DTO.Op)
				}
				if !bytes.Equal(cli.buf[k*size:(k+1)*size], win) {
					t.Fatalf("read %d succeeded but its buffer differs from the window", k)
				}
			}
			t.Logf("%d of %d reads succeeded, %d were flushed", n, nreads, nreads-n)
			cli.expect(cli.connEVD, api.ConnectionDisconnectedEvent, "DISCONNECTED (requester)")
			srv.expect(srv.connEVD, api.ConnectionDisconnectedEvent, "DISCONNECTED (responder)")
			for _, c := range []*client{cli, srv} {
				expectEnded(t, c, "after DISCONNECTED")
			}
			for _, c := range []*client{cli, srv} {
				if err := c.ep.Free(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// unreachableCase is one connection attempt TestFaultUnreachable makes
// from inside a network namespace.
type unreachableCase struct {
	name    string
	addr    string
	timeout time.Duration // 0: no timeout, and the consumer disconnects
	want    api.EventNumber
}

// TestFaultUnreachable connects, from a network namespace, to addresses
// that cannot answer: a host on the link that drops every packet (the
// SYN goes out and nothing answers: TIMED_OUT after the caller's
// timeout, and not before), addresses without a route, behind an
// "unreachable", "blackhole" or "prohibit" route (UNREACHABLE: "any other
// dial error" in the package documentation, "remote host not reachable"
// in dat_ep_connect(3DAT)), and a connect without timeout to the silent
// host that the consumer abandons (DISCONNECTED). Needs root and iproute2.
func TestFaultUnreachable(t *testing.T) {
	needNetns(t)
	ns := newNetns(t)
	// A veth pair with both ends in the namespace: 10.99.0.1/24 on one end,
	// the other end up without an address. The neighbour 10.99.0.2 has a
	// MAC address nobody has: SYNs to it leave and the other end drops
	// them, so nothing ever answers.
	ipCmd(t, "-n", ns, "link", "add", "gdv0", "type", "veth", "peer", "name", "gdv1")
	ipCmd(t, "-n", ns, "addr", "add", "10.99.0.1/24", "dev", "gdv0")
	ipCmd(t, "-n", ns, "link", "set", "gdv0", "up")
	ipCmd(t, "-n", ns, "link", "set", "gdv1", "up")
	ipCmd(t, "-n", ns, "neigh", "add", "10.99.0.2", "lladdr", "02:00:5e:99:00:02", "dev", "gdv0", "nud", "permanent")
	ipCmd(t, "-n", ns, "route", "add", "unreachable", "198.51.100.0/24")
	ipCmd(t, "-n", ns, "route", "add", "blackhole", "203.0.113.0/24")
	ipCmd(t, "-n", ns, "route", "add", "prohibit", "192.0.2.0/24")

	cases := []unreachableCase{
		{name: "silent host", addr: "10.99.0.2", timeout: 500 * time.Millisecond, want: api.ConnectionTimedOutEvent},
		{name: "silent host abandoned", addr: "10.99.0.2", want: api.ConnectionDisconnectedEvent},
		{name: "no route", addr: "172.31.1.1", timeout: hangDeadline, want: api.ConnectionUnreachableEvent},
		{name: "unreachable route", addr: "198.51.100.1", timeout: hangDeadline, want: api.ConnectionUnreachableEvent},
		{name: "blackhole route", addr: "203.0.113.1", timeout: hangDeadline, want: api.ConnectionUnreachableEvent},
		{name: "prohibit route", addr: "192.0.2.1", timeout: hangDeadline, want: api.ConnectionUnreachableEvent},
	}
	results := runConnectChild(t, ns, "10.99.0.1", cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := results[tc.name]
			if !ok {
				t.Fatal("the namespace's process reported no result")
			}
			if r.event != tc.want {
				t.Fatalf("connecting to %s: got %v, want %v", tc.addr, r.event, tc.want)
			}
			if r.state != api.EPDisconnected.String() {
				t.Fatalf("EP state %s after %v, want %v", r.state, r.event, api.EPDisconnected)
			}
			if tc.want == api.ConnectionTimedOutEvent && r.elapsed < tc.timeout {
				t.Fatalf("TIMED_OUT after %v, before the %v timeout", r.elapsed, tc.timeout)
			}
		})
	}
}

// connectResult is what the namespace's process saw for one case.
type connectResult struct {
	event   api.EventNumber
	elapsed time.Duration
	state   string
}

// encodeCases turns the cases into the child's environment value:
// "name|addr|timeout_ns;...".
func encodeCases(cases []unreachableCase) string {
	var b strings.Builder
	for i, c := range cases {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(c.name + "|" + c.addr + "|" + strconv.FormatInt(int64(c.timeout), 10))
	}
	return b.String()
}
