// Package sock is a connected TCP socket that Go's network poller watches
// for input only when its owner asks it to.
//
// A socket in the runtime's poller wakes a runtime thread whenever data
// arrives, whether or not a goroutine waits for it. A consumer that
// busy-polls the socket itself pays for every one of those wake-ups (on a
// small machine they preempt the very processes that exchange the data).
// A Conn takes the socket out of the runtime's poller and waits for it
// instead through two epoll instances of its own, which the runtime
// watches: one for input, one for output. Watch switches input
// notification on and off. Waiting costs no CPU; waiting for input costs
// no extra system call compared with a net.TCPConn, and a write that has
// to wait for room two (its registration and removal).
//
// The socket is in an epoll instance only while someone may wait for it
// there: in the input one while input is watched, in the output one while
// a writer waits for room. Every registration costs the sending side of
// every segment that arrives a callback, whether or not it matches what
// is waited for, and on loopback that callback runs inside the sender's
// system call, on a ping-pong's critical path. With input unwatched,
// nothing but a deadline, Close or Watch(true) wakes a reader: the end of
// the stream and errors are seen by the next read, or wake the reader
// once input is watched again.
//
// Unlike a net.Conn, a Conn allows one reader (Read, RawConn.Read) and one
// writer (Write, Writev, RawConn.Write) at a time, which lets it keep their
// scratch state without allocating; RawConn.Control, the deadlines, Watch
// and Close may be called by any goroutine at any time, and Close wakes
// every waiter. Deadlines behave as net.Conn's do (os.ErrDeadlineExceeded).
package sock

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Conn is a TCP socket outside the runtime's poller (see the package
// documentation). It implements net.Conn and syscall.Conn.
type Conn struct {
	fd    int
	refs  atomic.Int64 // users of fd, plus closedBit once Close was called
	rx    *os.File     // epoll instance holding fd while input is watched
	tx    *os.File     // epoll instance holding fd while a writer waits for room
	rxc   syscall.RawConn
	txc   syscall.RawConn
	laddr net.Addr
	raddr net.Addr

	watchMu  sync.Mutex      // orders Watch calls
	watching atomic.Bool     // changed under watchMu
	wev      unix.EpollEvent // Watch's scratch, under watchMu
	wop      int             // Watch's scratch, under watchMu
	werr2    error           // Watch's scratch, under watchMu
	watchFn  func(uintptr)   // s.watchCB, made once

	// Scratch of the one writer at a time (Write, Writev, RawConn.Write).
	txIn  bool // fd is in the tx instance (see waitRoom)
	wf    func(uintptr) bool
	wfcb  func(uintptr) bool
	wiov  []syscall.Iovec
	wbufs [][]byte
	wn    int
	werr  error
	wcb   func(uintptr) bool
	// Scratch of the one reader at a time (Read, RawConn.Read).
	rf   func(uintptr) bool
	rfcb func(uintptr) bool
	rbuf []byte
	rn   int
	rerr error
	rcb  func(uintptr) bool
}

const closedBit = 1 << 62

const (
	inEvents  = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET
	outEvents = unix.EPOLLOUT | unix.EPOLLET
)

// FromTCP moves the socket of c out of the runtime's poller into a new
// Conn, with input watched, and closes c (the socket itself stays open, in
// the Conn). On failure c is left as it was.
func FromTCP(c *net.TCPConn) (*Conn, error) {
	s := &Conn{fd: -1, laddr: c.LocalAddr(), raddr: c.RemoteAddr()}
	s.watching.Store(true)
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	rx, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	tx, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		unix.Close(rx)
		return nil, err
	}
	fail := func(err error) (*Conn, error) {
		unix.Close(rx)
		unix.Close(tx)
		if s.fd >= 0 {
			unix.Close(s.fd)
		}
		return nil, err
	}
	var derr error
	if err := rc.Control(func(fd uintptr) {
		s.fd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		derr = err
	}
	if derr != nil {
		s.fd = -1
		return fail(derr)
	}
	// Input is watched from the start; the tx instance gets the socket
	// when a writer has to wait (waitRoom).
	in := unix.EpollEvent{Events: inEvents, Fd: int32(s.fd)}
	if err := unix.EpollCtl(rx, unix.EPOLL_CTL_ADD, s.fd, &in); err != nil {
		return fail(err)
	}
	if err := unix.SetNonblock(rx, true); err != nil {
		return fail(err)
	}
	if err := unix.SetNonblock(tx, true); err != nil {
		return fail(err)
	}
	// Non-blocking descriptors: os.NewFile registers them with the
	// runtime's poller, which then watches the epoll instances.
	s.rx, s.tx = os.NewFile(uintptr(rx), "sock-rx"), os.NewFile(uintptr(tx), "sock-tx")
	s.rxc, err = s.rx.SyscallConn()
	if err == nil {
		s.txc, err = s.tx.SyscallConn()
	}
	if err != nil {
		s.rx.Close()
		s.tx.Close()
		unix.Close(s.fd)
		return nil, err
	}
	// Closing c takes its descriptor out of the runtime's poller; the
	// duplicate keeps the socket (and its non-blocking mode) alive.
	c.Close()
	s.wcb, s.rcb, s.rfcb, s.wfcb, s.watchFn = s.writevCB, s.readCB, s.rfCall, s.wfCall, s.watchCB
	s.wiov = make([]syscall.Iovec, 0, 64)
	return s, nil
}

// incref records a user of the descriptor; false once the Conn is closed.
func (s *Conn) incref() bool {
	for {
		v := s.refs.Load()
		if v&closedBit != 0 {
			return false
		}
		if s.refs.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// decref ends a use; the last user after Close closes the descriptor.
func (s *Conn) decref() {
	if s.refs.Add(-1) == closedBit {
		unix.Close(s.fd)
	}
}

// Watch switches input notification on (the default) or off, and reports
// whether that changed anything. With it off the socket leaves the input
// epoll instance: nothing that arrives wakes a waiter, neither data nor
// the end of the stream nor an error. Turning it on wakes a waiter at once
// if any of them is already there.
func (s *Conn) Watch(on bool) (changed bool, err error) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watching.Load() == on {
		return false, nil
	}
	if !s.incref() {
		return false, net.ErrClosed
	}
	defer s.decref()
	s.wev = unix.EpollEvent{Events: inEvents, Fd: int32(s.fd)}
	s.wop = unix.EPOLL_CTL_DEL
	if on {
		s.wop = unix.EPOLL_CTL_ADD
	}
	s.werr2 = nil
	cerr := s.rxc.Control(s.watchFn)
	if err := errors.Join(cerr, s.werr2); err != nil {
		return false, s.mapErr(err)
	}
	s.watching.Store(on)
	return true, nil
}

// Watching reports whether input notification is on, without waiting for
// a Watch in progress.
func (s *Conn) Watching() bool { return s.watching.Load() }

// watchCB is Watch's change to the input epoll instance (watchMu held):
// the socket is added (which reports input already there) or removed.
func (s *Conn) watchCB(ep uintptr) {
	s.werr2 = unix.EpollCtl(int(ep), s.wop, s.fd, &s.wev)
}

// Arm asks epoll instance ep (another than the Conn's own) for one
// notification when input is there, or also room for output (out): the
// socket is added to ep (add) or re-armed in it, with EPOLLONESHOT, so
// that after notifying once it stays silent until armed again. Used by a
// goroutine that waits for several sockets at once.
func (s *Conn) Arm(ep int, add, out bool) error {
	if !s.incref() {
		return net.ErrClosed
	}
	defer s.decref()
	op := unix.EPOLL_CTL_MOD
	if add {
		op = unix.EPOLL_CTL_ADD
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: int32(s.fd)}
	if out {
		ev.Events |= unix.EPOLLOUT
	}
	return unix.EpollCtl(ep, op, s.fd, &ev)
}

// Disarm takes the socket out of epoll instance ep, into which Arm added
// it. A registration, even one that has fired and stays silent, costs
// every segment that arrives a callback, so a waiter disarms once it has
// done waiting.
func (s *Conn) Disarm(ep int) error {
	if !s.incref() {
		return net.ErrClosed
	}
	defer s.decref()
	return unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, s.fd, nil)
}

// mapErr turns an error of the epoll files into the one a net.Conn user
// expects: net.ErrClosed once Close was called.
func (s *Conn) mapErr(err error) error {
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	if s.refs.Load()&closedBit != 0 {
		return net.ErrClosed
	}
	return err
}

func (s *Conn) readCB(uintptr) bool {
	n, e := RecvNB(uintptr(s.fd), s.rbuf)
	switch e {
	case unix.EAGAIN, unix.EINTR:
		return false
	case 0:
		s.rn = n
	default:
		s.rerr = e
	}
	return true
}

// Read reads into b, waiting (until the read deadline) for input if there
// is none; io.EOF at the end of the stream.
func (s *Conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if !s.incref() {
		return 0, net.ErrClosed
	}
	defer s.decref()
	s.rbuf, s.rn, s.rerr = b, 0, nil
	err := s.rxc.Read(s.rcb)
	n, rerr := s.rn, s.rerr
	s.rbuf, s.rerr = nil, nil
	switch {
	case err != nil:
		return 0, s.mapErr(err)
	case rerr != nil:
		return 0, rerr
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// waitRoom is what a writer's callback, given the tx instance ep, returns
// after its write: done (true) takes the socket out of the instance if a
// wait had put it there; not done (false: no room) puts it in, so that
// the runtime's wait on the instance ends when room appears (adding it
// reports room already there, so none is missed). An error of the
// instance ends the write with it.
func (s *Conn) waitRoom(ep uintptr, done bool) bool {
	switch {
	case done && s.txIn:
		s.txIn = false
		_ = unix.EpollCtl(int(ep), unix.EPOLL_CTL_DEL, s.fd, nil)
	case !done && !s.txIn:
		ev := unix.EpollEvent{Events: outEvents, Fd: int32(s.fd)}
		if err := unix.EpollCtl(int(ep), unix.EPOLL_CTL_ADD, s.fd, &ev); err != nil && err != unix.EEXIST {
			s.werr = err
			return true
		}
		s.txIn = true
	}
	return done
}

func (s *Conn) writevCB(ep uintptr) bool { return s.waitRoom(ep, s.writev()) }

// writev writes s.wbufs until it is done (true) or the socket has no room.
func (s *Conn) writev() bool {
	for len(s.wbufs) > 0 {
		n, e := WritevNB(uintptr(s.fd), s.wbufs, &s.wiov, 0)
		switch e {
		case 0:
		case unix.EAGAIN, unix.EINTR:
			return false
		default:
			s.werr = e
			return true
		}
		if n == 0 && len(s.wiov) == 0 {
			s.wbufs = nil // nothing but empty slices
			break
		}
		s.wn += n
		s.wbufs = Advance(s.wbufs, n)
	}
	return true
}

// Writev writes every byte of bufs, in order, waiting (until the write
// deadline) for room in the socket as needed. It consumes bufs: the
// slices are resliced as they are written.
func (s *Conn) Writev(bufs [][]byte) (int, error) {
	if !s.incref() {
		return 0, net.ErrClosed
	}
	defer s.decref()
	s.wbufs, s.wn, s.werr = bufs, 0, nil
	err := s.txc.Read(s.wcb)
	n, werr := s.wn, s.werr
	s.wbufs, s.werr = nil, nil
	if err != nil {
		return n, s.mapErr(err)
	}
	return n, werr
}

// Write writes every byte of b (see Writev).
func (s *Conn) Write(b []byte) (int, error) {
	var one [1][]byte
	one[0] = b
	return s.Writev(one[:])
}

// Hold records a use of the descriptor that lasts until Release, so that
// it stays open after Close until then; false once the Conn is closed. It
// lets a caller that reads in a loop pay for the reference once (see
// ReadHeld) rather than on every call.
func (s *Conn) Hold() bool { return s.incref() }

// Release ends the use that Hold began; the last user after Close closes
// the descriptor.
func (s *Conn) Release() { s.decref() }

// ReadHeld is one read into b that never waits (syscall.EAGAIN when the
// socket holds nothing), for a caller that holds a use from Hold across
// the call: it leaves the reference count alone, which a consumer
// spinning on an empty socket would otherwise pay for on every turn. It
// uses none of the reader's scratch state. After Close it still reads the
// open descriptor (its data, or the end of the stream): the caller decides
// when to stop.
func (s *Conn) ReadHeld(b []byte) (int, error) {
	n, e := RecvNB(uintptr(s.fd), b)
	if e != 0 {
		return 0, e
	}
	return n, nil
}

// Pending reports how many bytes the socket holds unread (0 after Close
// or on an error: the caller only asks whether input waits).
func (s *Conn) Pending() int {
	if !s.incref() {
		return 0
	}
	n, err := unix.IoctlGetInt(s.fd, unix.SIOCINQ)
	s.decref()
	if err != nil {
		return 0
	}
	return n
}

// WritevNB is one vectored write of bufs that never waits (see the
// function WritevNB for bufs, iov and limit): syscall.EAGAIN when the
// socket has no room, net.ErrClosed after Close. It uses none of the
// writer's scratch state.
func (s *Conn) WritevNB(bufs [][]byte, iov *[]syscall.Iovec, limit int) (int, error) {
	if !s.incref() {
		return 0, net.ErrClosed
	}
	n, e := WritevNB(uintptr(s.fd), bufs, iov, limit)
	s.decref()
	if e != 0 {
		return 0, e
	}
	return n, nil
}

// SyscallConn gives raw access to the socket. RawConn.Read's callback
// runs until it returns true, with waits for input (when watched) between
// calls; RawConn.Write's with waits for room; Control's runs once. The
// descriptor stays valid for the duration of each callback.
func (s *Conn) SyscallConn() (syscall.RawConn, error) { return rawConn{s}, nil }

type rawConn struct{ s *Conn }

func (r rawConn) Control(f func(fd uintptr)) error {
	if !r.s.incref() {
		return net.ErrClosed
	}
	defer r.s.decref()
	f(uintptr(r.s.fd))
	return nil
}

func (r rawConn) Read(f func(fd uintptr) bool) error {
	s := r.s
	if !s.incref() {
		return net.ErrClosed
	}
	defer s.decref()
	s.rf = f
	err := s.rxc.Read(s.rfcb)
	s.rf = nil
	return s.mapErr(err)
}

func (r rawConn) Write(f func(fd uintptr) bool) error {
	s := r.s
	if !s.incref() {
		return net.ErrClosed
	}
	defer s.decref()
	s.wf, s.werr = f, nil
	err := s.txc.Read(s.wfcb)
	s.wf = nil
	if err == nil {
		err, s.werr = s.werr, nil
	}
	return s.mapErr(err)
}

// The callbacks RawConn.Read and Write hand the epoll files: they call the
// caller's with the socket (no closure per call: no allocation); Write's
// puts the socket in the output instance while it waits (waitRoom).
func (s *Conn) rfCall(uintptr) bool    { return s.rf(uintptr(s.fd)) }
func (s *Conn) wfCall(ep uintptr) bool { return s.waitRoom(ep, s.wf(uintptr(s.fd))) }

// CloseWrite shuts down the sending side.
func (s *Conn) CloseWrite() error {
	if !s.incref() {
		return net.ErrClosed
	}
	defer s.decref()
	return unix.Shutdown(s.fd, unix.SHUT_WR)
}

// Close closes the socket and wakes every waiter; the descriptor itself
// is closed once no call uses it any more.
func (s *Conn) Close() error {
	for {
		v := s.refs.Load()
		if v&closedBit != 0 {
			return net.ErrClosed
		}
		if s.refs.CompareAndSwap(v, v|closedBit) {
			if v == 0 {
				// Nobody uses the descriptor (and nobody can any
				// more); otherwise the last user closes it.
				unix.Close(s.fd)
			}
			break
		}
	}
	// Closing the epoll files wakes their waiters.
	s.rx.Close()
	s.tx.Close()
	return nil
}

func (s *Conn) LocalAddr() net.Addr  { return s.laddr }
func (s *Conn) RemoteAddr() net.Addr { return s.raddr }

// SetDeadline sets the read and write deadlines.
func (s *Conn) SetDeadline(t time.Time) error {
	return errors.Join(s.SetReadDeadline(t), s.SetWriteDeadline(t))
}

// SetReadDeadline bounds waits for input (Read, RawConn.Read).
func (s *Conn) SetReadDeadline(t time.Time) error { return s.mapErr(s.rx.SetReadDeadline(t)) }

// SetWriteDeadline bounds waits for room (Write, Writev, RawConn.Write).
func (s *Conn) SetWriteDeadline(t time.Time) error { return s.mapErr(s.tx.SetReadDeadline(t)) }
