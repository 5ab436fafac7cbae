package tcp

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godat/godat/api"
)

// benchPair is connectedPair with newClient's sizes, for the benchmarks
// and the tests of the polled and driven paths.
func benchPair(b testing.TB) (cli, srv *client) {
	b.Helper()
	return connectedPair(b, 64, 256<<10)
}

// benchRDMA posts RDMA writes (or, when read is set, RDMA reads, whose
// response is read from the socket straight into the local LMR) of n bytes
// one at a time and waits for each completion (Wait: latency) over b.N
// iterations.
func benchRDMA(b *testing.B, n int, read bool) {
	cli, srv := benchPair(b)
	lp, err := srv.ia.CreateLMR(srv.pz, api.Region{Type: api.MemTypeVirtual, Bytes: make([]byte, n)}, api.MemPrivAll, api.VATypeVA)
	if err != nil {
		b.Fatal(err)
	}
	prm, _ := lp.Query()
	local := make([]byte, n)
	ll, err := cli.ia.CreateLMR(cli.pz, api.Region{Type: api.MemTypeVirtual, Bytes: local}, api.MemPrivAll, api.VATypeVA)
	if err != nil {
		b.Fatal(err)
	}
	lprm, _ := ll.Query()
	iov := []api.LMRTriplet{lprm.Triplet(0, uint32(n))}
	rt := api.RMRTriplet{Addr: prm.RegisteredAddress, Length: uint32(n), RMRContext: prm.RMRContext}
	post := cli.ep.PostRDMAWrite
	if read {
		post = cli.ep.PostRDMARead
	}
	ctx := context.Background()
	var ev api.Event
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := post(iov, 1, rt, api.CompletionDefault); err != nil {
			b.Fatal(err)
		}
		if _, err := cli.req.Wait(ctx, 1, &ev); err != nil || ev.DTO.Status != api.DTOSuccess {
			b.Fatal(err, ev.DTO.Status)
		}
	}
}

// BenchmarkRDMARead1M is the throughput of 1 MiB RDMA reads, one at a
// time; BenchmarkRawTCP1M is its baseline.
func BenchmarkRDMARead1M(b *testing.B) { benchRDMA(b, 1<<20, true) }

// BenchmarkRDMAWrite64 is the latency of a 64-byte RDMA write until its
// completion (the peer's ACK).
func BenchmarkRDMAWrite64(b *testing.B) { benchRDMA(b, 64, false) }

// BenchmarkRDMAWrite1M is the throughput of 1 MiB RDMA writes, one at a
// time.
func BenchmarkRDMAWrite1M(b *testing.B) { benchRDMA(b, 1<<20, false) }

// rawPair is two connected raw TCP sockets on 127.0.0.1.
func rawPair(b *testing.B) (net.Conn, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c1, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	c2, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c1.Close(); c2.Close() })
	return c1, c2
}

// rawPingPong sends n bytes and waits for a header-sized answer, the same
// exchange an RDMA write and its ACK make, over plain TCP: the baseline.
func rawPingPong(b *testing.B, n int) {
	c1, c2 := rawPair(b)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf, ack := make([]byte, n), make([]byte, frameLen)
		for {
			if _, err := io.ReadFull(c2, buf); err != nil {
				return
			}
			if _, err := c2.Write(ack); err != nil {
				return
			}
		}
	}()
	msg, ack := make([]byte, n), make([]byte, frameLen)
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c1.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c1, ack); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	c1.Close()
	<-done
}

// BenchmarkRawTCP64 is the plain-TCP baseline of BenchmarkRDMAWrite64.
func BenchmarkRawTCP64(b *testing.B) { rawPingPong(b, 64) }

// BenchmarkRawTCP1M is the plain-TCP baseline of BenchmarkRDMAWrite1M.
func BenchmarkRawTCP1M(b *testing.B) { rawPingPong(b, 1<<20) }

// nextEvent returns the next event of e: spinning on Dequeue (which
// drives the connection itself) when poll is set, else blocking in Wait.
func nextEvent(tb testing.TB, e api.EVD, poll bool, ev *api.Event) {
	tb.Helper()
	if !poll {
		ctx, cancel := waitCtx(tb)
		defer cancel()
		if _, err := e.Wait(ctx, 1, ev); err != nil {
			tb.Fatal(err)
		}
		return
	}
	var end time.Time
	for i := 0; ; i++ {
		err := e.Dequeue(ev)
		if err == nil {
			return
		}
		if !errors.Is(err, api.ErrQueueEmpty) {
			tb.Fatal(err)
		}
		if i&63 == 63 {
			runtime.Gosched() // the peer may share this process's Ps
		}
		if i&0xffff == 0xffff {
			switch now := time.Now(); {
			case end.IsZero():
				end = now.Add(eventTimeout)
			case now.After(end):
				tb.Fatalf("no event in %v of polling", eventTimeout)
			}
		}
	}
}

// eventTimeout is how long nextEvent looks for an event before it fails
// the test: far longer than any test's event should take, short enough
// that a lost event fails the test instead of hanging it.
const eventTimeout = 60 * time.Second

// benchCtxs holds each benchmark's one wait context. A consumer that waits
// in a loop with one context allocates nothing per Wait (the provider keeps
// its registration, dispatch.CtxKick); a fresh context per Wait would add
// its own allocations and context.AfterFunc's to every operation, and the
// benchmarks measure godat's.
var benchCtxs sync.Map // *testing.B -> context.Context

// waitCtx returns the context for a Wait: a fresh one bounded by
// eventTimeout in a test; the benchmark's own, bounded by the benchmark's
// end, in a benchmark.
func waitCtx(tb testing.TB) (context.Context, context.CancelFunc) {
	b, ok := tb.(*testing.B)
	if !ok {
		return context.WithTimeout(context.Background(), eventTimeout)
	}
	if c, ok := benchCtxs.Load(b); ok {
		return c.(context.Context), func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(func() { cancel(); benchCtxs.Delete(b) })
	benchCtxs.Store(b, ctx)
	return ctx, func() {}
}

// pingPong runs iters send/recv round trips of n bytes between cli (which
// polls when cpoll) and srv (which echoes, polling when spoll), checking
// every message's first and last byte.
func pingPong(tb testing.TB, cli, srv *client, n, iters int, cpoll, spoll bool, start func()) {
	siov := []api.LMRTriplet{srv.lmr.Triplet(0, uint32(n))}
	ciov := []api.LMRTriplet{cli.lmr.Triplet(0, uint32(n))}
	crv := []api.LMRTriplet{cli.lmr.Triplet(uint64(n), uint32(n))}
	if err := srv.ep.PostRecv(siov, 0, api.CompletionDefault); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ev api.Event
		for i := 0; i < iters; i++ {
			nextEvent(tb, srv.recv, spoll, &ev)
			if ev.DTO.Status != api.DTOSuccess || ev.DTO.Op != api.OpReceive || ev.DTO.Length != uint32(n) {
				tb.Errorf("server receive %d: %+v", i, ev.DTO)
				return
			}
			if i+1 < iters {
				if err := srv.ep.PostRecv(siov, 0, api.CompletionDefault); err != nil {
					tb.Error(err)
					return
				}
			}
			if err := srv.ep.PostSend(siov, 1, api.CompletionDefault); err != nil {
				tb.Error(err)
				return
			}
			nextEvent(tb, srv.req, spoll, &ev)
			if ev.DTO.Status != api.DTOSuccess {
				tb.Errorf("server send %d: %+v", i, ev.DTO)
				return
			}
		}
	}()
	var ev api.Event
	if start != nil {
		start()
	}
	for i := 0; i < iters; i++ {
		cli.buf[0], cli.buf[n-1] = byte(i), byte(i>>8)
		if err := cli.ep.PostRecv(crv, 2, api.CompletionDefault); err != nil {
			tb.Fatal(err)
		}
		if err := cli.ep.PostSend(ciov, 3, api.CompletionDefault); err != nil {
			tb.Fatal(err)
		}
		for _, e := range []api.EVD{cli.recv, cli.req} {
			nextEvent(tb, e, cpoll, &ev)
			if ev.DTO.Status != api.DTOSuccess {
				tb.Fatalf("client %d: %+v", i, ev.DTO)
			}
			if ev.DTO.Op == api.OpReceive && (cli.buf[n] != byte(i) || cli.buf[2*n-1] != byte(i>>8)) {
				tb.Fatalf("round trip %d: echoed bytes %d %d", i, cli.buf[n], cli.buf[2*n-1])
			}
		}
	}
	<-done
}

// BenchmarkSendRecv64Wait is a 64-byte send/recv round trip, both sides
// blocking in EVD.Wait; BenchmarkRawTCP64 is its baseline.
func BenchmarkSendRecv64Wait(b *testing.B) { benchSendRecv(b, 64, false) }

// BenchmarkSendRecv64Poll is the same round trip with both sides spinning
// on EVD.Dequeue; BenchmarkRawTCP64Poll is its baseline.
func BenchmarkSendRecv64Poll(b *testing.B) { benchSendRecv(b, 64, true) }

func benchSendRecv(b *testing.B, n int, poll bool) {
	cli, srv := benchPair(b)
	b.SetBytes(int64(n))
	b.ReportAllocs()
	pingPong(b, cli, srv, n, b.N, poll, poll, b.ResetTimer)
}

// BenchmarkRawTCP64Poll is BenchmarkRawTCP64 with both sides busy-polling
// non-blocking reads (syscall.RawConn callbacks that never wait).
func BenchmarkRawTCP64Poll(b *testing.B) {
	c1, c2 := rawPair(b)
	const n = 64
	read := func(c net.Conn, p []byte) error {
		rc, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			return err
		}
		for len(p) > 0 {
			var k int
			var e error
			if err := rc.Read(func(fd uintptr) bool {
				k, e = syscall.Read(int(fd), p)
				return true
			}); err != nil {
				return err
			}
			switch {
			case e == syscall.EAGAIN:
				continue
			case e != nil:
				return e
			case k == 0:
				return io.EOF
			}
			p = p[k:]
		}
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf, ack := make([]byte, n), make([]byte, frameLen)
		for {
			if read(c2, buf) != nil {
				return
			}
			if _, err := c2.Write(ack); err != nil {
				return
			}
		}
	}()
	msg, ack := make([]byte, n), make([]byte, frameLen)
	b.SetBytes(n)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c1.Write(msg); err != nil {
			b.Fatal(err)
		}
		if err := read(c1, ack); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	c1.Close()
	c2.Close()
	<-done
}

// TestPolledTransfers checks that consumers spinning on Dequeue drive the
// connection correctly (see "Polling" in the package documentation):
// messages below, at and above the read-ahead buffer, one side polling or
// both, and RDMA writes and reads whose completions are polled.
func TestPolledTransfers(t *testing.T) {
	for _, n := range []int{2, 64, 4096, rxBufLen - frameLen, rxBufLen + 1, 100 << 10} {
		for _, mode := range [][2]bool{{true, true}, {true, false}, {false, true}} {
			cli, srv := benchPair(t)
			pingPong(t, cli, srv, n, 50, mode[0], mode[1], nil)
		}
	}
	cli, srv := benchPair(t)
	const n = 200 << 10
	for i := range n {
		srv.buf[i] = byte(i * 7)
	}
	l, err := srv.ia.CreateLMR(srv.pz, api.Region{Type: api.MemTypeVirtual, Bytes: srv.buf}, api.MemPrivAll, api.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	prm, _ := l.Query()
	rt := api.RMRTriplet{Addr: prm.RegisteredAddress, Length: n, RMRContext: prm.RMRContext}
	var ev api.Event
	for i := range 20 {
		if err := cli.ep.PostRDMARead([]api.LMRTriplet{cli.lmr.Triplet(0, n)}, 1, rt, api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		// (From memory the read does not land in: a DTO's local
		// memory must not change while it is outstanding.)
		if err := cli.ep.PostRDMAWrite([]api.LMRTriplet{cli.lmr.Triplet(n, 64)}, 2, rt, api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		for k := range 2 {
			nextEvent(t, cli.req, true, &ev)
			if ev.DTO.Status != api.DTOSuccess || ev.DTO.Cookie != api.Cookie(k+1) {
				t.Fatalf("iteration %d: %+v", i, ev.DTO)
			}
		}
		for j := 64; j < n; j += 4093 {
			if cli.buf[j] != byte(j*7) {
				t.Fatalf("iteration %d: byte %d read %d", i, j, cli.buf[j])
			}
		}
	}
}
