package conformance

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
)

// cnoGroups checks CNOs: waiting on one, its agent, the DAT 2.0 CNO with a
// file descriptor and the trigger calls, and freeing it.
var cnoGroups = []group{
	{page: "dat_cno_wait", checks: []check{
		{"DESCRIPTION", "a consumer that spun on Dequeue may block in CNO.Wait at any time: large sends posted each way after a spinning ping-pong complete while their posters wait on CNOs", func(t *checkT) {
			p := t.pair()
			t.spinPingPong(p, spinFor)
			n := int(min(16<<20, t.queryEP(p.cli.ep).Attr.MaxMessageSize, t.queryEP(p.srv.ep).Attr.MaxMessageSize))
			cc, sc := p.cli.cno(nil), p.srv.cno(nil)
			t.noErr(p.cli.req.ModifyCNO(cc), "EVD.ModifyCNO on the client's request EVD")
			t.noErr(p.srv.req.ModifyCNO(sc), "EVD.ModifyCNO on the server's request EVD")
			cdst, csrc, sdst, ssrc := p.cli.region(n, rw), p.cli.region(n, rw), p.srv.region(n, rw), p.srv.region(n, rw)
			toCli, toSrv := ssrc.fill(0, n, 0x1E), csrc.fill(0, n, 0xE1)
			p.cli.postRecv(cdst, 0, n, 5)
			p.srv.postRecv(sdst, 0, n, 5)
			p.cli.postSend(csrc, 0, n, 6)
			p.srv.postSend(ssrc, 0, n, 6)
			ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
			defer cancel()
			srvWait := make(chan error, 1)
			go func() {
				_, err := sc.Wait(ctx)
				srvWait <- err
			}()
			if e, err := cc.Wait(ctx); err != nil || e != p.cli.req {
				t.Fatalf("the client's CNO.Wait for its send of %d bytes = %v, %v; want its request EVD", n, e, err)
			}
			if err := <-srvWait; err != nil {
				t.Fatalf("the server's CNO.Wait for its send of %d bytes: %v", n, err)
			}
			p.cli.expectReq(6, api.DTOSuccess, "the client's send")
			p.srv.expectReq(6, api.DTOSuccess, "the server's send")
			p.cli.expectRecv(5, api.DTOSuccess, "the client's receive")
			p.srv.expectRecv(5, api.DTOSuccess, "the server's receive")
			if !bytes.Equal(cdst.b, toCli) || !bytes.Equal(sdst.b, toSrv) {
				t.Fatalf("a receive buffer does not hold the message sent to it")
			}
		}},
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
		{"DESCRIPTION", "freeing the last EVD that feeds the CNO unblocks its waiters, returning no EVD", func(t *checkT) {
			c, e := t.node().cnoSE()
			r := t.goCNOWait(c, eventTimeout)
			time.Sleep(20 * time.Millisecond) // let it block; the result is the same if it does not
			t.noErr(e.Free(), "EVD.Free of the only EVD feeding the CNO")
			t.cnoReleased(r, "the CNO waiter when its last EVD was freed")
		}},
		{"RETURN VALUES", "a deadline without notification ends the wait with an error and no EVD", func(t *checkT) {
			c, _ := t.node().cnoSE()
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
			c, e := t.node().cnoSE()
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
			c, e := n.cnoSE()
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

// cnoReleased takes the result of the CNO waiter r (what names it), which
// something other than a notification must have unblocked: it returns a
// null EVD handle (dat_cno_wait(3DAT)), and not because its deadline
// passed. The pages name no error for such a return.
func (t *checkT) cnoReleased(r <-chan result, what string) {
	t.T.Helper()
	res := t.recvResult(r, what)
	if errors.Is(res.err, api.ErrTimeoutExpired) || errors.Is(res.err, api.ErrQueueEmpty) {
		t.Fatalf("%s was not unblocked: its wait ran to its deadline (%v)", what, res.err)
	}
	if res.evd != nil {
		t.Fatalf("%s returned an EVD (error %v), want a null handle", what, res.err)
	}
}

func (t *checkT) cnoWait(c api.CNO, what string) api.EVD {
	t.T.Helper()
	ctx, cancel := context.WithTimeout(t.ctx, eventTimeout)
	defer cancel()
	e, err := c.Wait(ctx)
	t.noErr(err, what)
	return e
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

// cnoSE creates a CNO of n without agent and a software EVD of 8 entries
// that feeds it.
func (n *node) cnoSE() (api.CNO, api.EVD) {
	n.t.T.Helper()
	c := n.cno(nil)
	e, _ := n.seEVD(8, c)
	return c, e
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
