//go:build verbs && cgo

package verbs

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/dispatch"
)

// wcBatch is how many work completions one cgo call polls at most.
const wcBatch = 32

// pollCheck is when the watcher first looks again at a CQ it left unarmed
// to a consumer at work on its EVD (markActive): a consumer that polls or
// posts drains the CQ itself, and arming the CQ would only cost a
// notification (a wake-up, a read and a re-arm) per completion. Each look
// doubles the wait for the next, up to pollMax, and the first look that
// finds a whole pollMax without work arms the CQ again. A look is a timer
// that wakes a runtime thread and starts a goroutine, which on a small
// machine preempts the very consumer at work (and its peer), so steady
// work costs a few looks a second rather than a thousand.
const (
	pollCheck = time.Millisecond
	pollMax   = 16 * time.Millisecond
)

// cq is the completion queue of an EVD that receives DTO or RMR bind
// completions, with its completion channel. A goroutine parked in Go's
// network poller on the channel's (non-blocking) descriptor drains the CQ
// into the EVD's queue when the device signals a completion; Dequeue
// drains it too, so that a consumer that only polls needs no wake-up. A
// Wait that blocks reads the channel itself instead, and the watcher
// waits meanwhile until the Waits give it back (wait.go).
//
// The CQ is armed (a notification asked for) except while a consumer is
// at work on the EVD: a Dequeue that finds the EVD empty, or a request
// posted on an EP that reports to it, marks the CQ active, and the
// watcher, woken by a notification, then leaves it unarmed and a timer
// looks again after pollCheck, then less and less often while the
// consumer works (pollMax); once a look finds a whole pollMax without
// either, or as soon as a Wait blocks, the CQ is armed again. A consumer
// that posts reaps its completions by Dequeue or Wait, which drain the CQ
// themselves; a watcher that drained after every completion would only
// wait for ia.mu, which the next post holds through its cgo call. An EVD
// that feeds a CNO, or has a Wait blocked, stays armed. Events godat
// posts directly to an EVD whose CQ is unarmed (connection events,
// flushes) drain the CQ first, so that they keep their place after the
// completions before them.
type cq struct {
	ch   *C.struct_ibv_comp_channel
	cq   *C.struct_ibv_cq
	wc   *C.struct_ibv_wc // wcBatch entries in C memory
	wcs  []C.struct_ibv_wc
	file *os.File // a duplicate of the channel's descriptor, for the poller
	done chan struct{}

	pollMu   sync.Mutex    // one drain at a time, so events keep the CQ's order
	armMu    sync.Mutex    // orders arms; taken last (after pollMu or ia.mu)
	armed    atomic.Bool   // a notification is asked for; written under armMu
	armedSol bool          // ...for solicited (or failed) completions only; under armMu
	active   atomic.Bool   // a consumer was at work since the last look (markActive)
	timer    *time.Timer   // the look while the CQ is unarmed
	pollIn   atomic.Int64  // the wait for the next look, while a consumer works (ns)
	looks    atomic.Uint64 // looks that left the CQ unarmed (tests)

	// The QPs that use the CQ, under ia.mu (useCQs): receive queues of
	// EPs that wait for solicited messages only (solRecv), other receive
	// queues (plainRecv), send queues (sends). solOnly says that there
	// are some and all are of the first kind, for the arm and for
	// completions, which read it without ia.mu.
	solRecv, plainRecv, sends int
	solOnly                   atomic.Bool
	// posted says that work may complete on the CQ: a receive was posted
	// to a QP that uses it, or it serves a send queue or an EP on an SRQ.
	// Until then the CQ is not armed (see arm).
	posted atomic.Bool

	// Who reads the channel: the watcher, or the EVD's driven waits
	// (wait.go). All under chMu, which is taken last of all locks (the
	// queue kicks with its own held).
	rc    syscall.RawConn
	chMu  sync.Mutex
	owner int
	// waitersOwn is owner == ownWaiters, for settle.
	waitersOwn atomic.Bool
	evicting   bool             // a waiter asked the watcher for the channel
	parked     bool             // the driven waiter blocks (or is about to) on the channel
	past       bool             // file's read deadline is in the past (the watcher's kick)
	waited     bool             // a driven wait ended since lookBack last looked
	backSet    bool             // back is set
	closing    bool             // destroy has begun
	back       *time.Timer      // lookBack
	ctxKick    dispatch.CtxKick // the end of the waiter's context kicks
	handed     chan struct{}    // the watcher has handed the channel over (capacity 1)
	resume     chan struct{}    // the channel is the watcher's again (capacity 1)
	stop       chan struct{}    // closed by destroy
	// kickFD is an eventfd that wakes the driven waiter blocked in
	// poll(2) (kick); closed under chMu once closing is set: by destroy,
	// or by the waiter on its way out of blockCB if it was inside
	// (blocking); -1 once closed.
	kickFD int
	inside bool // the driven waiter is in blockCB
	// The driven waiter's own (one at a time): its block and what it
	// found.
	blockFn func(uintptr)
	pfds    [2]unix.PollFd
	got     bool
	failed  C.int
	// dead: the channel failed (reported); waits no longer read it.
	dead atomic.Bool
	// Notifications taken by the watcher and by driven waits (tests).
	byWatcher, byWaiter atomic.Uint64
}

// count adds d to the user count *n and updates solOnly. ia.mu is held.
func (c *cq) count(n *int, d int) {
	*n += d
	c.solOnly.Store(c.solRecv > 0 && c.plainRecv == 0 && c.sends == 0)
	if c.sends > 0 {
		c.posted.Store(true)
	}
}

// armLocked arms the CQ as its users need (see arm), if it must be; armMu
// is held. 0 or the errno of the request.
func (c *cq) armLocked() C.int {
	sol := c.solOnly.Load()
	if !c.posted.Load() || c.armed.Load() && (sol || !c.armedSol) {
		return 0
	}
	s := C.int(0)
	if sol {
		s = 1
	}
	if rc := C.gd_cq_arm(c.cq, s); rc != 0 {
		return rc
	}
	c.armed.Store(true)
	c.armedSol = sol
	return 0
}

// firstPost arms the CQ before the first receive posted to a QP that
// uses it goes to the device, once its users are known (so a completion
// of that receive notifies). ia.mu is held.
func (c *cq) firstPost() C.int {
	c.posted.Store(true)
	c.armMu.Lock()
	defer c.armMu.Unlock()
	return c.armLocked()
}

// newCQ creates the CQ of e with room for depth completions and starts
// its watcher.
func newCQ(e *evd, depth int) (*cq, error) {
	c := &cq{done: make(chan struct{}), handed: make(chan struct{}, 1), resume: make(chan struct{}, 1), stop: make(chan struct{})}
	if rc := C.gd_cq_create(e.ia.dev.ctx, C.int(depth), &c.ch, &c.cq); rc != 0 {
		return nil, api.Errorf(api.InsufficientResources, api.SubResourceTEVD, "ibv_create_cq: "+errnoText(syscallErrno(rc)))
	}
	file, rc, err := pollable(c.ch.fd, "verbs-comp-channel")
	if err != nil {
		C.gd_cq_destroy(c.ch, c.cq)
		return nil, api.Errorf(api.InsufficientResources, api.SubResourceTEVD, "completion channel: "+err.Error())
	}
	kfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		file.Close()
		C.gd_cq_destroy(c.ch, c.cq)
		return nil, api.Errorf(api.InsufficientResources, api.SubResourceTEVD, "eventfd: "+err.Error())
	}
	c.file, c.rc, c.kickFD = file, rc, kfd
	c.blockFn = c.blockCB
	c.ctxKick.Init(c.kick)
	c.wc = (*C.struct_ibv_wc)(C.calloc(wcBatch, C.size_t(unsafe.Sizeof(C.struct_ibv_wc{}))))
	c.wcs = unsafe.Slice(c.wc, wcBatch)
	c.timer = time.AfterFunc(time.Hour, e.settle)
	c.timer.Stop()
	c.back = time.AfterFunc(time.Hour, func() { c.lookBack(e) })
	c.back.Stop()
	if e.Q != nil {
		e.Q.SetKick(c.kick)
	}
	go c.watch(e, rc)
	return c, nil
}

// watch waits in the network poller for completion notifications until
// the descriptor is closed. After each it drains the CQ and arms it again
// (settle), or leaves it unarmed while a consumer polls. While the EVD's
// driven waits have the channel (yield), it waits for it back.
func (c *cq) watch(e *evd, rc syscall.RawConn) {
	defer close(c.done)
	// One callback for the watcher's life: made in the loop, it and what
	// it captures would be allocated at every notification.
	var failed C.int
	readEvent := func(uintptr) bool {
		r := C.gd_cq_event(c.ch)
		if r < 0 {
			failed = -r
		}
		return r != 0
	}
	for {
		failed = 0
		err := rc.Read(readEvent)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return // closed by destroy
			}
			if !c.yield(e) {
				return
			}
			continue
		}
		c.byWatcher.Add(1)
		if failed != 0 {
			e.ia.async.PostAsync(api.AsyncProviderInternalErrorEvent, e, api.ReasonEVDOther)
			return
		}
		c.armMu.Lock()
		c.armed.Store(false) // a notification disarms the CQ
		sol := c.armedSol
		c.armMu.Unlock()
		e.settle()
		if sol || c.solOnly.Load() {
			// The receives of a CQ armed for solicited completions
			// are delivered without notifying (ia.complete): the
			// notification is this one, raised once they are queued.
			// (A notification of a CQ armed for every completion whose
			// users have since become all solicited-wait ones may be
			// for an unsolicited message: it is raised all the same,
			// since nothing tells which.)
			e.Q.Notify()
		}
		if !c.yield(e) {
			return
		}
	}
}

// settle drains the CQ and arms it again, unless a consumer has been at
// work since the last look (markActive), or was at work until less than
// pollMax before it: then it leaves the CQ unarmed, to that consumer, and
// looks again later (pollCheck, then twice as late each time, up to
// pollMax). The look touches neither the CQ nor a lock while the consumer
// works: its goroutine may run on another thread beside the consumer, and
// a drain here would contend with the consumer for pollMu, and for ia.mu,
// which the consumer's post holds through its cgo call. Completions the
// consumer leaves behind when it stops are delivered by the arm of the
// first look that finds a whole pollMax without work, at most two pollMax
// periods (32 ms) late (a Wait, a Dequeue or a CNO attached meanwhile
// takes them at once).
func (e *evd) settle() {
	c := e.cq
	if c.waitersOwn.Load() {
		return // (the watcher settles when it has the channel back: yield)
	}
	if !e.cnoFed.Load() && e.waiting.Load() == 0 {
		d := max(time.Duration(c.pollIn.Load()), pollCheck)
		// A spell of work ends only after a look a whole pollMax after
		// the last finds none: a consumer that posts every few
		// milliseconds is at work, though a look between two posts
		// finds nothing new.
		if c.active.Swap(false) || (d > pollCheck && d < pollMax) {
			c.pollIn.Store(int64(min(2*d, pollMax)))
			c.looks.Add(1)
			c.timer.Reset(d)
			return
		}
	}
	c.pollIn.Store(int64(pollCheck))
	e.arm()
}

// markActive records that a consumer is at work on the CQ's EVD: it
// found the EVD empty polling, or posted a request whose completion comes
// here (settle). The store is a locked exchange, so it is made once a
// look, not once a call.
func (c *cq) markActive() {
	if !c.active.Load() {
		c.active.Store(true)
	}
}

// arm asks for a notification of the next completion, if none is asked
// for, and then drains the CQ (always: a completion that came before the
// arming raises none).
//
// A CQ that only receive queues of solicited-wait EPs use is armed for
// solicited (and failed) completions alone, so that an unsolicited message
// wakes nothing (dat_ep_post_recv(3DAT)); one armed so that has since got
// other users is armed again for every completion (a request for the next
// completion supersedes a solicited one; the other way round is not
// possible until the notification comes). So that the kind is chosen
// once the users are known, a CQ is not armed before work may complete
// on it (posted): an EP created and freed to learn the defaults, say,
// does not fix it.
func (e *evd) arm() {
	c := e.cq
	c.pollMu.Lock()
	if c.wc == nil {
		c.pollMu.Unlock()
		return
	}
	c.armMu.Lock()
	rc := c.armLocked()
	c.armMu.Unlock()
	c.pollMu.Unlock()
	if rc != 0 {
		e.ia.async.PostAsync(api.AsyncProviderInternalErrorEvent, e, api.ReasonEVDOther)
		return
	}
	e.drain(false)
}

// destroy stops the watcher and releases the CQ and its channel. The
// QPs that used the CQ are destroyed already.
func (c *cq) destroy() {
	c.timer.Stop()
	c.chMu.Lock()
	c.closing = true
	close(c.stop)
	c.ring() // a driven waiter blocked in poll(2) returns (Close waits for it)
	c.back.Stop()
	c.ctxKick.Stop()
	c.chMu.Unlock()
	c.file.Close() // (after the waiter's block, which runs under its Control)
	c.chMu.Lock()
	if !c.inside {
		c.closeKick()
	}
	c.chMu.Unlock()
	<-c.done
	c.pollMu.Lock()
	C.gd_cq_destroy(c.ch, c.cq)
	C.free(unsafe.Pointer(c.wc))
	c.wc, c.wcs = nil, nil
	c.pollMu.Unlock()
}

// drain moves every completion in the CQ into the EVD's queue, a batch
// per cgo call. It allocates nothing. With try, it returns at once if
// another drain runs (that one delivers what is there): a polling
// consumer never waits for a drainer the scheduler has preempted.
func (e *evd) drain(try bool) {
	c := e.cq
	if c == nil {
		return
	}
	if try {
		if !c.pollMu.TryLock() {
			return
		}
	} else {
		c.pollMu.Lock()
	}
	defer c.pollMu.Unlock()
	e.pollBatches(false)
}

// pollBatches moves the CQ's completions into the EVD's queue, a batch
// per cgo call, for a caller that holds pollMu and, if locked is set,
// ia.mu (else ia.mu is taken for each batch).
func (e *evd) pollBatches(locked bool) {
	c := e.cq
	if c.wc == nil {
		return
	}
	for {
		n := int(pollCQ(c.cq, wcBatch, c.wc))
		if n <= 0 {
			return
		}
		if !locked {
			e.ia.mu.Lock()
		}
		for k := range n {
			e.ia.complete(&c.wcs[k])
		}
		if !locked {
			e.ia.mu.Unlock()
		}
		if n < wcBatch {
			return
		}
	}
}

// catchUp drains the CQ before an event is posted to its EVD directly,
// so that the event comes after the completions before it, if nobody is
// about to: the CQ is unarmed, or the EVD's waits have the channel (and
// no wait may be reading it). ia.mu is held. A drain already running
// (the one that completes, or a concurrent one) is left to deliver its
// batch.
func (e *evd) catchUp() {
	c := e.cq
	if c == nil || c.armed.Load() && !c.waitersOwn.Load() || !c.pollMu.TryLock() {
		return
	}
	defer c.pollMu.Unlock()
	e.pollBatches(true)
}
