package tcp

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godat/godat/api"
)

// emfileEnv makes the test binary run TestAcceptRetriesAfterEMFILE's body:
// it lowers the process's file descriptor limit, which must not touch the
// other tests.
const emfileEnv = "GODAT_TCP_TEST_EMFILE"

// TestAcceptRetriesAfterEMFILE runs out of file descriptors while
// requests wait on two PSPs and an RSP, so that their accepts fail with
// EMFILE. The IA of one PSP is closed, and the RSP is freed, while their
// accept goroutines pause before trying again: the goroutines end. Once
// descriptors are free again, the other PSP accepts what waited, and a
// later connect gets its CONNECTION_REQUEST and carries a message. (The body runs in a process of its own, the test
// binary re-executed: see emfileEnv.)
func TestAcceptRetriesAfterEMFILE(t *testing.T) {
	if os.Getenv(emfileEnv) == "" {
		cmd := selfCommand(t, []string{emfileEnv + "=1"}, "-test.run=^TestAcceptRetriesAfterEMFILE$", "-test.count=1", "-test.v", "-test.timeout=5m")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestAcceptRetriesAfterEMFILE")) {
			t.Fatalf("the test process: %v\n%s", err, out)
		}
		return
	}

	emfile := make(chan api.ConnQual, 64)
	testHookAcceptErr = func(q api.ConnQual, err error) {
		if errors.Is(err, syscall.EMFILE) {
			select {
			case emfile <- q:
			default:
			}
		}
	}
	t.Cleanup(func() { testHookAcceptErr = nil }) // (after the IAs close: cleanups run last first)

	s := newServer(t)
	rc := newClient(t, s.ia)
	r, err := s.ia.CreateRSP(0, rc.ep, s.crEVD)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := r.Query()
	if err != nil {
		t.Fatal(err)
	}
	// A PSP of another IA, closed while its accept goroutine pauses.
	ia2 := openIA(t)
	_, _, q2 := listenAny(t, ia2, 16)
	// The requesters' sockets exist before the descriptors run out;
	// connecting them needs none.
	pspReq, rspReq, req2 := rawSocket(t), rawSocket(t), rawSocket(t)

	restore := lowerNoFile(t)
	var held []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatalf("opening %s to use up descriptors: %v", os.DevNull, err)
			}
			break
		}
		held = append(held, f)
	}
	release := func() {
		for _, f := range held {
			f.Close()
		}
		held = nil
		restore()
	}
	defer release()

	connectRaw(t, pspReq, s.q)
	connectRaw(t, rspReq, rp.ConnQual)
	connectRaw(t, req2, q2)
	waitAcceptFailed(t, emfile, s.q, rp.ConnQual, q2)
	if n := acceptLoops(); n != 3 {
		t.Fatalf("%d accept goroutines after their accepts failed, want 3 (one per service point)", n)
	}
	if err := ia2.Close(api.CloseAbrupt); err != nil {
		t.Fatal(err)
	}
	if n := acceptLoops(); n != 2 { // (Close returns once the IA's goroutines have ended)
		t.Fatalf("%d accept goroutines after an IA closed, want 2", n)
	}
	if err := r.Free(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(hangDeadline) // (bounds the wait; asserts no time)
	for acceptLoops() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the freed RSP's accept goroutine still runs after %v", hangDeadline)
		}
		time.Sleep(time.Millisecond)
	}

	release()
	_ = syscall.Close(pspReq) // (the accepted request ends without a HELLO)
	_ = syscall.Close(rspReq)
	_ = syscall.Close(req2)
	goodPair(t, s)
}

// rawSocket returns a TCP socket, closed when t ends unless closed before.
func rawSocket(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	return fd
}

// connectRaw connects socket fd to port q of 127.0.0.1; the kernel
// completes the connection into the listener's queue.
func connectRaw(t *testing.T, fd int, q api.ConnQual) {
	t.Helper()
	if err := syscall.Connect(fd, &syscall.SockaddrInet4{Port: int(q), Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("connecting to %d: %v", q, err)
	}
}

// waitAcceptFailed waits until the service points on ports qs have each
// reported an accept failed with EMFILE.
func waitAcceptFailed(t *testing.T, emfile <-chan api.ConnQual, qs ...api.ConnQual) {
	t.Helper()
	timeout := time.After(hangDeadline)
	for len(qs) > 0 {
		select {
		case got := <-emfile:
			qs = slices.DeleteFunc(qs, func(q api.ConnQual) bool { return q == got })
		case <-timeout:
			t.Fatalf("no accept on %v failed with EMFILE within %v", qs, hangDeadline)
		}
	}
}

// lowerNoFile sets the soft limit on open files a little above the
// highest descriptor open, so that a few more opens use it up, and returns
// what restores it.
func lowerNoFile(t *testing.T) func() {
	t.Helper()
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	top := 0
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			top = max(top, n)
		}
	}
	rl := orig
	rl.Cur = uint64(top + 16)
	if rl.Cur > orig.Cur {
		t.Skipf("the soft limit on open files (%d) is already that low", orig.Cur)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	done := false
	return func() {
		if !done {
			done = true
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
				t.Error(err)
			}
		}
	}
}

// acceptLoops counts the goroutines running acceptLoop.
func acceptLoops() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "tcp.(*ia).acceptLoop(")
		}
		buf = make([]byte, 2*len(buf))
	}
}
