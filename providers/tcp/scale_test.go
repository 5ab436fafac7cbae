package tcp

// Scale: N EP pairs connected between this process and a server process
// (this test binary re-executed as TestHelperScaleServer). Reported per
// connection, for both processes: Go heap in use, goroutine stacks and
// memory obtained from the OS (runtime.MemStats HeapInuse, StackInuse and
// Sys deltas after a GC; Sys is coarse, the runtime keeps what it once
// obtained) and goroutines (runtime.NumGoroutine delta); and connection
// setups per second, with the same number of plain TCP connects within
// one process as the baseline.
//
// TestScaleConnect runs 50 pairs (GODAT_TCP_SCALE_N chooses another
// number) and only logs the figures; BenchmarkConnect1000 reports them for
// 1000 pairs as benchmark metrics:
//
//	go test -run '^$' -bench Connect1000 -benchtime 1x ./providers/tcp/
//
// Nothing here asserts a duration or an amount of memory.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// scaleServerEnv tells TestHelperScaleServer how many connections to take.
const scaleServerEnv = "GODAT_TCP_SCALE_SERVER"

// procStats is a process's goroutines and memory after a full GC.
type procStats struct {
	goroutines            int
	heapInuse, stack, sys uint64
}

func readStats() procStats {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return procStats{goroutines: runtime.NumGoroutine(), heapInuse: ms.HeapInuse, stack: ms.StackInuse, sys: ms.Sys}
}

func (s procStats) String() string {
	return fmt.Sprintf("%d %d %d %d", s.goroutines, s.heapInuse, s.stack, s.sys)
}

func parseStats(f []string) (procStats, error) {
	if len(f) != 4 {
		return procStats{}, fmt.Errorf("want 4 fields, got %q", f)
	}
	g, err := strconv.Atoi(f[0])
	var u [3]uint64
	for i := range u {
		if err == nil {
			u[i], err = strconv.ParseUint(f[1+i], 10, 64)
		}
	}
	if err != nil {
		return procStats{}, fmt.Errorf("bad stats %q: %v", f, err)
	}
	return procStats{goroutines: g, heapInuse: u[0], stack: u[1], sys: u[2]}, nil
}

// perConn is (after - before) / n.
func perConn(after, before uint64, n int) float64 {
	return (float64(after) - float64(before)) / float64(n)
}

// TestHelperScaleServer is the server process of the scale measurement:
// it listens, accepts $GODAT_TCP_SCALE_SERVER requests on EPs sharing one
// EVD, prints "GODAT-SCALE PORT q" once listening, with its baseline
// figures, and "GODAT-SCALE UP ..." once every connection is established,
// then waits for its stdin to close. It does nothing in a normal run.
func TestHelperScaleServer(t *testing.T) {
	v := os.Getenv(scaleServerEnv)
	if v == "" {
		t.Skip("runs only as the server process of the scale measurement")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("bad %s %q", scaleServerEnv, v)
	}
	ia := openIA(t)
	pz, err := ia.CreatePZ()
	if err != nil {
		t.Fatal(err)
	}
	// One EVD for requests and connection events (ESTABLISHED now,
	// DISCONNECTED when the client goes), one for DTOs.
	cm, err := ia.CreateEVD(4*n+16, nil, api.EVDCR|api.EVDConnection)
	if err != nil {
		t.Fatal(err)
	}
	dto, err := ia.CreateEVD(64, nil, api.EVDDTO)
	if err != nil {
		t.Fatal(err)
	}
	_, q, err := ia.CreatePSPAny(cm, api.PSPConsumer)
	if err != nil {
		t.Fatal(err)
	}
	base := readStats()
	fmt.Printf("GODAT-SCALE PORT %d %s\n", q, base)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for up := 0; up < n; {
		var ev api.Event
		if _, err := cm.Wait(ctx, 1, &ev); err != nil {
			t.Fatalf("%d of %d connections established, then %v", up, n, err)
		}
		switch ev.Number {
		case api.ConnectionRequestEvent:
			ep, err := ia.CreateEP(pz, dto, dto, cm, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := ev.CR.CR.Accept(ep, nil); err != nil {
				t.Fatal(err)
			}
		case api.ConnectionEstablishedEvent:
			up++
		default:
			t.Fatalf("unexpected %v after %d connections", ev.Number, up)
		}
	}
	fmt.Printf("GODAT-SCALE UP %s\n", readStats())
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// scaleResult is one measurement of n connections.
type scaleResult struct {
	n                                             int
	elapsed                                       time.Duration
	client, server                                [2]procStats // before, after
	clientHeap, clientStack, clientSys, clientGor float64      // per connection
	serverHeap, serverStack, serverSys, serverGor float64
}

func (r scaleResult) setupsPerSec() float64 { return float64(r.n) / r.elapsed.Seconds() }

func (r scaleResult) String() string {
	return fmt.Sprintf("%d connections in %v: %.0f setups/s; per connection: client %.0f B heap, %.0f B stacks, %.0f B sys, %.2f goroutines; "+
		"server %.0f B heap, %.0f B stacks, %.0f B sys, %.2f goroutines",
		r.n, r.elapsed.Round(time.Millisecond), r.setupsPerSec(), r.clientHeap, r.clientStack, r.clientSys, r.clientGor,
		r.serverHeap, r.serverStack, r.serverSys, r.serverGor)
}

// raiseNoFile raises the soft limit on open files to at least want if the
// hard limit allows.
func raiseNoFile(tb testing.TB, want uint64) {
	tb.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		tb.Fatal(err)
	}
	if rl.Cur >= want {
		return
	}
	if rl.Max < want {
		tb.Skipf("needs %d open files; the hard limit is %d", want, rl.Max)
	}
	rl.Cur = want
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		tb.Fatal(err)
	}
}

// scaleRun connects n EP pairs to a new server process and measures.
func scaleRun(tb testing.TB, n int) scaleResult {
	tb.Helper()
	raiseNoFile(tb, uint64(2*n+256))
	cmd := selfCommand(tb, []string{scaleServerEnv + "=" + strconv.Itoa(n)}, "-test.run=^TestHelperScaleServer$", "-test.count=1", "-test.timeout=10m")
	cmd.Stderr = os.Stderr
	stdin, stdout := startPiped(tb, cmd)
	lines := make(chan string, 4)
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "GODAT-SCALE "); ok {
				lines <- s
			}
		}
		close(lines)
		done <- cmd.Wait()
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = stdin.Close()
			select {
			case <-done:
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	tb.Cleanup(stop)
	next := func(what string) []string {
		select {
		case s, ok := <-lines:
			if !ok {
				tb.Fatalf("the scale server exited before %s", what)
			}
			return strings.Fields(s)
		case <-time.After(5 * time.Minute):
			tb.Fatalf("the scale server did not report %s", what)
		}
		return nil
	}
	var r scaleResult
	r.n = n
	f := next("its port")
	if len(f) != 6 || f[0] != "PORT" {
		tb.Fatalf("bad port line %q", f)
	}
	q, err := strconv.ParseUint(f[1], 10, 16)
	if err != nil {
		tb.Fatal(err)
	}
	if r.server[0], err = parseStats(f[2:]); err != nil {
		tb.Fatal(err)
	}

	ia, err := registry.Open(context.Background(), "tcp")
	if err != nil {
		tb.Fatal(err)
	}
	closed := false
	tb.Cleanup(func() {
		if !closed {
			ia.Close(api.CloseAbrupt)
		}
	})
	attr, _, err := ia.Query()
	if err != nil {
		tb.Fatal(err)
	}
	r.client[0] = readStats()
	pz, err := ia.CreatePZ()
	if err != nil {
		tb.Fatal(err)
	}
	cm, err := ia.CreateEVD(2*n+16, nil, api.EVDConnection)
	if err != nil {
		tb.Fatal(err)
	}
	dto, err := ia.CreateEVD(64, nil, api.EVDDTO)
	if err != nil {
		tb.Fatal(err)
	}
	eps := make([]api.EP, n)
	for i := range eps {
		if eps[i], err = ia.CreateEP(pz, dto, dto, cm, nil); err != nil {
			tb.Fatal(err)
		}
	}
	start := time.Now()
	for i, ep := range eps {
		if err := ep.Connect(attr.Address, api.ConnQual(q), 2*time.Minute, []byte("scale "+strconv.Itoa(i)), api.QOSBestEffort, api.ConnectDefault); err != nil {
			tb.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for up := 0; up < n; up++ {
		var ev api.Event
		if _, err := cm.Wait(ctx, 1, &ev); err != nil {
			tb.Fatalf("%d of %d connections established, then %v", up, n, err)
		}
		if ev.Number != api.ConnectionEstablishedEvent {
			tb.Fatalf("connection %d: %v, want ESTABLISHED", up, ev.Number)
		}
	}
	r.elapsed = time.Since(start)
	r.client[1] = readStats()
	f = next("its figures with every connection up")
	if len(f) != 5 || f[0] != "UP" {
		tb.Fatalf("bad figures line %q", f)
	}
	if r.server[1], err = parseStats(f[1:]); err != nil {
		tb.Fatal(err)
	}
	for _, ep := range eps {
		if st, _, _, err := ep.GetStatus(); err != nil || st != api.EPConnected {
			tb.Fatalf("EP state %v, %v; want CONNECTED", st, err)
		}
	}
	// Tear down: the client's IA, then the server.
	if err := ia.Close(api.CloseAbrupt); err != nil {
		tb.Fatal(err)
	}
	closed = true
	stop()

	r.clientHeap = perConn(r.client[1].heapInuse, r.client[0].heapInuse, n)
	r.clientStack = perConn(r.client[1].stack, r.client[0].stack, n)
	r.clientSys = perConn(r.client[1].sys, r.client[0].sys, n)
	r.clientGor = float64(r.client[1].goroutines-r.client[0].goroutines) / float64(n)
	r.serverHeap = perConn(r.server[1].heapInuse, r.server[0].heapInuse, n)
	r.serverStack = perConn(r.server[1].stack, r.server[0].stack, n)
	r.serverSys = perConn(r.server[1].sys, r.server[0].sys, n)
	r.serverGor = float64(r.server[1].goroutines-r.server[0].goroutines) / float64(n)
	return r
}

// rawConnectRate connects n plain TCP sockets to a listener of this
// process the way scaleRun connects EPs (all dials started at once) and
// returns the setups per second: the baseline.
func rawConnectRate(tb testing.TB, n int) float64 {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan []net.Conn, 1)
	go func() {
		var cs []net.Conn
		for len(cs) < n {
			c, err := ln.Accept()
			if err != nil {
				break
			}
			cs = append(cs, c)
		}
		accepted <- cs
	}()
	conns := make([]net.Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns[i], errs[i] = net.Dial("tcp", ln.Addr().String())
		}()
	}
	wg.Wait()
	srv := <-accepted
	elapsed := time.Since(start)
	for _, c := range append(conns, srv...) {
		if c != nil {
			c.Close()
		}
	}
	for _, err := range errs {
		if err != nil {
			tb.Fatal(err)
		}
	}
	return float64(n) / elapsed.Seconds()
}

// TestScaleConnect connects 50 EP pairs ($GODAT_TCP_SCALE_N to choose)
// between two processes and logs the figures.
func TestScaleConnect(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second process")
	}
	n := 50
	if v := os.Getenv("GODAT_TCP_SCALE_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("bad GODAT_TCP_SCALE_N %q", v)
		}
	}
	t.Log(scaleRun(t, n))
}

// BenchmarkConnect1000 connects 1000 EP pairs between two processes per
// iteration and reports the figures of the last one; raw-setups/s is the
// same number of plain TCP connects within this process.
func BenchmarkConnect1000(b *testing.B) {
	const n = 1000
	var r scaleResult
	for range b.N {
		r = scaleRun(b, n)
	}
	b.StopTimer()
	raw := rawConnectRate(b, n)
	b.ReportMetric(r.setupsPerSec(), "setups/s")
	b.ReportMetric(raw, "raw-setups/s")
	b.ReportMetric(r.clientHeap, "client-heap-B/conn")
	b.ReportMetric(r.clientStack, "client-stack-B/conn")
	b.ReportMetric(r.clientSys, "client-sys-B/conn")
	b.ReportMetric(r.clientGor, "client-goroutines/conn")
	b.ReportMetric(r.serverHeap, "server-heap-B/conn")
	b.ReportMetric(r.serverStack, "server-stack-B/conn")
	b.ReportMetric(r.serverSys, "server-sys-B/conn")
	b.ReportMetric(r.serverGor, "server-goroutines/conn")
	b.Log(r)
}
