package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
)

// shortWait bounds waits that a conforming provider ends at once (a bad
// argument) or that must end by their own deadline.
const shortWait = 2 * time.Second

// seEVD creates a software-event EVD of qlen (and cno) and returns it with
// its real queue length.
func (n *node) seEVD(qlen int, cno api.CNO) (api.EVD, int) {
	n.t.T.Helper()
	e, err := n.ia.CreateEVD(qlen, cno, api.EVDSoftware)
	n.t.noErr(err, "IA.CreateEVD(software)")
	p, err := e.Query()
	n.t.noErr(err, "EVD.Query")
	if p.QLen < qlen {
		n.t.Fatalf("EVD.Query QLen %d, below the %d asked for", p.QLen, qlen)
	}
	return e, p.QLen
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

// waitN waits for threshold events with a deadline d.
func waitN(e api.EVD, threshold int, d time.Duration) (api.Event, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var ev api.Event
	n, err := e.Wait(ctx, threshold, &ev)
	return ev, n, err
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

// cnoWait waits on cno with deadline d on another goroutine.
func (t *checkT) goCNOWait(c api.CNO, d time.Duration) <-chan result {
	ch := make(chan result, 1)
	t.spawn(func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		e, err := c.Wait(ctx)
		ch <- result{evd: e, err: err}
	})
	return ch
}

func (t *checkT) cnoWait(c api.CNO, what string) api.EVD {
	t.T.Helper()
	ctx, cancel := context.WithTimeout(t.ctx, eventTimeout)
	defer cancel()
	e, err := c.Wait(ctx)
	t.noErr(err, what)
	return e
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

// cnoReceive has p's server send a message to p's client, whose receive
// EVD feeds c, while the client waits on c and nothing else: the wait must
// return the receive EVD, which then holds the receive completion.
func (t *checkT) cnoReceive(p *pair, c api.CNO, what string) {
	t.T.Helper()
	rr := p.cli.region(64, api.MemPrivLocalWrite|api.MemPrivLocalRead)
	sr := p.srv.region(64, api.MemPrivLocalRead|api.MemPrivLocalWrite)
	copy(sr.b, "wake the CNO")
	p.cli.postRecv(rr, 0, 64, 7)
	r := t.goCNOWait(c, eventTimeout)
	// Let the wait begin before the message exists, so that only the
	// completion's notification can end it.
	time.Sleep(20 * time.Millisecond)
	p.srv.postSend(sr, 0, 12, 8)
	res := t.recvResult(r, what)
	t.noErr(res.err, what)
	if res.evd != p.cli.recv {
		t.Fatalf("%s returned another EVD than the receive EVD", what)
	}
	p.cli.expectRecv(7, api.DTOSuccess, "the receive completion behind the CNO")
	p.srv.expectReq(8, api.DTOSuccess, "the send completion")
}

func (n *node) cno(agent api.WaitAgent) api.CNO {
	n.t.T.Helper()
	c, err := n.ia.CreateCNO(agent)
	n.t.noErr(err, "IA.CreateCNO")
	return c
}

// fdCNO creates a CNO with a file descriptor (dat_cno_fd_create).
func (n *node) fdCNO() (api.CNO, int) {
	n.t.T.Helper()
	c, fd, err := n.ia.CreateCNOFD()
	n.t.noErr(err, "IA.CreateCNOFD")
	if fd < 0 {
		n.t.Fatalf("IA.CreateCNOFD returned descriptor %d", fd)
	}
	return c, fd
}

// triggered collects c's trigger (dat_cno_trigger).
func (t *checkT) triggered(c api.CNO) api.EVD {
	t.T.Helper()
	e, err := c.Triggered()
	t.noErr(err, "CNO.Triggered")
	return e
}

// readable reports whether fd polls readable within d.
func (t *checkT) readable(fd int, d time.Duration) bool {
	t.T.Helper()
	end := time.Now().Add(d)
	for {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		k, err := unix.Poll(p, int(time.Until(end).Milliseconds()))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			t.Fatalf("poll(2) on the CNO's descriptor: %v", err)
		case p[0].Revents&unix.POLLNVAL != 0:
			t.Fatalf("the CNO's descriptor %d is not open", fd)
		}
		return k == 1 && p[0].Revents&unix.POLLIN != 0
	}
}

// wantEventFD checks whether descriptor fd is open on an eventfd, as a
// CNO's is until the CNO goes.
func (t *checkT) wantEventFD(fd int, open bool, when string) {
	t.T.Helper()
	l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if is := err == nil && l == "anon_inode:[eventfd]"; is != open {
		t.Fatalf("descriptor %d %s: open on an eventfd is %v, want %v (%q, %v)", fd, when, is, open, l, err)
	}
}

// cnoOn creates a CNO of n and makes e, which n's EPs feed, feed it.
func (n *node) cnoOn(e api.EVD, what string) api.CNO {
	n.t.T.Helper()
	c := n.cno(nil)
	n.t.noErr(e.ModifyCNO(c), "EVD.ModifyCNO on "+what)
	return c
}

// twoReceives posts two 64-byte receives on p's server (cookies 1 and 2)
// and returns an 8-byte region of p's client to send from.
func (p *pair) twoReceives() *region {
	p.cli.t.T.Helper()
	rr := p.srv.region(128, rw)
	p.srv.postRecv(rr, 0, 64, 1)
	p.srv.postRecv(rr, 64, 64, 2)
	return p.cli.region(8, rw)
}

// neverTriggered checks, for a while, that c holds no trigger: a
// negative check, which a slow provider could pass but a correct one
// cannot fail.
func (t *checkT) neverTriggered(c api.CNO, when string) {
	t.T.Helper()
	for end := time.Now().Add(20 * time.Millisecond); ; time.Sleep(time.Millisecond) {
		if e := t.triggered(c); e != nil {
			t.Fatalf("the CNO was triggered %s", when)
		}
		if time.Now().After(end) {
			return
		}
	}
}

// eventuallyTriggered checks that c is triggered by e within
// eventTimeout.
func (t *checkT) eventuallyTriggered(c api.CNO, e api.EVD, when string) {
	t.T.Helper()
	for end := time.Now().Add(eventTimeout); time.Now().Before(end); time.Sleep(time.Millisecond) {
		switch got := t.triggered(c); {
		case got == e:
			return
		case got != nil:
			t.Fatalf("the CNO was triggered by another EVD %s", when)
		}
	}
	t.Fatalf("the CNO was not triggered within %v %s", eventTimeout, when)
}

// agentCalls returns a wait proxy agent that reports each call on the
// channel (dropping calls when the channel is full).
func agentCalls() (api.WaitAgent, <-chan api.EVD) {
	c := make(chan api.EVD, 16)
	return func(e api.EVD) {
		select {
		case c <- e:
		default:
		}
	}, c
}

func (t *checkT) expectAgent(c <-chan api.EVD, want api.EVD, what string) {
	t.T.Helper()
	select {
	case e := <-c:
		if e != want {
			t.Fatalf("%s: the agent was called with another EVD", what)
		}
	case <-time.After(eventTimeout):
		t.Fatalf("%s: the agent was not called within %v", what, eventTimeout)
	}
}

func evdGroups() []group {
	return []group{
		{page: "dat_evd_wait", checks: []check{
			{"DESCRIPTION", "a threshold larger than the queue length is DAT_INVALID_PARAMETER", func(t *checkT) {
				e, q := t.node().seEVD(8, nil)
				_, _, err := waitN(e, q+1, shortWait)
				t.wantErr(err, api.ErrInvalidParameter, "Wait with threshold qlen+1")
			}},
			{"DESCRIPTION", "a threshold of zero or less is DAT_INVALID_PARAMETER", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				t.postSE(e, 1)
				for _, th := range []int{0, -1} {
					_, _, err := waitN(e, th, shortWait)
					t.wantErr(err, api.ErrInvalidParameter, "Wait with a non-positive threshold")
				}
				t.expectSE(t.dequeue(e, "EVD.Dequeue"), e, 1, "the event the refused waits left queued")
			}},
			{"RETURN VALUES", "the context deadline ends the wait with DAT_TIMEOUT_EXPIRED and dequeues nothing", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				t.postSE(e, 1)
				_, _, err := waitN(e, 2, 100*time.Millisecond)
				t.wantErr(err, api.ErrTimeoutExpired, "Wait for 2 events with 1 queued and a 100ms deadline")
				t.expectSE(t.dequeue(e, "EVD.Dequeue after the timeout"), e, 1, "the event still queued")
			}},
			{"DESCRIPTION", "after DAT_TIMEOUT_EXPIRED nmore is the number of queued events", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				t.postSE(e, 1)
				_, n, err := waitN(e, 2, 100*time.Millisecond)
				t.wantErr(err, api.ErrTimeoutExpired, "Wait for 2 events with 1 queued")
				if n != 1 {
					t.Fatalf("nmore %d after the timeout, want 1 (the queued event)", n)
				}
			}},
			{"RETURN VALUES", "cancelling the context ends the wait with DAT_INTERRUPTED_CALL", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				ctx, cancel := context.WithCancel(t.ctx)
				t.spawn(func() {
					time.Sleep(20 * time.Millisecond)
					cancel()
				})
				var ev api.Event
				_, err := e.Wait(ctx, 1, &ev)
				cancel()
				t.wantErr(err, api.ErrInterruptedCall, "Wait whose context is cancelled")
			}},
			{"DESCRIPTION", "a blocked waiter wakes once the threshold is reached and gets the first event", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				c := t.goWait(e, 2, eventTimeout)
				t.postSE(e, "first")
				t.postSE(e, "second")
				r := t.recvResult(c, "the waiter")
				t.noErr(r.err, "Wait for 2 events")
				t.expectSE(r.ev, e, "first", "the waiter's event")
				if r.n < 1 {
					t.Fatalf("nmore %d, want at least threshold-1 = 1", r.n)
				}
			}},
			{"DESCRIPTION", "a waiter blocked after the consumer polled the EVD empty wakes for the next completion", func(t *checkT) {
				// A provider may stop asking its device for completion
				// notifications while a consumer polls; a Wait must
				// still hear of the next completion.
				p := t.pair()
				rr := p.cli.region(64, api.MemPrivLocalWrite|api.MemPrivLocalRead)
				sr := p.srv.region(64, api.MemPrivLocalRead|api.MemPrivLocalWrite)
				p.cli.postRecv(rr, 0, 64, 7)
				t.pollEmpty(p.cli.recv)
				c := t.goWait(p.cli.recv, 1, eventTimeout)
				// Let the wait begin before the message exists.
				time.Sleep(20 * time.Millisecond)
				p.srv.postSend(sr, 0, 12, 8)
				r := t.recvResult(c, "Wait after polling")
				t.noErr(r.err, "Wait after polling")
				if r.ev.Number != api.DTOCompletionEvent || r.ev.DTO.EP != p.cli.ep || r.ev.DTO.Cookie != 7 || r.ev.DTO.Status != api.DTOSuccess {
					t.Fatalf("Wait after polling returned %s, want the receive of cookie 7", describe(&r.ev))
				}
				p.srv.expectReq(8, api.DTOSuccess, "the send completion")
			}},
			{"DESCRIPTION", "on success nmore is the number of events left", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				for i := range 3 {
					t.postSE(e, i)
				}
				ev, n, err := waitN(e, 3, eventTimeout)
				t.noErr(err, "Wait for 3 events")
				t.expectSE(ev, e, 0, "the first event")
				if n != 2 {
					t.Fatalf("nmore %d, want 2", n)
				}
			}},
			{"DESCRIPTION", "events of one stream come out in the order they were queued", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				for i := range 5 {
					t.postSE(e, i)
				}
				for i := range 5 {
					ev, _, err := waitN(e, 1, eventTimeout)
					t.noErr(err, "EVD.Wait")
					t.expectSE(ev, e, i, "the next event in order")
				}
			}},
			{"RETURN VALUES", "a second concurrent waiter is DAT_INVALID_STATE", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				a, b := t.goWait(e, 1, eventTimeout), t.goWait(e, 1, eventTimeout)
				var first result
				var other <-chan result
				select {
				case first = <-a:
					other = b
				case first = <-b:
					other = a
				case <-time.After(eventTimeout + shortWait):
					t.Fatalf("two goroutines wait on one EVD and neither was refused")
				}
				if first.err == nil || !errors.Is(first.err, api.ErrInvalidState) {
					t.Fatalf("the first of two concurrent waits to return (with no event posted) got %v, want DAT_INVALID_STATE", first.err)
				}
				t.postSE(e, "x")
				r := t.recvResult(other, "the remaining waiter")
				t.noErr(r.err, "the remaining waiter")
				t.expectSE(r.ev, e, "x", "the remaining waiter's event")
			}},
			{"DESCRIPTION", "a threshold above 1 on an EVD fed by an unsignalled or a solicited-wait receive stream is DAT_INVALID_STATE", func(t *checkT) {
				for _, f := range []api.CompletionFlags{api.CompletionUnsignalled, api.CompletionSolicitedWait} {
					n := t.node()
					a := n.epAttr()
					a.RecvCompletionFlags = f
					n.newEP(a)
					_, _, err := waitN(n.recv, 2, shortWait)
					t.wantErr(err, api.ErrInvalidState, fmt.Sprintf("Wait(threshold 2) on the receive EVD of an EP with receive completion flags %#x", uint32(f)))
				}
			}},
			{"DESCRIPTION", "a threshold above 1 on an EVD fed by an unsignalled completion stream is DAT_INVALID_STATE", func(t *checkT) {
				n := t.node()
				a := n.epAttr()
				a.RequestCompletionFlags = api.CompletionUnsignalled
				n.newEP(a)
				_, _, err := waitN(n.req, 2, shortWait)
				t.wantErr(err, api.ErrInvalidState, "Wait(threshold 2) on the request EVD of an unsignalled EP")
			}},
		}},

		{page: "dat_evd_dequeue", checks: []check{
			{"RETURN VALUES", "an empty queue is DAT_QUEUE_EMPTY", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				t.expectEmpty(e, "Dequeue of a new EVD")
			}},
			{"DESCRIPTION", "Dequeue removes the first event each time", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				t.postSE(e, "a")
				t.postSE(e, "b")
				t.expectSE(t.dequeue(e, "EVD.Dequeue"), e, "a", "the first Dequeue")
				t.expectSE(t.dequeue(e, "EVD.Dequeue"), e, "b", "the second Dequeue")
				t.expectEmpty(e, "the third Dequeue")
			}},
			{"RETURN VALUES", "Dequeue while a waiter is blocked on the EVD is DAT_INVALID_STATE", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				c := t.goWait(e, 1, eventTimeout)
				t.untilWaiter(e, "Dequeue during a Wait")
				t.postSE(e, "x")
				r := t.recvResult(c, "the waiter")
				t.noErr(r.err, "the waiter")
				t.expectSE(r.ev, e, "x", "the waiter's event")
			}},
		}},

		{page: "dat_evd_post_se", checks: []check{
			{"DESCRIPTION", "a software event is delivered with the consumer's value on the EVD it was posted to", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				type token struct{ s string }
				v := &token{"mine"}
				t.postSE(e, v)
				t.expectSE(t.wait(e, "the software event"), e, v, "the software event")
			}},
			{"DESCRIPTION", "on a full queue PostSE is DAT_QUEUE_FULL, the event is not queued and the async EVD gets nothing", func(t *checkT) {
				n := t.node()
				e, q := n.seEVD(4, nil)
				if q > 4096 {
					t.Skipf("the provider made a queue of %d events for 4", q)
				}
				for i := range q {
					t.postSE(e, i)
				}
				t.wantErr(e.PostSE(&api.Event{Number: api.SoftwareEvent, Software: q}), api.ErrQueueFull, "PostSE on a full EVD")
				for i := range q {
					t.expectSE(t.dequeue(e, "EVD.Dequeue"), e, i, "a queued event")
				}
				t.expectEmpty(e, "the EVD after dequeuing all it held")
				t.expectEmpty(n.async, "the async EVD after a refused PostSE")
			}},
			{"RETURN VALUES", "a nil event is DAT_INVALID_PARAMETER", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				t.wantErr(e.PostSE(nil), api.ErrInvalidParameter, "PostSE(nil)")
			}},
		}},

		{page: "dat_evd_resize", checks: []check{
			{"DESCRIPTION", "resizing below the number of queued events is DAT_INVALID_STATE and loses nothing", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				for i := range 4 {
					t.postSE(e, i)
				}
				t.wantErr(e.Resize(2), api.ErrInvalidState, "Resize(2) with 4 events queued")
				for i := range 4 {
					t.expectSE(t.dequeue(e, "EVD.Dequeue"), e, i, "an event queued before the refused Resize")
				}
			}},
			{"DESCRIPTION", "resizing to one below the queued events is DAT_INVALID_STATE; to exactly their number keeps them all", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				for i := range 4 {
					t.postSE(e, i)
				}
				t.wantErr(e.Resize(3), api.ErrInvalidState, "Resize(3) with 4 events queued")
				t.noErr(e.Resize(4), "Resize(4) with 4 events queued")
				for i := range 4 {
					t.expectSE(t.dequeue(e, "EVD.Dequeue"), e, i, "an event queued before the Resize")
				}
				t.expectEmpty(e, "the EVD after its 4 events")
			}},
			{"DESCRIPTION", "growing keeps the queued events and Query reports at least the new length", func(t *checkT) {
				n := t.node()
				e, _ := n.seEVD(4, nil)
				t.postSE(e, "kept")
				want := min(32, n.attr.MaxEVDQLen)
				if n.attr.MaxEVDQLen <= 0 {
					want = 32
				}
				t.noErr(e.Resize(want), "EVD.Resize")
				if q := t.queryEVD(e).QLen; q < want {
					t.Errorf("QLen %d after Resize(%d)", q, want)
				}
				t.expectSE(t.dequeue(e, "EVD.Dequeue"), e, "kept", "the event queued before Resize")
			}},
			{"RETURN VALUES", "a queue length of zero or less is DAT_INVALID_PARAMETER", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				t.wantErr(e.Resize(0), api.ErrInvalidParameter, "Resize(0)")
				t.wantErr(e.Resize(-3), api.ErrInvalidParameter, "Resize(-3)")
			}},
		}},

		{page: "dat_evd_query", checks: []check{
			{"DESCRIPTION", "Query reports at least the requested queue length, the flags, the CNO and the IA", func(t *checkT) {
				n := t.node()
				c := n.cno(nil)
				e, err := n.ia.CreateEVD(8, c, api.EVDSoftware|api.EVDDTO)
				t.noErr(err, "IA.CreateEVD")
				p := t.queryEVD(e)
				if p.QLen < 8 || p.Flags != api.EVDSoftware|api.EVDDTO || p.CNO != c || p.IA != n.ia {
					t.Fatalf("EVD.Query = {qlen %d, flags %#x, same CNO %v, same IA %v}, want {>=8, %#x, true, true}",
						p.QLen, p.Flags, p.CNO == c, p.IA == n.ia, api.EVDSoftware|api.EVDDTO)
				}
			}},
			{"DESCRIPTION", "a new EVD is enabled and waitable", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				st := t.queryEVD(e).State
				if st&api.EVDStateEnabled == 0 || st&api.EVDStateWaitable == 0 {
					t.Fatalf("EVD state %#x, want ENABLED and WAITABLE", st)
				}
			}},
		}},

		{page: "dat_evd_disable", checks: []check{
			{"DESCRIPTION", "a disabled EVD reports DISABLED and still wakes its direct waiters", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				t.noErr(e.Disable(), "EVD.Disable")
				t.noErr(e.Disable(), "EVD.Disable of a disabled EVD (a no-op)")
				if st := t.queryEVD(e).State; st&api.EVDStateDisabled == 0 {
					t.Fatalf("EVD state %#x after Disable, want DISABLED", st)
				}
				c := t.goWait(e, 1, eventTimeout)
				t.postSE(e, "x")
				r := t.recvResult(c, "a direct waiter on a disabled EVD")
				t.noErr(r.err, "a direct waiter on a disabled EVD")
				t.expectSE(r.ev, e, "x", "the direct waiter's event")
			}},
			{"DESCRIPTION", "the events of a disabled EVD are queued but do not trigger its CNO", func(t *checkT) {
				n := t.node()
				c := n.cno(nil)
				e, _ := n.seEVD(8, c)
				t.noErr(e.Disable(), "EVD.Disable")
				t.postSE(e, "x")
				t.neverTriggered(c, "after an event on the disabled EVD")
				t.expectSE(t.dequeue(e, "EVD.Dequeue on the disabled EVD"), e, "x", "the disabled EVD's event")
				t.noErr(e.Enable(), "EVD.Enable")
				t.postSE(e, "y")
				t.eventuallyTriggered(c, e, "after an event on the re-enabled EVD")
			}},
		}},

		{page: "dat_evd_enable", checks: []check{
			{"DESCRIPTION", "a re-enabled EVD reports ENABLED and its events trigger its CNO", func(t *checkT) {
				n := t.node()
				c := n.cno(nil)
				e, _ := n.seEVD(8, c)
				t.noErr(e.Disable(), "EVD.Disable")
				t.noErr(e.Enable(), "EVD.Enable")
				t.noErr(e.Enable(), "EVD.Enable of an enabled EVD (a no-op)")
				if st := t.queryEVD(e).State; st&api.EVDStateEnabled == 0 {
					t.Fatalf("EVD state %#x after Enable, want ENABLED", st)
				}
				t.postSE(e, "x")
				if got := t.cnoWait(c, "CNO.Wait"); got != e {
					t.Fatalf("CNO.Wait returned another EVD than the one with the event")
				}
			}},
		}},

		{page: "dat_evd_set_unwaitable", checks: []check{
			{"DESCRIPTION", "a blocked waiter wakes with DAT_INVALID_STATE", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				c := t.goWait(e, 1, eventTimeout)
				t.untilWaiter(e, "waiting for the waiter to block")
				t.noErr(e.SetUnwaitable(), "EVD.SetUnwaitable")
				r := t.recvResult(c, "the waiter woken by SetUnwaitable")
				t.wantErr(r.err, api.ErrInvalidState, "the Wait that SetUnwaitable ended")
			}},
			{"DESCRIPTION", "Wait on an unwaitable EVD is DAT_INVALID_STATE, events still arrive for Dequeue, and Query reports UNWAITABLE", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				t.noErr(e.SetUnwaitable(), "EVD.SetUnwaitable")
				t.postSE(e, "x")
				_, _, err := waitN(e, 1, shortWait)
				t.wantErr(err, api.ErrInvalidState, "Wait on an unwaitable EVD")
				if st := t.queryEVD(e).State; st&api.EVDStateUnwaitable == 0 {
					t.Errorf("EVD state %#x, want UNWAITABLE", st)
				}
				t.expectSE(t.dequeue(e, "Dequeue on an unwaitable EVD"), e, "x", "the event posted while unwaitable")
			}},
		}},

		{page: "dat_evd_clear_unwaitable", checks: []check{
			{"DESCRIPTION", "after ClearUnwaitable Wait works again and Query reports WAITABLE", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				t.noErr(e.SetUnwaitable(), "EVD.SetUnwaitable")
				t.noErr(e.ClearUnwaitable(), "EVD.ClearUnwaitable")
				if st := t.queryEVD(e).State; st&api.EVDStateWaitable == 0 {
					t.Errorf("EVD state %#x, want WAITABLE", st)
				}
				t.postSE(e, "x")
				t.expectSE(t.wait(e, "the event"), e, "x", "Wait after ClearUnwaitable")
			}},
		}},

		{page: "dat_evd_modify_cno", checks: []check{
			{"DESCRIPTION", "after ModifyCNO the EVD's events trigger the new CNO", func(t *checkT) {
				n := t.node()
				c1, c2 := n.cno(nil), n.cno(nil)
				e, _ := n.seEVD(8, c1)
				t.noErr(e.ModifyCNO(c2), "EVD.ModifyCNO")
				if p := t.queryEVD(e); p.CNO != c2 {
					t.Errorf("EVD.Query does not report the new CNO")
				}
				t.postSE(e, "x")
				if got := t.cnoWait(c2, "Wait on the new CNO"); got != e {
					t.Fatalf("the new CNO returned another EVD")
				}
			}},
			{"DESCRIPTION", "ModifyCNO(nil) detaches the CNO, which can then be freed", func(t *checkT) {
				n := t.node()
				c := n.cno(nil)
				e, _ := n.seEVD(8, c)
				t.noErr(e.ModifyCNO(nil), "EVD.ModifyCNO(nil)")
				if p := t.queryEVD(e); p.CNO != nil {
					t.Errorf("EVD.Query still reports a CNO")
				}
				t.noErr(c.Free(), "CNO.Free once no EVD feeds it")
			}},
			{"RETURN VALUES", "a CNO of another IA is DAT_INVALID_HANDLE", func(t *checkT) {
				a, b := t.node(), t.node()
				e, _ := a.seEVD(8, nil)
				t.wantErr(e.ModifyCNO(b.cno(nil)), api.ErrInvalidHandle, "ModifyCNO with a CNO of another IA")
			}},
		}},

		{page: "dat_evd_free", checks: []check{
			{"RETURN VALUES", "an EVD used by an EP cannot be freed (DAT_INVALID_STATE_EVD_IN_USE) until the EP is freed", func(t *checkT) {
				n := t.node()
				e := n.end(nil)
				t.wantErr(n.recv.Free(), sub(api.InvalidState, api.SubStateEVDInUse), "EVD.Free of an EP's receive EVD")
				t.noErr(e.ep.Free(), "EP.Free")
				t.noErr(n.recv.Free(), "EVD.Free once unused")
			}},
			{"RETURN VALUES", "an EVD used by a PSP cannot be freed (DAT_INVALID_STATE_EVD_IN_USE) until the PSP is freed", func(t *checkT) {
				n := t.node()
				psp, _ := n.listen(api.PSPConsumer)
				t.wantErr(n.cr.Free(), sub(api.InvalidState, api.SubStateEVDInUse), "EVD.Free of a PSP's EVD")
				t.noErr(psp.Free(), "PSP.Free")
				t.noErr(n.cr.Free(), "EVD.Free once the PSP is gone")
			}},
			{"RETURN VALUES", "an EVD used by an RSP cannot be freed (DAT_INVALID_STATE_EVD_IN_USE) until the RSP is freed", func(t *checkT) {
				n := t.node()
				rsp, err := n.ia.CreateRSP(n.freeQual(), n.end(nil).ep, n.cr)
				t.noErr(err, "IA.CreateRSP")
				t.wantErr(n.cr.Free(), sub(api.InvalidState, api.SubStateEVDInUse), "EVD.Free of an RSP's EVD")
				t.noErr(rsp.Free(), "RSP.Free")
				t.noErr(n.cr.Free(), "EVD.Free once the RSP is gone")
			}},
			{"USAGE", "the IA's async EVD cannot be freed by the consumer (DAT_INVALID_STATE_EVD_IN_USE)", func(t *checkT) {
				n := t.node()
				t.wantErr(n.async.Free(), sub(api.InvalidState, api.SubStateEVDInUse), "EVD.Free of the async EVD")
			}},
			{"DESCRIPTION", "every call on a freed EVD, and every call that passes it, is DAT_INVALID_HANDLE", freedEVD},
		}},

		{page: "dat_cno_wait", checks: []check{
			{"DESCRIPTION", "CNO.Wait returns the EVD that received an event", func(t *checkT) {
				n := t.node()
				c := n.cno(nil)
				e1, _ := n.seEVD(8, c)
				e2, _ := n.seEVD(8, c)
				r := t.goCNOWait(c, eventTimeout)
				t.postSE(e2, "x")
				res := t.recvResult(r, "CNO.Wait")
				t.noErr(res.err, "CNO.Wait")
				if res.evd != e2 {
					t.Fatalf("CNO.Wait returned another EVD (first EVD: %v) than the one with the event", res.evd == e1)
				}
			}},
			{"DESCRIPTION", "a receive completion on a connected EP triggers the CNO of its receive EVD", func(t *checkT) {
				n := t.node()
				c := n.cno(nil)
				t.noErr(n.recv.ModifyCNO(c), "EVD.ModifyCNO on the receive EVD")
				p := t.pairWith(pairCfg{cli: n})
				t.cnoReceive(p, c, "CNO.Wait for a receive completion")
			}},
			{"DESCRIPTION", "a CNO attached after the consumer polled the receive EVD empty is triggered by the next receive", func(t *checkT) {
				// A provider may stop asking its device for completion
				// notifications while a consumer polls; a CNO attached
				// then must still hear of the next completion.
				n := t.node()
				p := t.pairWith(pairCfg{cli: n})
				t.pollEmpty(n.recv)
				c := n.cno(nil)
				t.noErr(n.recv.ModifyCNO(c), "EVD.ModifyCNO after polling")
				t.cnoReceive(p, c, "CNO.Wait for a receive after polling")
			}},
			{"RETURN VALUES", "a deadline without notification ends the wait with an error and no EVD", func(t *checkT) {
				n := t.node()
				c := n.cno(nil)
				n.seEVD(8, c)
				ctx, cancel := context.WithTimeout(t.ctx, 100*time.Millisecond)
				defer cancel()
				e, err := c.Wait(ctx)
				t.wantOneOf(err, "CNO.Wait with nothing to notify", api.ErrTimeoutExpired, api.ErrQueueEmpty)
				if e != nil {
					t.Fatalf("CNO.Wait returned an EVD on timeout")
				}
			}},
		}},

		{page: "dat_cno_create", checks: []check{
			{"DESCRIPTION", "the wait proxy agent is invoked with the EVD when the CNO is triggered", func(t *checkT) {
				n := t.node()
				agent, calls := agentCalls()
				c := n.cno(agent)
				e, _ := n.seEVD(8, c)
				t.postSE(e, "x")
				t.expectAgent(calls, e, "the agent")
			}},
		}},

		{page: "dat_cno_modify_agent", checks: []check{
			{"DESCRIPTION", "the new agent is invoked on the next trigger, and Query reports whether an agent is set", func(t *checkT) {
				n := t.node()
				c := n.cno(nil)
				if p, err := c.Query(); err != nil || p.Agent != nil || p.IA != n.ia {
					t.Fatalf("CNO.Query of a CNO without agent = %+v, %v; want no agent and its IA", p, err)
				}
				agent, calls := agentCalls()
				t.noErr(c.ModifyAgent(agent), "CNO.ModifyAgent")
				if p, err := c.Query(); err != nil || p.Agent == nil {
					t.Fatalf("CNO.Query reports no agent after ModifyAgent (%v)", err)
				}
				e, _ := n.seEVD(8, c)
				t.postSE(e, "x")
				t.expectAgent(calls, e, "the new agent")
				t.noErr(c.ModifyAgent(nil), "CNO.ModifyAgent(nil)")
				if p, err := c.Query(); err != nil || p.Agent != nil {
					t.Fatalf("CNO.Query still reports an agent after ModifyAgent(nil) (%v)", err)
				}
			}},
		}},

		// DAT 2.0 adds these two calls; it has no manual pages for them,
		// so the checks follow the 2.0 headers and docs/decisions.md.
		{page: "dat_cno_fd_create", checks: []check{
			{"DESCRIPTION", "the descriptor becomes readable when an EVD feeding the CNO gets a notification event, not before", func(t *checkT) {
				n := t.node()
				c, fd := n.fdCNO()
				e, _ := n.seEVD(8, c)
				if t.readable(fd, 0) {
					t.Fatalf("the descriptor of a new CNO is readable")
				}
				t.postSE(e, "x")
				if !t.readable(fd, eventTimeout) {
					t.Fatalf("the descriptor is not readable %v after the event", eventTimeout)
				}
				if got := t.triggered(c); got != e {
					t.Fatalf("CNO.Triggered returned another EVD than the one with the event")
				}
				t.expectSE(t.dequeue(e, "EVD.Dequeue behind the descriptor"), e, "x", "the event behind the descriptor")
			}},
			{"DESCRIPTION", "a receive completion on a connected EP makes the descriptor of its receive EVD's CNO readable", func(t *checkT) {
				n := t.node()
				c, fd := n.fdCNO()
				t.noErr(n.recv.ModifyCNO(c), "EVD.ModifyCNO on the receive EVD")
				p := t.pairWith(pairCfg{cli: n})
				rr := p.cli.region(64, api.MemPrivLocalWrite|api.MemPrivLocalRead)
				sr := p.srv.region(64, api.MemPrivLocalRead|api.MemPrivLocalWrite)
				p.cli.postRecv(rr, 0, 64, 7)
				if t.readable(fd, 20*time.Millisecond) {
					t.Fatalf("the descriptor is readable before anything was sent")
				}
				p.srv.postSend(sr, 0, 16, 8)
				if !t.readable(fd, eventTimeout) {
					t.Fatalf("the descriptor is not readable %v after the send", eventTimeout)
				}
				if got := t.triggered(c); got != n.recv {
					t.Fatalf("CNO.Triggered returned another EVD than the receive EVD")
				}
				p.cli.expectRecv(7, api.DTOSuccess, "the receive completion behind the descriptor")
				p.srv.expectReq(8, api.DTOSuccess, "the send completion")
			}},
			{"DESCRIPTION", "the descriptor belongs to the CNO: Free, or the IA's abrupt close, closes it", func(t *checkT) {
				n := t.node()
				c, fd := n.fdCNO()
				t.wantEventFD(fd, true, "before Free")
				t.noErr(c.Free(), "CNO.Free")
				t.wantEventFD(fd, false, "after Free")
				n2 := t.node()
				_, fd2 := n2.fdCNO()
				t.wantEventFD(fd2, true, "before the IA closes")
				t.noErr(n2.ia.Close(api.CloseAbrupt), "abrupt IA.Close")
				t.wantEventFD(fd2, false, "after the IA's abrupt close")
			}},
		}},

		{page: "dat_cno_trigger", checks: []check{
			{"DESCRIPTION", "Triggered names the EVD that triggered the CNO, then nil until the next trigger, and resets the descriptor", func(t *checkT) {
				n := t.node()
				c, fd := n.fdCNO()
				e1, _ := n.seEVD(8, c)
				e2, _ := n.seEVD(8, c)
				if got := t.triggered(c); got != nil {
					t.Fatalf("CNO.Triggered before any event returned an EVD")
				}
				for i, e := range []api.EVD{e1, e2} {
					t.postSE(e, i)
					if !t.readable(fd, eventTimeout) {
						t.Fatalf("the descriptor is not readable after event %d", i)
					}
					if got := t.triggered(c); got != e {
						t.Fatalf("CNO.Triggered after event %d returned another EVD than the one with the event", i)
					}
					if t.readable(fd, 0) {
						t.Fatalf("the descriptor is still readable after CNO.Triggered")
					}
					if got := t.triggered(c); got != nil {
						t.Fatalf("a second CNO.Triggered returned an EVD")
					}
				}
			}},
			{"DESCRIPTION", "a CNO made without descriptor reports its trigger through Triggered too, and Wait takes the trigger", func(t *checkT) {
				n := t.node()
				c := n.cno(nil)
				e, _ := n.seEVD(8, c)
				t.postSE(e, "x")
				var got api.EVD
				for end := time.Now().Add(eventTimeout); got == nil && time.Now().Before(end); time.Sleep(time.Millisecond) {
					got = t.triggered(c)
				}
				if got != e {
					t.Fatalf("CNO.Triggered did not return the EVD with the event within %v", eventTimeout)
				}
				t.postSE(e, "y")
				if got := t.cnoWait(c, "CNO.Wait"); got != e {
					t.Fatalf("CNO.Wait returned another EVD than the one with the event")
				}
				if got := t.triggered(c); got != nil {
					t.Fatalf("CNO.Triggered after Wait took the trigger returned an EVD")
				}
			}},
			{"DESCRIPTION", "Wait takes the trigger and resets the descriptor", func(t *checkT) {
				n := t.node()
				c, fd := n.fdCNO()
				e, _ := n.seEVD(8, c)
				t.postSE(e, "x")
				if got := t.cnoWait(c, "CNO.Wait"); got != e {
					t.Fatalf("CNO.Wait returned another EVD than the one with the event")
				}
				if t.readable(fd, 0) {
					t.Fatalf("the descriptor is still readable after CNO.Wait took the trigger")
				}
			}},
			{"RETURN VALUES", "Triggered on a freed CNO is DAT_INVALID_HANDLE", func(t *checkT) {
				n := t.node()
				c, _ := n.fdCNO()
				t.noErr(c.Free(), "CNO.Free")
				_, err := c.Triggered()
				t.wantErr(err, api.ErrInvalidHandle, "CNO.Triggered after Free")
			}},
		}},

		{page: "dat_cno_free", checks: []check{
			{"RETURN VALUES", "a CNO that an EVD feeds cannot be freed (DAT_INVALID_STATE) until the EVD feeds another CNO or is freed", func(t *checkT) {
				n := t.node()
				c := n.cno(nil)
				e, _ := n.seEVD(8, c)
				t.wantErr(c.Free(), api.ErrInvalidState, "CNO.Free with an EVD attached")
				c2 := n.cno(nil)
				t.noErr(e.ModifyCNO(c2), "EVD.ModifyCNO to another CNO")
				t.noErr(c.Free(), "CNO.Free once its EVD feeds another CNO")
				t.wantErr(c2.Free(), api.ErrInvalidState, "CNO.Free of the CNO the EVD now feeds")
				t.noErr(e.Free(), "EVD.Free")
				t.noErr(c2.Free(), "CNO.Free once its EVD is freed")
			}},
			{"DESCRIPTION", "every call on a freed CNO, and every call that passes it, is DAT_INVALID_HANDLE", freedCNO},
		}},
	}
}
