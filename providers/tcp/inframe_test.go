package tcp

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/sock"
)

// TestPollWakesReaderInFrame: a consumer that spins on Dequeue on the
// only P, while the reader waits in the netpoller inside a frame whose
// rest has come, must get the reader to finish it, not spin until the
// runtime preempts the consumer and polls the network (10 ms; a 1 MiB
// poll stream crawled at a tenth of its speed so). Polls are counted,
// not timed: one poll in busyYield wakes the reader. The scheduler does
// not always leave the reader waiting, so the test makes four frames.
func TestPollWakesReaderInFrame(t *testing.T) {
	const n = 64 << 10
	s := newServer(t)
	nc := rawConnect(t, s)
	fd := rawFD(t, nc)
	inFrame := make(chan *conn, 1)
	hook := func(c *conn) {
		select {
		case inFrame <- c:
		default:
		}
	}
	testHookInFrame.Store(&hook)
	t.Cleanup(func() { testHookInFrame.Store(nil) })
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	for seq := uint64(1); seq <= 4; seq++ {
		if err := s.ep.PostRecv([]api.LMRTriplet{s.lmr.Triplet(0, n)}, api.Cookie(seq), api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		clear(s.buf[:n])
		// Nobody polls yet: the reader takes the frame, and waits for
		// the second half of its payload.
		if _, err := nc.Write(append(frameBytes(frame{Type: frSend, Seq: seq, Len: n}), payload[:n/2]...)); err != nil {
			t.Fatal(err)
		}
		var c *conn
		select {
		case c = <-inFrame:
		case <-time.After(10 * time.Second):
			t.Fatal("the reader did not begin reading the payload")
		}
		for end := time.Now().Add(10 * time.Second); c.sk.Pending() > 0; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("the reader did not read the first half of the payload")
			}
		}
		time.Sleep(20 * time.Millisecond) // (it parks in the netpoller)

		procs := runtime.GOMAXPROCS(1)
		// A raw write, which does not let the scheduler give the P away
		// (a system call through the runtime might, and another thread
		// would then poll the network and run the reader).
		if k, e := sock.WriteNB(fd, payload[n/2:]); e != 0 || k != n/2 {
			runtime.GOMAXPROCS(procs)
			t.Fatalf("the second half: %d bytes written, %v", k, e)
		}
		var ev api.Event
		polls := 0
		for s.recv.Dequeue(&ev) != nil && polls < 100_000_000 {
			polls++
		}
		runtime.GOMAXPROCS(procs)
		if ev.Number != api.DTOCompletionEvent || ev.DTO.Cookie != api.Cookie(seq) || ev.DTO.Status != api.DTOSuccess || ev.DTO.Length != n {
			t.Fatalf("frame %d: got %+v after %d polls, want the receive of %d bytes", seq, ev, polls, n)
		}
		for i, b := range s.buf[:n] {
			if b != payload[i] {
				t.Fatalf("frame %d: byte %d is %d, want %d", seq, i, b, payload[i])
			}
		}
		if polls > 2000 {
			t.Fatalf("frame %d: %d polls until the receive completed: the spinning consumer left the reader waiting", seq, polls)
		}
	}
}

// rawFD is the descriptor of TCP connection nc, for raw system calls.
func rawFD(t testing.TB, nc net.Conn) uintptr {
	t.Helper()
	rc, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd uintptr
	if err := rc.Control(func(f uintptr) { fd = f }); err != nil {
		t.Fatal(err)
	}
	return fd
}
