package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/godat/godat/api"
)

// shortWait bounds waits that a conforming provider ends at once (a bad
// argument) or that must end by their own deadline.
const shortWait = 2 * time.Second

// seEVD creates a software-event EVD of qlen (and cno) and returns it with
// its real queue length.
func (n *node) seEVD(qlen int, cno api.CNO) (api.EVD, int) {
	n.t.T.Helper()
	return n.evdOfLen(qlen, cno, api.EVDSoftware)
}

// evdOfLen creates an EVD of qlen (and cno) for the streams flags and
// returns it with its real queue length.
func (n *node) evdOfLen(qlen int, cno api.CNO, flags api.EVDFlags) (api.EVD, int) {
	n.t.T.Helper()
	e, err := n.ia.CreateEVD(qlen, cno, flags)
	n.t.noErr(err, fmt.Sprintf("IA.CreateEVD(%d, %#x)", qlen, flags))
	p, err := e.Query()
	n.t.noErr(err, "EVD.Query")
	if p.QLen < qlen {
		n.t.Fatalf("EVD.Query QLen %d, below the %d asked for", p.QLen, qlen)
	}
	return e, p.QLen
}

// oneSE returns a software EVD of 8 entries on a new node that holds one
// event, the software event 1.
func (t *checkT) oneSE() api.EVD {
	t.T.Helper()
	e, _ := t.node().seEVD(8, nil)
	t.postSE(e, 1)
	return e
}

// postSE posts a software event carrying v.
func (t *checkT) postSE(e api.EVD, v any) {
	t.T.Helper()
	t.noErr(e.PostSE(&api.Event{Number: api.SoftwareEvent, Software: v}), "EVD.PostSE")
}

// expectSE checks that ev is the software event v of e.
func (t *checkT) expectSE(ev api.Event, e api.EVD, v any, what string) {
	t.T.Helper()
	if ev.Number != api.SoftwareEvent || ev.Software != v {
		t.Fatalf("%s: got %s, want the software event %v", what, describe(&ev), v)
	}
	if ev.EVD != e {
		t.Fatalf("%s: Event.EVD is not the EVD the event was posted to", what)
	}
}

// tryWait waits up to eventTimeout for one event.
func (t *checkT) tryWait(evd api.EVD) (api.Event, error) {
	ctx, cancel := context.WithTimeout(t.ctx, eventTimeout)
	defer cancel()
	var ev api.Event
	_, err := evd.Wait(ctx, 1, &ev)
	return ev, wokenLate(ctx, err)
}

// errWokenLate is what the suite makes of a Wait that returned an event
// only once its deadline had passed. The event had come, but the waiter
// was not woken when it did: with a longer timeout it would have slept
// on, and with DAT_TIMEOUT_INFINITE for ever (dat_evd_wait(3DAT) returns
// once the threshold is reached).
var errWokenLate = errors.New("EVD.Wait returned its event only when its deadline passed: the waiter was not woken when the event arrived")

// wokenLate turns the success of a Wait whose context had ended by the
// time it returned into errWokenLate. Every wait of the suite has a
// deadline far beyond the time its events take, so such a success is a
// missed wake-up, not an event that came at the last moment.
func wokenLate(ctx context.Context, err error) error {
	if err == nil && ctx.Err() != nil {
		return errWokenLate
	}
	return err
}

// wait returns the next event of evd, failing the check if none comes.
func (t *checkT) wait(evd api.EVD, what string) api.Event {
	t.T.Helper()
	ev, err := t.tryWait(evd)
	if err != nil {
		if errors.Is(err, api.ErrTimeoutExpired) {
			t.Fatalf("waiting for %s: no event within %v (%v)", what, eventTimeout, err)
		}
		t.Fatalf("waiting for %s: EVD.Wait: %v", what, err)
	}
	return ev
}

// expectEvent waits for the next event of evd and fails unless it is num.
func (t *checkT) expectEvent(evd api.EVD, num api.EventNumber, what string) api.Event {
	t.T.Helper()
	ev := t.wait(evd, what)
	if ev.Number != num {
		t.Fatalf("waiting for %s: got %s, want %v", what, describe(&ev), num)
	}
	return ev
}

// waitN waits for threshold events with a deadline d.
func waitN(e api.EVD, threshold int, d time.Duration) (api.Event, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var ev api.Event
	n, err := e.Wait(ctx, threshold, &ev)
	return ev, n, wokenLate(ctx, err)
}

// dequeue removes one event, failing the check if there is none.
func (t *checkT) dequeue(e api.EVD, what string) api.Event {
	t.T.Helper()
	var ev api.Event
	t.noErr(e.Dequeue(&ev), what)
	return ev
}

// result is the outcome of a call made on another goroutine.
type result struct {
	ev  api.Event
	evd api.EVD
	n   int
	err error
}

// goWait starts a Wait for threshold events (deadline d) on another
// goroutine.
func (t *checkT) goWait(e api.EVD, threshold int, d time.Duration) <-chan result {
	c := make(chan result, 1)
	t.spawn(func() {
		ev, n, err := waitN(e, threshold, d)
		c <- result{ev: ev, n: n, err: err}
	})
	return c
}

// recv takes the result of a call started on another goroutine, failing the
// check if it does not come.
func (t *checkT) recvResult(c <-chan result, what string) result {
	t.T.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(eventTimeout + shortWait):
		t.Fatalf("%s: the call did not return", what)
	}
	return result{}
}

// waiterGot takes the result of the waiter c (what names it) and checks
// that its Wait succeeded with the event posted as v on e.
func (t *checkT) waiterGot(c <-chan result, e api.EVD, v any, what string) result {
	t.T.Helper()
	r := t.recvResult(c, what)
	t.noErr(r.err, what)
	t.expectSE(r.ev, e, v, what+"'s event")
	return r
}

// untilWaiter retries Dequeue until it reports DAT_INVALID_STATE, which
// says a waiter is blocked on e; it fails the check if that never happens.
func (t *checkT) untilWaiter(e api.EVD, what string) {
	t.T.Helper()
	deadline := time.Now().Add(eventTimeout)
	for {
		var ev api.Event
		err := e.Dequeue(&ev)
		switch {
		case errors.Is(err, api.ErrInvalidState):
			return
		case err == nil:
			t.Fatalf("%s: Dequeue returned an event (%s) while none was posted", what, describe(&ev))
		case !errors.Is(err, api.ErrQueueEmpty):
			t.Fatalf("%s: Dequeue: got %v, want DAT_INVALID_STATE once the waiter blocks", what, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: Dequeue still answers DAT_QUEUE_EMPTY while another goroutine waits on the EVD; want DAT_INVALID_STATE", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (t *checkT) queryEVD(e api.EVD) api.EVDParam {
	t.T.Helper()
	p, err := e.Query()
	t.noErr(err, "EVD.Query")
	return p
}

// pollEmpty polls e, which must stay empty, for a while: long enough for
// a provider to take the consumer for one that polls.
func (t *checkT) pollEmpty(e api.EVD) {
	t.T.Helper()
	var ev api.Event
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
		if err := e.Dequeue(&ev); err == nil {
			t.Fatalf("Dequeue on an idle EVD returned %s", describe(&ev))
		}
	}
}

// evdGroups are the EVD and CNO pages' checks in run order:
// evd_events.go (events in and out), evd_state.go (states, the CNO, free),
// cno.go (the CNO pages and the helpers the CNO checks share).
var evdGroups = slices.Concat(evdEventGroups, evdStateGroups, cnoGroups)

// spin dequeues from e until an event comes, never waiting, and fails the
// check unless it is a successful DTO completion within eventTimeout.
func (t *checkT) spin(e api.EVD, what string) api.Event {
	t.T.Helper()
	ev, err := spinDTO(e)
	if err != nil {
		t.Fatalf("spinning for %s: %v", what, err)
	}
	return ev
}

// spinDTO is spin without the check, for goroutines of a check's own.
func spinDTO(e api.EVD) (api.Event, error) {
	var ev api.Event
	for end := time.Now().Add(eventTimeout); ; {
		err := e.Dequeue(&ev)
		switch {
		case err == nil:
			if ev.Number != api.DTOCompletionEvent || ev.DTO.Status != api.DTOSuccess {
				return ev, fmt.Errorf("got %s", describe(&ev))
			}
			return ev, nil
		case !errors.Is(err, api.ErrQueueEmpty):
			return ev, fmt.Errorf("dequeuing: %w", err)
		case time.Now().After(end):
			return ev, fmt.Errorf("nothing within %v", eventTimeout)
		}
	}
}

// spinPingPong runs a ping-pong of 8-byte messages for about d in which
// both consumers, each on a goroutine of its own as a program's two ends
// would be, spin on Dequeue and never wait: a provider that lets spinning
// consumers drive its connections (tcp) hands them over during it, and
// the checks that follow see whether it takes them back when the
// consumers stop. The first byte of a ping says whether another follows.
func (t *checkT) spinPingPong(p *pair, d time.Duration) {
	t.T.Helper()
	cs, cr, ss, sr := p.cli.region(8, rw), p.cli.region(8, rw), p.srv.region(8, rw), p.srv.region(8, rw)
	p.srv.postRecv(sr, 0, 8, 0)
	served := make(chan error, 1)
	go func() {
		served <- func() error {
			for i := 0; ; i++ {
				if _, err := spinDTO(p.srv.recv); err != nil {
					return fmt.Errorf("round %d, the ping's receive: %w", i, err)
				}
				last := sr.b[0] == 0
				if !last {
					if err := p.srv.ep.PostRecv(sr.iov(0, 8), api.Cookie(i+1), api.CompletionDefault); err != nil {
						return fmt.Errorf("round %d, PostRecv: %w", i, err)
					}
				}
				if err := p.srv.ep.PostSend(ss.iov(0, 8), api.Cookie(i), api.CompletionDefault); err != nil {
					return fmt.Errorf("round %d, PostSend: %w", i, err)
				}
				if _, err := spinDTO(p.srv.req); err != nil {
					return fmt.Errorf("round %d, the pong's send: %w", i, err)
				}
				if last {
					return nil
				}
			}
		}()
	}()
	end := time.Now().Add(d)
	for i, last := 0, false; !last; i++ {
		last = !time.Now().Before(end)
		cs.b[0] = 1
		if last {
			cs.b[0] = 0
		}
		c := api.Cookie(i)
		p.cli.postRecv(cr, 0, 8, c)
		p.cli.postSend(cs, 0, 8, c)
		t.spin(p.cli.recv, fmt.Sprintf("round %d: the pong's receive", i))
		t.spin(p.cli.req, fmt.Sprintf("round %d: the ping's send", i))
	}
	if err := <-served; err != nil {
		t.Fatalf("the server's side of a spinning ping-pong: %v", err)
	}
}

// spinFor is how long those checks spin: time for tcp to hand connections
// to their pollers several times over (it takes a few hundred round trips
// when the two ends spin at once).
const spinFor = 300 * time.Millisecond
