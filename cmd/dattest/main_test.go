package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// envRunMain makes the test binary behave as dattest: the demo and the
// two-process tests re-execute it as the server.
const envRunMain = "DATTEST_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envRunMain) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

// testTimeout bounds every test that talks to a server; no test asserts
// on timing.
const testTimeout = 60 * time.Second

// asChild makes child processes of the test run dattest, and keeps the
// race detector from pausing a second at their exit.
func asChild(t *testing.T) {
	t.Setenv(envRunMain, "1")
	t.Setenv("GORACE", "atexit_sleep_ms=0")
}

func embedded() *registry.Registry { return registry.New(registry.EmbeddedConfig()) }

// inProcess starts a server on the loopback IA in this process and
// returns the client configuration that reaches it; the server stops at
// the end of the test and must have shut down cleanly.
func inProcess(t *testing.T) clientConfig {
	t.Helper()
	return inProcessWith(t, serverConfig{idle: defaultIdleTimeout})
}

// inProcessWith is inProcess with the server's limits and output taken
// from scfg.
func inProcessWith(t *testing.T, scfg serverConfig) clientConfig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	reg := embedded()
	scfg.reg, scfg.ia = reg, "loopback"
	cfg, stop, err := startInProcess(ctx, scfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("server: %v", err)
		}
	})
	cfg.reg, cfg.ia, cfg.stderr = reg, "loopback", &bytes.Buffer{}
	return cfg
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

var allSteps = []string{"connect", "send/recv", "rdma write", "rdma read", "rmr bind",
	"iov send/recv", "iov rdma", "disconnect", "stale rmr context"}

func checkAllPass(t *testing.T, rep *checkReport) {
	t.Helper()
	var names []string
	for _, s := range rep.Steps {
		names = append(names, s.Step)
		if s.Result != resPass {
			t.Errorf("step %s: %s: %s", s.Step, s.Result, s.Detail)
		}
	}
	if !slices.Equal(names, allSteps) {
		t.Errorf("steps %q, want %q", names, allSteps)
	}
	if !rep.Passed {
		t.Error("report not passed")
	}
}

func TestCheckSequenceLoopback(t *testing.T) {
	cfg := inProcess(t)
	ctx := testCtx(t)
	// Twice against the same server: it serves one client after another.
	for range 2 {
		rep, err := runCheck(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkAllPass(t, rep)
	}
	var out bytes.Buffer
	rep, _ := runCheck(ctx, cfg)
	if err := writeCheck(&out, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "9 of 9 steps passed") {
		t.Errorf("table:\n%s", out.String())
	}
}

func TestBenchLoopback(t *testing.T) {
	cfg := inProcess(t)
	ctx := testCtx(t)
	for _, poll := range []bool{false, true} {
		p := benchParams{ops: []string{"lat", "bw", "read"}, sizes: []int{64, 4096}, iters: 20, poll: poll}
		rows, err := runBench(ctx, cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 6 {
			t.Fatalf("%d rows, want 6", len(rows))
		}
		for i, r := range rows {
			wantOp, wantUnit := p.ops[i/2], "GB/s"
			if wantOp == "lat" {
				wantUnit = "us"
			}
			if r.Op != wantOp || r.Unit != wantUnit || r.Size != p.sizes[i%2] || r.Mode != p.mode() ||
				!(r.Godat > 0) || !(r.Raw > 0) || !(r.Ratio > 0) {
				t.Errorf("row %d: %+v", i, r)
			}
		}
		var out bytes.Buffer
		if err := writeBench(&out, rows); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "RATIO") || strings.Count(out.String(), "\n") < 7 {
			t.Errorf("table:\n%s", out.String())
		}
	}
}

// TestServerSurvivesVanishingClient: a client that frees its EP in the
// middle of a session, and one the server rejects, do not stop the server.
func TestServerSurvivesVanishingClient(t *testing.T) {
	cfg := inProcess(t)
	ctx := testCtx(t)
	n, err := openNode(ctx, cfg.reg, "loopback")
	if err != nil {
		t.Fatal(err)
	}
	c := mustDial(t, ctx, n, cfg, sessionCheck, 0)
	if err := c.ping(ctx, kindPing, 100, 1, nil, 7); err != nil {
		t.Fatal(err)
	}
	// A request without the reply awaited, then the EP goes away.
	if _, err := c.call(ctx, newMsg(kindSync), 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.free(); err != nil {
		t.Fatal(err)
	}
	_, err = dial(ctx, n, cfg, sessionBench, maxBenchSize+1)
	if err == nil || !strings.Contains(err.Error(), "rejected") || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("dial with an oversized benchmark: %v, want a rejection", err)
	}
	if err := n.close(); err != nil {
		t.Fatal(err)
	}
	rep, err := runCheck(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkAllPass(t, rep)
}

// mustDial dials a session of kind with messages up to maxSize bytes from
// n to cfg's server, failing the test if it cannot.
func mustDial(t *testing.T, ctx context.Context, n *node, cfg clientConfig, kind uint64, maxSize int) *client {
	t.Helper()
	c, err := dial(ctx, n, cfg, kind, maxSize)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// benchSession opens IA name of cfg.reg, dials a bench session of
// size-byte messages on it and asks for the server's window. The session
// and then the IA are closed when the test ends.
func benchSession(t *testing.T, ctx context.Context, name string, cfg clientConfig, size int) (*node, *client, remoteWindow) {
	t.Helper()
	n, err := openNode(ctx, cfg.reg, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.close(); err != nil {
			t.Error(err)
		}
	})
	c := mustDial(t, ctx, n, cfg, sessionBench, size)
	t.Cleanup(func() {
		if err := c.close(ctx); err != nil {
			t.Error(err)
		}
	})
	w, err := c.window(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n, c, w
}

// TestReadChecksData: the read run fails when the bytes it reads are not
// the pattern the server was asked to fill in, at every read count.
func TestReadChecksData(t *testing.T) {
	cfg := inProcess(t)
	ctx := testCtx(t)
	const size = 4096
	n, c, w := benchSession(t, ctx, "loopback", cfg, size)
	if w.readsIn <= 0 {
		t.Errorf("the server did not say how many reads it serves (window %+v)", w)
	}
	win := c.readWindow(w)
	if win < 1 || win > maxWindow {
		t.Fatalf("read window %d", win)
	}
	dst, err := newBuf(n, 3*size, api.MemPrivLocalRead|api.MemPrivLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.free()
	if err := c.fill(ctx, 0, size, 1); err != nil {
		t.Fatal(err)
	}
	for _, iters := range []int{1, 2, 5} {
		if _, err := c.read(ctx, w, dst, size, win, 1, 10, iters, false, nil); err != nil {
			t.Fatalf("%d reads: %v", iters, err)
		}
		if _, err := c.read(ctx, w, dst, size, win, 2, 10, iters, false, nil); err == nil || !strings.Contains(err.Error(), "is wrong") {
			t.Fatalf("%d reads of the wrong pattern: %v", iters, err)
		}
	}
	// Only the last byte differs from what the client expects.
	if err := c.fill(ctx, size-1, 1, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := c.read(ctx, w, dst, size, win, 1, 10, 3, true, nil); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("byte %d of", size-1)) {
		t.Fatalf("a wrong last byte: %v", err)
	}
	if _, err := c.read(ctx, w, dst, 2*size, win, 1, 10, 3, true, nil); err == nil {
		t.Fatal("a read larger than the buffer ran")
	}
}

// TestRawRead: the raw read baseline, like the ping-pong and the stream
// ones, runs in both modes, and its server ends a read connection whose
// request index is not the next one, and any connection whose header
// names an unknown op or too large a size.
func TestRawRead(t *testing.T) {
	srv, err := startRawServer("127.0.0.1:0", 4, testTimeout, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	for _, poll := range []bool{false, true} {
		rc := rawClient{addr: srv.addr().String()}
		if bps, err := rc.read(testCtx(t), 100, 3, 10, 20, poll); err != nil || !(bps > 0) {
			t.Fatalf("raw read, poll %v: %v B/s, %v", poll, bps, err)
		}
		if d, err := rc.lat(testCtx(t), 100, 3, 10, poll); err != nil || d <= 0 {
			t.Errorf("raw ping-pong, poll %v: %v, %v", poll, d, err)
		}
		if bps, err := rc.bw(testCtx(t), 100, 3, 10, poll); err != nil || !(bps > 0) {
			t.Errorf("raw stream, poll %v: %v B/s, %v", poll, bps, err)
		}
	}
	talk := func(req rawReq, reqs ...uint64) (int, error) {
		c, err := net.DialTCP("tcp", nil, srv.addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(testTimeout))
		b := req.marshal()
		for _, i := range reqs {
			b = binary.LittleEndian.AppendUint64(b, i)
		}
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		return io.ReadFull(c, make([]byte, 4*int(req.size)))
	}
	// Two good requests: two messages, then the server closes.
	if n, err := talk(rawReq{op: rawRead, size: 16, count: 2}, 0, 1); n != 32 || err == nil {
		t.Errorf("two good requests: %d bytes, %v", n, err)
	}
	if n, err := talk(rawReq{op: rawRead, size: 16, count: 2}, 0, 5); n != 16 || err == nil {
		t.Errorf("a request out of order: %d bytes, %v", n, err)
	}
	if n, err := talk(rawReq{op: 9, size: 16, count: 2}, 0, 1); n != 0 || err == nil {
		t.Errorf("unknown op: %d bytes, %v", n, err)
	}
	if n, err := talk(rawReq{op: rawRead, size: maxBenchSize + 1, count: 1}, 0); n != 0 || err == nil {
		t.Errorf("oversized messages: %d bytes, %v", n, err)
	}
}

func TestClientNoServer(t *testing.T) {
	ctx := testCtx(t)
	reg := embedded()
	n, err := openNode(ctx, reg, "loopback")
	if err != nil {
		t.Fatal(err)
	}
	// Nobody listens on this qualifier of the client's own IA.
	cfg := clientConfig{reg: reg, ia: "loopback", port: 7, target: n.attr.Address, stderr: &bytes.Buffer{}}
	rep, err := runCheck(ctx, cfg)
	n.close()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed || rep.Steps[0].Result != resFail || rep.Steps[1].Result != resSkip {
		t.Fatalf("report %+v", rep)
	}
}

func runDattest(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestDemoJSON(t *testing.T) {
	// With a tcp IA in the built-in configuration the demo re-executes
	// this binary as the server.
	asChild(t)
	code, out, errs := runDattest(t, "-demo", "--json", "-size", "64,4K", "-iters", "20", "-mode", "poll")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s\nstdout:\n%s", code, errs, out)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if _, ok := raw["check"]; !ok {
		t.Fatalf("no check in %s", out)
	}
	var check checkReport
	if err := json.Unmarshal(raw["check"], &check); err != nil {
		t.Fatal(err)
	}
	checkAllPass(t, &check)
	var rows []map[string]any
	if err := json.Unmarshal(raw["bench"], &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d bench rows, want 4:\n%s", len(rows), out)
	}
	keys := []string{"godat", "iters", "mode", "op", "ratio", "raw", "size", "unit"}
	for _, r := range rows {
		var got []string
		for k := range r {
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, keys) {
			t.Errorf("row keys %q, want %q", got, keys)
		}
		if r["mode"] != "poll" {
			t.Errorf("row %v: mode", r)
		}
		for _, k := range []string{"godat", "raw", "ratio", "size"} {
			if v, ok := r[k].(float64); !ok || v <= 0 {
				t.Errorf("row %v: %s not a positive number", r, k)
			}
		}
	}
}

func TestDemoText(t *testing.T) {
	asChild(t)
	code, out, errs := runDattest(t, "-demo", "-size", "64", "-iters", "10")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s\nstdout:\n%s", code, errs, out)
	}
	for _, want := range []string{"9 of 9 steps passed", "RAW TCP", "stale rmr context"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-s", "-h", "x"},
		{"-demo", "-s"},
		{"-nosuch"},
		{"-h", "x", "extra"},
		{"-h", "x", "-bench", "nope"},
		{"-h", "x", "-bench", "lat", "-size", "0"},
		{"-h", "x", "-bench", "lat", "-size", "4Q"},
		{"-h", "x", "-bench", "lat", "-size", "1G"},
		{"-h", "x", "-bench", "lat", "-iters", "0"},
		{"-h", "x", "-bench", "lat", "-mode", "spin"},
		{"-h", "x", "-bench", "wlat"},
		{"-h", "x", "-bench", "lat,wlat", "-mode", "wait"},
		{"-h", "x", "-bench", "wlat-suppress", "-mode", "wait"},
		{"-h", "x", "-bench", "wlat-watch", "-mode", "wait"},
		{"-h", "x", "-bench", "lat", "-warmup", "-1"},
		{"-h", "x", "-warmup", "0"},
		{"-s", "-warmup", "0"},
		{"-h", "x", "-size", "64"},
		{"-h", "x", "-p", "0"},
		{"-h", "x", "-raw-port", "5"},
		{"-s", "-bench", "lat"},
		{"-s", "--json"},
		{"-s", "-raw-port", "70000"},
		{"-s", "-max-sessions", "0"},
		{"-s", "-max-sessions", "1025"},
		{"-s", "-idle-timeout", "-1s"},
		{"-s", "-idle-timeout", "30"},
		{"-h", "x", "-max-sessions", "2"},
		{"-h", "x", "-idle-timeout", "5s"},
		{"-demo", "-idle-timeout", "5s"},
		{"-demo", "-d", "tcp"},
		{"-demo", "-f", "x.conf"},
		{"-h", "x", "-f", "a", "-embedded"},
	} {
		code, out, errs := runDattest(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "usage:") {
			t.Errorf("dattest %q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	for arg, want := range map[string][]string{
		"read":               {"read"},
		"all":                {"lat", "bw", "read"},
		"wlat":               {"wlat"},
		"wlat,wlat-suppress": {"wlat", "wlat-suppress"},
		"wlat-watch":         {"wlat-watch"},
	} {
		o, code, ok := parseArgs([]string{"-h", "x", "-bench", arg, "-mode", "poll"}, io.Discard, io.Discard)
		if !ok || !slices.Equal(o.params.ops, want) {
			t.Errorf("-bench %s: ops %q (ok %v, exit %d), want %q", arg, o.params.ops, ok, code, want)
		}
	}
	code, out, _ := runDattest(t, "-help")
	if code != exitOK || !strings.Contains(out, "exit status:") {
		t.Errorf("-help: exit %d, %q", code, out)
	}
	// The usage says what the server listens on and what it allows.
	for _, want := range []string{"server (-s) listens on:", "connection qualifier -p", "TCP port -raw-port",
		"-max-sessions N", "-idle-timeout D", "at most 64M"} {
		if !strings.Contains(out, want) {
			t.Errorf("-help does not say %q:\n%s", want, out)
		}
	}
	if o, _, ok := parseArgs([]string{"-s", "-max-sessions", "2", "-idle-timeout", "90s"}, io.Discard, io.Discard); !ok ||
		o.maxSess != 2 || o.idle != 90*time.Second {
		t.Errorf("server limits: %+v (ok %v)", o, ok)
	}
}

func TestBadConfig(t *testing.T) {
	code, _, errs := runDattest(t, "-h", "127.0.0.1", "-f", filepath.Join(t.TempDir(), "missing.conf"))
	if code != exitFailure || !strings.Contains(errs, "missing.conf") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	code, _, errs = runDattest(t, "-h", "127.0.0.1", "-embedded", "-d", "nosuch")
	if code != exitFailure || !strings.Contains(errs, "nosuch") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

// TestLoopbackHostRefused: -h with an IA whose addresses are not IP
// addresses fails at connect with an explanation.
func TestLoopbackHostRefused(t *testing.T) {
	code, out, _ := runDattest(t, "-h", "127.0.0.1", "-embedded", "-d", "loopback", "--json")
	if code != exitFailure {
		t.Fatalf("exit %d", code)
	}
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Passed || len(rep.Steps) != len(allSteps) || !strings.Contains(rep.Steps[0].Detail, "not IP addresses") {
		t.Fatalf("%+v", rep)
	}
}

// TestChildServerStops: the demo's child-process machinery starts a
// server (on loopback, which no other process can reach), reads its ready
// line and stops it with SIGTERM; the server exits 0 after freeing
// everything.
func TestChildServerStops(t *testing.T) {
	asChild(t)
	ctx := testCtx(t)
	cfg, stop, err := startChild(ctx, []string{"-s", "-embedded", "-d", "loopback", "-p", "0"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.port == 0 || cfg.rawHost != "127.0.0.1" {
		t.Errorf("client config %+v", cfg)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// A server that cannot start is reported with its stderr.
	_, _, err = startChild(ctx, []string{"-s", "-embedded", "-d", "nosuch"})
	if err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("starting a bad server: %v", err)
	}
}

// TestTCPTwoProcesses runs the sequence and a tiny benchmark against a
// server in another process over the tcp provider on 127.0.0.1.
func TestTCPTwoProcesses(t *testing.T) {
	if !slices.Contains(registry.Providers(), "tcp") {
		t.Skip("the tcp provider is not built in (registry.Providers() has no \"tcp\")")
	}
	asChild(t)
	conf := filepath.Join(t.TempDir(), "dat.conf")
	err := os.WriteFile(conf, []byte(`[[ia]]
name = "tcp"
provider = "tcp"
api_version = "u2.0"
threadsafe = true
default = true
ia_params = "127.0.0.1"
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	cfg, stop, err := startChild(ctx, []string{"-s", "-f", conf, "-d", "tcp", "-p", "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	reg, err := registry.Load(conf)
	if err != nil {
		t.Fatal(err)
	}
	cfg.reg, cfg.ia, cfg.stderr = reg, "tcp", &bytes.Buffer{}
	rep, err := runCheck(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkAllPass(t, rep)
	for _, poll := range []bool{false, true} {
		rows, err := runBench(ctx, cfg, benchParams{ops: []string{"lat", "bw", "read"}, sizes: []int{64, 64 << 10}, iters: 20, poll: poll})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 6 {
			t.Fatalf("rows %+v", rows)
		}
		for _, r := range rows[4:] {
			if r.Op != "read" || r.Unit != "GB/s" || !(r.Godat > 0) || !(r.Raw > 0) || !(r.Ratio > 0) {
				t.Errorf("read row %+v", r)
			}
		}
	}
	checkWLat(t, ctx, cfg)
}

// checkWLat runs the RDMA-write ping-pong at two sizes, twice (the second
// run must not mistake the first one's bytes for pings), and checks the
// rows; then the validated sequence must still pass on the same server.
func checkWLat(t *testing.T, ctx context.Context, cfg clientConfig) {
	t.Helper()
	for range 2 {
		p := benchParams{ops: []string{"wlat", "wlat-suppress", "wlat-watch"}, sizes: []int{64, 4097}, iters: 30, poll: true}
		rows, err := runBench(ctx, cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 6 {
			t.Fatalf("rows %+v", rows)
		}
		for i, r := range rows {
			if r.Op != p.ops[i/2] || r.Unit != "us" || r.Mode != "poll" || r.Size != p.sizes[i%2] ||
				!(r.Godat > 0) || !(r.Raw > 0) || !(r.Ratio > 0) {
				t.Errorf("wlat row %+v", r)
			}
		}
	}
	if _, err := runBench(ctx, cfg, benchParams{ops: []string{"wlat"}, sizes: []int{64}, iters: 5}); err == nil {
		t.Error("wlat in wait mode: no error")
	}
	rep, err := runCheck(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkAllPass(t, rep)
}

func TestWLatLoopback(t *testing.T) {
	checkWLat(t, testCtx(t), inProcess(t))
}

func TestWire(t *testing.T) {
	m := newMsg(kindBind).u64(tagOffset, 1<<40).bytes(tagPayload, []byte("abc")).text(tagText, "")
	b := m.marshal()
	if len(b) != m.size() {
		t.Fatalf("encoded %d bytes, size says %d", len(b), m.size())
	}
	d, err := decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if d.kind != kindBind || d.getOr(tagOffset, 0) != 1<<40 {
		t.Fatalf("decoded %+v", d)
	}
	if p, _ := d.find(tagPayload); string(p) != "abc" {
		t.Fatalf("payload %q", p)
	}
	if _, err := d.get(tagPayload); err == nil {
		t.Error("a 3-byte field read as an integer")
	}
	for i := range len(b) {
		if _, err := decode(b[:i]); err == nil {
			t.Errorf("truncated to %d bytes: decoded", i)
		}
	}
	if err := failure(kindPing, "bad %d", 7).status(); err == nil || !strings.Contains(err.Error(), "bad 7") {
		t.Errorf("failure status: %v", err)
	}
	if err := reply(kindPing).status(); err != nil {
		t.Error(err)
	}
	if kindName(kindSync|replyBit) != "SYNC reply" {
		t.Error(kindName(kindSync | replyBit))
	}
}

func TestHelpers(t *testing.T) {
	sizes, err := parseSizes("64, 4K,1m,3")
	if err != nil || !slices.Equal(sizes, []int{64, 4096, 1 << 20, 3}) {
		t.Fatalf("parseSizes: %v %v", sizes, err)
	}
	for _, n := range []int{64, 4096, 1 << 20, 1000} {
		if got, err := parseSizes(sizeName(n)); err != nil || got[0] != n {
			t.Errorf("sizeName(%d) = %s does not parse back", n, sizeName(n))
		}
	}
	for _, total := range []int{1, 3, 100, 2524} {
		for k := 1; k <= 5; k++ {
			lens := splitLens(total, k)
			sum := 0
			for _, l := range lens {
				if l < 0 {
					t.Fatalf("splitLens(%d, %d) = %v", total, k, lens)
				}
				sum += l
			}
			if len(lens) != k || sum != total {
				t.Fatalf("splitLens(%d, %d) = %v", total, k, lens)
			}
			data := make([]byte, total)
			fillPattern(data, uint64(k))
			segs := make([][]byte, k)
			for i, l := range lens {
				segs[i] = make([]byte, l)
			}
			spread(segs, data)
			if checkPattern(gather(segs, total), uint64(k)) >= 0 {
				t.Fatal("spread/gather lost bytes")
			}
		}
	}
	b := make([]byte, 100)
	fillPattern(b, 1)
	if checkPattern(b, 2) < 0 {
		t.Error("patterns of different seeds match")
	}
	if iovLimit(4, 0, 2, 8) != 2 || iovLimit(4) != 4 || iovLimit(0) != 1 {
		t.Error("iovLimit")
	}
}

// TestProgress checks the progress lines without a terminal.
func TestProgress(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out)
	p.begin("lat 64 wait godat", 64, 10, false)
	p.report()
	p.start()
	p.add(5)
	p.report()
	p.end()
	s := out.String()
	if !strings.Contains(s, "lat 64 wait godat: warming up\n") || !strings.Contains(s, "5/10 iterations") {
		t.Errorf("progress output %q", s)
	}
	var nilp *progress
	nilp.begin("x", 1, 1, true)
	nilp.start()
	nilp.add(1)
	nilp.end()
}

// TestConnQualAPI pins the address conversion the client uses for IP
// providers.
func TestRemoteAddress(t *testing.T) {
	ctx := testCtx(t)
	n := &node{name: "x", attr: api.IAAttr{}}
	cfg := clientConfig{host: "127.0.0.1", port: 4791}
	a, err := cfg.remote(ctx, n)
	if err != nil || a.String() != "127.0.0.1:4791" || a.Network() != "tcp" {
		t.Fatalf("remote %v, %v", a, err)
	}
}

// TestBenchLoopsAllocateNothing: every benchmark's timed loop, client
// and server (loopback, in this process), allocates nothing per message:
// a run of 5 200 iterations allocates no more than one of 200, give or take
// what the runtime does meanwhile. An allocation per message would put the
// garbage collector into the measurement.
func TestBenchLoopsAllocateNothing(t *testing.T) {
	cfg := inProcess(t)
	ctx := testCtx(t)
	mallocs := func(p benchParams) int64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := runBench(ctx, cfg, p); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return int64(after.Mallocs - before.Mallocs)
	}
	const short, long = 200, 5200
	for _, op := range []string{"lat", "bw", "read", "wlat", "wlat-suppress", "wlat-watch"} {
		for _, poll := range []bool{false, true} {
			if isWLat(op) && !poll {
				continue // poll mode only
			}
			p := benchParams{ops: []string{op}, sizes: []int{64}, iters: short, poll: poll}
			mallocs(p) // warm up
			few := mallocs(p)
			p.iters = long
			many := mallocs(p)
			if per := float64(many-few) / (long - short); per > 0.1 {
				t.Errorf("%s in %s mode: %.2f allocations per iteration (%d in %d iterations, %d in %d)",
					op, p.mode(), per, few, short, many, long)
			}
		}
	}
}

// TestChooseIAPrefersAvailable: without -d, dattest opens an available
// IA before one marked default that is not (as in a classic dat.conf,
// where every line may be marked default), and when none is available it
// says why the first is not and how to go on.
func TestChooseIAPrefersAvailable(t *testing.T) {
	const gone = `ofa-v2-nic0 u2.0 nonthreadsafe default libdaploscm.so.2 dapl.2.0 "nosuchdev0 1" ""
ofa-v2-nic1 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "nosuchdev1 0" ""
`
	const lo = `lo u2.0 threadsafe nondefault libgodat-loopback.so godat.1.0 "" ""
`
	for _, c := range []struct{ conf, want string }{
		{gone + lo, "lo"},
		{gone + lo + `lo2 u2.0 threadsafe default libgodat-loopback.so godat.1.0 "" ""` + "\n", "lo2"},
		{lo + `tcp u2.0 threadsafe nondefault libgodat-tcp.so godat.1.0 "127.0.0.1" ""` + "\n", "tcp"},
	} {
		cfg, err := registry.ParseConfig("dat.conf", []byte(c.conf))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := chooseIAs(registry.New(cfg)); err != nil || got[0] != c.want {
			t.Errorf("chose %q (%v), want %q first, from:\n%s", got, err, c.want, c.conf)
		}
	}
	// godat's built-in IAs, which the registry lists after a file's, come
	// after the file's available IAs, built-in tcp included.
	path := filepath.Join(t.TempDir(), "dat.conf")
	if err := os.WriteFile(path, []byte(gone+lo), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := chooseIAs(reg); err != nil || got[0] != "lo" {
		t.Errorf("chose %q (%v) next to the built-in IAs, want the file's lo first", got, err)
	}
	cfg, err := registry.ParseConfig("dat.conf", []byte(gone))
	if err != nil {
		t.Fatal(err)
	}
	got, err := chooseIAs(registry.New(cfg))
	if err == nil || !strings.Contains(err.Error(), "ofa-v2-nic0 at dat.conf:1:1") || !strings.Contains(err.Error(), "-embedded") {
		t.Errorf("chose %q, error %v", got, err)
	}

	// An IA that is available but not on this host (a tcp IA on an address
	// no interface has) is passed over for the next; a named one is not.
	const absent = `tcp u2.0 threadsafe nondefault libgodat-tcp.so godat.1.0 "192.0.2.77" ""
`
	cfg, err = registry.ParseConfig("dat.conf", []byte(absent+lo))
	if err != nil {
		t.Fatal(err)
	}
	n, err := openNode(context.Background(), registry.New(cfg), "")
	if err != nil || n.name != "lo" {
		t.Fatalf("openNode opened %v (%v), want lo", n, err)
	}
	if err := n.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := openNode(context.Background(), registry.New(cfg), "tcp"); !errors.Is(err, api.ErrProviderNotFound) {
		t.Errorf("openNode(tcp) = %v, want ErrProviderNotFound", err)
	}
	cfg, err = registry.ParseConfig("dat.conf", []byte(absent))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openNode(context.Background(), registry.New(cfg), ""); !errors.Is(err, api.ErrProviderNotFound) || !strings.Contains(err.Error(), "-embedded") {
		t.Errorf("openNode with no IA on this host = %v, want ErrProviderNotFound and how to go on", err)
	}
}

// The progress reports run every progressEvery whatever the loop does, so
// their number grows with a run's duration: they must allocate nothing,
// or a slow run (a loaded machine) would count their allocations against
// the benchmark's iterations (TestBenchLoopsAllocateNothing).
func TestProgressReportAllocatesNothing(t *testing.T) {
	for _, bw := range []bool{false, true} {
		p := newProgress(io.Discard)
		p.label, p.size, p.total, p.bw = "bw 64K wait godat", 65536, 1000, bw
		p.report() // warming up; sizes the buffer
		p.t0.Store(time.Now().Add(-time.Second).UnixNano())
		p.n.Store(500)
		if n := testing.AllocsPerRun(100, p.report); n != 0 {
			t.Errorf("bw %v: a progress report allocates %.1f times", bw, n)
		}
	}
}

// TestWarmupFlag: without -warmup the warm-up follows -iters as the
// package doc says; -warmup 0 times from the first iteration.
func TestWarmupFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"-iters", "400"}, warmup(400)},
		{[]string{"-iters", "400", "-warmup", "0"}, 0},
		{[]string{"-warmup", "7"}, 7},
	} {
		args := append([]string{"-h", "x", "-bench", "lat"}, tc.args...)
		o, code, ok := parseArgs(args, io.Discard, io.Discard)
		if !ok || o.params.warm != tc.want {
			t.Errorf("%q: warm-up %d (ok %v, exit %d), want %d", tc.args, o.params.warm, ok, code, tc.want)
		}
	}
}

// TestBenchPrimes checks that a benchmark run with a warm-up primes both
// paths, godat first, before its rows, and that -warmup 0 skips it.
func TestBenchPrimes(t *testing.T) {
	cfg := inProcess(t)
	ctx := testCtx(t)
	var seen []string
	testHookPrime = func(path string) { seen = append(seen, path) }
	defer func() { testHookPrime = nil }()
	for _, warm := range []int{5, 0} {
		seen = nil
		p := benchParams{ops: []string{"bw"}, sizes: []int{4096, 64}, iters: 20, warm: warm, poll: true}
		if _, err := runBench(ctx, cfg, p); err != nil {
			t.Fatal(err)
		}
		switch {
		case warm == 0 && len(seen) != 0:
			t.Errorf("-warmup 0 primed: %q", seen)
		case warm > 0 && (len(seen) < 2 || seen[0] != "godat" || seen[len(seen)-1] != "raw TCP"):
			t.Errorf("priming ran %q; want godat, then raw TCP", seen)
		}
	}
}
