package conformance

import (
	"fmt"
	"time"

	"github.com/godat/godat/api"
)

// overflow makes the receive EVD of a connected server EP overflow: it
// returns the server node, the small EVD and its queue length q, after q+1
// messages were sent to q+1 posted receives. With pollFirst, the server's
// consumer polls the small EVD empty before the messages are sent, and
// then no more.
func (t *checkT) overflow(pollFirst bool) (*node, api.EVD, int) {
	t.T.Helper()
	srv, cli := t.node(), t.node()
	small, q := t.smallEVD(srv)
	t.sendsTo(srv, cli, small, q+1, pollFirst)
	return srv, small, q
}

// smallEVD creates the EVD of 2 events that the overflow checks overflow,
// and returns it with its queue length.
func (t *checkT) smallEVD(srv *node) (api.EVD, int) {
	t.T.Helper()
	return t.smallEVDOf(srv, api.EVDDTO)
}

// smallEVDOf is smallEVD for an EVD of the streams flags names.
func (t *checkT) smallEVDOf(srv *node, flags api.EVDFlags) (api.EVD, int) {
	t.T.Helper()
	small, err := srv.ia.CreateEVD(2, nil, flags)
	t.noErr(err, "IA.CreateEVD(2)")
	q := t.queryEVD(small).QLen
	if q > 256 {
		t.Skipf("the provider made a queue of %d events for 2", q)
	}
	if m := srv.attr.MaxDTOPerEP; m > 0 && m < q+1 {
		t.Skipf("MaxDTOPerEP %d is too small to overflow a queue of %d", m, q)
	}
	return small, q
}

// sendsTo connects a new server EP whose receive EVD is small and sends k
// messages (cookies 0 to k-1) to k receives posted on it, from the client
// end it returns.
func (t *checkT) sendsTo(srv, cli *node, small api.EVD, k int, pollFirst bool) *end {
	t.T.Helper()
	sa, ca := srv.epAttr(), cli.epAttr()
	sa.MaxRecvDTOs = max(sa.MaxRecvDTOs, k)
	ca.MaxRequestDTOs = max(ca.MaxRequestDTOs, k)
	sep, err := srv.ia.CreateEP(srv.pz, small, srv.req, srv.conn, sa)
	t.noErr(err, "IA.CreateEP with the small receive EVD")
	s := &end{node: srv, ep: sep}
	c := cli.end(ca)
	_, qual := srv.listen(api.PSPConsumer)
	c.connect(srv, qual, nil)
	ev := srv.expectCR("the CONNECTION_REQUEST")
	t.noErr(ev.CR.CR.Accept(s.ep, nil), "CR.Accept")
	c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED")
	s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
	rr := srv.region(k*16, rw)
	for i := range k {
		t.noErr(s.ep.PostRecv(rr.iov(i*16, 16), api.Cookie(i), api.CompletionDefault), "EP.PostRecv")
	}
	if pollFirst {
		t.pollEmpty(small)
	}
	sr := cli.region(8, rw)
	for i := range k {
		t.noErr(c.ep.PostSend(sr.iov(0, 8), api.Cookie(i), api.CompletionDefault), "EP.PostSend")
	}
	return c
}

// expectOverflow waits for the async event that reports the overflow of
// small.
func (n *node) expectOverflow(small api.EVD, what string) {
	n.t.T.Helper()
	ev := n.t.wait(n.async, what)
	if ev.Number != api.AsyncEVDOverflowEvent || ev.Async.Object != small {
		n.t.Fatalf("%s: got %s, want %v naming the overflowing EVD", what, describe(&ev), api.AsyncEVDOverflowEvent)
	}
}

var iaGroups = []group{
	{page: "dat_ia_open", checks: []check{
		{"DESCRIPTION", "several open instances are independent: closing one leaves the other working", func(t *checkT) {
			p := t.pair()
			extra := t.node()
			t.noErr(extra.ia.Close(api.CloseAbrupt), "IA.Close of a third IA")
			t.works(p.cli, p.srv, "the other IAs' connection")
		}},
		{"DESCRIPTION", "the async EVD takes asynchronous events, has no CNO and a non-empty queue", func(t *checkT) {
			n := t.node()
			if n.async == nil {
				t.Fatalf("IA.AsyncEVD returned nil")
			}
			p := t.queryEVD(n.async)
			if p.Flags&api.EVDAsync == 0 || p.CNO != nil || p.QLen <= 0 || p.IA != n.ia {
				t.Fatalf("async EVD = {flags %#x, has CNO %v, qlen %d, same IA %v}, want the async flag, no CNO, qlen > 0, this IA", p.Flags, p.CNO != nil, p.QLen, p.IA == n.ia)
			}
		}},
		{"DESCRIPTION", "an overflowing EVD is reported on the async EVD (DAT_ASYNC_ERROR_EVD_OVERFLOW naming the EVD)", func(t *checkT) {
			srv, small, _ := t.overflow(false)
			srv.expectOverflow(small, "the overflow event")
		}},
		{"DESCRIPTION", "an EVD that overflows after its consumer stopped polling it is reported on the async EVD too", func(t *checkT) {
			// A provider may leave completions with the device
			// while a consumer polls; once the polling stops they
			// must still reach the EVD, and its overflow be told.
			srv, small, _ := t.overflow(true)
			srv.expectOverflow(small, "the overflow event")
		}},
		{"DESCRIPTION", "a completion that finds the EVD full of software events is not lost silently: the overflow is reported, or the completion waits for room", func(t *checkT) {
			srv, cli := t.node(), t.node()
			small, q := t.smallEVDOf(srv, api.EVDDTO|api.EVDSoftware)
			for i := range q {
				t.postSE(small, i)
			}
			c := t.sendsTo(srv, cli, small, 1, false)
			c.expectReq(0, api.DTOSuccess, "the send, whose receive completion finds the EVD full")
			// A provider that drops the completion reports the overflow;
			// one that keeps it (a device's completion queue) delivers
			// it once the software events are taken.
			if ev, _, err := waitN(srv.async, 1, shortWait); err == nil {
				if ev.Number != api.AsyncEVDOverflowEvent || ev.Async.Object != small {
					t.Fatalf("the async EVD got %s, want %v naming the full EVD", describe(&ev), api.AsyncEVDOverflowEvent)
				}
				return
			}
			for i := range q {
				t.expectSE(t.dequeue(small, "EVD.Dequeue of a software event"), small, i, "the software events that filled the EVD")
			}
			if ev, err := t.tryWait(small); err == nil {
				if ev.Number != api.DTOCompletionEvent || ev.DTO.Cookie != 0 || ev.DTO.Status != api.DTOSuccess {
					t.Fatalf("after the software events the EVD gave %s, want the receive of cookie 0", describe(&ev))
				}
				return
			}
			srv.expectOverflow(small, "the overflow event of the receive completion that was neither queued nor kept")
		}},
		{"DESCRIPTION", "an EVD that overflowed, was drained and overflows again is reported on the async EVD again", func(t *checkT) {
			srv, cli := t.node(), t.node()
			small, q := t.smallEVD(srv)
			t.sendsTo(srv, cli, small, q+1, false)
			srv.expectOverflow(small, "the first overflow event")
			for i := range q {
				ev := t.wait(small, "a completion kept by the full EVD")
				if ev.Number != api.DTOCompletionEvent || ev.DTO.Cookie != api.Cookie(i) {
					t.Fatalf("event %d of the full EVD is %s, want the receive with cookie %d", i, describe(&ev), i)
				}
			}
			// Another connection, in case the first one ended with
			// the overflow: the EVD is what overflows again.
			t.sendsTo(srv, cli, small, q+1, false)
			srv.expectOverflow(small, "the overflow event of the second overflow")
		}},
		{"DESCRIPTION", "events queued before an overflow are kept, in order", func(t *checkT) {
			_, small, q := t.overflow(false)
			for i := range q {
				ev := t.wait(small, "a completion queued before the overflow")
				if ev.Number != api.DTOCompletionEvent || ev.DTO.Cookie != api.Cookie(i) || ev.DTO.Status != api.DTOSuccess {
					t.Fatalf("event %d of the full EVD is %s, want the successful receive with cookie %d", i, describe(&ev), i)
				}
			}
		}},
	}},

	{page: "dat_ia_query", checks: []check{
		{"DESCRIPTION", "the IA reports positive limits", func(t *checkT) {
			a := t.node().attr
			for _, l := range []struct {
				name string
				v    int64
			}{
				{"MaxEPs", int64(a.MaxEPs)}, {"MaxDTOPerEP", int64(a.MaxDTOPerEP)}, {"MaxEVDs", int64(a.MaxEVDs)},
				{"MaxEVDQLen", int64(a.MaxEVDQLen)}, {"MaxIOVSegmentsPerDTO", int64(a.MaxIOVSegmentsPerDTO)},
				{"MaxLMRs", int64(a.MaxLMRs)}, {"MaxLMRBlockSize", int64(a.MaxLMRBlockSize)}, {"MaxPZs", int64(a.MaxPZs)},
				{"MaxMessageSize", int64(a.MaxMessageSize)}, {"MaxRDMASize", int64(a.MaxRDMASize)}, {"MaxRMRs", int64(a.MaxRMRs)},
			} {
				if l.v <= 0 {
					t.Errorf("IAAttr.%s is %d, want a positive limit", l.name, l.v)
				}
			}
		}},
		{"DESCRIPTION", "MaxPrivateDataSize is at least 64 bytes", func(t *checkT) {
			n := t.node()
			t.skipForDeviation(n, DeviationPrivateDataMin64)
			if m := n.pattr.MaxPrivateDataSize; m < 64 {
				t.Fatalf("ProviderAttr.MaxPrivateDataSize is %d", m)
			}
		}},
		{"DESCRIPTION", "the IA reports its address", func(t *checkT) {
			if a := t.node().attr.Address; a == nil {
				t.Fatalf("IAAttr.Address is nil")
			}
		}},
		{"DESCRIPTION", "the adapter name is the IA name it was opened by", func(t *checkT) {
			if t.s.iaName == "" {
				t.Skipf("the IA name is known only through Run")
			}
			if got := t.node().attr.AdapterName; got != t.s.iaName {
				t.Fatalf("IAAttr.AdapterName %q, want %q", got, t.s.iaName)
			}
		}},
		{"DESCRIPTION", "the provider reports DAT API version 2 and a name", func(t *checkT) {
			p := t.node().pattr
			if p.DAPLVersionMajor != 2 || p.ProviderName == "" {
				t.Fatalf("ProviderAttr DAPL version %d.%d, name %q; want version 2.x and a name", p.DAPLVersionMajor, p.DAPLVersionMinor, p.ProviderName)
			}
		}},
		{"DESCRIPTION", "the LMR memory types include DAT_MEM_TYPE_LMR and DAT_MEM_TYPE_SHARED_VIRTUAL, which all providers must support", func(t *checkT) {
			if m := t.node().pattr.LMRMemTypesSupported; m&(api.MemTypeLMR|api.MemTypeSharedVirtual) != api.MemTypeLMR|api.MemTypeSharedVirtual {
				t.Fatalf("ProviderAttr.LMRMemTypesSupported is %#x", m)
			}
		}},
		{"DESCRIPTION", "OptimalBufferAlignment is at most 256 and divides it", func(t *checkT) {
			if a := t.node().pattr.OptimalBufferAlignment; a == 0 || a > 256 || 256%a != 0 {
				t.Fatalf("ProviderAttr.OptimalBufferAlignment is %d", a)
			}
		}},
	}},

	{page: "dat_ia_close", checks: []check{
		{"DESCRIPTION", "an IA closed while objects are being created leaves no descriptor and no goroutine of them behind", func(t *checkT) {
			// A create that races the close either fails or makes an
			// object the close destroys; none may live on with its
			// listening socket, CNO descriptor or goroutines (the
			// suite's goroutine check runs after the page).
			before := t.openFDs()
			for range 20 {
				ia := t.openIA()
				done := make(chan struct{})
				t.spawn(func() {
					defer close(done)
					for {
						pz, err := ia.CreatePZ()
						if err != nil {
							return
						}
						evd, err := ia.CreateEVD(4, nil, api.EVDCR)
						if err != nil {
							return
						}
						if _, _, err := ia.CreatePSPAny(evd, api.PSPConsumer); err != nil {
							return
						}
						if _, _, err := ia.CreateCNOFD(); err != nil {
							return
						}
						_ = pz
					}
				})
				time.Sleep(2 * time.Millisecond)
				t.noErr(ia.Close(api.CloseAbrupt), "abrupt IA.Close while objects are created")
				<-done
			}
			if after := t.openFDs(); after != before {
				t.Fatalf("%d descriptors open before, %d after the IAs closed", before, after)
			}
		}},
		{"DESCRIPTION", "a graceful close with objects left is DAT_INVALID_STATE_IA_IN_USE and the IA stays usable", func(t *checkT) {
			n := t.node()
			t.wantErr(n.ia.Close(api.CloseGraceful), sub(api.InvalidState, api.SubStateIAInUse), "graceful Close with objects")
			_, _, err := n.ia.Query()
			t.noErr(err, "IA.Query after the refused Close")
			_, err = n.pz.Query()
			t.noErr(err, "PZ.Query after the refused Close")
		}},
		{"DESCRIPTION", "a graceful close with only the async EVD left succeeds", func(t *checkT) {
			ia := t.openIA()
			pz, err := ia.CreatePZ()
			t.noErr(err, "IA.CreatePZ")
			t.noErr(pz.Free(), "PZ.Free")
			t.noErr(ia.Close(api.CloseGraceful), "graceful Close of an IA with no objects")
			_, _, err = ia.Query()
			t.wantErr(err, api.ErrInvalidHandle, "IA.Query after Close")
		}},
		{"DESCRIPTION", "an abrupt close destroys every object of the IA: calls on them are DAT_INVALID_HANDLE", func(t *checkT) {
			p := t.pair()
			n := p.srv.node
			r := n.region(64, rw)
			t.noErr(n.ia.Close(api.CloseAbrupt), "abrupt Close")
			_, err := n.pz.Query()
			t.wantErr(err, api.ErrInvalidHandle, "PZ.Query after the IA closed")
			_, err = p.srv.ep.Query()
			t.wantErr(err, api.ErrInvalidHandle, "EP.Query after the IA closed")
			_, err = n.recv.Query()
			t.wantErr(err, api.ErrInvalidHandle, "EVD.Query after the IA closed")
			_, err = r.lmr.Query()
			t.wantErr(err, api.ErrInvalidHandle, "LMR.Query after the IA closed")
			_, err = p.psp.Query()
			t.wantErr(err, api.ErrInvalidHandle, "PSP.Query after the IA closed")
			_, _, err = n.ia.Query()
			t.wantErr(err, api.ErrInvalidHandle, "IA.Query after Close")
			_, err = n.ia.CreatePZ()
			t.wantErr(err, api.ErrInvalidHandle, "IA.CreatePZ after Close")
		}},
		{"DESCRIPTION", "an abrupt close frees the connection qualifiers of its PSPs and RSPs: another IA can listen on them at once", func(t *checkT) {
			n := t.node()
			_, q := n.listen(api.PSPConsumer)
			rq := n.freeQual()
			_, err := n.ia.CreateRSP(rq, n.end(nil).ep, n.cr)
			t.noErr(err, "IA.CreateRSP")
			t.noErr(n.ia.Close(api.CloseAbrupt), "abrupt Close")
			m := t.node()
			_, err = m.ia.CreatePSP(q, m.cr, api.PSPConsumer)
			t.noErr(err, fmt.Sprintf("IA.CreatePSP(%d) on another IA, after the IA whose PSP listened there closed", q))
			_, err = m.ia.CreatePSP(rq, m.cr, api.PSPConsumer)
			t.noErr(err, fmt.Sprintf("IA.CreatePSP(%d) on another IA, after the IA whose RSP listened there closed", rq))
		}},
		{"DESCRIPTION", "every call on an IA closed abruptly is DAT_INVALID_HANDLE", closedIA},
		{"DESCRIPTION", "an abrupt close wakes the EVD waiters with DAT_ABORT", func(t *checkT) {
			n := t.node()
			e, _ := n.seEVD(8, nil)
			c := t.goWait(e, 1, eventTimeout)
			t.untilWaiter(e, "waiting for the waiter to block")
			t.noErr(n.ia.Close(api.CloseAbrupt), "abrupt Close")
			r := t.recvResult(c, "the waiter when its IA closed")
			t.wantErr(r.err, api.ErrAbort, "the Wait that the close ended")
		}},
		{"DESCRIPTION", "an abrupt close unblocks the CNO waiters, returning no EVD", func(t *checkT) {
			n := t.node()
			c, _ := n.cnoSE()
			r := t.goCNOWait(c, eventTimeout)
			time.Sleep(20 * time.Millisecond) // let it block; the result is the same if it does not
			t.noErr(n.ia.Close(api.CloseAbrupt), "abrupt Close")
			t.cnoReleased(r, "the CNO waiter when its IA closed")
		}},
		{"DESCRIPTION", "an abrupt close destroys the pending connection requests: their requesters are refused, not by a consumer (NON_PEER_REJECTED or UNREACHABLE)", func(t *checkT) {
			pr := t.request(nil)
			t.noErr(pr.srv.ia.Close(api.CloseAbrupt), "abrupt Close of the server IA")
			pr.c.expectConnEnd("the requester whose request the close destroyed", api.ConnectionNonPeerRejectedEvent, api.ConnectionUnreachableEvent)
		}},
		{"DESCRIPTION", "closing both IAs of a connection that spinning consumers drove leaves none of its descriptors open", func(t *checkT) {
			// A provider whose pollers read the socket themselves (tcp)
			// keeps its descriptor open for them; the close must still
			// let it go. The check's own memory (api.AllocMemory's
			// memfds, freed after the check) does not count.
			before := t.providerFDs()
			p := t.pair()
			t.spinPingPong(p, 50*time.Millisecond)
			t.noErr(p.cli.ia.Close(api.CloseAbrupt), "abrupt Close of the client IA")
			t.noErr(p.srv.ia.Close(api.CloseAbrupt), "abrupt Close of the server IA")
			after := t.providerFDs()
			for end := time.Now().Add(eventTimeout); len(after) > len(before) && time.Now().Before(end); after = t.providerFDs() {
				time.Sleep(5 * time.Millisecond)
			}
			for fd, what := range after {
				if before[fd] != what {
					t.Errorf("descriptor %s (%s) is still open after both IAs closed", fd, what)
				}
			}
		}},
		{"DESCRIPTION", "an abrupt close ends the IA's connections: the peer gets DISCONNECTED or BROKEN", func(t *checkT) {
			p := t.pair()
			t.noErr(p.cli.ia.Close(api.CloseAbrupt), "abrupt Close of the client IA")
			p.srv.expectConnEnd("the server EP whose peer IA closed", api.ConnectionDisconnectedEvent, api.ConnectionBrokenEvent)
			t.eventuallyState(p.srv.ep, "the server EP", api.EPDisconnected)
		}},
		{"DESCRIPTION", "an abrupt close completes the outstanding receives of the peer with FLUSHED", func(t *checkT) {
			p := t.pair()
			rr := p.srv.region(64, rw)
			p.srv.postRecv(rr, 0, 64, 9)
			t.noErr(p.cli.ia.Close(api.CloseAbrupt), "abrupt Close of the client IA")
			p.srv.expectRecv(9, api.DTOErrFlushed, "the peer's posted receive")
		}},
	}},
}
