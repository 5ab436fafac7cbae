package host_test

// Benchmarks of the plugin path beside the same provider (loopback)
// in-process, in the same run, so that the results are ratios that
// survive a noisy machine (DESIGN §8). docs/benchmarks.md has the table.
//
//	go test -run '^$' -bench . -benchmem ./plugin/

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// benchRegistries returns the in-process and the plugin registry, each with
// IAs "a" and "b".
func benchRegistries(b testing.TB) map[string]*registry.Registry {
	b.Helper()
	in := registry.New(&registry.Config{File: "inline", IAs: []registry.IAEntry{
		{Name: "a", Provider: "loopback", APIVersion: "u2.0", ThreadSafe: true},
		{Name: "b", Provider: "loopback", APIVersion: "u2.0", ThreadSafe: true},
	}})
	return map[string]*registry.Registry{"inprocess": in, "plugin": loadRegistry(b, writeConfig(b, examplePath, "", "a", "b"))}
}

var benchModes = []string{"inprocess", "plugin"}

// benchPair is a connected pair with a region of size bytes on each side,
// the server's registered for remote write.
type benchPair struct {
	a, b   *benchSide
	remote api.RMRTriplet
}

type benchSide struct {
	ia             api.IA
	pz             api.PZ
	req, recv, con api.EVD
	cr             api.EVD
	ep             api.EP
	mem            *api.Memory
	lmr            api.LMR
	lp             api.LMRParam
}

func newBenchSide(b testing.TB, r *registry.Registry, name string, size int) *benchSide {
	b.Helper()
	s := &benchSide{}
	var err error
	s.ia, err = r.Open(context.Background(), name)
	must(b, err)
	s.pz, err = s.ia.CreatePZ()
	must(b, err)
	s.req, err = s.ia.CreateEVD(4096, nil, api.EVDDTO)
	must(b, err)
	s.recv, err = s.ia.CreateEVD(4096, nil, api.EVDDTO)
	must(b, err)
	s.con, err = s.ia.CreateEVD(16, nil, api.EVDConnection)
	must(b, err)
	s.cr, err = s.ia.CreateEVD(16, nil, api.EVDCR)
	must(b, err)
	attr := &api.EPAttr{MaxRequestDTOs: 4096, MaxRecvDTOs: 64, MaxRequestIOV: 4, MaxRecvIOV: 4, MaxRDMAWriteIOV: 4, MaxRDMAReadIOV: 4,
		MaxMessageSize: 1 << 20, MaxRDMASize: 1 << 20}
	s.ep, err = s.ia.CreateEP(s.pz, s.recv, s.req, s.con, attr)
	must(b, err)
	s.mem, s.lmr, s.lp = registerMemory(b, s.ia, s.pz, size)
	return s
}

func (s *benchSide) close() {
	s.ia.Close(api.CloseAbrupt)
	s.mem.Free()
}

func benchWait(b testing.TB, evd api.EVD) api.Event {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ev api.Event
	if _, err := evd.Wait(ctx, 1, &ev); err != nil {
		b.Fatal(err)
	}
	return ev
}

func newBenchPair(b testing.TB, r *registry.Registry, size int) *benchPair {
	b.Helper()
	p := &benchPair{a: newBenchSide(b, r, "a", size), b: newBenchSide(b, r, "b", size)}
	psp, q, err := p.b.ia.CreatePSPAny(p.b.cr, api.PSPConsumer)
	if err != nil {
		b.Fatal(err)
	}
	attr, _, err := p.b.ia.Query()
	if err != nil {
		b.Fatal(err)
	}
	if err := p.a.ep.Connect(attr.Address, q, 10*time.Second, nil, api.QOSBestEffort, api.ConnectDefault); err != nil {
		b.Fatal(err)
	}
	if err := benchWait(b, p.b.cr).CR.CR.Accept(p.b.ep, nil); err != nil {
		b.Fatal(err)
	}
	benchWait(b, p.a.con)
	benchWait(b, p.b.con)
	psp.Free()
	p.remote = api.RMRTriplet{Addr: p.b.lp.RegisteredAddress, Length: uint32(size), RMRContext: p.b.lp.RMRContext}
	return p
}

func (p *benchPair) close() {
	p.a.close()
	p.b.close()
}

// reap takes one completion off evd the way a consumer that wants both
// latency and throughput does: it polls for a while (50µs), then blocks.
func reap(b testing.TB, evd api.EVD, ev *api.Event) {
	deadline := time.Now().Add(50 * time.Microsecond)
	for time.Now().Before(deadline) {
		err := evd.Dequeue(ev)
		if err == nil {
			if ev.DTO.Status != api.DTOSuccess {
				b.Fatalf("completion status %v", ev.DTO.Status)
			}
			return
		}
		if !errors.Is(err, api.ErrQueueEmpty) {
			b.Fatal(err)
		}
	}
	if _, err := evd.Wait(context.Background(), 1, ev); err != nil {
		b.Fatal(err)
	}
	if ev.DTO.Status != api.DTOSuccess {
		b.Fatalf("completion status %v", ev.DTO.Status)
	}
}

// BenchmarkWriteLatency64: one 64-byte RDMA write at a time, from post to
// its completion reaped by polling.
func BenchmarkWriteLatency64(b *testing.B) {
	regs := benchRegistries(b)
	for _, mode := range benchModes {
		b.Run(mode, func(b *testing.B) {
			p := newBenchPair(b, regs[mode], 1<<16)
			defer func() { b.StopTimer(); p.close() }()
			iov := []api.LMRTriplet{p.a.lp.Triplet(0, 64)}
			remote := p.remote
			remote.Length = 64
			var ev api.Event
			b.ReportAllocs()
			b.SetBytes(64)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := p.a.ep.PostRDMAWrite(iov, api.Cookie(i), remote, api.CompletionDefault); err != nil {
					b.Fatal(err)
				}
				reap(b, p.a.req, &ev)
			}
		})
	}
}

// BenchmarkWritePipelined64: 64-byte RDMA writes with up to depth in
// flight; reports operations per second.
func BenchmarkWritePipelined64(b *testing.B) {
	benchPipelined(b, 64, 64)
}

// BenchmarkWriteThroughput1M: 1 MiB RDMA writes, 8 in flight.
func BenchmarkWriteThroughput1M(b *testing.B) {
	benchPipelined(b, 1<<20, 8)
}

func benchPipelined(b *testing.B, size, depth int) {
	regs := benchRegistries(b)
	for _, mode := range benchModes {
		b.Run(mode, func(b *testing.B) {
			p := newBenchPair(b, regs[mode], size)
			defer func() { b.StopTimer(); p.close() }()
			iov := []api.LMRTriplet{p.a.lp.Triplet(0, uint32(size))}
			remote := p.remote
			var ev api.Event
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.ResetTimer()
			inflight := 0
			for i := 0; i < b.N; i++ {
				if inflight == depth {
					reap(b, p.a.req, &ev)
					inflight--
				}
				if err := p.a.ep.PostRDMAWrite(iov, api.Cookie(i), remote, api.CompletionDefault); err != nil {
					b.Fatal(err)
				}
				inflight++
			}
			for ; inflight > 0; inflight-- {
				reap(b, p.a.req, &ev)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// BenchmarkOpenIA: opening and closing an IA; through the plugin every
// iteration starts and stops the plugin process.
func BenchmarkOpenIA(b *testing.B) {
	regs := benchRegistries(b)
	for _, mode := range benchModes {
		b.Run(mode, func(b *testing.B) {
			r := regs[mode]
			for i := 0; i < b.N; i++ {
				ia, err := r.Open(context.Background(), "a")
				if err != nil {
					b.Fatal(err)
				}
				if err := ia.Close(api.CloseAbrupt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The host side of the data path allocates nothing per operation: a post
// through the submission ring, and the reaping of its completion from the
// completion ring, whether the consumer polls (Dequeue, which reads the
// ring itself) or blocks (Wait, fed by the completion pump). Each way is
// measured on its own, so that what is measured does not depend on how
// quickly the plugin process answers on a loaded machine. (AllocsPerRun
// counts the mallocs of the whole process, the pump's included.)
func TestDataPathAllocatesNothing(t *testing.T) {
	p := newBenchPair(t, loadRegistry(t, writeConfig(t, examplePath, "", "a", "b")), 1<<16)
	defer p.close()
	iov := []api.LMRTriplet{p.a.lp.Triplet(0, 64)}
	remote := p.remote
	remote.Length = 64
	var ev api.Event
	// A generous bound on the reaps, so that a lost completion fails the
	// test instead of hanging it. It is made outside the measured calls.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	post := func() {
		if err := p.a.ep.PostRDMAWrite(iov, 1, remote, api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
	}
	checkStatus := func() {
		if ev.DTO.Status != api.DTOSuccess {
			t.Fatalf("completion status %v", ev.DTO.Status)
		}
	}
	poll := func() {
		post()
		for {
			err := p.a.req.Dequeue(&ev)
			if err == nil {
				break
			}
			if !errors.Is(err, api.ErrQueueEmpty) {
				t.Fatal(err)
			}
			if ctx.Err() != nil {
				t.Fatal("no completion within a minute (polling)")
			}
		}
		checkStatus()
	}
	wait := func() {
		post()
		if _, err := p.a.req.Wait(ctx, 1, &ev); err != nil {
			t.Fatal(err)
		}
		checkStatus()
	}
	for _, c := range []struct {
		name string
		op   func()
	}{{"Dequeue", poll}, {"Wait", wait}} {
		for range 100 { // let the work queues reach their size
			c.op()
		}
		if n := testing.AllocsPerRun(1000, c.op); n != 0 {
			t.Errorf("%v allocations per RDMA write and its completion reaped by %s, want 0", n, c.name)
		}
	}
}
