package sock

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/godat/godat/internal/openfds"
)

// pair returns a Conn and the plain net.Conn at the other end.
func pair(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-ch
	if peer == nil {
		t.Fatal("accept failed")
	}
	s, err := FromTCP(c.(*net.TCPConn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); peer.Close() })
	return s, peer
}

func TestReadWrite(t *testing.T) {
	s, peer := pair(t)
	if _, err := peer.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 16)
	n, err := s.Read(b)
	if err != nil || string(b[:n]) != "hello" {
		t.Fatalf("Read = %q, %v", b[:n], err)
	}
	bufs := [][]byte{[]byte("ab"), nil, []byte("cd")}
	if n, err := s.Writev(bufs); n != 4 || err != nil {
		t.Fatalf("Writev = %d, %v", n, err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(peer, got); err != nil || string(got) != "abcd" {
		t.Fatalf("peer read %q, %v", got, err)
	}
	peer.Close()
	if _, err := s.Read(b); err != io.EOF {
		t.Fatalf("Read after the peer closed = %v, want io.EOF", err)
	}
}

// WritevNB writes no more than its limit: the limit may fall inside a
// segment or at a segment's end, and empty segments are skipped.
func TestWritevNBLimit(t *testing.T) {
	s, peer := pair(t)
	fd := uintptr(s.fd)
	var iov []syscall.Iovec
	bufs := [][]byte{[]byte("abc"), nil, []byte("defgh"), []byte("ij")}
	for _, c := range []struct {
		limit int
		want  string
	}{{5, "abcde"}, {3, "abc"}, {8, "abcdefgh"}, {0, "abcdefghij"}, {100, "abcdefghij"}} {
		n, e := WritevNB(fd, bufs, &iov, c.limit)
		if e != 0 || n != len(c.want) {
			t.Fatalf("limit %d: WritevNB = %d, %v; want %d", c.limit, n, e, len(c.want))
		}
		got := make([]byte, n)
		if _, err := io.ReadFull(peer, got); err != nil || string(got) != c.want {
			t.Fatalf("limit %d: peer read %q, %v; want %q", c.limit, got, err, c.want)
		}
		for i, v := range iov[:cap(iov)] {
			if v.Base != nil {
				t.Fatalf("limit %d: iovec %d still points at memory", c.limit, i)
			}
		}
	}
	// One segment left of several: written with sendto(2).
	if n, e := WritevNB(fd, [][]byte{nil, []byte("xyz"), {}}, &iov, 0); e != 0 || n != 3 {
		t.Fatalf("one segment: WritevNB = %d, %v; want 3", n, e)
	}
	got := make([]byte, 3)
	if _, err := io.ReadFull(peer, got); err != nil || string(got) != "xyz" {
		t.Fatalf("one segment: peer read %q, %v", got, err)
	}
}

// WritevNB writes slices of bigSeg bytes or more mostly by system calls
// of their own (their first bytes go with the short slices ahead of
// them, up to leadLen in all): whatever way the calls split the batch,
// and wherever the limit falls, the peer reads every byte in order, and
// the scratch vector keeps no memory.
func TestWritevNBBigSlices(t *testing.T) {
	s, peer := pair(t)
	fd := uintptr(s.fd)
	seg := func(n int, seed byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = seed + byte(i*7) + byte(i>>9)
		}
		return b
	}
	bufs := [][]byte{
		seg(48, 1), seg(bigSeg+100, 2), // a header and its payload
		seg(48, 3), nil, seg(9, 4), seg(2*bigSeg+3, 5), // two short ones ahead of a big one
		seg(bigSeg, 6),                                              // big, right after a big one
		seg(bigSeg-1, 7),                                            // just short of big
		seg(leadLen/2, 10), seg(leadLen/2+1, 11), seg(bigSeg+5, 12), // short ones over leadLen ahead of a big one
		seg(48, 13), seg(bigSeg+1, 14), seg(bigSeg, 15), // a big one whose rest after its lead is short, then a big one
		seg(48, 8), seg(17, 9), // short ones at the end
	}
	var want []byte
	for _, b := range bufs {
		want = append(want, b...)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(want))))
		got <- b
	}()
	var iov []syscall.Iovec
	rest := bufs
	calls := 0
	for len(rest) > 0 {
		calls++
		limit := 0
		if calls%3 == 0 {
			limit = bigSeg / 3 // sometimes inside a slice
		}
		n, e := WritevNB(fd, rest, &iov, limit)
		switch {
		case e == syscall.EAGAIN:
			time.Sleep(time.Millisecond)
		case e != 0:
			t.Fatalf("WritevNB: %v", e)
		case limit > 0 && n > limit:
			t.Fatalf("WritevNB wrote %d bytes, over its limit %d", n, limit)
		}
		for i, v := range iov[:cap(iov)] {
			if v.Base != nil {
				t.Fatalf("call %d: iovec %d still points at memory", calls, i)
			}
		}
		rest = Advance(rest, n)
		for len(rest) > 0 && len(rest[0]) == 0 {
			rest = rest[1:]
		}
	}
	select {
	case b := <-got:
		if !bytes.Equal(b, want) {
			i := 0
			for i < len(b) && i < len(want) && b[i] == want[i] {
				i++
			}
			t.Fatalf("the peer read %d bytes, %d of them right before the first difference; want %d", len(b), i, len(want))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the peer did not get every byte")
	}
}

// A large write waits for room and finishes.
func TestWriteWaitsForRoom(t *testing.T) {
	s, peer := pair(t)
	big := bytes.Repeat([]byte{7}, 8<<20)
	done := make(chan error, 1)
	go func() {
		got, err := io.ReadAll(io.LimitReader(peer, int64(len(big))))
		if err == nil && !bytes.Equal(got, big) {
			err = errors.New("the data differs")
		}
		done <- err
	}()
	if n, err := s.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestDeadline(t *testing.T) {
	s, _ := pair(t)
	s.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := s.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read = %v, want a deadline error", err)
	}
	s.SetReadDeadline(time.Time{})
}

// Unwatched, arriving data wakes no waiter; watching again wakes it at
// once because the data is there.
func TestWatch(t *testing.T) {
	s, peer := pair(t)
	if changed, err := s.Watch(false); err != nil || !changed {
		t.Fatalf("Watch(false) = %v, %v", changed, err)
	}
	if changed, err := s.Watch(false); err != nil || changed || s.Watching() {
		t.Fatalf("Watch(false) again = %v, %v; watching %v", changed, err, s.Watching())
	}
	rc, _ := s.SyscallConn()
	woke := make(chan int, 16) // each call's read: bytes, or -1
	done := make(chan error, 1)
	go func() {
		done <- rc.Read(func(fd uintptr) bool {
			var b [8]byte
			n, err := syscall.Read(int(fd), b[:])
			woke <- n // (after the read: the first finds nothing)
			return n > 0 || (err != nil && err != syscall.EAGAIN)
		})
	}()
	if n := <-woke; n > 0 {
		t.Fatalf("the first call read %d bytes before any were sent", n)
	}
	peer.Write([]byte("x"))
	if n := wokenOnceWatched(t, s, woke, "the waiter (bytes read)"); n != 1 {
		t.Fatalf("woken waiter read %d bytes, want 1", n)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Unwatched, the end of the stream wakes no waiter either (the socket is
// in no epoll instance); watching again wakes it at once with io.EOF.
func TestUnwatchedEOF(t *testing.T) {
	s, peer := pair(t)
	s.Watch(false)
	done := blockedRead(s)
	peer.Close()
	if err := wokenOnceWatched(t, s, done, "the reader at the end of the stream (Read)"); err != io.EOF {
		t.Fatalf("Read = %v, want io.EOF", err)
	}
}

// blockedRead starts a Read of s for 4 bytes in a goroutine, gives it
// 20ms to block, and returns the channel that gets its error.
func blockedRead(s *Conn) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := s.Read(make([]byte, 4))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	return done
}

// wokenOnceWatched checks that nothing comes on woke while s, unwatched,
// has something for waiter (for 100ms), then that Watch(true) watches s
// again and that waiter then wakes (within 5s), and returns what came.
func wokenOnceWatched[T any](t *testing.T, s *Conn, woke <-chan T, waiter string) T {
	t.Helper()
	select {
	case v := <-woke:
		t.Fatalf("unwatched socket woke %s: %v", waiter, v)
	case <-time.After(100 * time.Millisecond):
	}
	if changed, err := s.Watch(true); err != nil || !changed {
		t.Fatalf("Watch(true) = %v, %v", changed, err)
	}
	var v T
	select {
	case v = <-woke:
	case <-time.After(5 * time.Second):
		t.Fatalf("watching again did not wake %s", waiter)
	}
	return v
}

// registered reports how many descriptors epoll instance f holds, from
// /proc/self/fdinfo (one "tfd:" line each).
func registered(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn() // (f.Fd would make it blocking)
	if err != nil {
		t.Fatal(err)
	}
	var fd uintptr
	if err := rc.Control(func(d uintptr) { fd = d }); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "tfd:")
}

// The socket is in the input instance only while input is watched, and
// in the output instance only while a writer waits for room.
func TestRegistrations(t *testing.T) {
	s, peer := pair(t)
	if rx, tx := registered(t, s.rx), registered(t, s.tx); rx != 1 || tx != 0 {
		t.Fatalf("new Conn: in %d input, %d output instances; want 1, 0", rx, tx)
	}
	s.Watch(false)
	if rx := registered(t, s.rx); rx != 0 {
		t.Fatalf("unwatched: in the input instance %d times", rx)
	}
	s.Watch(true)
	if rx := registered(t, s.rx); rx != 1 {
		t.Fatalf("watched again: in the input instance %d times", rx)
	}

	// A write that fills the socket waits in the output instance, and
	// leaves it once written; RawConn.Write the same.
	big := bytes.Repeat([]byte{3}, 32<<20)
	waitsForRoom(t, s, peer, len(big), "Write", func() error {
		_, err := s.Write(big)
		return err
	})
	rc, _ := s.SyscallConn()
	left := big
	waitsForRoom(t, s, peer, len(big), "RawConn.Write", func() error {
		return rc.Write(func(fd uintptr) bool {
			n, e := WriteNB(fd, left)
			if e != 0 {
				return e != syscall.EAGAIN
			}
			left = left[n:]
			return len(left) == 0
		})
	})
}

// waitsForRoom runs write, which writes size bytes, more than the socket
// takes without a reader, and checks that s is in its output instance
// while write waits for room and out of it once peer has read everything
// and write has returned.
func waitsForRoom(t *testing.T, s *Conn, peer net.Conn, size int, what string, write func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- write() }()
	for end := time.Now().Add(10 * time.Second); registered(t, s.tx) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("a blocked %s is not in the output instance", what)
		}
	}
	if _, err := io.CopyN(io.Discard, peer, int64(size)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if tx := registered(t, s.tx); tx != 0 {
		t.Fatalf("after %s: in the output instance %d times", what, tx)
	}
}

func TestCloseWakesWaiters(t *testing.T) {
	s, _ := pair(t)
	done := blockedRead(s)
	s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Read = %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake the reader")
	}
	if err := s.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := s.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close = %v", err)
	}
}

func TestCloseWrite(t *testing.T) {
	s, peer := pair(t)
	s.CloseWrite()
	if _, err := peer.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("peer Read after CloseWrite = %v, want io.EOF", err)
	}
}

func TestNoLeaks(t *testing.T) {
	before := openfds.Count(t)
	for range 20 {
		s, peer := func() (*Conn, net.Conn) {
			ln, _ := net.Listen("tcp", "127.0.0.1:0")
			defer ln.Close()
			ch := make(chan net.Conn, 1)
			go func() { c, _ := ln.Accept(); ch <- c }()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			s, err := FromTCP(c.(*net.TCPConn))
			if err != nil {
				t.Fatal(err)
			}
			return s, <-ch
		}()
		s.Write([]byte("x"))
		s.Close()
		peer.Close()
	}
	if after := openfds.Count(t); after > before {
		t.Fatalf("%d descriptors before, %d after", before, after)
	}
}

func TestNoAllocs(t *testing.T) {
	s, peer := pair(t)
	b := make([]byte, 64)
	pb := make([]byte, 64)
	bufs := make([][]byte, 2)
	allocs := testing.AllocsPerRun(100, func() {
		bufs[0], bufs[1] = b[:32], b[32:]
		s.Writev(bufs)
		io.ReadFull(peer, pb)
		peer.Write(pb)
		for got := 0; got < len(b); {
			n, err := s.Read(b[got:])
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per round trip", allocs)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPending checks that Pending counts the bytes a socket holds unread,
// and reports 0 once the socket is closed.
func TestPending(t *testing.T) {
	s, peer := pair(t)
	if n := s.Pending(); n != 0 {
		t.Fatalf("Pending on a fresh socket: %d", n)
	}
	if _, err := peer.Write(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); s.Pending() != 100; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("Pending after 100 bytes: %d", s.Pending())
		}
	}
	if _, err := s.Read(make([]byte, 40)); err != nil {
		t.Fatal(err)
	}
	if n := s.Pending(); n != 60 {
		t.Fatalf("Pending after reading 40 of 100: %d", n)
	}
	s.Close()
	if n := s.Pending(); n != 0 {
		t.Fatalf("Pending after Close: %d", n)
	}
}

// TestHoldKeepsDescriptor checks that a use taken with Hold keeps the
// descriptor open across Close, so that ReadHeld still reads the socket,
// and that Release then closes it.
func TestHoldKeepsDescriptor(t *testing.T) {
	s, peer := pair(t)
	if !s.Hold() {
		t.Fatal("Hold on an open Conn failed")
	}
	if _, err := peer.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s.Hold() {
		t.Fatal("Hold after Close succeeded")
	}
	b := make([]byte, 8)
	n, err := 0, error(syscall.EAGAIN)
	for end := time.Now().Add(5 * time.Second); errors.Is(err, syscall.EAGAIN) && time.Now().Before(end); {
		n, err = s.ReadHeld(b)
	}
	if err != nil || string(b[:n]) != "held" {
		t.Fatalf("ReadHeld after Close, with a use held: %q, %v", b[:n], err)
	}
	link := fmt.Sprintf("/proc/self/fd/%d", s.fd)
	sockName, err := os.Readlink(link)
	if err != nil || !strings.HasPrefix(sockName, "socket:") {
		t.Fatalf("the descriptor while a use is held: %q, %v", sockName, err)
	}
	s.Release()
	// (The number may be reused at once, but not for this socket.)
	if now, err := os.Readlink(link); err == nil && now == sockName {
		t.Fatalf("the descriptor is still %s after Release", now)
	}
}
