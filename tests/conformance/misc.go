package conformance

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/godat/godat/api"
)

// objMaker creates one object of a kind for the checks that cover every
// kind of handle.
type objMaker struct {
	name string
	typ  api.HandleType
	make func(t *checkT) api.Object
}

var objMakers = []objMaker{
	{"IA", api.HandleIA, func(t *checkT) api.Object { return t.openIA() }},
	{"PZ", api.HandlePZ, func(t *checkT) api.Object { return t.node().pz }},
	{"EVD", api.HandleEVD, func(t *checkT) api.Object { return t.node().recv }},
	{"CNO", api.HandleCNO, func(t *checkT) api.Object { return t.node().cno(nil) }},
	{"EP", api.HandleEP, func(t *checkT) api.Object { return t.node().end(nil).ep }},
	{"PSP", api.HandlePSP, func(t *checkT) api.Object {
		psp, _ := t.node().listen(api.PSPConsumer)
		return psp
	}},
	{"RSP", api.HandleRSP, func(t *checkT) api.Object {
		n := t.node()
		rsp, err := n.ia.CreateRSP(n.freeQual(), n.end(nil).ep, n.cr)
		t.noErr(err, "IA.CreateRSP")
		return rsp
	}},
	{"CR", api.HandleCR, func(t *checkT) api.Object { return t.request(nil).cr }},
	{"LMR", api.HandleLMR, func(t *checkT) api.Object { return t.node().region(64, rw).lmr }},
	{"RMR", api.HandleRMR, func(t *checkT) api.Object {
		rmr, err := t.node().pz.CreateRMR()
		t.noErr(err, "PZ.CreateRMR")
		return rmr
	}},
	{"SRQ", api.HandleSRQ, func(t *checkT) api.Object { return t.node().srq(4, 1) }},
}

func miscGroups() []group {
	ht := group{page: "dat_get_handle_type"}
	cc := group{page: "dat_set_consumer_context"}
	for _, m := range objMakers {
		ht.checks = append(ht.checks, check{"DESCRIPTION", "the handle type of a " + m.name + " is DAT_HANDLE_TYPE_" + m.name, func(t *checkT) {
			if got := m.make(t).HandleType(); got != m.typ {
				t.Fatalf("HandleType() = %v, want %v", got, m.typ)
			}
		}})
		cc.checks = append(cc.checks, check{"DESCRIPTION", "a " + m.name + " keeps one consumer context, replaced by each set, nil by default and after setting nil", func(t *checkT) {
			o := m.make(t)
			get := func(what string) any {
				v, err := o.ConsumerContext()
				t.noErr(err, what)
				return v
			}
			if v := get("ConsumerContext of a new object"); v != nil {
				t.Fatalf("a new %s has consumer context %v, want nil", m.name, v)
			}
			type cookie struct{ n int }
			a, b := &cookie{1}, &cookie{2}
			t.noErr(o.SetConsumerContext(a), "SetConsumerContext")
			if v := get("ConsumerContext"); v != a {
				t.Fatalf("ConsumerContext returned %v, want the value set", v)
			}
			t.noErr(o.SetConsumerContext(b), "SetConsumerContext again")
			if v := get("ConsumerContext"); v != b {
				t.Fatalf("ConsumerContext returned %v after a second set, want the new value", v)
			}
			t.noErr(o.SetConsumerContext(nil), "SetConsumerContext(nil)")
			if v := get("ConsumerContext"); v != nil {
				t.Fatalf("ConsumerContext returned %v after setting nil", v)
			}
		}})
	}

	return []group{
		{page: "dat_ep_create", checks: []check{
			{"DESCRIPTION", "a new EP is UNCONNECTED", func(t *checkT) {
				t.wantState(t.node().end(nil).ep, api.EPUnconnected, "a new EP")
			}},
			{"PARAMETERS", "every EVD may be DAT_HANDLE_NULL", func(t *checkT) {
				n := t.node()
				ep, err := n.ia.CreateEP(n.pz, nil, nil, nil, nil)
				t.noErr(err, "CreateEP with no EVDs")
				t.wantState(ep, api.EPUnconnected, "the EP without EVDs")
			}},
			{"RETURN VALUES", "a receive EVD that does not take DTO completions is refused", func(t *checkT) {
				n := t.node()
				_, err := n.ia.CreateEP(n.pz, n.conn, n.req, n.conn, nil)
				t.wantOneOf(err, "CreateEP with a connection-only EVD for receives", api.ErrInvalidHandle, api.ErrInvalidParameter)
			}},
			{"RETURN VALUES", "a request EVD that does not take DTO completions is refused", func(t *checkT) {
				n := t.node()
				_, err := n.ia.CreateEP(n.pz, n.recv, n.cr, n.conn, nil)
				t.wantOneOf(err, "CreateEP with a CR-only EVD for requests", api.ErrInvalidHandle, api.ErrInvalidParameter)
			}},
			{"RETURN VALUES", "a connect EVD that does not take connection events is refused", func(t *checkT) {
				n := t.node()
				_, err := n.ia.CreateEP(n.pz, n.recv, n.req, n.recv, nil)
				t.wantOneOf(err, "CreateEP with a DTO-only EVD for connection events", api.ErrInvalidHandle, api.ErrInvalidParameter)
			}},
			{"RETURN VALUES", "a PZ of another IA is DAT_INVALID_HANDLE", func(t *checkT) {
				a, b := t.node(), t.node()
				_, err := a.ia.CreateEP(b.pz, a.recv, a.req, a.conn, nil)
				t.wantErr(err, api.ErrInvalidHandle, "CreateEP with a PZ of another IA")
			}},
			{"RETURN VALUES", "an EVD of another IA is DAT_INVALID_HANDLE", func(t *checkT) {
				a, b := t.node(), t.node()
				_, err := a.ia.CreateEP(a.pz, b.recv, a.req, a.conn, nil)
				t.wantErr(err, api.ErrInvalidHandle, "CreateEP with a receive EVD of another IA")
				_, err = a.ia.CreateEP(a.pz, a.recv, a.req, b.conn, nil)
				t.wantErr(err, api.ErrInvalidHandle, "CreateEP with a connect EVD of another IA")
			}},
			{"RETURN VALUES", "MaxRecvDTOs above the IA's MaxDTOPerEP is DAT_INVALID_PARAMETER", func(t *checkT) {
				t.epAttrOverIA("MaxDTOPerEP", func(a *api.IAAttr) int { return a.MaxDTOPerEP },
					"MaxRecvDTOs", func(a *api.EPAttr, v int) { a.MaxRecvDTOs = v })
			}},
			{"RETURN VALUES", "MaxRequestIOV above the IA's MaxIOVSegmentsPerDTO is DAT_INVALID_PARAMETER", func(t *checkT) {
				t.epAttrOverIA("MaxIOVSegmentsPerDTO", func(a *api.IAAttr) int { return a.MaxIOVSegmentsPerDTO },
					"MaxRequestIOV", func(a *api.EPAttr, v int) { a.MaxRequestIOV = v })
			}},
		}},

		{page: "dat_ep_query", checks: []check{
			{"DESCRIPTION", "an EP reports the IA, PZ and EVDs it was created with and no SRQ", func(t *checkT) {
				n := t.node()
				p := t.queryEP(n.end(nil).ep)
				if p.IA != n.ia || p.PZ != n.pz || p.RecvEVD != n.recv || p.RequestEVD != n.req || p.ConnectEVD != n.conn || p.SRQ != nil || p.State != api.EPUnconnected {
					t.Fatalf("EP.Query = {IA %v, PZ %v, recv %v, request %v, connect %v, no SRQ %v, state %v}: want the creation handles (all true), no SRQ and UNCONNECTED",
						p.IA == n.ia, p.PZ == n.pz, p.RecvEVD == n.recv, p.RequestEVD == n.req, p.ConnectEVD == n.conn, p.SRQ == nil, p.State)
				}
			}},
			{"DESCRIPTION", "a connected active EP reports the remote address and the conn_qual it connected to", func(t *checkT) {
				p := t.pair()
				ep := t.queryEP(p.cli.ep)
				if ep.RemoteAddr == nil || ep.RemotePortQual != p.q {
					t.Fatalf("active EP remote address %v, remote port qualifier %d; want an address and %d", ep.RemoteAddr, ep.RemotePortQual, p.q)
				}
			}},
			{"DESCRIPTION", "a connected passive EP reports the requester's address and port qualifier", func(t *checkT) {
				p := t.pair()
				ep := t.queryEP(p.srv.ep)
				if ep.RemoteAddr == nil || ep.RemotePortQual != p.crParam.RemotePortQual {
					t.Fatalf("passive EP remote address %v, remote port qualifier %d; want an address and the request's %d", ep.RemoteAddr, ep.RemotePortQual, p.crParam.RemotePortQual)
				}
			}},
		}},

		{page: "dat_ep_modify", checks: []check{
			{"DESCRIPTION", "changed DTO and RDMA read limits of an UNCONNECTED EP are reported by Query; other attributes stay", func(t *checkT) {
				n := t.node()
				e := n.end(nil)
				before := t.queryEP(e.ep).Attr
				want := before
				var mask api.EPParamMask
				for _, f := range []struct {
					field api.EPParamMask
					at    func(*api.EPAttr) *int
					most  int // 0: no limit
				}{
					{api.EPFieldMaxRecvDTOs, func(a *api.EPAttr) *int { return &a.MaxRecvDTOs }, n.attr.MaxDTOPerEP},
					{api.EPFieldMaxRequestDTOs, func(a *api.EPAttr) *int { return &a.MaxRequestDTOs }, n.attr.MaxDTOPerEP},
					{api.EPFieldMaxRDMAReadIn, func(a *api.EPAttr) *int { return &a.MaxRDMAReadIn }, n.attr.MaxRDMAReadPerEPIn},
					{api.EPFieldMaxRDMAReadOut, func(a *api.EPAttr) *int { return &a.MaxRDMAReadOut }, n.attr.MaxRDMAReadPerEPOut},
				} {
					v := *f.at(&before) + 1
					if f.most > 0 && v > f.most {
						v -= 2
					}
					if v < 1 {
						continue // no room to change it
					}
					*f.at(&want) = v
					mask |= f.field
				}
				if mask == 0 {
					t.Skipf("no room to change any of the limits")
				}
				t.noErr(e.ep.Modify(mask, &api.EPParam{Attr: want}), "EP.Modify")
				after := t.queryEP(e.ep).Attr
				if after.MaxRecvDTOs != want.MaxRecvDTOs || after.MaxRequestDTOs != want.MaxRequestDTOs ||
					after.MaxRDMAReadIn != want.MaxRDMAReadIn || after.MaxRDMAReadOut != want.MaxRDMAReadOut {
					t.Errorf("after Modify the DTO and read limits are (%d, %d, %d, %d), want (%d, %d, %d, %d)",
						after.MaxRecvDTOs, after.MaxRequestDTOs, after.MaxRDMAReadIn, after.MaxRDMAReadOut,
						want.MaxRecvDTOs, want.MaxRequestDTOs, want.MaxRDMAReadIn, want.MaxRDMAReadOut)
				}
				if after.MaxMessageSize != before.MaxMessageSize || after.MaxRecvIOV != before.MaxRecvIOV {
					t.Errorf("Modify changed attributes outside its mask")
				}
			}},
			{"DESCRIPTION", "the PZ of a RESERVED EP cannot change (DAT_INVALID_STATE) and stays", func(t *checkT) {
				n := t.node()
				e := n.end(nil)
				n.reserve(e.ep, n.freeQual())
				err := e.ep.Modify(api.EPFieldPZ, &api.EPParam{PZ: n.newPZ()})
				t.wantErr(err, api.ErrInvalidState, "Modify of the PZ of a RESERVED EP")
				if p := t.queryEP(e.ep); p.PZ != n.pz {
					t.Fatalf("the refused Modify changed the PZ")
				}
			}},
			{"DESCRIPTION", "a connect EVD changed before Connect is reported by Query and gets the connection's events", func(t *checkT) {
				srv, cli := t.node(), t.node()
				c := cli.end(nil)
				conn2 := cli.evd(api.EVDConnection)
				t.noErr(c.ep.Modify(api.EPFieldConnectEVD, &api.EPParam{ConnectEVD: conn2}), "EP.Modify of the connect EVD")
				if p := t.queryEP(c.ep); p.ConnectEVD != conn2 {
					t.Fatalf("EP.Query does not report the new connect EVD")
				}
				t.connectEnd(c, srv)
				t.expectEvent(conn2, api.ConnectionEstablishedEvent, "ESTABLISHED on the new connect EVD")
				t.expectEmpty(cli.conn, "the old connect EVD")
			}},
			{"DESCRIPTION", "changing attributes of a CONNECTED EP is DAT_INVALID_STATE", func(t *checkT) {
				p := t.pair()
				before := t.queryEP(p.cli.ep).Attr
				err := p.cli.ep.Modify(api.EPFieldMaxRecvDTOs, &api.EPParam{Attr: api.EPAttr{MaxRecvDTOs: before.MaxRecvDTOs + 1}})
				t.wantErr(err, api.ErrInvalidState, "Modify of MaxRecvDTOs on a CONNECTED EP")
				if after := t.queryEP(p.cli.ep).Attr; after.MaxRecvDTOs != before.MaxRecvDTOs {
					t.Fatalf("the refused Modify changed MaxRecvDTOs")
				}
			}},
			{"DESCRIPTION", "the state, IA and addresses cannot be modified (DAT_INVALID_PARAMETER)", func(t *checkT) {
				n := t.node()
				e := n.end(nil)
				for _, m := range []struct {
					mask api.EPParamMask
					what string
				}{
					{api.EPFieldState, "the state"},
					{api.EPFieldIA, "the IA"},
					{api.EPFieldRemoteAddr, "the remote address"},
					{api.EPFieldLocalPortQual, "the local port qualifier"},
				} {
					t.wantErr(e.ep.Modify(m.mask, &api.EPParam{State: api.EPConnected, IA: n.ia, RemoteAddr: n.attr.Address, LocalPortQual: 7}), api.ErrInvalidParameter, "Modify of "+m.what)
				}
				t.wantState(e.ep, api.EPUnconnected, "after the refused Modify calls")
			}},
		}},

		ht,
		cc,

		{page: "dat_error.h", checks: []check{
			{"DAT_RETURN", "an error's code is class|type|subtype as in the C headers (PZ in use)", func(t *checkT) {
				n := t.node()
				n.region(64, rw)
				err := n.pz.Free()
				want := api.ClassError | uint32(api.InvalidState) | uint32(api.SubStatePZInUse)
				if got := api.CodeOf(err); got != want {
					t.Fatalf("CodeOf(PZ.Free with an LMR) = %#x (%v), want %#x", got, err, want)
				}
			}},
			{"DAT_RETURN", "errors are *api.Error values that errors.As finds, with the DAT type", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				var ev api.Event
				err := e.Dequeue(&ev)
				var de *api.Error
				if !errors.As(err, &de) || de.Type != api.QueueEmpty {
					t.Fatalf("Dequeue of an empty EVD returned %v (%T), want an *api.Error of type DAT_QUEUE_EMPTY", err, err)
				}
				if c := api.CodeOf(err); c&0x3FFF0000 != uint32(api.QueueEmpty) || c&api.ClassError == 0 {
					t.Fatalf("CodeOf = %#x, want the error class and DAT_QUEUE_EMPTY", c)
				}
			}},
			{"DAT_RETURN", "a timed-out wait keeps context.DeadlineExceeded reachable through errors.Is", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				_, _, err := waitN(e, 1, 50*time.Millisecond)
				if !errors.Is(err, api.ErrTimeoutExpired) || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Wait past its deadline returned %v; want DAT_TIMEOUT_EXPIRED wrapping context.DeadlineExceeded", err)
				}
			}},
			{"DAT_RETURN", "an interrupted wait keeps context.Canceled reachable through errors.Is", func(t *checkT) {
				e, _ := t.node().seEVD(8, nil)
				ctx, cancel := context.WithCancel(t.ctx)
				cancel()
				var ev api.Event
				_, err := e.Wait(ctx, 1, &ev)
				if !errors.Is(err, api.ErrInterruptedCall) || !errors.Is(err, context.Canceled) {
					t.Fatalf("Wait with a cancelled context returned %v; want DAT_INTERRUPTED_CALL wrapping context.Canceled", err)
				}
			}},
		}},
	}
}

// epAttrOverIA checks that CreateEP with the EP attribute field set to one
// above the IA's limit (the IAAttr field named limitName, which limit
// reads) is DAT_INVALID_PARAMETER; set sets field. An IA without that
// limit skips the check.
func (t *checkT) epAttrOverIA(limitName string, limit func(*api.IAAttr) int, field string, set func(*api.EPAttr, int)) {
	t.T.Helper()
	n := t.node()
	m := limit(&n.attr)
	if m <= 0 || m == math.MaxInt {
		t.Skipf("IAAttr.%s is %d", limitName, m)
	}
	a := n.epAttr()
	set(a, m+1)
	_, err := n.ia.CreateEP(n.pz, n.recv, n.req, n.conn, a)
	t.wantErr(err, api.ErrInvalidParameter, "CreateEP with "+field+" = "+limitName+"+1")
}
