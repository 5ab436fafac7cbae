package loopback

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/godat/godat/api"
)

func TestConnectAcceptCarriesPrivateDataAndAddresses(t *testing.T) {
	a, b := newNode(t), newNode(t)
	ea, eb := a.ep(nil), b.ep(nil)
	psp, err := b.ia.CreatePSP(4242, b.connEVD, api.PSPConsumer)
	must(t, err, "CreatePSP")
	must(t, ea.Connect(b.addr, 4242, api.TimeoutInfinite, []byte("hello"), api.QOSBestEffort, 0), "Connect")
	wantState(t, ea, api.EPActiveConnectionPending)

	ev := b.expect(b.connEVD, api.ConnectionRequestEvent)
	if ev.CR.ConnQual != 4242 || ev.CR.PSP == nil || ev.CR.RSP != nil || ev.CR.LocalAddr != b.addr {
		t.Fatalf("CR arrival %+v", ev.CR)
	}
	crp, err := ev.CR.CR.Query()
	must(t, err, "CR.Query")
	if string(crp.PrivateData) != "hello" || crp.RemoteAddr != a.addr || crp.LocalEP != nil {
		t.Fatalf("CR param %+v", crp)
	}
	must(t, ev.CR.CR.Accept(eb, []byte("welcome")), "Accept")
	if _, err := ev.CR.CR.Query(); !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("CR.Query after Accept: %v", err)
	}
	eve := b.expect(b.connEVD, api.ConnectionEstablishedEvent)
	if eve.Conn.EP != eb || len(eve.Conn.PrivateData) != 0 {
		t.Fatalf("passive ESTABLISHED %+v", eve.Conn)
	}
	eva := a.expect(a.connEVD, api.ConnectionEstablishedEvent)
	if eva.Conn.EP != ea || string(eva.Conn.PrivateData) != "welcome" {
		t.Fatalf("active ESTABLISHED %+v", eva.Conn)
	}
	wantState(t, ea, api.EPConnected)
	wantState(t, eb, api.EPConnected)

	pa, err := ea.Query()
	must(t, err, "Query")
	pb, err := eb.Query()
	must(t, err, "Query")
	if pa.RemoteAddr != b.addr || pa.RemotePortQual != 4242 || pa.LocalAddr != a.addr {
		t.Fatalf("active params %+v", pa)
	}
	if pb.RemoteAddr != a.addr || pb.RemotePortQual != pa.LocalPortQual || pb.LocalPortQual != 4242 || pb.RemotePortQual != crp.RemotePortQual {
		t.Fatalf("passive params %+v (active port %d)", pb, pa.LocalPortQual)
	}
	must(t, psp.Free(), "PSP.Free")
}

func TestSameIAAndSameNameIAsConnect(t *testing.T) {
	a := newNode(t)
	connect(t, a, a, nil) // both ends on one IA
	b := newNode(t)       // a second IA under the same name
	if a.addr == b.addr || a.addr.Name != b.addr.Name {
		t.Fatalf("addresses %v and %v", a.addr, b.addr)
	}
	connect(t, a, b, nil)
	got, err := ParseAddr(a.addr.String())
	if err != nil || got != a.addr {
		t.Fatalf("ParseAddr(%q) = %v, %v", a.addr.String(), got, err)
	}
	if _, err := ParseAddr("nohash"); !errors.Is(err, api.ErrInvalidAddress) {
		t.Fatalf("ParseAddr without #: %v", err)
	}
}

func TestConnQualsAreProcessWide(t *testing.T) {
	a, b := newNode(t), newNode(t)
	psp, q, err := a.ia.CreatePSPAny(a.connEVD, api.PSPConsumer)
	must(t, err, "CreatePSPAny")
	if _, err := b.ia.CreatePSP(q, b.connEVD, api.PSPConsumer); !errors.Is(err, api.ErrConnQualInUse) {
		t.Fatalf("CreatePSP on a qualifier another IA listens on: %v", err)
	}
	q2 := b.listen(api.PSPConsumer)
	if q2 == q {
		t.Fatal("CreatePSPAny returned a qualifier in use")
	}
	// Any open IA's address reaches the listener, as ports on one host.
	ep := b.ep(nil)
	must(t, ep.Connect(b.addr, q, api.TimeoutInfinite, nil, 0, 0), "Connect")
	ev := a.expect(a.connEVD, api.ConnectionRequestEvent)
	must(t, ev.CR.CR.Reject([]byte("no")), "Reject")
	r := b.expect(b.connEVD, api.ConnectionPeerRejectedEvent)
	if string(r.Conn.PrivateData) != "no" {
		t.Fatalf("reject private data %q", r.Conn.PrivateData)
	}
	wantState(t, ep, api.EPDisconnected)
	must(t, psp.Free(), "Free")
}

type otherAddr struct{}

func (otherAddr) Network() string { return "tcp" }
func (otherAddr) String() string  { return "127.0.0.1:1" }

func TestConnectFailures(t *testing.T) {
	a := newNode(t)
	for _, tc := range []struct {
		name string
		addr net.Addr
		q    api.ConnQual
		want api.EventNumber
	}{
		{"no open IA", Addr{Name: "gone", Instance: 1 << 60}, 1, api.ConnectionUnreachableEvent},
		{"nobody listens", a.addr, 0xDEAD, api.ConnectionNonPeerRejectedEvent},
		{"pointer address", &Addr{Name: "gone", Instance: 1 << 60}, 1, api.ConnectionUnreachableEvent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := a.ep(nil)
			r := a.region(64, api.MemPrivAll)
			must(t, ep.PostRecv(r.iov(0, 64), 7, 0), "PostRecv")
			must(t, ep.Connect(tc.addr, tc.q, api.TimeoutInfinite, nil, 0, 0), "Connect")
			a.expectDTO(a.recv, 7, api.DTOErrFlushed)
			a.expect(a.connEVD, tc.want)
			wantState(t, ep, api.EPDisconnected)
			must(t, ep.Reset(), "Reset")
			wantState(t, ep, api.EPUnconnected)
		})
	}
	ep := a.ep(nil)
	if err := ep.Connect(otherAddr{}, 1, api.TimeoutInfinite, nil, 0, 0); !errors.Is(err, api.ErrInvalidAddress) {
		t.Fatalf("Connect to a tcp address: %v", err)
	}
	if err := ep.Connect(a.addr, 1, api.TimeoutInfinite, nil, 0x100, 0); !errors.Is(err, api.ErrModelNotSupported) {
		t.Fatalf("Connect with unknown QOS: %v", err)
	}
	if err := ep.Connect(a.addr, 1, api.TimeoutInfinite, nil, 0, api.ConnectMultipathRequired); !errors.Is(err, api.ErrModelNotSupported) {
		t.Fatalf("Connect requiring multipath: %v", err)
	}
	wantState(t, ep, api.EPUnconnected)
}

func TestTimeoutThenAcceptCompletionError(t *testing.T) {
	a, b := newNode(t), newNode(t)
	ea, eb := a.ep(nil), b.ep(nil)
	q := b.listen(api.PSPConsumer)
	must(t, ea.Connect(b.addr, q, 20*time.Millisecond, nil, 0, 0), "Connect")
	cr := b.expect(b.connEVD, api.ConnectionRequestEvent).CR.CR
	a.expect(a.connEVD, api.ConnectionTimedOutEvent)
	wantState(t, ea, api.EPDisconnected)
	r := b.region(64, api.MemPrivAll)
	must(t, eb.PostRecv(r.iov(0, 64), 3, 0), "PostRecv")
	must(t, cr.Accept(eb, nil), "Accept after the requester timed out")
	b.expectDTO(b.recv, 3, api.DTOErrFlushed)
	b.expect(b.connEVD, api.ConnectionAcceptCompletionErrorEvent)
	wantState(t, eb, api.EPDisconnected)
}

func TestTimerStoppedByAcceptAndByFree(t *testing.T) {
	a, b := newNode(t), newNode(t)
	connect(t, a, b, nil) // infinite timeout path
	ea := a.ep(nil)
	q := b.listen(api.PSPConsumer)
	must(t, ea.Connect(b.addr, q, time.Hour, nil, 0, 0), "Connect")
	b.expect(b.connEVD, api.ConnectionRequestEvent)
	must(t, ea.Free(), "Free during ACTIVE_CONNECTION_PENDING")
	// goleak in TestMain verifies the timer goroutine is gone.
}

func TestRSPLifecycle(t *testing.T) {
	a, b := newNode(t), newNode(t)
	eb := b.ep(nil)
	rsp, err := b.ia.CreateRSP(777, eb, b.connEVD)
	must(t, err, "CreateRSP")
	wantState(t, eb, api.EPReserved)
	wantErr(t, eb.Free(), api.InvalidState, api.SubStateEPReserved, "Free of a RESERVED EP")
	wantErr(t, eb.Connect(a.addr, 1, -1, nil, 0, 0), api.InvalidState, api.SubStateEPReserved, "Connect of a RESERVED EP")
	if _, err := b.ia.CreateRSP(777, b.ep(nil), b.connEVD); !errors.Is(err, api.ErrConnQualInUse) {
		t.Fatalf("second RSP on the qualifier: %v", err)
	}

	ea := a.ep(nil)
	must(t, ea.Connect(b.addr, 777, -1, []byte("x"), 0, 0), "Connect")
	ev := b.expect(b.connEVD, api.ConnectionRequestEvent)
	if ev.CR.RSP == nil || ev.CR.PSP != nil {
		t.Fatalf("arrival %+v", ev.CR)
	}
	wantState(t, eb, api.EPPassiveConnectionPending)
	wantErr(t, eb.Free(), api.InvalidState, api.SubStateEPPassConnPending, "Free in PASSIVE_CONNECTION_PENDING")
	prm, err := ev.CR.CR.Query()
	must(t, err, "CR.Query")
	if prm.LocalEP != eb {
		t.Fatalf("CR LocalEP %v, want the reserved EP", prm.LocalEP)
	}
	// The RSP is consumed: a second requester is refused.
	ec := a.ep(nil)
	must(t, ec.Connect(b.addr, 777, -1, nil, 0, 0), "Connect")
	a.expect(a.connEVD, api.ConnectionNonPeerRejectedEvent)

	if err := ev.CR.CR.Accept(b.ep(nil), nil); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("Accept with another EP than the reserved one: %v", err)
	}
	must(t, ev.CR.CR.Reject(nil), "Reject")
	a.expect(a.connEVD, api.ConnectionPeerRejectedEvent)
	wantState(t, eb, api.EPUnconnected)
	must(t, rsp.Free(), "RSP.Free")
	must(t, eb.Free(), "Free")

	// RSP.Free before any request returns the EP to UNCONNECTED.
	ed := b.ep(nil)
	rsp2, err := b.ia.CreateRSP(778, ed, b.connEVD)
	must(t, err, "CreateRSP")
	must(t, rsp2.Free(), "RSP.Free")
	wantState(t, ed, api.EPUnconnected)

	// Accept(nil) connects the reserved EP.
	ee := b.ep(nil)
	_, err = b.ia.CreateRSP(779, ee, b.connEVD)
	must(t, err, "CreateRSP")
	ef := a.ep(nil)
	must(t, b.request(ef, 779).Accept(nil, nil), "Accept(nil)")
	b.expect(b.connEVD, api.ConnectionEstablishedEvent)
	a.expect(a.connEVD, api.ConnectionEstablishedEvent)
	wantState(t, ee, api.EPConnected)
}

func TestPSPProviderEP(t *testing.T) {
	a, b := newNode(t), newNode(t)
	q := b.listen(api.PSPProvider)

	// Rejected: the provider takes its EP back.
	ea := a.ep(nil)
	cr := b.request(ea, q)
	prm, err := cr.Query()
	must(t, err, "CR.Query")
	pep := prm.LocalEP
	if pep == nil {
		t.Fatal("no provider EP")
	}
	wantState(t, pep, api.EPTentativeConnectionPending)
	wantErr(t, pep.Free(), api.InvalidState, api.SubStateEPTentConnPending, "Free of a TENTATIVE EP")
	must(t, cr.Reject(nil), "Reject")
	a.expect(a.connEVD, api.ConnectionPeerRejectedEvent)
	if _, err := pep.Query(); !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("provider EP after Reject: %v", err)
	}

	// Accepted after Modify: it carries data.
	must(t, ea.Reset(), "Reset")
	cr = b.request(ea, q)
	prm, err = cr.Query()
	must(t, err, "CR.Query")
	pep = prm.LocalEP
	ep0, err := pep.Query()
	must(t, err, "EP.Query")
	if ep0.PZ != nil || ep0.RecvEVD != nil || ep0.RequestEVD != nil || ep0.ConnectEVD != nil {
		t.Fatalf("provider EP has %+v", ep0)
	}
	must(t, pep.Modify(api.EPFieldPZ|api.EPFieldRecvEVD|api.EPFieldRequestEVD|api.EPFieldConnectEVD,
		&api.EPParam{PZ: b.pz, RecvEVD: b.recv, RequestEVD: b.req, ConnectEVD: b.connEVD}), "Modify")
	r := b.region(16, api.MemPrivAll)
	must(t, pep.PostRecv(r.iov(0, 16), 1, 0), "PostRecv")
	must(t, cr.Accept(nil, nil), "Accept(nil)")
	b.expect(b.connEVD, api.ConnectionEstablishedEvent)
	a.expect(a.connEVD, api.ConnectionEstablishedEvent)
	s := a.region(16, api.MemPrivAll)
	copy(s.b, "provider ep data")
	must(t, ea.PostSend(s.iov(0, 16), 2, 0), "PostSend")
	a.expectDTO(a.req, 2, api.DTOSuccess)
	b.expectDTO(b.recv, 1, api.DTOSuccess)
	if string(r.b) != "provider ep data" {
		t.Fatalf("received %q", r.b)
	}
	must(t, pep.Free(), "Free of the accepted provider EP")
}

func TestHandoff(t *testing.T) {
	a, b, c := newNode(t), newNode(t), newNode(t)
	q1 := b.listen(api.PSPConsumer)
	qc := c.listen(api.PSPConsumer)

	ea := a.ep(nil)
	must(t, ea.Connect(b.addr, q1, -1, []byte("pd"), 0, 0), "Connect")
	cr := b.expect(b.connEVD, api.ConnectionRequestEvent).CR.CR
	wantErr(t, cr.Handoff(qc), api.InvalidParameter, api.SubArg2, "Handoff to another IA's qualifier")
	wantErr(t, cr.Handoff(0xBAD), api.InvalidParameter, api.SubArg2, "Handoff to nobody")
	wantState(t, ea, api.EPActiveConnectionPending)
	must(t, cr.Reject(nil), "Reject after failed handoffs")
	a.expect(a.connEVD, api.ConnectionPeerRejectedEvent)
}

func TestHandoffDelivers(t *testing.T) {
	a, b := newNode(t), newNode(t)
	q1 := b.listen(api.PSPConsumer)
	conn2 := b.evd(1, api.EVDCR|api.EVDConnection|api.EVDSoftware)
	_, q2, err := b.ia.CreatePSPAny(conn2, api.PSPConsumer)
	must(t, err, "CreatePSPAny")
	ea := a.ep(nil)
	must(t, ea.Connect(b.addr, q1, -1, []byte("pd"), 0, 0), "Connect")
	cr := b.expect(b.connEVD, api.ConnectionRequestEvent).CR.CR

	must(t, conn2.PostSE(&api.Event{Number: api.SoftwareEvent}), "PostSE")
	wantErr(t, cr.Handoff(q2), api.InsufficientResources, api.NoSubtype, "Handoff to a full backlog")
	b.expect(conn2, api.SoftwareEvent)

	must(t, cr.Handoff(q2), "Handoff")
	if _, err := cr.Query(); !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("CR after Handoff: %v", err)
	}
	ev := b.expect(conn2, api.ConnectionRequestEvent)
	if ev.CR.ConnQual != q2 {
		t.Fatalf("handed-off request on %d, want %d", ev.CR.ConnQual, q2)
	}
	prm, err := ev.CR.CR.Query()
	must(t, err, "CR.Query")
	if !bytes.Equal(prm.PrivateData, []byte("pd")) {
		t.Fatalf("private data %q", prm.PrivateData)
	}
	eb := b.ep(nil)
	must(t, ev.CR.CR.Accept(eb, nil), "Accept")
	a.expect(a.connEVD, api.ConnectionEstablishedEvent)
	wantState(t, eb, api.EPConnected)
}

func TestBacklogIsTheEVDRoom(t *testing.T) {
	a, b := newNode(t), newNode(t)
	crEVD := b.evd(1, api.EVDCR)
	_, q, err := b.ia.CreatePSPAny(crEVD, api.PSPProvider)
	must(t, err, "CreatePSPAny")
	e1, e2 := a.ep(nil), a.ep(nil)
	must(t, e1.Connect(b.addr, q, -1, nil, 0, 0), "Connect")
	must(t, e2.Connect(b.addr, q, -1, nil, 0, 0), "Connect")
	ev := a.expect(a.connEVD, api.ConnectionNonPeerRejectedEvent)
	if ev.Conn.EP != e2 {
		t.Fatal("the wrong EP was refused")
	}
	b.none(b.async, "a refused request must not overflow anything")
	wantState(t, e1, api.EPActiveConnectionPending)
}

func TestDisconnectGracefulAndAbrupt(t *testing.T) {
	p := newPair(t)
	wantErr(t, p.ea.Reset(), api.InvalidState, api.SubStateEPConnected, "Reset while CONNECTED")
	must(t, p.ea.Disconnect(api.CloseGraceful), "Disconnect")
	p.a.expect(p.a.connEVD, api.ConnectionDisconnectedEvent)
	p.b.expect(p.b.connEVD, api.ConnectionDisconnectedEvent)
	wantState(t, p.ea, api.EPDisconnected)
	wantState(t, p.eb, api.EPDisconnected)
	must(t, p.ea.Disconnect(api.CloseAbrupt), "Disconnect of a DISCONNECTED EP")
	p.a.none(p.a.connEVD, "no event for a no-op disconnect")

	// Abrupt from the other side; then Free of a connected EP.
	q := connect(t, p.a, p.b, nil)
	must(t, q.eb.Disconnect(api.CloseAbrupt), "Disconnect")
	p.b.expect(p.b.connEVD, api.ConnectionDisconnectedEvent)
	p.a.expect(p.a.connEVD, api.ConnectionDisconnectedEvent)
	r := connect(t, p.a, p.b, nil)
	must(t, r.ea.Free(), "Free of a connected EP")
	p.b.expect(p.b.connEVD, api.ConnectionDisconnectedEvent)
	wantState(t, r.eb, api.EPDisconnected)

	e := p.a.ep(nil)
	wantErr(t, e.Disconnect(api.CloseAbrupt), api.InvalidState, api.SubStateEPUnconnected, "Disconnect of an UNCONNECTED EP")
}

func TestDisconnectDuringActivePending(t *testing.T) {
	a, b := newNode(t), newNode(t)
	q := b.listen(api.PSPConsumer)
	ea := a.ep(nil)
	cr := b.request(ea, q)
	must(t, ea.Disconnect(api.CloseAbrupt), "Disconnect")
	a.expect(a.connEVD, api.ConnectionDisconnectedEvent)
	wantState(t, ea, api.EPDisconnected)
	must(t, cr.Reject(nil), "Reject of an abandoned request")
	a.none(a.connEVD, "rejecting an abandoned request")
}

func TestDupConnect(t *testing.T) {
	a, b := newNode(t), newNode(t)
	p := connect(t, a, b, nil)
	// connect() freed its PSP; listen again on the qualifier the pair used.
	prm, err := p.ea.Query()
	must(t, err, "Query")
	_, err = b.ia.CreatePSP(prm.RemotePortQual, b.connEVD, api.PSPConsumer)
	must(t, err, "CreatePSP")
	e := a.ep(nil)
	wantErr(t, e.DupConnect(a.ep(nil), -1, nil, 0), api.InvalidState, api.SubStateEPUnconnected, "DupConnect of an unconnected dup")
	must(t, e.DupConnect(p.ea, -1, []byte("dup"), 0), "DupConnect")
	ev := b.expect(b.connEVD, api.ConnectionRequestEvent)
	crp, err := ev.CR.CR.Query()
	must(t, err, "CR.Query")
	if string(crp.PrivateData) != "dup" {
		t.Fatalf("private data %q", crp.PrivateData)
	}
}

func TestIllegalCallsChangeNothing(t *testing.T) {
	p := newPair(t)
	r := p.a.region(64, api.MemPrivAll)
	wantErr(t, p.ea.Connect(p.b.addr, 1, -1, nil, 0, 0), api.InvalidState, api.SubStateEPConnected, "Connect while CONNECTED")
	e := p.a.ep(nil)
	wantErr(t, e.PostSend(r.iov(0, 8), 1, 0), api.InvalidState, api.SubStateEPUnconnected, "PostSend while UNCONNECTED")
	wantErr(t, e.PostRDMAWrite(r.iov(0, 8), 1, r.rtr(0, 8), 0), api.InvalidState, api.SubStateEPUnconnected, "PostRDMAWrite while UNCONNECTED")
	rmr, err := p.a.pz.CreateRMR()
	must(t, err, "CreateRMR")
	if _, err := rmr.Bind(r.lmr, r.prm.Triplet(0, 8), api.MemPrivRemoteRead, api.VATypeVA, e, 1, 0); !errors.Is(err, &api.Error{Type: api.InvalidState, Sub: api.SubStateEPUnconnected}) {
		t.Fatalf("Bind on an UNCONNECTED EP: %v", err)
	}
	wantState(t, p.ea, api.EPConnected)
	wantState(t, e, api.EPUnconnected)
	if m := api.EPFieldPZ; true {
		err := p.ea.Modify(m, &api.EPParam{PZ: p.a.pz})
		wantErr(t, err, api.InvalidState, api.SubStateEPConnected, "Modify PZ while CONNECTED")
	}
	if err := e.Modify(api.EPFieldState, &api.EPParam{}); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("Modify of the state: %v", err)
	}
	// Graceful disconnect with a send waiting: DISCONNECT_PENDING refuses new requests.
	s := p.a.region(8, api.MemPrivAll)
	must(t, p.ea.PostSend(s.iov(0, 8), 5, 0), "PostSend (waits for a receive)")
	must(t, p.ea.Disconnect(api.CloseGraceful), "Disconnect(graceful)")
	wantState(t, p.ea, api.EPDisconnectPending)
	wantErr(t, p.ea.PostSend(s.iov(0, 8), 6, 0), api.InvalidState, api.SubStateEPDiscPending, "PostSend in DISCONNECT_PENDING")
	must(t, p.ea.Disconnect(api.CloseGraceful), "second graceful Disconnect is a no-op")
	wantState(t, p.ea, api.EPDisconnectPending)
	must(t, p.ea.Disconnect(api.CloseAbrupt), "abrupt Disconnect from DISCONNECT_PENDING")
	p.a.expectDTO(p.a.req, 5, api.DTOErrFlushed)
	p.a.expect(p.a.connEVD, api.ConnectionDisconnectedEvent)
}

func TestIACloseGracefulAndAbrupt(t *testing.T) {
	a, b := newNode(t), newNode(t)
	p := connect(t, a, b, nil)
	wantErr(t, a.ia.Close(api.CloseGraceful), api.InvalidState, api.SubStateIAInUse, "graceful Close with objects")

	// A waiter on an EVD of the closing IA returns ErrAbort.
	errc := make(chan error, 1)
	go func() {
		var ev api.Event
		_, err := a.recv.Wait(context.Background(), 1, &ev)
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	// A pending request to the closing IA is rejected.
	q := a.listen(api.PSPConsumer)
	eb := b.ep(nil)
	must(t, eb.Connect(a.addr, q, time.Hour, nil, 0, 0), "Connect")
	a.expect(a.connEVD, api.ConnectionRequestEvent)

	must(t, a.ia.Close(api.CloseAbrupt), "abrupt Close")
	if err := <-errc; !errors.Is(err, api.ErrAbort) && !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("waiter after Close: %v", err)
	}
	b.expect(b.connEVD, api.ConnectionNonPeerRejectedEvent) // the pending request
	b.expect(b.connEVD, api.ConnectionDisconnectedEvent)    // the connection
	wantState(t, p.eb, api.EPDisconnected)
	wantState(t, eb, api.EPDisconnected)
	if err := a.ia.Close(api.CloseAbrupt); !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("second Close: %v", err)
	}
	// The closed IA's address is unreachable now.
	e := b.ep(nil)
	must(t, e.Connect(a.addr, q, -1, nil, 0, 0), "Connect")
	b.expect(b.connEVD, api.ConnectionUnreachableEvent)

	// An IA with only its async EVD closes gracefully.
	c := newNode(t)
	fresh, err := reg.Open(context.Background(), "loopback")
	must(t, err, "Open")
	must(t, fresh.Close(api.CloseGraceful), "graceful Close of an empty IA")
	_ = c
}

// textAddr is an address known only by its network and text, as a
// program rebuilds it from a printed one or a plugin host passes it on.
type textAddr struct{ network, text string }

func (a textAddr) Network() string { return a.network }
func (a textAddr) String() string  { return a.text }

// Any net.Addr of the loopback network is read by its text; another
// network is ErrInvalidAddress (SubAddressUnsupported), a bad text
// SubAddressMalformed.
func TestAddrOfByText(t *testing.T) {
	a := newNode(t)
	got, err := addrOf(textAddr{"loopback", a.addr.String()})
	if err != nil || got != a.addr {
		t.Fatalf("addrOf(loopback %q) = %v, %v", a.addr.String(), got, err)
	}
	if _, err := addrOf(textAddr{"ip", "127.0.0.1"}); !isSub(err, api.InvalidAddress, api.SubAddressUnsupported) {
		t.Fatalf("addrOf(ip): %v", err)
	}
	if _, err := addrOf(textAddr{"loopback", "nohash"}); !isSub(err, api.InvalidAddress, api.SubAddressMalformed) {
		t.Fatalf("addrOf(loopback nohash): %v", err)
	}
}

func isSub(err error, t api.ReturnType, sub api.Subtype) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Type == t && e.Sub == sub
}
