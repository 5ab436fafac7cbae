package conformance

import (
	"bytes"
	"fmt"
	"time"

	"github.com/godat/godat/api"
)

// pending is a connection request that has arrived and is not answered.
type pending struct {
	srv, cli *node
	c        *end // the requesting EP, ACTIVE_CONNECTION_PENDING
	psp      api.PSP
	q        api.ConnQual
	ev       api.Event // the CONNECTION_REQUEST event
	cr       api.CR
}

// request opens a server and a client IA, listens on the server and sends a
// connection request with private data pd from a new client EP.
func (t *checkT) request(pd []byte) *pending {
	t.T.Helper()
	srv, cli := t.node(), t.node()
	psp, q := srv.listen(api.PSPConsumer)
	c := cli.end(nil)
	c.connect(srv, q, pd)
	ev := srv.expectCR("the CONNECTION_REQUEST")
	return &pending{srv: srv, cli: cli, c: c, psp: psp, q: q, ev: ev, cr: ev.CR.CR}
}

// accept accepts the request on s with private data pd and waits for
// ESTABLISHED on both sides; it returns the active side's event.
func (pr *pending) accept(s *end, pd []byte) api.Event {
	t := pr.srv.t
	t.T.Helper()
	t.noErr(pr.cr.Accept(s.ep, pd), "CR.Accept")
	est := pr.c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the active side")
	s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
	return est
}

// connected reports whether s is one of the connected states.
func connected(s api.EPState) bool {
	return s == api.EPConnected || s == api.EPConnectedSinglePath || s == api.EPConnectedMultiPath
}

// wantConnected fails unless ep is connected.
func (t *checkT) wantConnected(ep api.EP, what string) {
	t.T.Helper()
	if s := t.state(ep); !connected(s) {
		t.Fatalf("%s: EP state %v, want CONNECTED", what, s)
	}
}

// maxPD returns the provider's private data limit, failing the check if it
// is below the 64 bytes dat_ia_query(3DAT) guarantees.
func (n *node) maxPD() int {
	n.t.T.Helper()
	m := n.pattr.MaxPrivateDataSize
	if why, ok := n.deviation(DeviationPrivateDataMin64); ok && m > 0 {
		n.t.Logf("%s: using MaxPrivateDataSize %d: the provider declares deviation %q: %s", n.t.ref, m, DeviationPrivateDataMin64, why)
		return m
	}
	if m < 64 {
		n.t.Fatalf("ProviderAttr.MaxPrivateDataSize is %d; dat_ia_query(3DAT) says it is at least 64", m)
	}
	return m
}

// unsupportedQOS returns a QOS value the provider does not support.
func (n *node) unsupportedQOS() (api.QOS, bool) {
	for _, q := range []api.QOS{api.QOSHighThroughput, api.QOSLowLatency, api.QOSEconomy, api.QOSPremium} {
		if n.pattr.QOSSupported&q == 0 {
			return q, true
		}
	}
	return 0, false
}

func connGroups() []group {
	return []group{
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
				t.noErr(c.ep.Connect(srv.attr.Address, q, 300*time.Millisecond, nil, api.QOSBestEffort, api.ConnectDefault), "EP.Connect with a 300ms timeout")
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
				srv, cli := t.node(), t.node()
				_, q := srv.listen(api.PSPConsumer)
				c := cli.end(nil)
				err := c.ep.Connect(srv.attr.Address, q, connTimeout, make([]byte, cli.maxPD()+1), api.QOSBestEffort, api.ConnectDefault)
				t.wantErr(err, api.ErrInvalidParameter, "Connect with MaxPrivateDataSize+1 bytes of private data")
				t.wantState(c.ep, api.EPUnconnected, "after the refused Connect")
			}},
			{"PARAMETERS", "a negative timeout other than DAT_TIMEOUT_INFINITE is DAT_INVALID_PARAMETER", func(t *checkT) {
				srv, cli := t.node(), t.node()
				_, q := srv.listen(api.PSPConsumer)
				c := cli.end(nil)
				err := c.ep.Connect(srv.attr.Address, q, -5*time.Millisecond, nil, api.QOSBestEffort, api.ConnectDefault)
				t.wantErr(err, api.ErrInvalidParameter, "Connect with timeout -5ms")
				t.wantState(c.ep, api.EPUnconnected, "after the refused Connect")
			}},
			{"PARAMETERS", "DAT_TIMEOUT_INFINITE is a valid connect timeout", func(t *checkT) {
				srv, cli := t.node(), t.node()
				_, q := srv.listen(api.PSPConsumer)
				c := cli.end(nil)
				t.noErr(c.ep.Connect(srv.attr.Address, q, api.TimeoutInfinite, nil, api.QOSBestEffort, api.ConnectDefault), "Connect with DAT_TIMEOUT_INFINITE")
				ev := srv.expectCR("the CONNECTION_REQUEST")
				s := srv.end(nil)
				t.noErr(ev.CR.CR.Accept(s.ep, nil), "CR.Accept")
				c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED")
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
			{"RETURN VALUES", "an EP of another IA is DAT_INVALID_HANDLE", func(t *checkT) {
				pr := t.request(nil)
				other := pr.cli.end(nil) // the client IA is another IA than the server's
				t.wantErr(pr.cr.Accept(other.ep, nil), api.ErrInvalidHandle, "Accept with an EP of another IA")
				t.wantState(other.ep, api.EPUnconnected, "the foreign EP")
				pr.accept(pr.srv.end(nil), nil)
			}},
			{"DESCRIPTION", "Accept after the requester timed out does not connect (ACCEPT_COMPLETION_ERROR or a refused Accept)", func(t *checkT) {
				srv, cli := t.node(), t.node()
				_, q := srv.listen(api.PSPConsumer)
				c := cli.end(nil)
				t.noErr(c.ep.Connect(srv.attr.Address, q, time.Second, nil, api.QOSBestEffort, api.ConnectDefault), "EP.Connect with a 1s timeout")
				ev := srv.expectCR("the CONNECTION_REQUEST")
				c.expectConn(api.ConnectionTimedOutEvent, "the requester's TIMED_OUT")
				s := srv.end(nil)
				if err := ev.CR.CR.Accept(s.ep, nil); err != nil {
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

		{page: "dat_psp_create", checks: []check{
			{"DESCRIPTION", "a CONNECTION_REQUEST event names the PSP and its conn_qual, and no RSP", func(t *checkT) {
				pr := t.request(nil)
				if pr.ev.CR.PSP != pr.psp {
					t.Errorf("CR arrival data names another PSP")
				}
				if pr.ev.CR.ConnQual != pr.q {
					t.Errorf("CR arrival conn_qual %d, want %d", pr.ev.CR.ConnQual, pr.q)
				}
				if pr.ev.CR.RSP != nil {
					t.Errorf("CR arrival data names an RSP for a PSP request")
				}
				if pr.ev.EVD != pr.srv.cr {
					t.Errorf("Event.EVD is not the PSP's EVD")
				}
			}},
			{"DESCRIPTION", "CreatePSP on a free conn_qual listens there", func(t *checkT) {
				srv, cli := t.node(), t.node()
				q := srv.freeQual()
				psp, err := srv.ia.CreatePSP(q, srv.cr, api.PSPConsumer)
				t.noErr(err, "IA.CreatePSP on a free conn_qual")
				pp, err := psp.Query()
				t.noErr(err, "PSP.Query")
				if pp.ConnQual != q {
					t.Errorf("PSP.Query conn_qual %d, want %d", pp.ConnQual, q)
				}
				t.connectTo(cli, srv, q)
			}},
			{"RETURN VALUES", "a conn_qual in use is DAT_CONN_QUAL_IN_USE", func(t *checkT) {
				n := t.node()
				_, q := n.listen(api.PSPConsumer)
				_, err := n.ia.CreatePSP(q, n.cr, api.PSPConsumer)
				t.wantErr(err, api.ErrConnQualInUse, "CreatePSP on a conn_qual with a PSP")
			}},
			{"DESCRIPTION", "the PSP is persistent: it delivers several connection requests", func(t *checkT) {
				srv, cli := t.node(), t.node()
				_, q := srv.listen(api.PSPConsumer)
				c1, s1 := t.connectTo(cli, srv, q)
				c2, s2 := t.connectTo(cli, srv, q)
				t.works(c1, s1, "the first connection")
				t.works(c2, s2, "the second connection")
			}},
			{"DESCRIPTION", "with PSPProvider the request carries a provider-created EP with no PZ and no EVDs", func(t *checkT) {
				pr := t.providerRequest()
				cp, err := pr.cr.Query()
				t.noErr(err, "CR.Query")
				if cp.LocalEP == nil {
					t.Fatalf("CRParam.LocalEP is nil for a request on a PSPProvider PSP")
				}
				ep, err := cp.LocalEP.Query()
				t.noErr(err, "EP.Query of the provider EP")
				if ep.PZ != nil || ep.RecvEVD != nil || ep.RequestEVD != nil || ep.ConnectEVD != nil {
					t.Errorf("the provider EP has a PZ or EVDs; the page says they are all DAT_HANDLE_NULL")
				}
				if s := t.state(cp.LocalEP); s != api.EPTentativeConnectionPending && s != api.EPUnconfiguredTentative {
					t.Errorf("provider EP state %v, want TENTATIVE_CONNECTION_PENDING (or UNCONFIGURED_TENTATIVE)", s)
				}
			}},
			{"USAGE", "with PSPProvider the consumer sets PZ and EVDs with Modify, Accept(nil) connects the provider EP and it carries data", func(t *checkT) {
				pr := t.providerRequest()
				cp, err := pr.cr.Query()
				t.noErr(err, "CR.Query")
				if cp.LocalEP == nil {
					t.Fatalf("CRParam.LocalEP is nil for a request on a PSPProvider PSP")
				}
				s := &end{node: pr.srv, ep: cp.LocalEP}
				t.noErr(s.ep.Modify(api.EPFieldPZ|api.EPFieldRecvEVD|api.EPFieldRequestEVD|api.EPFieldConnectEVD,
					&api.EPParam{PZ: s.pz, RecvEVD: s.recv, RequestEVD: s.req, ConnectEVD: s.conn}), "EP.Modify of the provider EP")
				pd := pattern(16, 0x99)
				t.noErr(pr.cr.Accept(nil, pd), "CR.Accept(nil)")
				est := pr.c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the active side")
				s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the provider EP")
				if !bytes.Equal(est.Conn.PrivateData, pd) {
					t.Errorf("ESTABLISHED private data %x, want %x", est.Conn.PrivateData, pd)
				}
				t.works(pr.c, s, "client to provider EP")
				t.works(s, pr.c, "provider EP to client")
			}},
			{"DESCRIPTION", "PSPProvider from a provider that never creates EPs is DAT_MODEL_NOT_SUPPORTED", func(t *checkT) {
				n := t.node()
				if n.pattr.EPCreator != api.PSPCreatesEPNever {
					t.Skipf("the provider creates EPs for PSPs (EPCreator %d)", n.pattr.EPCreator)
				}
				_, _, err := n.ia.CreatePSPAny(n.cr, api.PSPProvider)
				t.wantErr(err, api.ErrModelNotSupported, "CreatePSPAny with PSPProvider")
			}},
			{"RETURN VALUES", "a nil EVD is DAT_INVALID_HANDLE", func(t *checkT) {
				n := t.node()
				_, _, err := n.ia.CreatePSPAny(nil, api.PSPConsumer)
				t.wantErr(err, api.ErrInvalidHandle, "CreatePSPAny(nil EVD)")
				_, err = n.ia.CreatePSP(n.freeQual(), nil, api.PSPConsumer)
				t.wantErr(err, api.ErrInvalidHandle, "CreatePSP(nil EVD)")
			}},
			{"RETURN VALUES", "an EVD of another IA is DAT_INVALID_HANDLE", func(t *checkT) {
				a, b := t.node(), t.node()
				_, _, err := a.ia.CreatePSPAny(b.cr, api.PSPConsumer)
				t.wantErr(err, api.ErrInvalidHandle, "CreatePSPAny with an EVD of another IA")
			}},
			{"PARAMETERS", "an EVD that does not take connection requests is refused", func(t *checkT) {
				n := t.node()
				_, _, err := n.ia.CreatePSPAny(n.recv, api.PSPConsumer)
				t.wantOneOf(err, "CreatePSPAny with a DTO-only EVD", api.ErrInvalidHandle, api.ErrInvalidParameter)
			}},
			{"DESCRIPTION", "Query reports the IA, conn_qual, EVD and flags", func(t *checkT) {
				n := t.node()
				psp, q := n.listen(api.PSPConsumer)
				pp, err := psp.Query()
				t.noErr(err, "PSP.Query")
				if pp.ConnQual != q || pp.EVD != n.cr || pp.Flags != api.PSPConsumer || pp.IA != n.ia {
					t.Fatalf("PSP.Query = {conn_qual %d, flags %d, same EVD %v, same IA %v}, want {%d, %d, true, true}",
						pp.ConnQual, pp.Flags, pp.EVD == n.cr, pp.IA == n.ia, q, api.PSPConsumer)
				}
			}},
		}},

		{page: "dat_psp_create_any", checks: []check{
			{"DESCRIPTION", "each PSP gets a distinct unused conn_qual, which Query reports", func(t *checkT) {
				n := t.node()
				seen := map[api.ConnQual]bool{}
				for range 4 {
					psp, q := n.listen(api.PSPConsumer)
					if seen[q] {
						t.Fatalf("conn_qual %d handed out twice", q)
					}
					seen[q] = true
					pp, err := psp.Query()
					t.noErr(err, "PSP.Query")
					if pp.ConnQual != q {
						t.Fatalf("PSP.Query conn_qual %d, CreatePSPAny returned %d", pp.ConnQual, q)
					}
				}
			}},
		}},

		{page: "dat_psp_free", checks: []check{
			{"DESCRIPTION", "requests for a freed PSP's conn_qual are rejected as if nobody listened (NON_PEER_REJECTED)", func(t *checkT) {
				srv, cli := t.node(), t.node()
				psp, q := srv.listen(api.PSPConsumer)
				t.noErr(psp.Free(), "PSP.Free")
				c := cli.end(nil)
				c.connect(srv, q, nil)
				c.expectConn(api.ConnectionNonPeerRejectedEvent, "connecting to a freed PSP")
			}},
			{"DESCRIPTION", "freeing the PSP does not affect a request it already delivered", func(t *checkT) {
				pr := t.request(nil)
				t.noErr(pr.psp.Free(), "PSP.Free")
				s := pr.srv.end(nil)
				pr.accept(s, nil)
				t.works(pr.c, s, "the connection accepted after PSP.Free")
			}},
			{"DESCRIPTION", "every call on a freed PSP is DAT_INVALID_HANDLE", freedPSP},
		}},

		{page: "dat_rsp_create", checks: []check{
			{"USAGE", "CreateRSP moves the EP to RESERVED", func(t *checkT) {
				n := t.node()
				e := n.end(nil)
				_, err := n.ia.CreateRSP(n.freeQual(), e.ep, n.cr)
				t.noErr(err, "IA.CreateRSP")
				t.wantState(e.ep, api.EPReserved, "the RSP's EP")
			}},
			{"USAGE", "a request on the RSP names the RSP and the reserved EP, which becomes PASSIVE_CONNECTION_PENDING", func(t *checkT) {
				r := t.rspRequest()
				if r.ev.CR.RSP != r.rsp || r.ev.CR.PSP != nil {
					t.Errorf("CR arrival data does not name the RSP (and only it)")
				}
				cp, err := r.ev.CR.CR.Query()
				t.noErr(err, "CR.Query")
				if cp.LocalEP != r.s.ep {
					t.Errorf("CRParam.LocalEP is not the reserved EP")
				}
				t.wantState(r.s.ep, api.EPPassiveConnectionPending, "the reserved EP once its request arrived")
			}},
			{"USAGE", "Accept(nil) connects the reserved EP", func(t *checkT) {
				r := t.rspRequest()
				t.noErr(r.ev.CR.CR.Accept(nil, nil), "CR.Accept(nil)")
				r.c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the active side")
				r.s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the reserved EP")
				t.works(r.c, r.s, "the RSP connection")
			}},
			{"DESCRIPTION", "an RSP delivers at most one request: the next requester gets NON_PEER_REJECTED", func(t *checkT) {
				r := t.rspRequest()
				c2 := r.cli.end(nil)
				c2.connect(r.srv, r.q, nil)
				c2.expectConn(api.ConnectionNonPeerRejectedEvent, "a second request on a used RSP")
			}},
			{"USAGE", "rejecting the request returns the reserved EP to UNCONNECTED", func(t *checkT) {
				r := t.rspRequest()
				t.noErr(r.ev.CR.CR.Reject(nil), "CR.Reject")
				r.c.expectConn(api.ConnectionPeerRejectedEvent, "the rejection")
				t.wantState(r.s.ep, api.EPUnconnected, "the reserved EP after Reject")
			}},
			{"RETURN VALUES", "an EP that is not UNCONNECTED is DAT_INVALID_STATE", func(t *checkT) {
				n := t.node()
				e := n.end(nil)
				_, err := n.ia.CreateRSP(n.freeQual(), e.ep, n.cr)
				t.noErr(err, "IA.CreateRSP")
				_, err = n.ia.CreateRSP(n.freeQual(), e.ep, n.cr)
				t.wantErr(err, api.ErrInvalidState, "CreateRSP with an EP already RESERVED")
			}},
			{"RETURN VALUES", "a conn_qual in use is DAT_CONN_QUAL_IN_USE", func(t *checkT) {
				n := t.node()
				_, q := n.listen(api.PSPConsumer)
				e := n.end(nil)
				_, err := n.ia.CreateRSP(q, e.ep, n.cr)
				t.wantErr(err, api.ErrConnQualInUse, "CreateRSP on a conn_qual with a PSP")
				t.wantState(e.ep, api.EPUnconnected, "the EP of the refused CreateRSP")
			}},
			{"RETURN VALUES", "a nil EVD is DAT_INVALID_HANDLE", func(t *checkT) {
				n := t.node()
				e := n.end(nil)
				_, err := n.ia.CreateRSP(n.freeQual(), e.ep, nil)
				t.wantErr(err, api.ErrInvalidHandle, "CreateRSP(nil EVD)")
			}},
			{"DESCRIPTION", "Query reports conn_qual, EVD and EP", func(t *checkT) {
				n := t.node()
				e := n.end(nil)
				q := n.freeQual()
				rsp, err := n.ia.CreateRSP(q, e.ep, n.cr)
				t.noErr(err, "IA.CreateRSP")
				rp, err := rsp.Query()
				t.noErr(err, "RSP.Query")
				if rp.ConnQual != q || rp.EVD != n.cr || rp.EP != e.ep || rp.IA != n.ia {
					t.Fatalf("RSP.Query = {conn_qual %d, same EVD %v, same EP %v, same IA %v}, want {%d, true, true, true}",
						rp.ConnQual, rp.EVD == n.cr, rp.EP == e.ep, rp.IA == n.ia, q)
				}
			}},
		}},

		{page: "dat_rsp_free", checks: []check{
			{"DESCRIPTION", "the reserved EP reverts to the consumer (UNCONNECTED)", func(t *checkT) {
				n := t.node()
				e := n.end(nil)
				rsp, err := n.ia.CreateRSP(n.freeQual(), e.ep, n.cr)
				t.noErr(err, "IA.CreateRSP")
				t.noErr(rsp.Free(), "RSP.Free")
				t.wantState(e.ep, api.EPUnconnected, "the EP after RSP.Free")
			}},
			{"DESCRIPTION", "requests for a freed RSP's conn_qual are rejected as if nobody listened", func(t *checkT) {
				srv, cli := t.node(), t.node()
				e := srv.end(nil)
				q := srv.freeQual()
				rsp, err := srv.ia.CreateRSP(q, e.ep, srv.cr)
				t.noErr(err, "IA.CreateRSP")
				t.noErr(rsp.Free(), "RSP.Free")
				c := cli.end(nil)
				c.connect(srv, q, nil)
				c.expectConn(api.ConnectionNonPeerRejectedEvent, "connecting to a freed RSP")
			}},
			{"DESCRIPTION", "every call on a freed RSP is DAT_INVALID_HANDLE", freedRSP},
		}},

		{page: "dat_ep_disconnect", checks: []check{
			{"DESCRIPTION", "a graceful disconnect gives DISCONNECTED on both sides and both EPs are DISCONNECTED", func(t *checkT) {
				p := t.pair()
				t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful)")
				p.cli.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED on the disconnecting side")
				p.srv.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED on the peer")
				t.eventuallyState(p.cli.ep, "the disconnecting EP", api.EPDisconnected)
				t.eventuallyState(p.srv.ep, "the peer EP", api.EPDisconnected)
			}},
			{"DESCRIPTION", "an abrupt disconnect gives DISCONNECTED locally, ends the peer's connection, and both EPs are DISCONNECTED", func(t *checkT) {
				p := t.pair()
				t.noErr(p.srv.ep.Disconnect(api.CloseAbrupt), "EP.Disconnect(abrupt)")
				p.srv.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED on the disconnecting side")
				p.cli.expectConnEnd("the peer of an abrupt disconnect", api.ConnectionDisconnectedEvent, api.ConnectionBrokenEvent)
				t.eventuallyState(p.srv.ep, "the disconnecting EP", api.EPDisconnected)
				t.eventuallyState(p.cli.ep, "the peer EP", api.EPDisconnected)
			}},
			{"DESCRIPTION", "posted receives complete exactly once with FLUSHED, in post order, when the EP leaves CONNECTED", func(t *checkT) {
				p := t.pair()
				r := p.srv.region(256, api.MemPrivLocalWrite|api.MemPrivLocalRead)
				for i := range 3 {
					p.srv.postRecv(r, i*64, 64, api.Cookie(100+i))
				}
				t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful)")
				for i := range 3 {
					p.srv.expectRecv(api.Cookie(100+i), api.DTOErrFlushed, "a flushed receive")
				}
				p.srv.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED on the peer")
				t.eventuallyState(p.srv.ep, "the peer EP", api.EPDisconnected)
				// A marker: flushed at once, and the next completion, so none
				// of the three came twice.
				p.srv.postRecv(r, 0, 64, 999)
				p.srv.expectRecv(999, api.DTOErrFlushed, "the marker receive")
			}},
			{"DESCRIPTION", "a graceful disconnect lets outstanding sends complete successfully first", func(t *checkT) {
				p := t.pair()
				rr := p.srv.region(64, api.MemPrivLocalWrite)
				sr := p.cli.region(64, api.MemPrivLocalRead)
				want := sr.fill(0, 64, 0x3D)
				p.srv.postRecv(rr, 0, 64, 1)
				p.cli.postSend(sr, 0, 64, 2)
				t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful)")
				p.cli.expectReq(2, api.DTOSuccess, "the send posted before the graceful disconnect")
				p.srv.expectRecv(1, api.DTOSuccess, "the receive of that send")
				if !bytes.Equal(rr.b[:64], want) {
					t.Fatalf("the peer received other bytes than sent")
				}
			}},
			{"DESCRIPTION", "a graceful disconnect with several sends of various sizes outstanding lets every one complete successfully, and the peer receives them all", func(t *checkT) {
				srv, cli := t.serverNode(), t.node()
				x := t.newExchange(cli, srv)
				for round := range disconnectRounds {
					p := x.start(round)
					t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful) with the sends outstanding")
					x.sendsComplete(p, "a send outstanding at the sender's graceful disconnect")
					x.received(p, round)
					x.finish(p)
				}
			}},
			{"DESCRIPTION", "sends whose receives the peer completed complete successfully, not FLUSHED, when the peer then disconnects gracefully", func(t *checkT) {
				// The receiver's completions say the data arrived: the
				// sends delivered it, and the disconnect that follows
				// must not turn them into flushed ones.
				srv, cli := t.serverNode(), t.node()
				x := t.newExchange(cli, srv)
				for round := range disconnectRounds {
					p := x.start(round)
					x.received(p, round)
					t.noErr(p.srv.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful) by the receiver")
					x.sendsComplete(p, "a send the peer received before it disconnected gracefully")
					x.finish(p)
				}
			}},
			{"DESCRIPTION", "a send still waiting for the peer's receive at a graceful disconnect keeps the EP DISCONNECT_PENDING, which refuses new sends; it completes once the peer posts a receive, and then both sides are DISCONNECTED", func(t *checkT) {
				p := t.pair()
				sr := p.cli.region(64, api.MemPrivLocalRead)
				want := sr.fill(0, 64, 0x3E)
				p.cli.postSend(sr, 0, 64, 1) // no receive at the peer: it waits
				t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful) with the send waiting")
				t.wantState(p.cli.ep, api.EPDisconnectPending, "the EP whose send waits after a graceful disconnect")
				t.wantErr(p.cli.ep.PostSend(sr.iov(0, 8), 2, api.CompletionDefault), api.ErrInvalidState, "PostSend in DISCONNECT_PENDING")
				rr := p.srv.region(64, api.MemPrivLocalWrite|api.MemPrivLocalRead)
				p.srv.postRecv(rr, 0, 64, 3)
				ev := p.cli.expectReq(1, api.DTOSuccess, "the send that waited through the graceful disconnect")
				if ev.DTO.Length != 64 {
					t.Errorf("the send's completion says %d bytes, want 64", ev.DTO.Length)
				}
				p.srv.expectRecv(3, api.DTOSuccess, "its receive")
				if !bytes.Equal(rr.b[:64], want) {
					t.Fatalf("the peer received other bytes than sent")
				}
				p.cli.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED once the send completed")
				p.srv.expectConnEnd("the peer's end of the connection", api.ConnectionDisconnectedEvent)
			}},
			{"DESCRIPTION", "on an EVD shared by all streams, the completions of in-progress DTOs precede DISCONNECTED", func(t *checkT) {
				srv, cli := t.node(), t.node()
				all := cli.evd(api.EVDDTO | api.EVDConnection | api.EVDRMRBind)
				ep, err := cli.ia.CreateEP(cli.pz, all, all, all, nil)
				t.noErr(err, "IA.CreateEP with one EVD for every stream")
				c := &end{node: cli, ep: ep}
				c.req, c.recv, c.conn = all, all, all
				_, q := srv.listen(api.PSPConsumer)
				c.connect(srv, q, nil)
				ev := srv.expectCR("the CONNECTION_REQUEST")
				s := srv.end(nil)
				t.noErr(ev.CR.CR.Accept(s.ep, nil), "CR.Accept")
				c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the shared EVD")
				s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
				rr := s.region(3*32, api.MemPrivLocalWrite)
				sr := c.region(32, api.MemPrivLocalRead)
				for i := range 3 {
					s.postRecv(rr, i*32, 32, api.Cookie(i))
				}
				for i := range 3 {
					c.postSend(sr, 0, 32, api.Cookie(10+i))
				}
				t.noErr(c.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful)")
				for i := range 3 {
					c.expectReq(api.Cookie(10+i), api.DTOSuccess, "a send completion before DISCONNECTED")
				}
				c.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED after the send completions")
			}},
			{"DESCRIPTION", "disconnecting a DISCONNECTED EP is a no-op", func(t *checkT) {
				p := t.pair()
				t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful)")
				p.cli.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED")
				t.eventuallyState(p.cli.ep, "the disconnected EP", api.EPDisconnected)
				t.noErr(p.cli.ep.Disconnect(api.CloseAbrupt), "EP.Disconnect on a DISCONNECTED EP")
				t.wantState(p.cli.ep, api.EPDisconnected, "after the second Disconnect")
			}},
			{"DESCRIPTION", "disconnecting an UNCONNECTED EP is DAT_INVALID_STATE", func(t *checkT) {
				e := t.node().end(nil)
				t.wantErr(e.ep.Disconnect(api.CloseAbrupt), api.ErrInvalidState, "Disconnect on an UNCONNECTED EP")
				t.wantState(e.ep, api.EPUnconnected, "after the refused Disconnect")
			}},
			{"DESCRIPTION", "disconnecting during ACTIVE_CONNECTION_PENDING aborts to DISCONNECTED and flushes preposted receives", func(t *checkT) {
				srv, cli := t.node(), t.node()
				_, q := srv.listen(api.PSPConsumer)
				c := cli.end(nil)
				r := cli.region(64, api.MemPrivLocalWrite)
				c.postRecv(r, 0, 64, 77)
				c.connect(srv, q, nil)
				t.noErr(c.ep.Disconnect(api.CloseAbrupt), "EP.Disconnect during ACTIVE_CONNECTION_PENDING")
				t.eventuallyState(c.ep, "the aborted EP", api.EPDisconnected)
				c.expectRecv(77, api.DTOErrFlushed, "the preposted receive")
			}},
		}},

		{page: "dat_ep_reset", checks: []check{
			{"DESCRIPTION", "Reset moves a DISCONNECTED EP to UNCONNECTED, from where it connects again", func(t *checkT) {
				p := t.pair()
				t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect")
				p.cli.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED")
				p.srv.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED on the peer")
				t.eventuallyState(p.cli.ep, "the disconnected EP", api.EPDisconnected)
				t.noErr(p.cli.ep.Reset(), "EP.Reset")
				t.wantState(p.cli.ep, api.EPUnconnected, "after Reset")
				p.cli.connect(p.srv.node, p.q, nil)
				ev := p.srv.expectCR("the second CONNECTION_REQUEST")
				s := p.srv.node.end(nil)
				t.noErr(ev.CR.CR.Accept(s.ep, nil), "CR.Accept")
				p.cli.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED of the reset EP")
				s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
				t.works(p.cli, s, "the new connection of the reset EP")
			}},
			{"RETURN VALUES", "Reset of a CONNECTED EP is DAT_INVALID_STATE and changes nothing", func(t *checkT) {
				p := t.pair()
				t.wantErr(p.cli.ep.Reset(), api.ErrInvalidState, "Reset of a CONNECTED EP")
				t.wantConnected(p.cli.ep, "after the refused Reset")
				t.works(p.cli, p.srv, "after the refused Reset")
			}},
			{"DESCRIPTION", "Reset of an UNCONNECTED EP is a no-op that keeps preposted receives", func(t *checkT) {
				srv, cli := t.node(), t.node()
				c := cli.end(nil)
				r := cli.region(64, api.MemPrivLocalWrite)
				c.postRecv(r, 0, 64, 5)
				t.noErr(c.ep.Reset(), "EP.Reset of an UNCONNECTED EP")
				t.wantState(c.ep, api.EPUnconnected, "after Reset")
				_, q := srv.listen(api.PSPConsumer)
				c.connect(srv, q, nil)
				ev := srv.expectCR("the CONNECTION_REQUEST")
				s := srv.end(nil)
				t.noErr(ev.CR.CR.Accept(s.ep, nil), "CR.Accept")
				c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED")
				s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
				sr := s.region(16, api.MemPrivLocalRead)
				want := sr.fill(0, 16, 0x42)
				s.postSend(sr, 0, 16, 6)
				s.expectReq(6, api.DTOSuccess, "the send")
				ev = c.expectRecv(5, api.DTOSuccess, "the receive posted before Reset")
				if ev.DTO.Length != 16 || !bytes.Equal(r.b[:16], want) {
					t.Fatalf("the kept receive got %d bytes %x, want %x", ev.DTO.Length, r.b[:16], want)
				}
			}},
		}},

		{page: "dat_ep_dup_connect", checks: []check{
			{"DESCRIPTION", "DupConnect reaches the same remote service point with its private data, and accepting connects", func(t *checkT) {
				p := t.pair()
				d := p.cli.node.end(nil)
				pd := pattern(20, 0x0D)
				t.noErr(d.ep.DupConnect(p.cli.ep, connTimeout, pd, api.QOSBestEffort), "EP.DupConnect")
				ev := p.srv.expectCR("the request of DupConnect")
				if ev.CR.PSP != p.psp {
					t.Errorf("the DupConnect request arrived on another service point")
				}
				cp, err := ev.CR.CR.Query()
				t.noErr(err, "CR.Query")
				if !bytes.Equal(cp.PrivateData, pd) {
					t.Errorf("DupConnect private data %x, want %x", cp.PrivateData, pd)
				}
				s := p.srv.node.end(nil)
				t.noErr(ev.CR.CR.Accept(s.ep, nil), "CR.Accept")
				d.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED of the duplicate")
				s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
				t.works(d, s, "the duplicate connection")
			}},
			{"RETURN VALUES", "a dup EP that is not connected is DAT_INVALID_STATE", func(t *checkT) {
				n := t.node()
				d, u := n.end(nil), n.end(nil)
				t.wantErr(d.ep.DupConnect(u.ep, connTimeout, nil, api.QOSBestEffort), api.ErrInvalidState, "DupConnect from an UNCONNECTED EP")
				t.wantState(d.ep, api.EPUnconnected, "after the refused DupConnect")
			}},
			{"DESCRIPTION", "private data longer than MaxPrivateDataSize is DAT_INVALID_PARAMETER", func(t *checkT) {
				p := t.pair()
				d := p.cli.node.end(nil)
				err := d.ep.DupConnect(p.cli.ep, connTimeout, make([]byte, p.cli.maxPD()+1), api.QOSBestEffort)
				t.wantErr(err, api.ErrInvalidParameter, "DupConnect with MaxPrivateDataSize+1 bytes")
			}},
		}},

		{page: "dat_ep_free", checks: []check{
			{"DESCRIPTION", "freeing a connected EP ends the peer's connection (DISCONNECTED or BROKEN)", func(t *checkT) {
				p := t.pair()
				t.noErr(p.cli.ep.Free(), "EP.Free of a connected EP")
				p.srv.expectConnEnd("the peer of a freed EP", api.ConnectionDisconnectedEvent, api.ConnectionBrokenEvent)
				t.eventuallyState(p.srv.ep, "the peer EP", api.EPDisconnected)
			}},
			{"RETURN VALUES", "freeing a RESERVED EP is DAT_INVALID_STATE", func(t *checkT) {
				n := t.node()
				e := n.end(nil)
				_, err := n.ia.CreateRSP(n.freeQual(), e.ep, n.cr)
				t.noErr(err, "IA.CreateRSP")
				t.wantErr(e.ep.Free(), api.ErrInvalidState, "EP.Free in RESERVED")
				t.wantState(e.ep, api.EPReserved, "after the refused Free")
			}},
			{"RETURN VALUES", "freeing an EP in PASSIVE_CONNECTION_PENDING is DAT_INVALID_STATE", func(t *checkT) {
				r := t.rspRequest()
				t.wantErr(r.s.ep.Free(), api.ErrInvalidState, "EP.Free in PASSIVE_CONNECTION_PENDING")
				t.wantState(r.s.ep, api.EPPassiveConnectionPending, "after the refused Free")
			}},
			{"DESCRIPTION", "every call on a freed EP, and every call that passes it, is DAT_INVALID_HANDLE", freedEP},
		}},

		{page: "dat_ep_get_status", checks: []check{
			{"DESCRIPTION", "recv_idle is false while a receive is posted and true once it completed", func(t *checkT) {
				srv, cli := t.node(), t.node()
				c := cli.end(nil)
				r := cli.region(64, api.MemPrivLocalWrite)
				_, idle, _, err := c.ep.GetStatus()
				t.noErr(err, "EP.GetStatus")
				if !idle {
					t.Fatalf("recv_idle is false on a new EP")
				}
				c.postRecv(r, 0, 64, 1)
				_, idle, _, err = c.ep.GetStatus()
				t.noErr(err, "EP.GetStatus")
				if idle {
					t.Fatalf("recv_idle is true with a receive posted")
				}
				_, q := srv.listen(api.PSPConsumer)
				c.connect(srv, q, nil)
				ev := srv.expectCR("the CONNECTION_REQUEST")
				s := srv.end(nil)
				t.noErr(ev.CR.CR.Accept(s.ep, nil), "CR.Accept")
				c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED")
				s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
				sr := s.region(8, api.MemPrivLocalRead)
				s.postSend(sr, 0, 8, 2)
				s.expectReq(2, api.DTOSuccess, "the send")
				c.expectRecv(1, api.DTOSuccess, "the receive")
				_, idle, _, err = c.ep.GetStatus()
				t.noErr(err, "EP.GetStatus")
				if !idle {
					t.Fatalf("recv_idle is false after the only receive completed")
				}
			}},
		}},
	}
}

// rsp is a request that arrived on an RSP.
type rsp struct {
	srv, cli *node
	s        *end // the reserved EP
	c        *end // the requester
	rsp      api.RSP
	q        api.ConnQual
	ev       api.Event
}

// rspRequest reserves a server EP on an RSP and sends it a request.
func (t *checkT) rspRequest() *rsp {
	t.T.Helper()
	srv, cli := t.node(), t.node()
	r := &rsp{srv: srv, cli: cli, s: srv.end(nil), q: srv.freeQual()}
	var err error
	r.rsp, err = srv.ia.CreateRSP(r.q, r.s.ep, srv.cr)
	t.noErr(err, "IA.CreateRSP")
	r.c = cli.end(nil)
	r.c.connect(srv, r.q, nil)
	r.ev = srv.expectCR("the CONNECTION_REQUEST on the RSP")
	return r
}

// providerRequest sends a request to a PSPProvider PSP, skipping the check
// if the provider never creates EPs.
func (t *checkT) providerRequest() *pending {
	t.T.Helper()
	srv, cli := t.node(), t.node()
	if srv.pattr.EPCreator == api.PSPCreatesEPNever {
		t.Skipf("the provider never creates EPs for PSPs (ProviderAttr.EPCreator)")
	}
	psp, q, err := srv.ia.CreatePSPAny(srv.cr, api.PSPProvider)
	t.noErr(err, "IA.CreatePSPAny(PSPProvider)")
	c := cli.end(nil)
	c.connect(srv, q, nil)
	ev := srv.expectCR("the CONNECTION_REQUEST on a PSPProvider PSP")
	return &pending{srv: srv, cli: cli, c: c, psp: psp, q: q, ev: ev, cr: ev.CR.CR}
}

// disconnectSizes are the message sizes of the graceful disconnect checks
// with several sends: from a byte to a few pages, 0x2000 (the size of a
// DAPL transaction test's messages) among them.
var disconnectSizes = []int{0x2000, 64, 0x2000, 1, 0x3001, 0x2000}

// disconnectRounds is how many connections those checks make in turn: the
// faults they look for (a disconnect that overtakes the news of data the
// peer already has) show in some rounds only.
const disconnectRounds = 16

// exchange is the setup of those checks: a server and a client node, and
// regions for one round's messages (disconnectSizes, back to back).
type exchange struct {
	t        *checkT
	cli, srv *node
	sr, rr   *region
	total    int    // the bytes of one round
	sent     []byte // this round's data
}

// newExchange registers the regions of an exchange between cli and srv.
func (t *checkT) newExchange(cli, srv *node) *exchange {
	t.T.Helper()
	total := 0
	for _, n := range disconnectSizes {
		total += n
	}
	return &exchange{t: t, cli: cli, srv: srv, total: total,
		sr: cli.region(total, api.MemPrivLocalRead|api.MemPrivLocalWrite),
		rr: srv.region(total, api.MemPrivLocalRead|api.MemPrivLocalWrite)}
}

// start connects a new pair, posts a receive on the server for each of
// disconnectSizes and then the matching sends on the client, receive k
// with cookie k and send k with cookie 100+k.
func (x *exchange) start(round int) *pair {
	t := x.t
	t.T.Helper()
	p := t.pairWith(pairCfg{cli: x.cli, srv: x.srv})
	clear(x.rr.b)
	x.sent = x.sr.fill(0, x.total, byte(round))
	off := 0
	for k, n := range disconnectSizes {
		p.srv.postRecv(x.rr, off, n, api.Cookie(k))
		off += n
	}
	off = 0
	for k, n := range disconnectSizes {
		p.cli.postSend(x.sr, off, n, api.Cookie(100+k))
		off += n
	}
	return p
}

// sendsComplete waits for the client's send completions, in post order,
// each a success with its length.
func (x *exchange) sendsComplete(p *pair, what string) {
	x.t.T.Helper()
	for k, n := range disconnectSizes {
		ev := p.cli.expectReq(api.Cookie(100+k), api.DTOSuccess, fmt.Sprintf("%s (%#x bytes)", what, n))
		if int(ev.DTO.Length) != n {
			x.t.Fatalf("%s: the completion of a send of %#x bytes says %#x", what, n, ev.DTO.Length)
		}
	}
}

// received waits for the server's receive completions, in post order, each
// a success with the length sent, and checks the bytes that arrived.
func (x *exchange) received(p *pair, round int) {
	t := x.t
	t.T.Helper()
	for k, n := range disconnectSizes {
		ev := p.srv.expectRecv(api.Cookie(k), api.DTOSuccess, fmt.Sprintf("the receive of a %#x-byte send", n))
		if int(ev.DTO.Length) != n {
			t.Fatalf("round %d: the receive of a %#x-byte send completed with length %#x", round, n, ev.DTO.Length)
		}
	}
	if !bytes.Equal(x.rr.b[:len(x.sent)], x.sent) {
		t.Fatalf("round %d: the receiver has other bytes than were sent", round)
	}
}

// finish waits for DISCONNECTED on both ends and frees the pair's EPs and
// PSP.
func (x *exchange) finish(p *pair) {
	t := x.t
	t.T.Helper()
	p.cli.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED on the client")
	p.srv.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED on the server")
	t.noErr(p.cli.ep.Free(), "EP.Free of the client EP")
	t.noErr(p.srv.ep.Free(), "EP.Free of the server EP")
	t.noErr(p.psp.Free(), "PSP.Free")
}
