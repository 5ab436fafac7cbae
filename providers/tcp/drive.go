package tcp

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/dispatch"
)

// maxDriven is the most connections an EVD may be fed by for its waiter to
// drive them itself (see driveWait); an EVD fed by more is waited on the
// usual way, with the reader goroutines doing the reading.
const maxDriven = 8

// driver lets the goroutine blocked in EVD.Wait drive the connections that
// feed the EVD, as a polling consumer does, so that a message arriving
// wakes that goroutine and nothing else: it reads and processes the frame
// and finds its completion in the queue, instead of a reader goroutine
// waking up, completing, and waking the consumer in turn (two wake-ups per
// message, and a hand-off between threads).
//
// The waiter blocks in epoll_wait(2), in its own thread, on an epoll
// instance of the EVD's own, which holds the feeding sockets (armed
// one-shot while the waiter is blocked) and an eventfd that kicks it: the
// queue kicks when something else posts an event the waiter wants (a
// reader goroutine, a connection event, PostSE), when the EVD becomes
// unwaitable or is freed, and when the waiter's context ends. Blocking in
// the thread, not in the runtime's poller, means that a message wakes
// that thread and no other: a goroutine parked in the poller is woken by
// whichever thread polls the network, and one that is locked to its
// thread (a C program's, calling through godat's C ABI) is then handed
// over to its own thread, a second wake-up.
type driver struct {
	mu     sync.Mutex // orders kicks against close, which closes kickFD
	ep     *os.File   // the epoll instance (blocking: outside the runtime's poller)
	rc     syscall.RawConn
	epfd   int
	kickFD int  // eventfd in ep; -1 once closed
	inside bool // the waiter is in blockCB (under mu): it closes kickFD after close

	parked atomic.Bool // the waiter is (about to be) blocked: kick it
	dead   atomic.Bool // closed (set under mu): a blocked waiter returns

	// The waiter's own state (one waiter at a time: the queue refuses a
	// second).
	reg     []*conn // connections whose sockets were added to ep
	arm     []*conn // connections to arm before blocking
	armOut  []bool  // arm[i] waits for room to write too
	busy    []*conn // connections another goroutine was reading: not armed
	drop    []*conn // connections to take out of ep (dropAll)
	dropFn  func(uintptr)
	blockFn func(uintptr)
	blocked error // blockCB's result
	evs     [maxDriven + 1]unix.EpollEvent
	ctxKick dispatch.CtxKick // the end of the waiter's context kicks
}

func newDriver() (*driver, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	kfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(ep)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(kfd)}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, kfd, &ev); err != nil {
		unix.Close(ep)
		unix.Close(kfd)
		return nil, err
	}
	d := &driver{ep: os.NewFile(uintptr(ep), "evd-epoll"), epfd: ep, kickFD: kfd}
	if d.rc, err = d.ep.SyscallConn(); err != nil {
		d.ep.Close()
		unix.Close(kfd)
		return nil, err
	}
	d.blockFn, d.dropFn = d.blockCB, d.dropCB
	d.ctxKick.Init(d.kick)
	return d, nil
}

// kick wakes the waiter if it is blocked (or about to block).
func (d *driver) kick() {
	if !d.parked.Load() {
		return
	}
	d.mu.Lock()
	if !d.dead.Load() && d.parked.CompareAndSwap(true, false) {
		d.ring()
	}
	d.mu.Unlock()
}

// ring writes the kick eventfd, which wakes a blocked waiter. d.mu is
// held and the driver is not closed.
func (d *driver) ring() {
	var one = [8]byte{1}
	_, _ = unix.Write(d.kickFD, one[:])
}

// close releases the driver; a waiter still blocked on it is woken. A
// waiter inside blockCB closes the eventfd itself on its way out: closed
// now, it would leave the epoll instance with its kick still unseen, and
// a waiter about to call epoll_wait(2) would block for good.
func (d *driver) close() {
	d.mu.Lock()
	if d.dead.Load() {
		d.mu.Unlock()
		return
	}
	d.ring() // wakes a blocked waiter
	d.dead.Store(true)
	if !d.inside {
		d.closeKick()
	}
	d.mu.Unlock()
	d.ctxKick.Stop()
	d.ep.Close()
}

// armCB adds or re-arms the sockets of d.arm in the epoll instance.
func (d *driver) armCB(uintptr) {
	for i, c := range d.arm {
		out := d.armOut[i]
		add := true
		for _, r := range d.reg {
			if r == c {
				add = false
				break
			}
		}
		err := c.sk.Arm(d.epfd, add, out)
		switch {
		case err == unix.ENOENT && !add:
			err = c.sk.Arm(d.epfd, true, out)
		case err == unix.EEXIST && add: // (a removal that failed: re-arm)
			err = c.sk.Arm(d.epfd, false, out)
		}
		if err == nil && add {
			d.reg = append(d.reg, c)
		}
	}
}

// closeKick closes the kick eventfd. d.mu is held and the driver is dead.
func (d *driver) closeKick() {
	if d.kickFD >= 0 {
		unix.Close(d.kickFD)
		d.kickFD = -1
	}
}

// blockCB arms the sockets of d.arm and blocks until one fires or a kick
// comes; a kick that came since the waiter set parked means no block at
// all (its notification may have come before the arming). Arming a socket
// that already has input queues its event, so none is forgotten. The
// block has no timeout: an idle waiter's thread stays asleep, rather than
// waking now and then and, on the way back to sleep, holding its P in a
// system call until the runtime takes it back, which in a process with
// one P stalls every other goroutine meanwhile (docs/performance.md).
func (d *driver) blockCB(ep uintptr) {
	d.mu.Lock()
	if d.dead.Load() {
		d.mu.Unlock()
		return
	}
	d.inside = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.inside = false
		if d.dead.Load() {
			d.closeKick()
		}
		d.mu.Unlock()
	}()
	d.armCB(ep)
	for d.parked.Load() && !d.dead.Load() {
		n, err := unix.EpollWait(int(ep), d.evs[:], -1)
		switch {
		case err == unix.EINTR || err == nil && n == 0:
			continue
		case err != nil:
			d.blocked = err
		}
		return
	}
}

// park arms the sockets of d.arm and blocks in this thread until one has
// input (or room to write, if asked) or a kick comes.
func (d *driver) park() error {
	d.blocked = nil
	if err := d.rc.Control(d.blockFn); err != nil {
		return err
	}
	if d.dead.Load() {
		return os.ErrClosed
	}
	return d.blocked
}

// prune takes out of the epoll instance the connections that no longer
// feed the EVD.
func (d *driver) prune(feeds []*conn) {
	k := 0
	for _, r := range d.reg {
		if slices.Contains(feeds, r) {
			d.reg[k] = r
			k++
		} else {
			d.drop = append(d.drop, r)
		}
	}
	clear(d.reg[k:])
	d.reg = d.reg[:k]
	d.dropAll()
}

// disarm takes every socket out of the epoll instance when a wait ends:
// a registration, even a silent one, costs each segment the socket
// receives a callback in the kernel, which a consumer that polls after
// waiting would pay on every message. The next wait that blocks adds
// them again: one system call more per blocking wait than keeping them,
// against a wake-up that costs tens of microseconds.
func (d *driver) disarm() {
	d.drop = append(d.drop, d.reg...)
	clear(d.reg)
	d.reg = d.reg[:0]
	d.dropAll()
}

// dropAll takes the sockets of d.drop out of the epoll instance, through
// its RawConn so that the instance cannot be closed (and its number
// reused) meanwhile; a closed instance holds nothing any more.
func (d *driver) dropAll() {
	if len(d.drop) > 0 {
		_ = d.rc.Control(d.dropFn)
		clear(d.drop)
		d.drop = d.drop[:0]
	}
}

func (d *driver) dropCB(ep uintptr) {
	for _, c := range d.drop {
		_ = c.sk.Disarm(int(ep)) // (a closed socket has left already)
	}
}

// driverFor returns the EVD's driver if its waiter can drive the
// connections that feed it: every one is pollable and out of the
// runtime's poller, and there are at most maxDriven. nil: wait the usual
// way.
func (e *evd) driverFor() *driver {
	l := e.feeds.Load()
	if l == nil || len(*l) > maxDriven {
		return nil
	}
	for _, c := range *l {
		if c.sk == nil {
			return nil
		}
	}
	e.drvMu.Lock()
	defer e.drvMu.Unlock()
	if e.drv.Load() == nil && !e.drvFailed && !e.drvClosed {
		d, err := newDriver()
		if err != nil {
			e.drvFailed = true // out of descriptors: wait the usual way
			return nil
		}
		e.drv.Store(d)
		e.Q.SetKick(d.kick)
	}
	return e.drv.Load()
}

// closeDriver releases the EVD's driver (Free, IA close).
func (e *evd) closeDriver() {
	e.drvMu.Lock()
	d := e.drv.Load()
	e.drvClosed = true
	e.drvMu.Unlock()
	if d != nil {
		d.close()
	}
}

// kickWaiters wakes a driven Wait blocked on an EVD that c feeds, so that
// it looks at c again: it armed c's socket before c had a rest of a write
// for it to finish (txPend), and would not wake for room to write.
// ia.mu is held.
func (c *conn) kickWaiters() {
	if c.ep == nil {
		return
	}
	for _, e := range [...]*evd{c.ep.RequestEVD, c.ep.RecvEVD} {
		if e != nil {
			if d := e.drv.Load(); d != nil {
				d.kick()
			}
		}
	}
}

// driveWait is Wait with the waiter driving the feeding connections (see
// driver): it arms their sockets and blocks until one has input or a kick
// comes, then polls them, until what it waits for is queued. Arming
// checks for input already there, so no read precedes the first block.
func (e *evd) driveWait(d *driver, ctx context.Context, threshold int, ev *api.Event) (int, error) {
	done, n, err := e.Q.BeginWait(threshold, ev)
	if done {
		return n, err
	}
	d.ctxKick.Watch(ctx)
	defer d.disarm()
	for {
		d.arm, d.armOut = d.arm[:0], d.armOut[:0]
		if l := e.feeds.Load(); l != nil {
			for _, c := range *l {
				// The consumer is blocked: an ACK that waits for its
				// answer (of a message it is yet to see, or of an RDMA
				// write this wait placed) goes now.
				c.lateAck(true)
				if slices.Contains(d.busy, c) {
					continue // its reader posts, and the post kicks
				}
				if !c.isQuiet() {
					c.enterQuiet() // the waiter watches the socket instead
				}
				c.settleOwed() // before the queue is checked
				d.arm = append(d.arm, c)
				d.armOut = append(d.armOut, c.txPend.Load())
			}
			d.prune(*l)
		}
		d.parked.Store(true)
		if done, n, err := e.Q.Check(ev); done {
			d.parked.Store(false)
			return n, err
		}
		if ctx.Err() != nil {
			d.parked.Store(false)
			return e.Q.EndWait(), api.ContextError(ctx)
		}
		perr := d.park()
		d.parked.Store(false)
		if perr != nil {
			// The driver was closed (the EVD is being freed): the
			// queue says how the wait ends.
			if done, n, err := e.Q.Check(ev); done {
				return n, err
			}
			return e.Q.EndWait(), api.Errorf(api.Abort, api.NoSubtype, "EVD destroyed")
		}
		clear(d.busy)
		d.busy = d.busy[:0]
		if l := e.feeds.Load(); l != nil {
			for _, c := range *l {
				if c.poll() {
					c.pollTx()
				} else {
					// Another goroutine has the stream (or it is
					// ending): its reader goes on, and a completion
					// it posts kicks this waiter.
					c.handBack()
					d.busy = append(d.busy, c)
				}
			}
		}
		if done, n, err := e.Q.Check(ev); done {
			return n, err
		}
		if ctx.Err() != nil {
			return e.Q.EndWait(), api.ContextError(ctx)
		}
	}
}
