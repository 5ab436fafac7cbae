package tcp

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/godat/godat/api"
)

// startHelperProc starts this test binary as the helper server; it is
// stopped (stdin closed, killed if it does not exit) when t ends.
func startHelperProc(t *testing.T) *helperProc {
	t.Helper()
	cmd := selfCommand(t, []string{helperEnv + "=1"}, "-test.run=^$")
	cmd.Stderr = os.Stderr
	h, err := spawnHelper(t, cmd)
	if err != nil {
		t.Fatalf("helper did not report its port: %v", err)
	}
	t.Cleanup(func() { h.stop(20 * time.Second) })
	return h
}

// selfCommand returns a command running this test binary with args and
// the extra environment env.
func selfCommand(tb testing.TB, env []string, args ...string) *exec.Cmd {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// startPiped starts cmd with a pipe to its stdin and one from its stdout.
func startPiped(tb testing.TB, cmd *exec.Cmd) (io.WriteCloser, io.ReadCloser) {
	tb.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return stdin, stdout
}

// spawnHelper starts cmd, a helper server (helper_test.go), and returns it
// once it has reported its port; if it does not, it is killed and the
// error returned.
func spawnHelper(t *testing.T, cmd *exec.Cmd) (*helperProc, error) {
	t.Helper()
	stdin, stdout := startPiped(t, cmd)
	q, err := readPort(stdout)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	h := &helperProc{port: q, stdin: stdin, proc: cmd.Process, done: make(chan error, 1)}
	go func() { _, _ = io.Copy(io.Discard, stdout); h.done <- cmd.Wait() }()
	return h, nil
}

// stop closes h's stdin, which tells it to exit, and waits for it, killing
// it after timeout; it returns whether it was killed and how it exited.
func (h *helperProc) stop(timeout time.Duration) (killed bool, err error) {
	_ = h.stdin.Close()
	select {
	case err = <-h.done:
	case <-time.After(timeout):
		_ = h.proc.Kill()
		killed, err = true, <-h.done
	}
	return killed, err
}

// client is one client EP with its own EVDs and buffers.
type client struct {
	t                  testing.TB
	ia                 api.IA
	pz                 api.PZ
	ep                 api.EP
	recv, req, connEVD api.EVD
	buf                []byte
	lmr                api.LMRParam
	lmrs               []api.LMR // every LMR of the client, for free
}

// newClient is newEndpoint with EVDs of 64 events and a 256 KiB buffer.
func newClient(t testing.TB, ia api.IA) *client {
	t.Helper()
	return newEndpoint(t, ia, 64, 256<<10)
}

func (c *client) next(e api.EVD, what string) api.Event {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ev api.Event
	if _, err := e.Wait(ctx, 1, &ev); err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
	return ev
}

func (c *client) expect(e api.EVD, n api.EventNumber, what string) api.Event {
	c.t.Helper()
	ev := c.next(e, what)
	if ev.Number != n {
		c.t.Fatalf("%s: got %v (DTO status %v), want %v", what, ev.Number, ev.DTO.Status, n)
	}
	return ev
}

func (c *client) dto(e api.EVD, cookie api.Cookie, st api.DTOStatus, what string) api.Event {
	c.t.Helper()
	ev := c.expect(e, api.DTOCompletionEvent, what)
	if ev.DTO.Cookie != cookie || ev.DTO.Status != st {
		c.t.Fatalf("%s: cookie %d status %v, want cookie %d status %v", what, ev.DTO.Cookie, ev.DTO.Status, cookie, st)
	}
	return ev
}

func (c *client) connect(q api.ConnQual, pd string) {
	c.t.Helper()
	a, _, err := c.ia.Query()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.ep.Connect(a.Address, q, 20*time.Second, []byte(pd), api.QOSBestEffort, api.ConnectDefault); err != nil {
		c.t.Fatal(err)
	}
}

// exchange checks, on c connected to the helper server with receive 1
// posted, the helper's window message, an RDMA write of the whole window
// and its read back, and a send of n bytes (at most 4096) that the helper
// echoes; where names the path in failures. It returns the window.
func (c *client) exchange(n uint32, where string) api.RMRTriplet {
	c.t.Helper()
	ev := c.dto(c.recv, 1, api.DTOSuccess, "the window message")
	if ev.DTO.Length != 16 {
		c.t.Fatalf("window message of %d bytes", ev.DTO.Length)
	}
	win := helperWin(c.buf)

	// RDMA write the whole window, read it back.
	src, dst := c.buf[64<<10:128<<10], c.buf[128<<10:192<<10]
	for i := range src {
		src[i] = byte(i*7 + i>>9)
	}
	if err := c.ep.PostRDMAWrite([]api.LMRTriplet{c.lmr.Triplet(64<<10, win.Length)}, 10, win, api.CompletionDefault); err != nil {
		c.t.Fatal(err)
	}
	c.dto(c.req, 10, api.DTOSuccess, "RDMA write "+where)
	if err := c.ep.PostRDMARead([]api.LMRTriplet{c.lmr.Triplet(128<<10, win.Length)}, 11, win, api.CompletionDefault); err != nil {
		c.t.Fatal(err)
	}
	c.dto(c.req, 11, api.DTOSuccess, "RDMA read "+where)
	if !bytes.Equal(src, dst) {
		c.t.Fatal("the window read back differs from what was written")
	}

	// Echo: a send and the receive of its echo.
	msg := c.buf[192<<10 : 192<<10+n]
	copy(msg, src)
	if err := c.ep.PostRecv([]api.LMRTriplet{c.lmr.Triplet(200<<10, 4096)}, 2, api.CompletionDefault); err != nil {
		c.t.Fatal(err)
	}
	if err := c.ep.PostSend([]api.LMRTriplet{c.lmr.Triplet(192<<10, n)}, 12, api.CompletionDefault); err != nil {
		c.t.Fatal(err)
	}
	c.dto(c.req, 12, api.DTOSuccess, "the send "+where)
	ev = c.dto(c.recv, 2, api.DTOSuccess, "the echo")
	if ev.DTO.Length != n || !bytes.Equal(c.buf[200<<10:200<<10+n], msg) {
		c.t.Fatal("the echo differs")
	}
	return win
}

// TestTwoProcess runs the core connection and data transfer checks between
// this process and a helper process: the conformance suite itself opens
// both ends in one process (see the package tests' README in the report).
func TestTwoProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second process")
	}
	h := startHelperProc(t)
	ia := openIA(t)

	// Accept with private data both ways, then the server's window message.
	c := newClient(t, ia)
	if err := c.ep.PostRecv([]api.LMRTriplet{c.lmr.Triplet(0, 64)}, 1, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	c.connect(h.port, "hi")
	ev := c.expect(c.connEVD, api.ConnectionEstablishedEvent, "ESTABLISHED")
	if string(ev.Conn.PrivateData) != "welcome hi" {
		t.Fatalf("accept private data %q", ev.Conn.PrivateData)
	}
	win := c.exchange(1000, "across processes")

	// A wrong RMR context: REMOTE_ACCESS and BROKEN.
	bad := win
	bad.RMRContext ^= 0x5A5A5A5A
	bad.Length = 16
	if err := c.ep.PostRDMAWrite([]api.LMRTriplet{c.lmr.Triplet(64<<10, 16)}, 13, bad, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	c.dto(c.req, 13, api.DTOErrRemoteAccess, "the refused RDMA write")
	c.expect(c.connEVD, api.ConnectionBrokenEvent, "BROKEN after the remote access error")

	// Reject with private data.
	r := newClient(t, ia)
	r.connect(h.port, "reject")
	ev = r.expect(r.connEVD, api.ConnectionPeerRejectedEvent, "PEER_REJECTED")
	if string(ev.Conn.PrivateData) != "no thanks" {
		t.Fatalf("reject private data %q", ev.Conn.PrivateData)
	}

	// Nobody listens: NON_PEER_REJECTED.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := api.ConnQual(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	n := newClient(t, ia)
	n.connect(free, "")
	n.expect(n.connEVD, api.ConnectionNonPeerRejectedEvent, "connecting to a port nobody listens on")

	// The peer process dies: BROKEN, and the posted receive is flushed.
	k := newClient(t, ia)
	k.connect(h.port, "k")
	k.expect(k.connEVD, api.ConnectionEstablishedEvent, "ESTABLISHED before the kill")
	if err := k.ep.PostRecv([]api.LMRTriplet{k.lmr.Triplet(0, 64)}, 7, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	k.dto(k.recv, 7, api.DTOSuccess, "the window message")
	if err := k.ep.PostRecv([]api.LMRTriplet{k.lmr.Triplet(0, 64)}, 8, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := h.proc.Kill(); err != nil {
		t.Fatal(err)
	}
	k.expect(k.connEVD, api.ConnectionBrokenEvent, "BROKEN when the peer process is killed")
	k.dto(k.recv, 8, api.DTOErrFlushed, "the receive posted before the kill")
}
