package datnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"

	_ "github.com/godat/godat/providers/loopback"
)

// loopbackPair returns the two ends of a connection over an in-process
// loopback IA; the test's cleanup closes them and the IA.
func loopbackPair(t *testing.T) (client, server *Conn) {
	t.Helper()
	cfg, err := registry.ParseConfig("t.conf", []byte("[[ia]]\nname = \"lo\"\nprovider = \"loopback\"\napi_version = \"u2.0\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ia, err := registry.New(cfg).Open(ctx, "lo")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ia.Close(api.CloseGraceful) })
	l, err := Listen(ia, ":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted := make(chan *Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c.(*Conn)
	}()
	cc, err := Dial(ctx, ia, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	t.Cleanup(func() { s.Close() })
	t.Cleanup(func() { cc.Close() })
	return cc.(*Conn), s
}

// A Read that blocks for a long time costs the event loop no turns: it
// sleeps until the call ends instead of checking on a timer.
func TestBlockedReadCostsNoLoopTurns(t *testing.T) {
	_, s := loopbackPair(t)
	s.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	turns := make(chan uint64, 1)
	go func() {
		time.Sleep(20 * time.Millisecond) // the Read is blocked by then
		before := s.loops.Load()
		time.Sleep(200 * time.Millisecond)
		turns <- s.loops.Load() - before
	}()
	if _, err := s.Read(make([]byte, 8)); err == nil {
		t.Fatal("Read returned data nobody sent")
	}
	if n := <-turns; n > 2 {
		t.Errorf("the event loop turned %d times while a Read was blocked (a timer of %v would turn it about %d times)", n, standDown, 200*time.Millisecond/standDown)
	}
}

// The spin adapts to how long calls wait: spinTime at first and for
// waits of maxSpin or more, spinFactor times short waits, never more
// than maxSpin.
func TestSpinnerLimit(t *testing.T) {
	var s spinner
	if got := s.limit(); got != spinTime {
		t.Errorf("a new spinner spins %v, want %v", got, spinTime)
	}
	for range 100 {
		s.learn(25 * time.Microsecond)
	}
	if got, want := s.limit(), spinFactor*25*time.Microsecond; got < want*95/100 || got > want*105/100 {
		t.Errorf("after waits of 25µs the spin is %v, want about %v", got, want)
	}
	// In this order: each case starts from the spinner the one before
	// left.
	for _, c := range []struct {
		wait time.Duration
		what string
		want time.Duration
	}{
		{time.Microsecond, "1µs", spinTime},
		{900 * time.Microsecond, "900µs", maxSpin},
		{time.Hour, "an hour", spinTime},
	} {
		for range 100 {
			s.learn(c.wait)
		}
		if got := s.limit(); got != c.want {
			t.Errorf("after waits of %s the spin is %v, want %v", c.what, got, c.want)
		}
	}
	for range 30 {
		s.learn(300 * time.Microsecond)
	}
	if got := s.limit(); got == spinTime {
		t.Errorf("30 waits of 300µs after long ones still spin only %v", got)
	}
}

// One spin in learnEvery is timed for the average; the others read the
// clock only if they last.
func TestSpinnerSamples(t *testing.T) {
	var s spinner
	n := 0
	for range 10 * learnEvery {
		if s.sample() {
			n++
		}
	}
	if n != 10 {
		t.Errorf("%d of %d spins sampled, want 10", n, 10*learnEvery)
	}
}

// A spin reads the clock every spinner.every polls: as many as fill a
// quarter of its limit at the polls' learnt cost, pollsPerClock until a
// sampled spin of pollsPerClock polls or more has taught that cost.
func TestSpinnerEvery(t *testing.T) {
	var s spinner
	if got := s.every(maxSpin); got != pollsPerClock {
		t.Errorf("a new spinner reads the clock every %d polls, want %d", got, pollsPerClock)
	}
	s.learnPoll(time.Millisecond, pollsPerClock-1)
	if got := s.every(maxSpin); got != pollsPerClock {
		t.Errorf("a spin of %d polls was learnt from: every %d polls, want %d", pollsPerClock-1, got, pollsPerClock)
	}
	s.learnPoll(100*time.Microsecond, 100) // 1 µs a poll
	if got, want := s.every(maxSpin), int(maxSpin/4/time.Microsecond); got != want {
		t.Errorf("at 1µs a poll a spin of %v reads the clock every %d polls, want %d", maxSpin, got, want)
	}
	if got := s.every(time.Microsecond); got != pollsPerClock {
		t.Errorf("a spin shorter than its polls reads the clock every %d polls, want %d", got, pollsPerClock)
	}
	for range 200 {
		s.learnPoll(time.Nanosecond, pollsPerClock) // cheaper than a nanosecond
	}
	if got := s.every(maxSpin); got != maxPollsPerClock {
		t.Errorf("with polls of no cost the clock is read every %d polls, want at most %d", got, maxPollsPerClock)
	}
}

// Once a spinner knows what a poll costs, a wait that ends within a
// quarter of its limit reads no clock unless it is sampled, and a
// sampled one reads it twice, at its start and at its end; a spin that
// gives up has read the clock every spinner.every polls.
func TestSpinReadsClockRarely(t *testing.T) {
	c, _ := loopbackPair(t)
	var sp spinner
	reads, step, at := 0, time.Microsecond, time.Duration(0)
	sp.clock = func() time.Duration { reads++; at += step; return at }
	for range 100 {
		sp.learn(100 * time.Microsecond)
	}
	sp.poll.Store(int64(time.Microsecond))
	if sp.limit() != maxSpin || sp.every(maxSpin) != 250 {
		t.Fatalf("set-up: limit %v, every %d", sp.limit(), sp.every(maxSpin))
	}
	after := func(n int) func() bool {
		i := 0
		return func() bool { i++; return i >= n }
	}
	if ok, _ := c.spin(after(200), &sp, 0); !ok || reads != 0 {
		t.Errorf("a wait of 200 polls: ok %v, %d clock reads, want none", ok, reads)
	}
	reads = 0
	start := sp.now()
	if ok, _ := c.spin(after(200), &sp, start); !ok || reads != 2 {
		t.Errorf("a sampled wait of 200 polls: ok %v, %d clock reads, want 2", ok, reads)
	}
	reads, step = 0, 100*time.Microsecond
	if ok, _ := c.spin(func() bool { return false }, &sp, 0); ok || reads < 10 || reads > 13 {
		t.Errorf("a spin that gives up after %v with the clock at %v a read: ok %v, %d reads, want about 11", maxSpin, step, ok, reads)
	}
}

// A connection kept busy by calls costs the event loop few turns: its
// pause doubles while calls keep coming, from standDown to maxStandDown,
// so it does not wake a thread every standDown for the whole exchange.
func TestBusyConnectionBacksOff(t *testing.T) {
	c, s := loopbackPair(t)
	go func() { io.Copy(s, s) }() // echo until the connection closes
	buf := make([]byte, 1)
	pingPong := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); {
			if _, err := c.Write(buf); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	pingPong(50 * time.Millisecond)
	before := c.loops.Load() + s.loops.Load()
	calls0 := c.calls.Load() + s.calls.Load()
	const busy = 500 * time.Millisecond
	pingPong(busy)
	n := c.loops.Load() + s.loops.Load() - before
	calls := c.calls.Load() + s.calls.Load() - calls0
	t.Logf("%d turns of the two event loops in %v of ping-pong, %d calls", n, busy, calls)
	// Each pause ends in at most two turns (the timer, and a call's end
	// when one was under way): at maxStandDown about 2 × 500/64 ≈ 16.
	// A machine so loaded that the ping-pong stalls for longer than a
	// pause makes the loop take over, and turn more, but then the calls
	// are few too: a turn for every call or so is what is wrong.
	if n > 60 && n*20 > calls {
		t.Errorf("the two event loops turned %d times in %v of ping-pong, for %d calls (a fixed pause of %v would turn them about %d times)", n, busy, calls, standDown, 2*int(busy/standDown))
	}
}

// Writes that do not block count as calls too: while they keep coming,
// the writer's event loop stands aside as it does for blocking calls,
// instead of taking each Write's completion and the peer's credits in a
// second goroutine, a wake-up each, beside the writer.
func TestWritesKeepLoopAside(t *testing.T) {
	c, s := loopbackPair(t)
	go io.Copy(io.Discard, s)
	buf := make([]byte, 1024)
	write := func(d time.Duration) (calls int) {
		for end := time.Now().Add(d); time.Now().Before(end); calls++ {
			if _, err := c.Write(buf); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond) // the program's own work
		}
		return calls
	}
	write(50 * time.Millisecond)
	before := c.loops.Load()
	const busy = 500 * time.Millisecond
	calls := write(busy)
	n := c.loops.Load() - before
	t.Logf("%d turns of the writer's event loop in %v of %d Writes", n, busy, calls)
	// As in TestBusyConnectionBacksOff: at maxStandDown, about 16.
	if n > 60 && n*20 > uint64(calls) {
		t.Errorf("the writer's event loop turned %d times in %v of %d Writes (standing aside at maxStandDown, about %d)", n, busy, calls, 2*int(busy/maxStandDown))
	}
}

// postLog is an EP that records, in order, the sends and receives posted
// through it.
type postLog struct {
	api.EP
	mu  sync.Mutex
	ops []string
}

func (p *postLog) PostSend(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	p.mu.Lock()
	p.ops = append(p.ops, "send")
	p.mu.Unlock()
	return p.EP.PostSend(iov, cookie, flags)
}

func (p *postLog) PostRecv(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	p.mu.Lock()
	p.ops = append(p.ops, "recv")
	p.mu.Unlock()
	return p.EP.PostRecv(iov, cookie, flags)
}

// stopLoop ends c's event loop, so that a test sees only what its own
// calls do.
func stopLoop(c *Conn) {
	c.cancelRun()
	<-c.runDone
}

// A Read that empties a receive buffer posts it again only after the
// answer the program writes next has been posted: the repost is not on
// the way from a request to its answer.
func TestAnswerPostedBeforeRepost(t *testing.T) {
	c, s := loopbackPair(t)
	stopLoop(s)
	log := &postLog{EP: s.ep}
	s.ep = log
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(s, buf); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	held, posted := len(s.held), s.pLen
	s.mu.Unlock()
	if held != 1 || posted != s.nrecv-1 {
		t.Fatalf("after the Read: %d buffers held, %d of %d posted; want 1 held and the rest posted", held, posted, s.nrecv)
	}
	if _, err := s.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	ops := strings.Join(log.ops, " ")
	log.mu.Unlock()
	if ops != "send recv" {
		t.Errorf("posts after the Read: %q, want the answer's send and then the buffer's receive", ops)
	}
	s.mu.Lock()
	held, posted = len(s.held), s.pLen
	s.mu.Unlock()
	if held != 0 || posted != s.nrecv {
		t.Errorf("after the Write: %d buffers held, %d of %d posted; want all posted", held, posted, s.nrecv)
	}
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("the answer: %q, %v", buf, err)
	}
}

// Buffers a Read emptied are posted again even if the program makes no
// further call on the connection: its event loop posts them (and returns
// their credits, once enough are owed) before it waits. Without that a
// writer waiting for those credits would wait for ever.
func TestIdleReaderPostsHeldBuffers(t *testing.T) {
	c, s := loopbackPair(t)
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(s, buf); err != nil {
		t.Fatal(err)
	}
	// The reader is idle from here on.
	for end := time.Now().Add(5 * time.Second); ; {
		s.mu.Lock()
		held, posted := len(s.held), s.pLen
		s.mu.Unlock()
		if held == 0 && posted == s.nrecv {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("5 s after the last Read: %d buffers held, %d of %d posted", held, posted, s.nrecv)
		}
		time.Sleep(time.Millisecond)
	}
}

// evdQueue is an EVD whose Dequeue hands out the events of a slice.
type evdQueue struct {
	api.EVD
	evs   []api.Event
	taken int
}

func (q *evdQueue) Dequeue(ev *api.Event) error {
	if q.taken == len(q.evs) {
		return api.ErrQueueEmpty
	}
	*ev = q.evs[q.taken]
	q.taken++
	return nil
}

// A waiting call stops taking events at the one it waits for; the rest
// stay queued for its next wait. (drain, for the event loop, takes all.)
func TestTakeStopsWhenReady(t *testing.T) {
	q := &evdQueue{evs: make([]api.Event, 3)}
	for i := range q.evs {
		q.evs[i].Number = api.SoftwareEvent
	}
	c := &Conn{evd: q}
	c.mu.Lock()
	got := c.take(func() bool { return q.taken >= 1 })
	c.mu.Unlock()
	if !got || q.taken != 1 {
		t.Fatalf("take: got %v, %d events dequeued; want true and 1", got, q.taken)
	}
	c.mu.Lock()
	got = c.take(func() bool { return true })
	c.mu.Unlock()
	if got || q.taken != 1 {
		t.Fatalf("take when ready already: got %v, %d events dequeued; want false and still 1", got, q.taken)
	}
	c.mu.Lock()
	c.drain()
	c.mu.Unlock()
	if q.taken != 3 {
		t.Fatalf("drain left %d events", 3-q.taken)
	}
}

// A Write about to wait for credits, whose connection another goroutine
// ends meanwhile, returns at once: the disconnect's events were taken by
// a Read between the writer's look and its EVD.Wait, and the writer must
// see that (the look again after inWait, stage 0) or be kicked (stage 1)
// rather than wait for events that will not come. Before both it waited
// until its deadline.
func TestWriterSeesEndTakenBeforeItWaits(t *testing.T) {
	for _, stage := range []int{0, 1} {
		t.Run(fmt.Sprint("stage", stage), func(t *testing.T) {
			fired := false
			var hookErr error
			t.Cleanup(func() { testHookWait.Store(nil) })
			cc, s := loopbackPair(t)
			hook := func(c *Conn, at int) {
				if c != s || at != stage || fired {
					return
				}
				fired = true
				// The client's EP goes at once: on loopback the server's
				// disconnect and flushes are queued when this returns.
				if err := cc.ep.Disconnect(api.CloseAbrupt); err != nil {
					hookErr = err
					return
				}
				rd := make(chan error, 1)
				go func() {
					_, err := s.Read(make([]byte, 8))
					rd <- err
				}()
				select {
				case err := <-rd:
					if err == nil {
						hookErr = errors.New("the Read after the disconnect returned data")
					}
				case <-time.After(5 * time.Second):
					hookErr = errors.New("the Read did not end after the disconnect")
				}
			}
			testHookWait.Store(&hook)
			s.SetWriteDeadline(time.Now().Add(5 * time.Second))
			var err error
			for err == nil {
				_, err = s.Write([]byte("0123456789abcdef"))
			}
			if !fired {
				t.Fatalf("the writer never waited (%v)", err)
			}
			if hookErr != nil {
				t.Fatal(hookErr)
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("the Write waited until its deadline after the connection had ended")
			}
		})
	}
}
