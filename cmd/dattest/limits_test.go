package main

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/syncbuf"
)

// noHang bounds the waits of the tests below for something that must
// happen (a drop, a refusal); it is not a measurement.
const noHang = 20 * time.Second

// serverLog collects a server's output for a test to wait on.
type serverLog struct{ syncbuf.Buffer }

func (l *serverLog) line(s string) { l.Write([]byte(s + "\n")) }

// waitFor waits, at most noHang, until the log has n lines containing
// want.
func (l *serverLog) waitFor(t *testing.T, want string, n int) {
	t.Helper()
	for end := time.Now().Add(noHang); strings.Count(l.String(), want) < n; {
		if time.Now().After(end) {
			t.Fatalf("no %d lines with %q in %v; server output:\n%s", n, want, noHang, l)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openClientNode opens the loopback IA for a test's own clients.
func openClientNode(t *testing.T, cfg clientConfig) *node {
	t.Helper()
	n, err := openNode(testCtx(t), cfg.reg, "loopback")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.close(); err != nil {
			t.Error(err)
		}
	})
	return n
}

// TestIdleClientDoesNotBlockOthers: while one client holds a session and
// sends nothing, another runs the whole validated sequence (whose
// sessions follow each other closely: the server must not reject them as
// busy while it frees the previous one).
func TestIdleClientDoesNotBlockOthers(t *testing.T) {
	cfg := inProcessWith(t, serverConfig{maxSessions: 2, idle: testTimeout})
	ctx := testCtx(t)
	n := openClientNode(t, cfg)
	idle := mustDial(t, ctx, n, cfg, sessionCheck, 0)
	defer idle.free()
	rep, err := runCheck(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkAllPass(t, rep)
}

// TestBusyRejected: a client beyond -max-sessions is rejected with a
// reason, not queued.
func TestBusyRejected(t *testing.T) {
	var log serverLog
	cfg := inProcessWith(t, serverConfig{maxSessions: 1, idle: testTimeout, busyWait: 50 * time.Millisecond, out: &log})
	ctx := testCtx(t)
	n := openClientNode(t, cfg)
	first := mustDial(t, ctx, n, cfg, sessionCheck, 0)
	defer first.free()
	c, err := dial(ctx, n, cfg, sessionCheck, 0)
	if err == nil {
		c.free()
		t.Fatal("a second client was accepted beyond -max-sessions 1")
	}
	if !strings.Contains(err.Error(), "rejected the connection: server busy") {
		t.Fatalf("second client: %v, want a rejection saying the server is busy", err)
	}
	log.waitFor(t, "rejected: server busy", 1)
}

// awaitDrop waits, at most noHang, for the server to end c's connection.
func awaitDrop(t *testing.T, c *client) {
	t.Helper()
	ev, err := c.cmEvent(testCtx(t), noHang)
	if err != nil {
		t.Fatalf("the server did not drop the connection within %v: %v", noHang, err)
	}
	if ev.Number != api.ConnectionDisconnectedEvent && ev.Number != api.ConnectionBrokenEvent {
		t.Fatalf("connection event %v, want DISCONNECTED or BROKEN", ev.Number)
	}
}

// TestIdleSessionDropped: a client that connects and then sends nothing
// is dropped after the idle timeout, and the server goes on serving.
func TestIdleSessionDropped(t *testing.T) {
	var log serverLog
	// Long enough that the second client's ping follows its connection
	// in time even on a loaded machine.
	cfg := inProcessWith(t, serverConfig{maxSessions: 1, idle: time.Second, out: &log})
	ctx := testCtx(t)
	n := openClientNode(t, cfg)
	c := mustDial(t, ctx, n, cfg, sessionCheck, 0)
	defer c.free()
	awaitDrop(t, c)
	log.waitFor(t, "0 requests, dropped: idle for 1s", 1)
	// Its session (the only one) is free again.
	c2 := mustDial(t, ctx, n, cfg, sessionCheck, 0)
	defer c2.free()
	if err := c2.ping(ctx, kindPing, 100, 1, nil, 3); err != nil {
		t.Fatal(err)
	}
}

// TestPollSyncSilenceEnds: a SYNC with poll 1 makes the session spin;
// when the client then sends nothing, the session ends (its goroutine
// logs its end) after the idle timeout instead of spinning on.
func TestPollSyncSilenceEnds(t *testing.T) {
	var log serverLog
	cfg := inProcessWith(t, serverConfig{idle: 300 * time.Millisecond, out: &log})
	ctx := testCtx(t)
	n := openClientNode(t, cfg)
	c := mustDial(t, ctx, n, cfg, sessionBench, 0)
	defer c.free()
	if err := c.serverMode(ctx, true); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, "1 requests, dropped: idle", 1)
	awaitDrop(t, c)
}

// TestIdleHint: a client whose session failed after the server's idle
// timeout without a request says that the server may have dropped it.
func TestIdleHint(t *testing.T) {
	c := &client{serverIdle: time.Second, lastReply: time.Now().Add(-2 * time.Second)}
	base := errors.New("RDMA write failed")
	if err := c.idleHint(base); !errors.Is(err, base) || !strings.Contains(err.Error(), "-idle-timeout") {
		t.Errorf("after 2s without a request: %v", err)
	}
	c.lastReply = time.Now()
	if err := c.idleHint(base); err != base {
		t.Errorf("right after a request: %v", err)
	}
}

// TestSessionBoundsRequests: counts a client declares are bounded before
// they size anything.
func TestSessionBoundsRequests(t *testing.T) {
	ctx := testCtx(t)
	// No EP limits: only the server's own bound applies.
	s := &session{link: &link{n: &node{}}, slot: ctrlSize}
	rep := s.handle(ctx, newMsg(kindIOVPrep).u64(tagLength, 100).u64(tagCount, 1<<40))
	if err := rep.status(); err != nil {
		t.Fatal(err)
	}
	if k := rep.getOr(tagCount, 0); k < 1 || k > maxIOVPrepSegs || len(s.nextLens) != int(k) {
		t.Errorf("IOV_PREP of 2^40 segments: %d segments (%d lengths), want 1 to %d", k, len(s.nextLens), maxIOVPrepSegs)
	}
	rep = s.handle(ctx, newMsg(kindLat).u64(tagLength, 64).u64(tagCount, rawMaxCount+1))
	if err := rep.status(); err == nil || !strings.Contains(err.Error(), "count") {
		t.Errorf("BENCH_LAT of too many pings: %v", err)
	}
}

// TestOversizedRequestRefused: a request longer than any control message
// (possible in a benchmark session, whose receive is larger) is answered
// with a failure, not copied and decoded.
func TestOversizedRequestRefused(t *testing.T) {
	cfg := inProcess(t)
	ctx := testCtx(t)
	n := openClientNode(t, cfg)
	c := mustDial(t, ctx, n, cfg, sessionBench, 1<<20)
	defer c.close(ctx)
	half := make([]byte, ctrlSize/2)
	req := newMsg(kindSync).bytes(tagPayload, half[:ctrlSize/2-1]).bytes(tagPayload, half[:ctrlSize/2-1])
	if _, err := c.call(ctx, req, 1, nil); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("a %d-byte SYNC: %v, want a failure", req.size(), err)
	}
	// The session goes on.
	if err := c.ping(ctx, kindPing, 100, 1, nil, 5); err != nil {
		t.Fatal(err)
	}
}

func TestParseRawReq(t *testing.T) {
	good := rawReq{op: rawLat, poll: true, size: 64, count: 10}
	if r, err := parseRawReq(good.marshal()); err != nil || r != good {
		t.Fatalf("good header: %+v, %v", r, err)
	}
	bad := map[string][]byte{
		"short":         good.marshal()[:rawHdrLen-1],
		"magic":         append([]byte("XDTR"), good.marshal()[4:]...),
		"op 0":          rawReq{op: 0, size: 64, count: 1}.marshal(),
		"op 4":          rawReq{op: rawRead + 1, size: 64, count: 1}.marshal(),
		"size 0":        rawReq{op: rawLat, size: 0, count: 1}.marshal(),
		"size cap+1":    rawReq{op: rawBW, size: maxBenchSize + 1, count: 1}.marshal(),
		"size 4G-1":     rawReq{op: rawRead, size: 1<<32 - 1, count: 1}.marshal(),
		"count cap+1":   rawReq{op: rawLat, size: 64, count: rawMaxCount + 1}.marshal(),
		"count 2^64-1":  rawReq{op: rawLat, size: 64, count: 1<<64 - 1}.marshal(),
		"size at count": rawReq{op: rawBW, size: maxBenchSize, count: 1 << 63}.marshal(),
	}
	for name, hdr := range bad {
		if r, err := parseRawReq(hdr); err == nil {
			t.Errorf("%s: accepted as %+v", name, r)
		}
	}
	if r, err := parseRawReq(rawReq{op: rawBW, size: maxBenchSize, count: rawMaxCount}.marshal()); err != nil {
		t.Errorf("the largest request: %+v, %v", r, err)
	}
}

// rawDial connects to a raw server and sends hdr (none if nil).
func rawDial(t *testing.T, srv *rawServer, hdr []byte) *net.TCPConn {
	t.Helper()
	c, err := net.DialTCP("tcp", nil, srv.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if hdr != nil {
		if _, err := c.Write(hdr); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// awaitRawClose waits, at most noHang, for the server to close c without
// sending anything.
func awaitRawClose(t *testing.T, c *net.TCPConn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(noHang))
	n, err := c.Read(make([]byte, 1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: not closed within %v", what, noHang)
	}
	if n != 0 || err != io.EOF {
		t.Fatalf("%s: read %d bytes, %v; want the end of the stream", what, n, err)
	}
}

// TestRawServerLimits: the raw baseline port keeps at most its limit of
// connections open, refuses a header declaring too much, and drops
// connections that go quiet, polling ones included.
func TestRawServerLimits(t *testing.T) {
	var log serverLog
	busy, err := startRawServer("127.0.0.1:0", 1, testTimeout, log.line)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.stop()
	hold := rawDial(t, busy, rawReq{op: rawLat, size: 16, count: 10}.marshal())
	// The server has read the header once it answers the first ping.
	ping := make([]byte, 16)
	if _, err := hold.Write(ping); err != nil {
		t.Fatal(err)
	}
	hold.SetReadDeadline(time.Now().Add(noHang))
	if _, err := io.ReadFull(hold, ping); err != nil {
		t.Fatal(err)
	}
	awaitRawClose(t, rawDial(t, busy, nil), "a connection beyond the limit")
	log.waitFor(t, "refused: 1 open", 1)
	hold.Close()

	quiet, err := startRawServer("127.0.0.1:0", 4, 300*time.Millisecond, log.line)
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.stop()
	for _, c := range []struct {
		what string
		hdr  []byte
	}{
		{"a huge size", rawReq{op: rawBW, size: 1<<32 - 1, count: 1}.marshal()},
		{"a huge count", rawReq{op: rawLat, size: 64, count: 1 << 62}.marshal()},
		{"no header", nil},
		{"a waiting ping-pong", rawReq{op: rawLat, size: 64, count: 10}.marshal()},
		{"a polling ping-pong", rawReq{op: rawLat, poll: true, size: 64, count: 10}.marshal()},
		{"a polling read", rawReq{op: rawRead, poll: true, size: 1 << 20, count: 10}.marshal()},
	} {
		awaitRawClose(t, rawDial(t, quiet, c.hdr), c.what)
	}
	log.waitFor(t, "refused: message size 4294967295 out of range", 1)
	log.waitFor(t, "refused: count 4611686018427387904 exceeds", 1)
	log.waitFor(t, "dropped: idle for 300ms", 4)
}

// TestIdleWatch: ticks keep the watch from firing; without them it fires,
// once; a stopped watch has no goroutine left (goleak checks).
func TestIdleWatch(t *testing.T) {
	var fired atomic.Int32
	w := watchIdle(400*time.Millisecond, func() { fired.Add(1) })
	for end := time.Now().Add(1200 * time.Millisecond); time.Now().Before(end); {
		w.tick()
		time.Sleep(2 * time.Millisecond)
	}
	if fired.Load() != 0 {
		t.Fatal("fired while ticked")
	}
	for end := time.Now().Add(noHang); fired.Load() == 0; {
		if time.Now().After(end) {
			t.Fatalf("not fired %v after the last tick", noHang)
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.stop()
	if fired.Load() != 1 {
		t.Fatalf("fired %d times", fired.Load())
	}
	watchIdle(time.Hour, func() { t.Error("fired after stop") }).stop()
	var none *idleWatch = watchIdle(0, nil)
	none.tick()
	none.stop()
}

// TestRawIdleWithoutWatch: with no idle timeout the raw server still
// serves (a nil watch is ticked in its loops).
func TestRawIdleWithoutWatch(t *testing.T) {
	srv, err := startRawServer("127.0.0.1:0", 2, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	c := rawDial(t, srv, rawReq{op: rawLat, size: 8, count: 1}.marshal())
	b := binary.LittleEndian.AppendUint64(nil, 42)
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(noHang))
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
}

// TestWelcomeFitsPrivateData checks that the server's accept fits the
// private data of every provider: verbs on RoCE takes 54 bytes, and a
// welcome with the idle hint is longer (the dattest check over verbs
// failed on it). The hint goes where it fits.
func TestWelcomeFitsPrivateData(t *testing.T) {
	for _, limit := range []int{54, 64, 1024} {
		b := welcomeMsg(0x1122334455667788, 40000, time.Minute, limit)
		if len(b) > limit {
			t.Errorf("limit %d: welcome of %d bytes", limit, len(b))
		}
		m, err := decode(b)
		if err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		if m.getOr(tagNonce, 0) != 0x1122334455667788 || m.getOr(tagRawPort, 0) != 40000 {
			t.Errorf("limit %d: welcome fields %+v", limit, m)
		}
		if hint := m.getOr(tagIdle, 0); limit >= 1024 && hint != uint64(time.Minute.Milliseconds()) {
			t.Errorf("limit %d: idle hint %d", limit, hint)
		}
	}
}
