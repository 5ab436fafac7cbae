package conformance

import (
	"context"
	"errors"

	"github.com/godat/godat/api"
)

// The checks that every call on a freed object, and every call that
// passes one, is DAT_INVALID_HANDLE (the RETURN VALUES of each page, and
// of the free page "Use of the handle of the destroyed ... in any
// subsequent operation fails"). Through the registry these are the
// guard's checks: TestConformanceNoCheck runs them over a provider that
// makes none.

// call is one call the freed-handle checks make.
type call struct {
	what string
	do   func() error
}

// allInvalidHandle makes each call and fails the check for every one that
// does not return DAT_INVALID_HANDLE.
func (t *checkT) allInvalidHandle(calls []call) {
	t.T.Helper()
	for _, c := range calls {
		if err := c.do(); !errors.Is(err, api.ErrInvalidHandle) {
			t.Errorf("%s: got %v, want DAT_INVALID_HANDLE", c.what, err)
		}
	}
}

// objectCalls are the calls every object has.
func objectCalls(kind string, o api.Object) []call {
	return []call{
		{kind + ".ConsumerContext", func() error { _, err := o.ConsumerContext(); return err }},
		{kind + ".SetConsumerContext", func() error { return o.SetConsumerContext("x") }},
	}
}

// freeable is an object with a Query returning P and a Free.
type freeable[P any] interface {
	api.Object
	Query() (P, error)
	Free() error
}

// freeAndCall frees o (kind names its type), then checks that its Query,
// its Free, the calls more and the calls of every object are all
// DAT_INVALID_HANDLE.
func freeAndCall[P any](t *checkT, kind string, o freeable[P], more ...call) {
	t.T.Helper()
	t.noErr(o.Free(), kind+".Free")
	t.allInvalidHandle(append(append([]call{
		{kind + ".Query", func() error { _, err := o.Query(); return err }},
		{kind + ".Free", o.Free},
	}, more...), objectCalls(kind, o)...))
}

// allStreams are the stream flags of an EVD that any EVD argument accepts.
const allStreams = api.EVDSoftware | api.EVDDTO | api.EVDConnection | api.EVDCR | api.EVDRMRBind

// short returns a context that ends after shortWait, for calls that would
// block on a live object.
func (t *checkT) short() context.Context {
	ctx, cancel := context.WithTimeout(t.ctx, shortWait)
	t.T.Cleanup(cancel)
	return ctx
}

func freedEVD(t *checkT) {
	n := t.node()
	e, err := n.ia.CreateEVD(8, nil, allStreams)
	t.noErr(err, "IA.CreateEVD with every stream")
	c := n.cno(nil)
	live := n.end(nil)
	t.noErr(e.Free(), "EVD.Free")
	var ev api.Event
	t.allInvalidHandle(append([]call{
		{"EVD.Query", func() error { _, err := e.Query(); return err }},
		{"EVD.Resize", func() error { return e.Resize(16) }},
		{"EVD.PostSE", func() error { return e.PostSE(&api.Event{Number: api.SoftwareEvent}) }},
		{"EVD.Dequeue", func() error { return e.Dequeue(&ev) }},
		{"EVD.Wait", func() error { _, err := e.Wait(t.short(), 1, &ev); return err }},
		{"EVD.Enable", e.Enable},
		{"EVD.Disable", e.Disable},
		{"EVD.SetUnwaitable", e.SetUnwaitable},
		{"EVD.ClearUnwaitable", e.ClearUnwaitable},
		{"EVD.ModifyCNO", func() error { return e.ModifyCNO(c) }},
		{"EVD.ModifyCNO(nil)", func() error { return e.ModifyCNO(nil) }},
		{"EVD.Free", e.Free},
		{"IA.CreateEP with it as receive EVD", func() error { _, err := n.ia.CreateEP(n.pz, e, nil, nil, nil); return err }},
		{"IA.CreateEP with it as request EVD", func() error { _, err := n.ia.CreateEP(n.pz, nil, e, nil, nil); return err }},
		{"IA.CreateEP with it as connect EVD", func() error { _, err := n.ia.CreateEP(n.pz, nil, nil, e, nil); return err }},
		{"IA.CreatePSP with it", func() error { _, err := n.ia.CreatePSP(n.freeQual(), e, api.PSPConsumer); return err }},
		{"IA.CreatePSPAny with it", func() error { _, _, err := n.ia.CreatePSPAny(e, api.PSPConsumer); return err }},
		{"IA.CreateRSP with it", func() error { _, err := n.ia.CreateRSP(n.freeQual(), live.ep, e); return err }},
		{"EP.Modify to it as connect EVD", func() error {
			return live.ep.Modify(api.EPFieldConnectEVD, &api.EPParam{ConnectEVD: e})
		}},
	}, objectCalls("EVD", e)...))
}

func freedEP(t *checkT) {
	n := t.node()
	e := n.end(nil)
	r := n.region(64, remote)
	live := n.end(nil)
	rmr := n.newRMR()
	t.noErr(e.ep.Free(), "EP.Free")
	ep := e.ep
	t.allInvalidHandle(append([]call{
		{"EP.Query", func() error { _, err := ep.Query(); return err }},
		{"EP.Modify", func() error {
			return ep.Modify(api.EPFieldMaxRecvDTOs, &api.EPParam{Attr: api.EPAttr{MaxRecvDTOs: 8}})
		}},
		{"EP.GetStatus", func() error { _, _, _, err := ep.GetStatus(); return err }},
		{"EP.Connect", func() error {
			return ep.Connect(n.attr.Address, n.freeQual(), connTimeout, nil, api.QOSBestEffort, api.ConnectDefault)
		}},
		{"EP.DupConnect", func() error { return ep.DupConnect(live.ep, connTimeout, nil, api.QOSBestEffort) }},
		{"EP.Disconnect", func() error { return ep.Disconnect(api.CloseAbrupt) }},
		{"EP.Reset", ep.Reset},
		{"EP.Free", ep.Free},
		{"EP.PostSend", func() error { return ep.PostSend(r.iov(0, 8), 1, api.CompletionDefault) }},
		{"EP.PostSendWithInvalidate", func() error {
			return ep.PostSendWithInvalidate(r.iov(0, 8), 1, api.CompletionDefault, true, r.p.RMRContext)
		}},
		{"EP.PostRecv", func() error { return ep.PostRecv(r.iov(0, 8), 1, api.CompletionDefault) }},
		{"EP.PostRDMAWrite", func() error { return ep.PostRDMAWrite(r.iov(0, 8), 1, r.rtr(8, 8), api.CompletionDefault) }},
		{"EP.PostRDMARead", func() error { return ep.PostRDMARead(r.iov(0, 8), 1, r.rtr(8, 8), api.CompletionDefault) }},
		{"EP.PostRDMAReadToRMR", func() error {
			return ep.PostRDMAReadToRMR(r.rtr(0, 8), 1, r.rtr(8, 8), api.CompletionDefault)
		}},
		{"EP.RecvQuery", func() error { _, _, err := ep.RecvQuery(); return err }},
		{"EP.SetWatermark", func() error { return ep.SetWatermark(1, api.WatermarkInfinite) }},
		{"EP.DupConnect with it as the EP to duplicate", func() error {
			return live.ep.DupConnect(ep, connTimeout, nil, api.QOSBestEffort)
		}},
		{"IA.CreateRSP with it", func() error { _, err := n.ia.CreateRSP(n.freeQual(), ep, n.cr); return err }},
		{"RMR.Bind on it", func() error {
			_, err := rmr.Bind(r.lmr, r.tr(0, 64), rmrRW, api.VATypeVA, ep, 1, api.CompletionDefault)
			return err
		}},
	}, objectCalls("EP", ep)...))
	pr := t.request(nil)
	f := pr.srv.end(nil)
	t.noErr(f.ep.Free(), "EP.Free")
	t.allInvalidHandle([]call{{"CR.Accept with it", func() error { return pr.cr.Accept(f.ep, nil) }}})
}

func freedPZ(t *checkT) {
	n := t.node()
	pz, err := n.ia.CreatePZ()
	t.noErr(err, "IA.CreatePZ")
	live := n.end(nil)
	t.noErr(pz.Free(), "PZ.Free of an unused PZ")
	mem := t.alloc(4096)
	calls := []call{
		{"PZ.Query", func() error { _, err := pz.Query(); return err }},
		{"PZ.CreateRMR", func() error { _, err := pz.CreateRMR(); return err }},
		{"PZ.Free", pz.Free},
		{"IA.CreateEP in it", func() error { _, err := n.ia.CreateEP(pz, n.recv, n.req, n.conn, nil); return err }},
		{"IA.CreateLMR in it", func() error {
			_, err := n.ia.CreateLMR(pz, api.Region{Type: api.MemTypeVirtual, Bytes: mem.Bytes()}, rw, api.VATypeVA)
			return err
		}},
		{"EP.Modify to it", func() error { return live.ep.Modify(api.EPFieldPZ, &api.EPParam{PZ: pz}) }},
	}
	if n.pattr.SRQSupported {
		calls = append(calls, call{"IA.CreateSRQ in it", func() error {
			_, err := n.ia.CreateSRQ(pz, api.SRQAttr{MaxRecvDTOs: 4, MaxRecvIOV: 1})
			return err
		}})
	}
	t.allInvalidHandle(append(calls, objectCalls("PZ", pz)...))
}

func freedCNO(t *checkT) {
	n := t.node()
	c := n.cno(nil)
	e, _ := n.seEVD(8, nil)
	t.noErr(c.Free(), "CNO.Free")
	t.allInvalidHandle(append([]call{
		{"CNO.Query", func() error { _, err := c.Query(); return err }},
		{"CNO.ModifyAgent", func() error { return c.ModifyAgent(func(api.EVD) {}) }},
		{"CNO.Wait", func() error { _, err := c.Wait(t.short()); return err }},
		{"CNO.Triggered", func() error { _, err := c.Triggered(); return err }},
		{"CNO.Free", c.Free},
		{"IA.CreateEVD with it", func() error { _, err := n.ia.CreateEVD(8, c, api.EVDSoftware); return err }},
		{"EVD.ModifyCNO to it", func() error { return e.ModifyCNO(c) }},
	}, objectCalls("CNO", c)...))
}

func freedLMR(t *checkT) {
	p := t.pair()
	r := p.srv.region(64, remote)
	rmr := p.srv.newRMR()
	freeAndCall(t, "LMR", r.lmr,
		call{"RMR.Bind to it", func() error {
			_, err := rmr.Bind(r.lmr, r.tr(0, 64), rmrRW, api.VATypeVA, p.srv.ep, 1, api.CompletionDefault)
			return err
		}},
		call{"IA.CreateLMR of type DAT_MEM_TYPE_LMR over it", func() error {
			_, err := p.srv.ia.CreateLMR(p.srv.pz, api.Region{Type: api.MemTypeLMR, LMR: r.lmr}, rw, api.VATypeVA)
			return err
		}},
	)
	t.works(p.cli, p.srv, "after the refused calls")
}

func freedRMR(t *checkT) {
	p := t.pair()
	r := p.srv.region(64, remote)
	rmr := p.srv.newRMR()
	t.noErr(rmr.Free(), "RMR.Free")
	t.allInvalidHandle(append([]call{
		{"RMR.Query", func() error { _, err := rmr.Query(); return err }},
		{"RMR.Bind", func() error {
			_, err := rmr.Bind(r.lmr, r.tr(0, 64), rmrRW, api.VATypeVA, p.srv.ep, 1, api.CompletionDefault)
			return err
		}},
		{"RMR.Free", rmr.Free},
	}, objectCalls("RMR", rmr)...))
	t.works(p.cli, p.srv, "after the refused calls")
}

func freedSRQ(t *checkT) {
	n := t.node()
	s := n.srq(4, 1)
	r := n.region(64, rw)
	attr := n.epAttr()
	t.noErr(s.Free(), "SRQ.Free")
	t.allInvalidHandle(append([]call{
		{"SRQ.Query", func() error { _, err := s.Query(); return err }},
		{"SRQ.PostRecv", func() error { return s.PostRecv(r.iov(0, 64), 1) }},
		{"SRQ.Resize", func() error { return s.Resize(8) }},
		{"SRQ.SetLW", func() error { return s.SetLW(1) }},
		{"SRQ.Free", s.Free},
		{"IA.CreateEPWithSRQ with it", func() error {
			_, err := n.ia.CreateEPWithSRQ(n.pz, n.recv, n.req, n.conn, s, attr)
			return err
		}},
	}, objectCalls("SRQ", s)...))
}

func freedPSP(t *checkT) {
	n := t.node()
	psp, _ := n.listen(api.PSPConsumer)
	freeAndCall(t, "PSP", psp)
}

func freedRSP(t *checkT) {
	n := t.node()
	e := n.end(nil)
	rsp := n.reserve(e.ep, n.freeQual())
	freeAndCall(t, "RSP", rsp)
}

func acceptedCR(t *checkT) {
	pr := t.request(nil)
	s := pr.srv.end(nil)
	pr.accept(s, nil)
	q := pr.srv.freeQual()
	t.allInvalidHandle(append([]call{
		{"CR.Query", func() error { _, err := pr.cr.Query(); return err }},
		{"CR.Accept", func() error { return pr.cr.Accept(pr.srv.end(nil).ep, nil) }},
		{"CR.Reject", func() error { return pr.cr.Reject(nil) }},
		{"CR.Handoff", func() error { return pr.cr.Handoff(q) }},
	}, objectCalls("CR", pr.cr)...))
	t.works(pr.c, s, "the accepted connection")
}

func closedIA(t *checkT) {
	ia := t.openIA()
	pz, err := ia.CreatePZ()
	t.noErr(err, "IA.CreatePZ")
	evd, err := ia.CreateEVD(8, nil, allStreams)
	t.noErr(err, "IA.CreateEVD")
	ep, err := ia.CreateEP(pz, evd, evd, evd, nil)
	t.noErr(err, "IA.CreateEP")
	_, pattr, err := ia.Query()
	t.noErr(err, "IA.Query")
	var srq api.SRQ
	if pattr.SRQSupported {
		srq, err = ia.CreateSRQ(pz, api.SRQAttr{MaxRecvDTOs: 4, MaxRecvIOV: 1})
		t.noErr(err, "IA.CreateSRQ")
	}
	p, err := ep.Query()
	t.noErr(err, "EP.Query")
	mem := t.alloc(4096)
	t.noErr(ia.Close(api.CloseAbrupt), "abrupt IA.Close")
	region := api.Region{Type: api.MemTypeVirtual, Bytes: mem.Bytes()}
	t.allInvalidHandle(append([]call{
		{"IA.Query", func() error { _, _, err := ia.Query(); return err }},
		{"IA.AsyncEVD", func() error { _, err := ia.AsyncEVD(); return err }},
		{"IA.Close(abrupt)", func() error { return ia.Close(api.CloseAbrupt) }},
		{"IA.Close(graceful)", func() error { return ia.Close(api.CloseGraceful) }},
		{"IA.CreatePZ", func() error { _, err := ia.CreatePZ(); return err }},
		{"IA.CreateEVD", func() error { _, err := ia.CreateEVD(8, nil, api.EVDSoftware); return err }},
		{"IA.CreateCNO", func() error { _, err := ia.CreateCNO(nil); return err }},
		{"IA.CreateCNOFD", func() error { _, _, err := ia.CreateCNOFD(); return err }},
		{"IA.CreateEP", func() error { _, err := ia.CreateEP(pz, evd, evd, evd, nil); return err }},
		{"IA.CreateEPWithSRQ", func() error { _, err := ia.CreateEPWithSRQ(pz, evd, evd, evd, srq, &p.Attr); return err }},
		{"IA.CreatePSP", func() error { _, err := ia.CreatePSP(0xC0DE, evd, api.PSPConsumer); return err }},
		{"IA.CreateRSP", func() error { _, err := ia.CreateRSP(0xC0DF, ep, evd); return err }},
		{"IA.CreatePSPAny", func() error { _, _, err := ia.CreatePSPAny(evd, api.PSPConsumer); return err }},
		{"IA.CreateLMR", func() error { _, err := ia.CreateLMR(pz, region, rw, api.VATypeVA); return err }},
		{"IA.CreateSRQ", func() error { _, err := ia.CreateSRQ(pz, api.SRQAttr{MaxRecvDTOs: 4, MaxRecvIOV: 1}); return err }},
		{"IA.SyncRDMARead", func() error { return ia.SyncRDMARead(nil) }},
		{"IA.SyncRDMAWrite", func() error { return ia.SyncRDMAWrite(nil) }},
	}, objectCalls("IA", ia)...))
}
