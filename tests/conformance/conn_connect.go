package conformance

import (
	"bytes"
	"time"

	"github.com/godat/godat/api"
)

// connectGroups checks making a connection: dat_ep_connect(3DAT) and the
// calls on the connection request the passive side gets (accept, reject,
// handoff, query).
var connectGroups = []group{
	{page: "dat_ep_connect", checks: []check{
		{"DESCRIPTION", "a successful Connect moves the EP to ACTIVE_CONNECTION_PENDING", func(t *checkT) {
			srv, cli := t.node(), t.node()
			_, q := srv.listen(api.PSPConsumer)
			c := cli.end(nil)
			c.connect(srv, q, nil)
			t.wantState(c.ep, api.EPActiveConnectionPending, "after Connect, before the passive side answers")
		}},
		{"DESCRIPTION", "acceptance gives ESTABLISHED on the connect EVD and the active EP is CONNECTED", func(t *checkT) {
			p := t.pair()
			if p.cliEst.EVD != p.cli.conn {
				t.Fatalf("Event.EVD of ESTABLISHED is not the connect EVD")
			}
			t.eventuallyState(p.cli.ep, "active EP after ESTABLISHED", api.EPConnected, api.EPConnectedSinglePath, api.EPConnectedMultiPath)
		}},
		{"DESCRIPTION", "the active side's ESTABLISHED carries the private data the passive side accepted with", func(t *checkT) {
			pd := pattern(40, 0x11)
			p := t.pairWith(pairCfg{srvPD: pd})
			if !bytes.Equal(p.cliEst.Conn.PrivateData, pd) {
				t.Fatalf("ESTABLISHED private data %x, want %x", p.cliEst.Conn.PrivateData, pd)
			}
		}},
		{"DESCRIPTION", "the Connect private data reaches the passive side in the connection request", func(t *checkT) {
			pd := pattern(40, 0x22)
			p := t.pairWith(pairCfg{cliPD: pd})
			if !bytes.Equal(p.crParam.PrivateData, pd) {
				t.Fatalf("CR private data %x, want %x", p.crParam.PrivateData, pd)
			}
		}},
		{"DESCRIPTION", "private data of exactly MaxPrivateDataSize bytes is delivered entire both ways", func(t *checkT) {
			srv, cli := t.node(), t.node()
			m := min(srv.maxPD(), cli.maxPD())
			cpd, spd := pattern(m, 0x31), pattern(m, 0x47)
			p := t.pairWith(pairCfg{cli: cli, srv: srv, cliPD: cpd, srvPD: spd})
			if !bytes.Equal(p.crParam.PrivateData, cpd) {
				t.Errorf("CR private data has %d bytes (or differs), want the %d bytes sent", len(p.crParam.PrivateData), m)
			}
			if !bytes.Equal(p.cliEst.Conn.PrivateData, spd) {
				t.Errorf("ESTABLISHED private data has %d bytes (or differs), want the %d bytes accepted with", len(p.cliEst.Conn.PrivateData), m)
			}
		}},
		{"DESCRIPTION", "the requester's port qualifier is passed to the passive side in the request", func(t *checkT) {
			srv, cli := t.node(), t.node()
			_, q := srv.listen(api.PSPConsumer)
			c := cli.end(nil)
			c.connect(srv, q, nil)
			pp, err := c.ep.Query()
			t.noErr(err, "EP.Query in ACTIVE_CONNECTION_PENDING")
			ev := srv.expectCR("the CONNECTION_REQUEST")
			cp, err := ev.CR.CR.Query()
			t.noErr(err, "CR.Query")
			if cp.RemotePortQual != pp.LocalPortQual {
				t.Fatalf("CR remote port qualifier %d, but the requesting EP reports local port qualifier %d", cp.RemotePortQual, pp.LocalPortQual)
			}
		}},
		{"DESCRIPTION", "PEER_REJECTED leaves the active EP DISCONNECTED", func(t *checkT) {
			pr := t.request(nil)
			t.noErr(pr.cr.Reject(nil), "CR.Reject")
			pr.c.expectConn(api.ConnectionPeerRejectedEvent, "the rejection")
			t.eventuallyState(pr.c.ep, "after PEER_REJECTED", api.EPDisconnected)
		}},
		{"DESCRIPTION", "a conn_qual nobody listens on gives NON_PEER_REJECTED and leaves the EP DISCONNECTED", func(t *checkT) {
			srv, cli := t.node(), t.node()
			q := srv.freeQual()
			c := cli.end(nil)
			c.connect(srv, q, nil)
			c.expectConn(api.ConnectionNonPeerRejectedEvent, "the result of connecting to an unused conn_qual")
			t.eventuallyState(c.ep, "after NON_PEER_REJECTED", api.EPDisconnected)
		}},
		{"DESCRIPTION", "a passive side that never answers gives TIMED_OUT after the connect timeout and the EP is DISCONNECTED", func(t *checkT) {
			srv, cli := t.node(), t.node()
			_, q := srv.listen(api.PSPConsumer)
			c := cli.end(nil)
			c.connectWithin(srv, q, nil, 300*time.Millisecond)
			c.expectConn(api.ConnectionTimedOutEvent, "the end of a connect nobody answers")
			t.eventuallyState(c.ep, "after TIMED_OUT", api.EPDisconnected)
		}},
		{"RETURN VALUES", "Connect on a CONNECTED EP is DAT_INVALID_STATE and changes nothing", func(t *checkT) {
			p := t.pair()
			err := p.cli.ep.Connect(p.srv.attr.Address, p.q, connTimeout, nil, api.QOSBestEffort, api.ConnectDefault)
			t.wantErr(err, api.ErrInvalidState, "Connect on a CONNECTED EP")
			t.wantConnected(p.cli.ep, "after the refused Connect")
			t.works(p.cli, p.srv, "after the refused Connect")
		}},
		{"RETURN VALUES", "the DAT_INVALID_STATE of Connect on a CONNECTED EP has subtype DAT_INVALID_STATE_EP_CONNECTED", func(t *checkT) {
			p := t.pair()
			err := p.cli.ep.Connect(p.srv.attr.Address, p.q, connTimeout, nil, api.QOSBestEffort, api.ConnectDefault)
			t.wantErr(err, sub(api.InvalidState, api.EPConnected.StateSubtype()), "Connect on a CONNECTED EP")
		}},
		{"RETURN VALUES", "private data longer than MaxPrivateDataSize is DAT_INVALID_PARAMETER and the EP stays UNCONNECTED", func(t *checkT) {
			t.badConnect(func(cli *node) (time.Duration, []byte) { return connTimeout, make([]byte, cli.maxPD()+1) },
				"Connect with MaxPrivateDataSize+1 bytes of private data")
		}},
		{"PARAMETERS", "a negative timeout other than DAT_TIMEOUT_INFINITE is DAT_INVALID_PARAMETER", func(t *checkT) {
			t.badConnect(func(*node) (time.Duration, []byte) { return -5 * time.Millisecond, nil }, "Connect with timeout -5ms")
		}},
		{"PARAMETERS", "DAT_TIMEOUT_INFINITE is a valid connect timeout", func(t *checkT) {
			pr := t.requestWithin(nil, api.TimeoutInfinite)
			t.noErr(pr.cr.Accept(pr.srv.end(nil).ep, nil), "CR.Accept")
			pr.c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED")
		}},
		{"DESCRIPTION", "a qos the provider does not support is DAT_MODEL_NOT_SUPPORTED", func(t *checkT) {
			srv, cli := t.node(), t.node()
			qos, ok := cli.unsupportedQOS()
			if !ok {
				t.Skipf("the provider supports every QOS value")
			}
			_, q := srv.listen(api.PSPConsumer)
			c := cli.end(nil)
			err := c.ep.Connect(srv.attr.Address, q, connTimeout, nil, qos, api.ConnectDefault)
			t.wantErr(err, api.ErrModelNotSupported, "Connect with an unsupported qos")
		}},
		{"RETURN VALUES", "a nil remote address is rejected (DAT_INVALID_ADDRESS or DAT_INVALID_PARAMETER)", func(t *checkT) {
			srv, cli := t.node(), t.node()
			_, q := srv.listen(api.PSPConsumer)
			c := cli.end(nil)
			err := c.ep.Connect(nil, q, connTimeout, nil, api.QOSBestEffort, api.ConnectDefault)
			t.wantOneOf(err, "Connect to a nil address", api.ErrInvalidAddress, api.ErrInvalidParameter)
			t.wantState(c.ep, api.EPUnconnected, "after the refused Connect")
		}},
	}},

	{page: "dat_cr_accept", checks: []check{
		{"DESCRIPTION", "Accept gives ESTABLISHED on the passive EP's connect EVD and the EP is CONNECTED", func(t *checkT) {
			p := t.pair()
			if p.srvEst.EVD != p.srv.conn {
				t.Fatalf("Event.EVD of the passive ESTABLISHED is not the connect EVD")
			}
			t.eventuallyState(p.srv.ep, "passive EP after ESTABLISHED", api.EPConnected, api.EPConnectedSinglePath, api.EPConnectedMultiPath)
		}},
		{"DESCRIPTION", "a successful Accept destroys the CR: every call on it is DAT_INVALID_HANDLE", acceptedCR},
		{"DESCRIPTION", "Accept on an EP in the wrong state fails with DAT_INVALID_STATE and leaves EP and request untouched", func(t *checkT) {
			pr := t.request(nil)
			// An EP that is itself connecting (ACTIVE_CONNECTION_PENDING).
			bad := pr.srv.end(nil)
			_, q2 := pr.srv.listen(api.PSPConsumer)
			bad.connect(pr.srv, q2, nil)
			t.wantErr(pr.cr.Accept(bad.ep, nil), api.ErrInvalidState, "Accept on an ACTIVE_CONNECTION_PENDING EP")
			t.wantState(bad.ep, api.EPActiveConnectionPending, "the EP Accept refused")
			good := pr.srv.end(nil)
			pr.accept(good, nil)
			t.works(pr.c, good, "the connection accepted after the refused Accept")
		}},
		{"RETURN VALUES", "private data longer than MaxPrivateDataSize is DAT_INVALID_PARAMETER and the request stays pending", func(t *checkT) {
			pr := t.request(nil)
			s := pr.srv.end(nil)
			t.wantErr(pr.cr.Accept(s.ep, make([]byte, pr.srv.maxPD()+1)), api.ErrInvalidParameter, "Accept with MaxPrivateDataSize+1 bytes")
			t.wantState(s.ep, api.EPUnconnected, "the EP of the refused Accept")
			pr.accept(s, nil)
		}},
		{"PARAMETERS", "a nil EP for a request that carries no local EP is DAT_INVALID_HANDLE", func(t *checkT) {
			pr := t.request(nil)
			t.wantErr(pr.cr.Accept(nil, nil), api.ErrInvalidHandle, "Accept(nil) on a request from a PSPConsumer PSP")
			pr.accept(pr.srv.end(nil), nil)
		}},
		{"PARAMETERS", "a request that carries its EP (an RSP's) refuses Accept on another EP, which stays UNCONNECTED; Accept(nil) then connects", func(t *checkT) {
			r := t.rspRequest()
			other := r.srv.end(nil)
			t.wantOneOf(r.ev.CR.CR.Accept(other.ep, nil), "Accept with another EP than the one the request carries", api.ErrInvalidParameter, api.ErrInvalidHandle)
			t.wantState(other.ep, api.EPUnconnected, "the EP Accept was wrongly given")
			t.wantState(r.s.ep, api.EPPassiveConnectionPending, "the request's EP after the refused Accept")
			t.noErr(r.ev.CR.CR.Accept(nil, nil), "Accept(nil) after the refused Accept")
			r.c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the active side")
			r.s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the request's EP")
		}},
		{"RETURN VALUES", "an EP of another IA is DAT_INVALID_HANDLE", func(t *checkT) {
			pr := t.request(nil)
			other := pr.cli.end(nil) // the client IA is another IA than the server's
			t.wantErr(pr.cr.Accept(other.ep, nil), api.ErrInvalidHandle, "Accept with an EP of another IA")
			t.wantState(other.ep, api.EPUnconnected, "the foreign EP")
			pr.accept(pr.srv.end(nil), nil)
		}},
		{"DESCRIPTION", "Accept after the requester timed out does not connect (ACCEPT_COMPLETION_ERROR or a refused Accept)", func(t *checkT) {
			pr := t.requestWithin(nil, time.Second)
			c := pr.c
			c.expectConn(api.ConnectionTimedOutEvent, "the requester's TIMED_OUT")
			s := pr.srv.end(nil)
			if err := pr.cr.Accept(s.ep, nil); err != nil {
				if connected(t.state(s.ep)) {
					t.Fatalf("Accept failed (%v) but the EP is CONNECTED", err)
				}
				return
			}
			s.expectConn(api.ConnectionAcceptCompletionErrorEvent, "the result of accepting a timed-out request")
			t.eventuallyState(s.ep, "after ACCEPT_COMPLETION_ERROR", api.EPDisconnected)
			t.wantState(c.ep, api.EPDisconnected, "the timed-out requester")
		}},
	}},

	{page: "dat_cr_reject", checks: []check{
		{"DESCRIPTION", "the requester gets PEER_REJECTED carrying the reject private data", func(t *checkT) {
			pr := t.request(nil)
			pd := pattern(48, 0x5C)
			t.noErr(pr.cr.Reject(pd), "CR.Reject")
			ev := pr.c.expectConn(api.ConnectionPeerRejectedEvent, "the rejection")
			if !bytes.Equal(ev.Conn.PrivateData, pd) {
				t.Fatalf("PEER_REJECTED private data %x, want %x", ev.Conn.PrivateData, pd)
			}
		}},
		{"DESCRIPTION", "Reject destroys the CR: using it again is DAT_INVALID_HANDLE", func(t *checkT) {
			pr := t.request(nil)
			t.noErr(pr.cr.Reject(nil), "CR.Reject")
			_, err := pr.cr.Query()
			t.wantErr(err, api.ErrInvalidHandle, "CR.Query after Reject")
			t.wantErr(pr.cr.Accept(pr.srv.end(nil).ep, nil), api.ErrInvalidHandle, "CR.Accept after Reject")
		}},
		{"RETURN VALUES", "reject private data longer than MaxPrivateDataSize is DAT_INVALID_PARAMETER and the request stays pending", func(t *checkT) {
			pr := t.request(nil)
			t.wantErr(pr.cr.Reject(make([]byte, pr.srv.maxPD()+1)), api.ErrInvalidParameter, "Reject with MaxPrivateDataSize+1 bytes")
			pr.accept(pr.srv.end(nil), nil)
		}},
	}},

	{page: "dat_cr_handoff", checks: []check{
		{"DESCRIPTION", "the request reaches the service point on the other conn_qual with its private data, and accepting it there connects", func(t *checkT) {
			pd := pattern(24, 0x71)
			pr := t.request(pd)
			cr2 := pr.srv.evd(api.EVDCR)
			psp2, q2, err := pr.srv.ia.CreatePSPAny(cr2, api.PSPConsumer)
			t.noErr(err, "IA.CreatePSPAny")
			t.noErr(pr.cr.Handoff(q2), "CR.Handoff")
			ev := t.expectEvent(cr2, api.ConnectionRequestEvent, "the handed-off request on the second PSP's EVD")
			if ev.CR.PSP != psp2 {
				t.Errorf("the handed-off request does not name the PSP it was handed to")
			}
			cp, err := ev.CR.CR.Query()
			t.noErr(err, "CR.Query of the handed-off request")
			if !bytes.Equal(cp.PrivateData, pd) {
				t.Errorf("handed-off request private data %x, want %x", cp.PrivateData, pd)
			}
			s := pr.srv.end(nil)
			t.noErr(ev.CR.CR.Accept(s.ep, nil), "CR.Accept of the handed-off request")
			pr.c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the active side")
			s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
			t.works(pr.c, s, "the handed-off connection")
		}},
		{"DESCRIPTION", "Handoff destroys the original CR: using it again is DAT_INVALID_HANDLE", func(t *checkT) {
			pr := t.request(nil)
			_, q2 := pr.srv.listen(api.PSPConsumer)
			t.noErr(pr.cr.Handoff(q2), "CR.Handoff")
			_, err := pr.cr.Query()
			t.wantErr(err, api.ErrInvalidHandle, "CR.Query after Handoff")
		}},
		{"DESCRIPTION", "a handoff to a service point whose EVD is full loses nothing: it fails and the request can still be accepted, or the request arrives there once the EVD has room", func(t *checkT) {
			pr := t.request(nil)
			full, qlen := pr.srv.evdOfLen(1, nil, api.EVDCR|api.EVDSoftware)
			for k := range qlen {
				t.postSE(full, k)
			}
			_, q2, err := pr.srv.ia.CreatePSPAny(full, api.PSPConsumer)
			t.noErr(err, "IA.CreatePSPAny on the full EVD")
			if err := pr.cr.Handoff(q2); err != nil {
				t.Logf("%s: Handoff to the full service point: %v", t.ref, err)
				pr.accept(pr.srv.end(nil), nil)
				return
			}
			for k := range qlen {
				t.expectSE(t.dequeue(full, "a software event of the full EVD"), full, k, "the events that filled the EVD")
			}
			// The request now waits on the EVD, or it was refused when
			// it found the EVD full and its requester was told so, as
			// NON_PEER_REJECTED: a full backlog is the provider's
			// refusal, not the consumer's (dat_ep_connect(3DAT)).
			for end := time.Now().Add(eventTimeout); ; time.Sleep(time.Millisecond) {
				var ev api.Event
				if full.Dequeue(&ev) == nil {
					if ev.Number != api.ConnectionRequestEvent {
						t.Fatalf("the EVD of the handed-off request got %s", describe(&ev))
					}
					s := pr.srv.end(nil)
					t.noErr(ev.CR.CR.Accept(s.ep, nil), "CR.Accept of the handed-off request")
					pr.c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the active side")
					return
				}
				if pr.c.conn.Dequeue(&ev) == nil {
					if ev.Number != api.ConnectionNonPeerRejectedEvent {
						t.Fatalf("the requester of the handed-off request got %s, want it to arrive or be refused (NON_PEER_REJECTED)", describe(&ev))
					}
					t.Logf("%s: the request was refused when it found the EVD full", t.ref)
					return
				}
				if time.Now().After(end) {
					t.Fatalf("the handed-off request neither arrived on the EVD nor was refused within %v: it was lost", eventTimeout)
				}
			}
		}},
		{"RETURN VALUES", "a handoff to a conn_qual without a service point is DAT_INVALID_PARAMETER or rejects the requester", func(t *checkT) {
			pr := t.request(nil)
			q := pr.srv.freeQual()
			err := pr.cr.Handoff(q)
			if err != nil {
				t.wantErr(err, api.ErrInvalidParameter, "Handoff to an unused conn_qual")
				return
			}
			pr.c.expectConnEnd("the requester after a handoff to nowhere", api.ConnectionNonPeerRejectedEvent, api.ConnectionPeerRejectedEvent)
		}},
	}},

	{page: "dat_cr_query", checks: []check{
		{"USAGE", "the request reports the requester's IA address", func(t *checkT) {
			pr := t.request(nil)
			cp, err := pr.cr.Query()
			t.noErr(err, "CR.Query")
			if cp.RemoteAddr == nil {
				t.Fatalf("CRParam.RemoteAddr is nil")
			}
		}},
		{"USAGE", "a request on a PSPConsumer PSP carries no local EP", func(t *checkT) {
			pr := t.request(nil)
			cp, err := pr.cr.Query()
			t.noErr(err, "CR.Query")
			if cp.LocalEP != nil {
				t.Fatalf("CRParam.LocalEP is set for a request on a PSPConsumer PSP")
			}
		}},
	}},
}

// badConnect checks that Connect of a new EP to a listening PSP, with the
// timeout and private data args returns for the client node, is
// DAT_INVALID_PARAMETER and leaves the EP UNCONNECTED; what names the call.
func (t *checkT) badConnect(args func(cli *node) (time.Duration, []byte), what string) {
	t.T.Helper()
	srv, cli := t.node(), t.node()
	_, q := srv.listen(api.PSPConsumer)
	c := cli.end(nil)
	timeout, pd := args(cli)
	err := c.ep.Connect(srv.attr.Address, q, timeout, pd, api.QOSBestEffort, api.ConnectDefault)
	t.wantErr(err, api.ErrInvalidParameter, what)
	t.wantState(c.ep, api.EPUnconnected, "after the refused Connect")
}
