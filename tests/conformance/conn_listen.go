package conformance

import (
	"bytes"

	"github.com/godat/godat/api"
)

// listenGroups checks the service points connection requests arrive on:
// public (PSP) and reserved (RSP).
var listenGroups = []group{
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
		{"DESCRIPTION (DAT 2.0 dat.h)", "a CONNECTION_REQUEST event names the address of the IA it arrived on", func(t *checkT) {
			pr := t.request(nil)
			got, want := pr.ev.CR.LocalAddr, pr.srv.attr.Address
			if got == nil || want == nil || got.Network() != want.Network() || got.String() != want.String() {
				t.Fatalf("CR arrival local address %v, want the IA's address %v", got, want)
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
		{"DESCRIPTION", "with PSPProvider the request carries a provider-created EP with no PZ and no EVDs, and PSP.Query reports the flag", func(t *checkT) {
			pr := t.providerRequest()
			if pp, err := pr.psp.Query(); err != nil || pp.Flags != api.PSPProvider {
				t.Errorf("PSP.Query of a PSPProvider PSP: flags %v, %v; want PSPProvider (dat_psp_query(3DAT))", pp.Flags, err)
			}
			local := pr.localEP()
			ep, err := local.Query()
			t.noErr(err, "EP.Query of the provider EP")
			if ep.PZ != nil || ep.RecvEVD != nil || ep.RequestEVD != nil || ep.ConnectEVD != nil {
				t.Errorf("the provider EP has a PZ or EVDs; the page says they are all DAT_HANDLE_NULL")
			}
			if s := t.state(local); s != api.EPTentativeConnectionPending && s != api.EPUnconfiguredTentative {
				t.Errorf("provider EP state %v, want TENTATIVE_CONNECTION_PENDING (or UNCONFIGURED_TENTATIVE)", s)
			}
		}},
		{"USAGE", "with PSPProvider the consumer sets PZ and EVDs with Modify, Accept(nil) connects the provider EP and it carries data", func(t *checkT) {
			pr := t.providerRequest()
			local := pr.localEP()
			s := &end{node: pr.srv, ep: local}
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
		{"DESCRIPTION", "the conn_qual picked is not one that a PSP made with dat_psp_create listens on", func(t *checkT) {
			n := t.node()
			_, first := n.listen(api.PSPConsumer)
			// Hold the qualifiers just past the first one picked, the
			// likeliest next picks; any already taken here are skipped.
			held := map[api.ConnQual]bool{}
			for q := first + 1; q <= first+4; q++ {
				if _, err := n.ia.CreatePSP(q, n.cr, api.PSPConsumer); err == nil {
					held[q] = true
				} else if !isOneOf(err, api.ErrConnQualInUse) {
					t.Fatalf("IA.CreatePSP(%d): %v", q, err)
				}
			}
			if len(held) == 0 {
				t.Skipf("conn_quals %d to %d are all in use", first+1, first+4)
			}
			for range 4 {
				if _, q := n.listen(api.PSPConsumer); held[q] || q == first {
					t.Fatalf("CreatePSPAny picked conn_qual %d, on which another PSP listens", q)
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
			n.reserve(e.ep, n.freeQual())
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
			n.reserve(e.ep, n.freeQual())
			_, err := n.ia.CreateRSP(n.freeQual(), e.ep, n.cr)
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
			rp, err := n.reserve(e.ep, q).Query()
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
			t.noErr(n.reserve(e.ep, n.freeQual()).Free(), "RSP.Free")
			t.wantState(e.ep, api.EPUnconnected, "the EP after RSP.Free")
		}},
		{"DESCRIPTION", "requests for a freed RSP's conn_qual are rejected as if nobody listened", func(t *checkT) {
			srv, cli := t.node(), t.node()
			e := srv.end(nil)
			q := srv.freeQual()
			t.noErr(srv.reserve(e.ep, q).Free(), "RSP.Free")
			c := cli.end(nil)
			c.connect(srv, q, nil)
			c.expectConn(api.ConnectionNonPeerRejectedEvent, "connecting to a freed RSP")
		}},
		{"DESCRIPTION", "every call on a freed RSP is DAT_INVALID_HANDLE", freedRSP},
	}},
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
	r.rsp = srv.reserve(r.s.ep, r.q)
	r.c = cli.end(nil)
	r.c.connect(srv, r.q, nil)
	r.ev = srv.expectCR("the CONNECTION_REQUEST on the RSP")
	return r
}

// reserve creates an RSP on n's IA for conn_qual q, reserving ep, with n's
// CR EVD.
func (n *node) reserve(ep api.EP, q api.ConnQual) api.RSP {
	n.t.T.Helper()
	rsp, err := n.ia.CreateRSP(q, ep, n.cr)
	n.t.noErr(err, "IA.CreateRSP")
	return rsp
}

// localEP returns the EP that the provider created for the request, from
// the CR's Query, failing the check if there is none.
func (pr *pending) localEP() api.EP {
	t := pr.srv.t
	t.T.Helper()
	cp, err := pr.cr.Query()
	t.noErr(err, "CR.Query")
	if cp.LocalEP == nil {
		t.Fatalf("CRParam.LocalEP is nil for a request on a PSPProvider PSP")
	}
	return cp.LocalEP
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
