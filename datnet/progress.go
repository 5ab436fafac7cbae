package datnet

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/godat/godat/api"
)

// Who takes a connection's events. A Read or Write that cannot go on takes
// them itself: first spinning on Dequeue (a provider such as tcp makes
// progress inside Dequeue), then blocked in EVD.Wait, so that the
// goroutine the data is for is the one the provider wakes. One goroutine
// at a time may wait on the EVD: it holds c.waitTok.
//
// How long a call spins adapts to how long its kind of call (Read, Write)
// has lately waited (spinner): after its first spinner.every polls,
// spinFactor times the recent average, at least spinTime and at most
// maxSpin, and only spinTime while that average is maxSpin or more. On
// an RDMA adapter a message is there within microseconds and the calls
// spin spinTime; on a slow transport (soft-RoCE, emulated machines)
// where a blocked wait's wake-up costs as much as a round trip, a call
// whose answers come within maxSpin spins until they do, as rsocket's
// non-blocking mode does; a connection whose peer is idle spins spinTime
// and sleeps. The factor is
// sixteen, not less, because the waits of such a transport have a long
// tail (the peer's process was descheduled): a wait that outlasts the spin
// blocks, and its wake-up then costs a millisecond or more where the spin
// would have cost a few hundred microseconds (docs/performance.md, "datnet
// on rxe").
//
// The event loop (run) makes progress when nobody calls: it returns
// credits and finishes sends and notices a disconnect for a connection
// whose program is busy elsewhere. It stands down while calls come and
// for a pause after the last one began, so that a busy connection does
// not pay a second wake-up per message. Every Read and Write counts, not
// only those that block: a writer whose Writes find credits and buffers
// takes its completions once it runs short of them, and a loop taking
// them meanwhile would cost a wake-up per message beside it. A call that
// finds the loop waiting kicks it off the EVD with a software event. The
// pause starts at standDown and doubles, up to maxStandDown, each time
// calls came during the last one: every turn of the loop wakes a thread,
// which on a small machine takes a CPU from a process that spins (its own
// calls' or the peer's), so a connection that stays busy costs a turn
// every maxStandDown, not every standDown. While a call blocks the loop
// sleeps without a timer: a connection whose reader waits for hours costs
// no wake-ups.
const (
	spinTime     = 20 * time.Microsecond
	maxSpin      = time.Millisecond
	spinFactor   = 16
	standDown    = 2 * time.Millisecond
	maxStandDown = 64 * time.Millisecond
)

// spinner learns how long a kind of blocking call waits, for the spin.
// It learns from one spin in learnEvery, and from every blocked wait: the
// average is a hint, and a spin that is not sampled reads the clock only
// if it lasts (block).
type spinner struct {
	avg   atomic.Int64  // nanoseconds: an average of the recent waits, each counted up to 2 × maxSpin
	poll  atomic.Int64  // nanoseconds: an average of what one poll has cost in the sampled spins; 0 until one is
	spins atomic.Uint32 // spins begun, for sample

	clock func() time.Duration // the clock the spin reads; nil for mono (tests count the reads)
}

// learnEvery is how many spins make one sample for the average.
const learnEvery = 4

// pollsPerClock is the fewest polls a spin makes between two reads of the
// clock, and maxPollsPerClock the most (block says why so few reads).
const (
	pollsPerClock    = 16
	maxPollsPerClock = 1 << 14
)

// sample reports whether the spin about to begin is timed for the average.
func (s *spinner) sample() bool { return s.spins.Add(1)%learnEvery == 0 }

// limit is how long the next call spins before it blocks.
func (s *spinner) limit() time.Duration {
	a := time.Duration(s.avg.Load())
	if a >= maxSpin {
		return spinTime
	}
	return min(maxSpin, max(spinTime, spinFactor*a))
}

// learn adds a wait of d to the average. (Concurrent calls may lose an
// update: the average is a hint.)
func (s *spinner) learn(d time.Duration) {
	d = min(d, 2*maxSpin)
	a := s.avg.Load()
	s.avg.Store(a + (int64(d)-a)/8)
}

// learnPoll adds a sampled spin of polls polls that lasted d to the
// average cost of a poll. A spin of fewer than pollsPerClock polls is
// left out: the two clock reads that time it would weigh on it.
func (s *spinner) learnPoll(d time.Duration, polls int) {
	if polls < pollsPerClock {
		return
	}
	p := max(int64(d)/int64(polls), 1)
	if a := s.poll.Load(); a > 0 {
		p = a + (p-a)/8
	}
	s.poll.Store(p)
}

// every is how many polls a spin of limit makes between two reads of the
// clock: as many as fill a quarter of limit at the recent cost of a poll,
// within pollsPerClock and maxPollsPerClock.
func (s *spinner) every(limit time.Duration) int {
	p := s.poll.Load()
	if p <= 0 {
		return pollsPerClock
	}
	return int(min(maxPollsPerClock, max(pollsPerClock, int64(limit)/4/p)))
}

// epoch is where mono counts from.
var epoch = time.Now()

// mono reads the monotonic clock alone: one read of the system's clock,
// where time.Now makes two.
func mono() time.Duration { return time.Since(epoch) }

// now reads the spinner's clock.
func (s *spinner) now() time.Duration {
	if s.clock != nil {
		return s.clock()
	}
	return mono()
}

// start begins the connection's event loop; the connection is established
// and the peer's hello read.
func (c *Conn) start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.runCtx, c.cancelRun = ctx, cancel
	c.runDone = make(chan struct{})
	go c.run(ctx)
}

func (c *Conn) run(ctx context.Context) {
	defer close(c.runDone)
	t := time.NewTimer(standDown)
	defer t.Stop()
	seen := c.calls.Load()
	pause := standDown
	for {
		c.loops.Add(1)
		if calls := c.calls.Load(); calls != seen {
			seen = calls
			t.Reset(pause)
			pause = min(2*pause, maxStandDown)
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
			continue
		}
		if c.active.Load() > 0 {
			// One call has taken the events since before the pause:
			// sleep until it ends, however long it blocks (an idle
			// connection costs no wake-ups). Calls are looked for
			// first, so that a busy connection, whose calls follow
			// each other, wakes the loop once a pause, not at the end
			// of each call.
			select {
			case <-c.idle:
			case <-ctx.Done():
				return
			}
			continue
		}
		pause = standDown // no call during the last pause: the program is elsewhere
		select {
		case c.waitTok <- struct{}{}:
		case <-ctx.Done():
			return
		}
		c.runWaiting.Store(true)
		if c.active.Load() > 0 {
			c.runWaiting.Store(false)
			<-c.waitTok
			continue
		}
		c.waitEvents(ctx, nil, nil)
		c.runWaiting.Store(false)
		<-c.waitTok
		if ctx.Err() != nil {
			return
		}
	}
}

// block waits, taking events, until ready (evaluated under c.mu) may
// hold, sig is signalled, the connection closes or dl passes; sp learns
// how long the events took. The caller checks again which it was.
func (c *Conn) block(ready func() bool, sig chan struct{}, dl *deadline, sp *spinner) {
	c.calls.Add(1)
	if c.active.Add(1) == 1 && c.runWaiting.Load() {
		c.kick()
	}
	defer func() {
		if c.active.Add(-1) == 0 {
			signal(c.idle)
		}
	}()
	// A spin reads the clock once it has lasted some polls (spinner.every:
	// enough for a quarter of its limit at the polls' recent cost), and
	// at its start only when it is one of the spins sampled for the
	// average (spinner): where the clock is slow to read (in the soft-RoCE
	// guest every read is a system call), each read delays an answer that
	// comes during it (docs/performance.md, "datnet on rxe").
	var start time.Duration // 0: not read yet
	if sp.sample() {
		start = sp.now()
	}
	ok, start := c.spin(ready, sp, start)
	if ok {
		return
	}
	expired := dl.wait()
	select {
	case c.waitTok <- struct{}{}:
		if c.waitEvents(c.runCtx, ready, expired) {
			sp.learn(sp.now() - start)
		}
		<-c.waitTok
	case <-sig:
	case <-c.closed:
	case <-expired:
	}
}

// spin takes events until ready holds or sp's limit has passed since
// start, and reports whether it held, and start. A zero start is taken
// after the first sp.every polls: a wait that ends within them reads no
// clock. A sampled spin (start given, read at its beginning) teaches sp
// how long the wait was and what a poll costs.
func (c *Conn) spin(ready func() bool, sp *spinner, start time.Duration) (bool, time.Duration) {
	sampled := start != 0
	limit := sp.limit()
	every := sp.every(limit)
	for i := 1; ; i++ {
		c.mu.Lock()
		if i == 1 {
			c.releaseHeld()
		}
		c.take(ready)
		ok := ready()
		c.mu.Unlock()
		if ok {
			if sampled {
				d := sp.now() - start
				sp.learn(d)
				sp.learnPoll(d, i)
			}
			return true, start
		}
		if i%every != 0 {
			continue
		}
		if start == 0 {
			start = sp.now()
			continue
		}
		if d := sp.now() - start; d > limit {
			if sampled {
				sp.learnPoll(d, i)
			}
			return false, start
		}
	}
}

// waitEvents waits for the next event and applies it and any behind it,
// and reports whether it took one. The caller holds c.waitTok. A call
// (ready given) returns early when ready already holds (another call may
// have taken the events it waits for), when expired (its deadline) has
// passed or the connection has closed; the event loop (ready nil), which
// serves Close too, when a call has begun. Each of those kicks a waiter
// (kick; take, for events another call took), and each is checked again
// once the waiter is visible to the kicker (inWait), so that neither can
// miss the other.
func (c *Conn) waitEvents(ctx context.Context, ready func() bool, expired <-chan struct{}) bool {
	c.mu.Lock()
	c.releaseHeld()
	ok := ready != nil && ready()
	c.mu.Unlock()
	if ok {
		return false
	}
	if h := testHookWait.Load(); h != nil && ready != nil {
		(*h)(c, 0)
	}
	c.inWait.Store(true)
	var stop bool
	if ready != nil {
		// Another call may have taken the events this one waits for
		// between its look above and inWait: it kicks only a waiter it
		// can see (take), so look again.
		c.mu.Lock()
		stop = ready() || isClosed(expired) || isClosed(c.closed)
		c.mu.Unlock()
	} else {
		stop = c.active.Load() > 0
	}
	if stop {
		c.inWait.Store(false)
		return false
	}
	if h := testHookWait.Load(); h != nil && ready != nil {
		(*h)(c, 1)
	}
	_, err := c.evd.Wait(ctx, 1, &c.wev)
	c.inWait.Store(false)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			c.fail(err)
		}
		return false
	}
	c.handle(&c.wev)
	c.drain()
	c.pump()
	return c.wev.Number != api.SoftwareEvent // (not a kick)
}

// testHookWait, when set, runs in a call's waitEvents before the call
// shows itself as the waiter (stage 0) and just before it waits (stage
// 1): tests change the connection there, as another goroutine might.
var testHookWait atomic.Pointer[func(c *Conn, stage int)]

// kick ends the EVD wait under way, if any, with a software event: at
// most one is queued at a time.
func (c *Conn) kick() {
	if c.inWait.Load() && c.kicked.CompareAndSwap(false, true) {
		if c.evd.PostSE(&c.kickEv) != nil {
			c.kicked.Store(false)
		}
	}
}
