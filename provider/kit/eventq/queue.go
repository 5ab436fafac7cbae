// Package eventq is the event machinery shared by godat's providers: Queue,
// the bounded event queue behind an EVD (dat_evd_wait(3DAT),
// dat_evd_dequeue(3DAT), dat_evd_post_se(3DAT)), and CNO, the consumer
// notification object an EVD may feed (dat_cno_wait(3DAT)).
//
// # Queue
//
// A Queue is a preallocated ring of api.Event values under one mutex.
// Posting copies the event into the ring and dequeuing copies it out, so
// neither allocates. The ring's pages are touched when it is made (New,
// Resize), so that no post takes a page fault either: a large ring comes
// from the Go heap as fresh, untouched memory, and without the touch the
// first pass of the posts over it would fault page by page, or, with
// transparent huge pages, stop one post while the kernel clears 2 MiB.
// The price is that an EVD's ring is committed memory from the start: 256
// bytes an event, 1 MiB for a queue of 4096.
//
// A Dequeue that finds the queue empty, with no waiter blocked, answers
// from two atomic loads without the mutex: the common case of a consumer
// spinning on an EVD. A blocked waiter sleeps on a one-slot channel that
// the queue owns for its whole life (no channel per event, no CPU while
// blocked); a post wakes it only when the event notifies and the queue
// holds at least the waiter's threshold.
//
// Overflow: a post to a full queue does not queue the event. The event is
// discarded and counted, and the post reports it: OverflowBegan for the
// first event lost since the queue was last not full, Overflowed for the
// ones after it. The provider reports OverflowBegan as an
// ASYNC_ERROR_EVD_OVERFLOW event on the IA's async EVD, so each overflow
// episode is reported once; Dropped gives the total. The episode ends when
// a dequeue or resize makes room.
//
// # Notification
//
// Post takes a notify flag: false for completions that must not wake anyone
// (DAT_COMPLETION_UNSIGNALLED_FLAG, a receive of an EP configured for
// solicited wait whose matching send was not solicited). A notifying event
// wakes the direct waiter when the threshold is met; with no direct waiter,
// it triggers the queue's CNO if the queue is enabled (dat_evd_enable(3DAT)).
// Non-notifying events are queued all the same and count toward the
// threshold.
package eventq

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/godat/godat/api"
)

// PostResult says what happened to a posted event.
type PostResult int

// Results of Queue.Post.
const (
	// Posted: the event is queued.
	Posted PostResult = iota
	// OverflowBegan: the queue was full and the event was discarded; it is
	// the first loss since the queue last had room, so the owner must report
	// an overflow (ASYNC_ERROR_EVD_OVERFLOW).
	OverflowBegan
	// Overflowed: the queue was full and the event was discarded; the
	// overflow was already reported.
	Overflowed
	// Closed: the queue is closed and the event was discarded.
	Closed
)

var (
	errEmpty      = api.Errorf(api.QueueEmpty, api.NoSubtype, "EVD queue is empty")
	errFull       = api.Errorf(api.QueueFull, api.NoSubtype, "EVD queue is full")
	errWaiter     = api.Errorf(api.InvalidState, api.SubStateEVDWaiter, "a waiter is blocked on the EVD")
	errUnwaitable = api.Errorf(api.InvalidState, api.SubStateEVDUnwaitable, "EVD is unwaitable")
	errAborted    = api.Errorf(api.Abort, api.NoSubtype, "EVD destroyed")
)

// Queue is a bounded FIFO of events with at most one blocked waiter. It is
// safe for concurrent use.
type Queue struct {
	mu    sync.Mutex
	buf   []api.Event
	head  int
	n     int
	owner api.EVD // stored in Event.EVD of every posted event
	// queued mirrors n and idle says that no waiter is blocked, both
	// written under mu: a Dequeue that finds nothing queued and nobody
	// waiting answers without taking mu (the polling consumer's spin).
	queued atomic.Int32
	idle   atomic.Bool

	wake       chan struct{} // capacity 1: wakes the blocked waiter
	kick       func()        // wakes a driven waiter (BeginWait); set once
	driven     bool          // the waiter waits through BeginWait and Check
	waiting    bool
	threshold  int
	disabled   bool
	unwaitable bool
	closed     bool
	overflowed bool
	dropped    uint64
	cno        *CNO
}

// New returns a queue of qlen events (qlen >= 1) whose events name owner as
// their EVD. The queue starts enabled and waitable.
func New(qlen int, owner api.EVD) *Queue {
	if qlen < 1 {
		qlen = 1
	}
	q := &Queue{buf: makeRing(qlen), owner: owner, wake: make(chan struct{}, 1)}
	q.idle.Store(true)
	return q
}

// makeRing returns a ring of n events whose memory is resident: a store
// to every event faults in every page now, at EVD creation, rather than
// on the data path. (The stores are of a zero to a field that holds no
// pointer, so they need no write barrier and change nothing.)
func makeRing(n int) []api.Event {
	b := make([]api.Event, n)
	for i := range b {
		b[i].Number = 0
	}
	return b
}

// setWaiting records whether a waiter is blocked. q.mu is held.
func (q *Queue) setWaiting(on bool) {
	q.waiting = on
	q.idle.Store(!on)
}

// Cap returns the queue length (the EVD's qlen).
func (q *Queue) Cap() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.buf)
}

// Len returns the number of queued events.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// Dropped returns how many events were discarded because the queue was
// full.
func (q *Queue) Dropped() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped
}

// Post queues a copy of *ev (with EVD set to the owner) and reports what
// happened. notify says whether the event may wake a waiter or trigger the
// CNO. A full queue discards the event (see the package doc on overflow).
func (q *Queue) Post(ev *api.Event, notify bool) PostResult {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return Closed
	}
	if q.n == len(q.buf) {
		q.dropped++
		r := Overflowed
		if !q.overflowed {
			q.overflowed = true
			r = OverflowBegan
		}
		q.mu.Unlock()
		return r
	}
	q.pushUnlock(ev, notify)
	return Posted
}

// TryPost queues a copy of *ev like Post, but only if there is room: a full
// queue returns false and is not marked overflowed. It serves
// dat_evd_post_se(3DAT) and events whose producer can refuse instead (a
// connection request when the service point's backlog is full).
func (q *Queue) TryPost(ev *api.Event, notify bool) bool {
	q.mu.Lock()
	if q.closed || q.n == len(q.buf) {
		q.mu.Unlock()
		return false
	}
	q.pushUnlock(ev, notify)
	return true
}

// PostSE queues a software event (dat_evd_post_se(3DAT)): ErrQueueFull if
// the queue is full, with no overflow reported.
func (q *Queue) PostSE(ev *api.Event) error {
	if !q.TryPost(ev, true) {
		return errFull
	}
	return nil
}

// pushUnlock stores *ev, releases q.mu, which is held, and only then
// triggers the CNO if the event calls for it, so that the CNO's lock is
// never taken under the queue's. The queue has room.
func (q *Queue) pushUnlock(ev *api.Event, notify bool) {
	cno := q.push(ev, notify)
	q.mu.Unlock()
	if cno != nil {
		cno.Trigger(q.owner)
	}
}

// push stores *ev and returns the CNO to trigger, if any. q.mu is held and
// the queue has room.
func (q *Queue) push(ev *api.Event, notify bool) *CNO {
	i := q.head + q.n
	if i >= len(q.buf) {
		i -= len(q.buf)
	}
	q.buf[i] = *ev
	q.buf[i].EVD = q.owner
	q.n++
	q.queued.Store(int32(q.n))
	if !notify {
		return nil
	}
	if q.waiting {
		if q.n >= q.threshold {
			q.wakeWaiter()
		}
		return nil
	}
	if !q.disabled {
		return q.cno
	}
	return nil
}

// Notify raises a notification without queueing an event, as a notifying
// Post does after queueing its event: it wakes the blocked waiter if the
// queue holds its threshold, and otherwise triggers the CNO if the queue is
// enabled. It serves a producer that learns of an event and of whether it
// notifies at different times (the plugin host, which queues a plugin's
// events as they arrive and its notifications when they follow).
func (q *Queue) Notify() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	var cno *CNO
	if q.waiting {
		if q.n >= q.threshold {
			q.wakeWaiter() // a driven waiter is kicked, not sent to
		}
	} else if !q.disabled {
		cno = q.cno
	}
	q.mu.Unlock()
	if cno != nil {
		cno.Trigger(q.owner)
	}
}

// pop moves the front event into *ev. q.mu is held and q.n > 0.
func (q *Queue) pop(ev *api.Event) {
	*ev = q.buf[q.head]
	q.buf[q.head] = api.Event{}
	q.head++
	if q.head == len(q.buf) {
		q.head = 0
	}
	q.n--
	q.queued.Store(int32(q.n))
	q.overflowed = false
}

// IsEmpty reports whether err is the error Dequeue returns for an empty
// queue: a cheaper test than errors.Is for a polling loop.
func IsEmpty(err error) bool { return err == errEmpty }

// Dequeue removes the front event into *ev without blocking
// (dat_evd_dequeue(3DAT)): ErrQueueEmpty if there is none, ErrInvalidState
// (SubStateEVDWaiter) while a waiter is blocked on the queue.
func (q *Queue) Dequeue(ev *api.Event) error {
	if q.queued.Load() == 0 && q.idle.Load() {
		return errEmpty
	}
	q.mu.Lock()
	if q.waiting {
		q.mu.Unlock()
		return errWaiter
	}
	if q.n == 0 {
		q.mu.Unlock()
		return errEmpty
	}
	q.pop(ev)
	q.mu.Unlock()
	return nil
}

// Wait blocks until at least threshold events are queued, removes the front
// one into *ev and returns how many remain (dat_evd_wait(3DAT)). Only one
// waiter at a time: another gets ErrInvalidState (SubStateEVDWaiter). An
// unwaitable queue, or one made unwaitable during the wait, gives
// ErrInvalidState (SubStateEVDUnwaitable); a closed one ErrAbort. The end of
// ctx gives api.ContextError (TimeoutExpired for a deadline,
// InterruptedCall for a cancel) with nothing dequeued; nmore is then the
// number of queued events. A threshold outside [1, Cap] is
// ErrInvalidParameter.
func (q *Queue) Wait(ctx context.Context, threshold int, ev *api.Event) (nmore int, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.canWait(threshold); err != nil {
		return 0, err
	}
	select { // discard a wake-up left over from an earlier wait
	case <-q.wake:
	default:
	}
	for {
		if q.n >= threshold {
			q.pop(ev)
			return q.n, nil
		}
		if ctx.Err() != nil {
			return q.n, api.ContextError(ctx)
		}
		q.setWaiting(true)
		q.threshold = threshold
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-ctx.Done():
		}
		q.mu.Lock()
		q.setWaiting(false)
		switch {
		case q.closed:
			return 0, errAborted
		case q.unwaitable:
			return q.n, errUnwaitable
		}
	}
}

// canWait checks whether a wait for threshold events may begin: the
// errors Wait and BeginWait share. q.mu is held.
func (q *Queue) canWait(threshold int) error {
	switch {
	case q.closed:
		return errAborted
	case q.waiting:
		return errWaiter
	case q.unwaitable:
		return errUnwaitable
	case threshold < 1 || threshold > len(q.buf):
		return api.Errorf(api.InvalidParameter, api.SubArg3, "EVD wait threshold must be between 1 and the queue length")
	}
	return nil
}

// wakeWaiter wakes the blocked waiter. q.mu is held.
func (q *Queue) wakeWaiter() {
	if q.driven {
		q.kick()
		return
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// SetKick installs the function that wakes a waiter that waits through
// BeginWait and Check (a driven wait): the queue calls it, with its lock
// held, where it would wake a waiter blocked in Wait. It must not block
// and must not call the queue. Call it once, before any driven wait.
func (q *Queue) SetKick(kick func()) {
	q.mu.Lock()
	q.kick = kick
	q.mu.Unlock()
}

// BeginWait starts a driven wait: a wait whose caller blocks by itself
// (on whatever else it must watch too) instead of in Wait, and asks the
// queue again with Check after each wake-up. It checks what Wait checks;
// done reports that the wait is over (an event was dequeued into ev, or
// err says why not); otherwise the caller is the EVD's waiter (Dequeue
// and another wait fail as with Wait) until Check reports done or it
// calls EndWait. Events that meet the threshold, SetUnwaitable and Close
// call the kick function (SetKick) instead of waking a blocked Wait.
func (q *Queue) BeginWait(threshold int, ev *api.Event) (done bool, nmore int, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.kick == nil {
		return true, 0, api.Errorf(api.InternalError, api.NoSubtype, "eventq: driven wait without a kick function")
	}
	if err := q.canWait(threshold); err != nil {
		return true, 0, err
	}
	if q.n >= threshold {
		q.pop(ev)
		return true, q.n, nil
	}
	q.setWaiting(true)
	q.driven, q.threshold = true, threshold
	return false, 0, nil
}

// Check continues a driven wait (BeginWait): done as for BeginWait, and
// when done the wait is over.
func (q *Queue) Check(ev *api.Event) (done bool, nmore int, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		q.setWaiting(false)
		q.driven = false
		return true, 0, errAborted
	case q.unwaitable:
		q.setWaiting(false)
		q.driven = false
		return true, q.n, errUnwaitable
	case q.n >= q.threshold:
		q.setWaiting(false)
		q.driven = false
		q.pop(ev)
		return true, q.n, nil
	}
	return false, 0, nil
}

// EndWait abandons a driven wait (the caller's context ended); it returns
// the number of events queued.
func (q *Queue) EndWait() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.setWaiting(false)
	q.driven = false
	return q.n
}

// Resize changes the queue length to qlen (dat_evd_resize(3DAT)), keeping
// every queued event in order. It fails with ErrInvalidState if more than
// qlen events are queued, and ErrInvalidParameter if qlen < 1 or a blocked
// waiter's threshold exceeds qlen.
func (q *Queue) Resize(qlen int) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case qlen < 1:
		return api.Errorf(api.InvalidParameter, api.SubArg2, "EVD queue length must be positive")
	case qlen < q.n:
		return api.Errorf(api.InvalidState, api.NoSubtype, "more events are queued than the requested EVD queue length")
	case q.waiting && q.threshold > qlen:
		return api.Errorf(api.InvalidParameter, api.SubArg2, "requested EVD queue length is below the blocked waiter's threshold")
	}
	nb := makeRing(qlen)
	for i := 0; i < q.n; i++ {
		j := q.head + i
		if j >= len(q.buf) {
			j -= len(q.buf)
		}
		nb[i] = q.buf[j]
	}
	q.buf, q.head = nb, 0
	if q.n < qlen {
		q.overflowed = false
	}
	return nil
}

// SetEnabled enables or disables CNO triggering (dat_evd_enable(3DAT),
// dat_evd_disable(3DAT)); it has no effect on direct waiters.
func (q *Queue) SetEnabled(on bool) {
	q.mu.Lock()
	q.disabled = !on
	q.mu.Unlock()
}

// SetUnwaitable makes the queue unwaitable, waking a blocked waiter with
// ErrInvalidState, or waitable again (dat_evd_set_unwaitable(3DAT),
// dat_evd_clear_unwaitable(3DAT)). Dequeue and CNO triggering are not
// affected.
func (q *Queue) SetUnwaitable(on bool) {
	q.mu.Lock()
	q.unwaitable = on
	if on && q.waiting {
		q.wakeWaiter()
	}
	q.mu.Unlock()
}

// SetCNO changes the CNO notifying events trigger; nil detaches it
// (dat_evd_modify_cno(3DAT)).
func (q *Queue) SetCNO(c *CNO) {
	q.mu.Lock()
	q.cno = c
	q.mu.Unlock()
}

// State returns the queue's state bits as dat_evd_query(3DAT) reports them.
func (q *Queue) State() api.EVDState {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := api.EVDStateConfigNotify
	if q.disabled {
		s |= api.EVDStateDisabled
	} else {
		s |= api.EVDStateEnabled
	}
	if q.unwaitable {
		s |= api.EVDStateUnwaitable
	} else {
		s |= api.EVDStateWaitable
	}
	return s
}

// Waiting reports whether a waiter is blocked on the queue.
func (q *Queue) Waiting() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting
}

// Close discards the queued events, detaches the CNO, wakes a blocked
// waiter with ErrAbort and makes every later post report Closed
// (dat_evd_free(3DAT), dat_ia_close(3DAT)).
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	for i := range q.buf {
		q.buf[i] = api.Event{}
	}
	q.n, q.head, q.cno = 0, 0, nil
	q.queued.Store(0)
	if q.waiting {
		q.wakeWaiter()
	}
	q.mu.Unlock()
}
