package loopback

import (
	"context"
	"errors"
	"testing"

	"github.com/godat/godat/api"
)

// These tests call the provider without the registry's guard, checking that
// bad arguments give DAT errors and never a panic.

func openDirect(t *testing.T) api.IA {
	t.Helper()
	ia, err := Provider{}.Open(context.Background(), api.OpenParams{Name: "direct", AsyncEVDQLen: 8})
	must(t, err, "Open")
	t.Cleanup(func() { ia.Close(api.CloseAbrupt) })
	return ia
}

// Handles of another provider: they satisfy the interfaces by embedding.
type (
	fPZ  struct{ api.PZ }
	fEVD struct{ api.EVD }
	fCNO struct{ api.CNO }
	fEP  struct{ api.EP }
	fLMR struct{ api.LMR }
	fSRQ struct{ api.SRQ }
)

func TestDirectBadArguments(t *testing.T) {
	ia := openDirect(t)
	other := openDirect(t)
	opz, err := other.CreatePZ()
	must(t, err, "CreatePZ")
	pz, err := ia.CreatePZ()
	must(t, err, "CreatePZ")
	isErr := func(err error, want *api.Error, what string) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Fatalf("%s: got %v, want %v", what, err, want)
		}
	}
	_, err = ia.CreateEVD(0, nil, api.EVDDTO)
	isErr(err, api.ErrInvalidParameter, "CreateEVD qlen 0")
	_, err = ia.CreateEVD(4, nil, 0)
	isErr(err, api.ErrInvalidParameter, "CreateEVD no flags")
	_, err = ia.CreateEVD(4, fCNO{}, api.EVDDTO)
	isErr(err, api.ErrInvalidHandle, "CreateEVD foreign CNO")
	_, err = ia.CreateEP(fPZ{}, nil, nil, nil, nil)
	isErr(err, api.ErrInvalidHandle, "CreateEP foreign PZ")
	_, err = ia.CreateEP(opz, nil, nil, nil, nil)
	isErr(err, api.ErrInvalidHandle, "CreateEP PZ of another IA")
	_, err = ia.CreateEP(pz, fEVD{}, nil, nil, nil)
	isErr(err, api.ErrInvalidHandle, "CreateEP foreign EVD")
	_, err = ia.CreateEP(pz, nil, nil, nil, &api.EPAttr{MaxRecvIOV: providerLimits.MaxIOV + 1})
	isErr(err, api.ErrInvalidParameter, "CreateEP IOV over the limit")
	_, err = ia.CreateEP(pz, nil, nil, nil, &api.EPAttr{ServiceType: 7})
	isErr(err, api.ErrInvalidParameter, "CreateEP unknown service")
	_, err = ia.CreateEP(pz, nil, nil, nil, &api.EPAttr{QOS: 0x80})
	isErr(err, api.ErrModelNotSupported, "CreateEP unknown QOS")
	_, err = ia.CreateEPWithSRQ(pz, nil, nil, nil, fSRQ{}, &api.EPAttr{})
	isErr(err, api.ErrInvalidHandle, "CreateEPWithSRQ foreign SRQ")
	_, err = ia.CreateLMR(fPZ{}, api.Region{Bytes: make([]byte, 8)}, api.MemPrivAll, api.VATypeVA)
	isErr(err, api.ErrInvalidHandle, "CreateLMR foreign PZ")
	_, err = ia.CreateLMR(nil, api.Region{Bytes: make([]byte, 8)}, api.MemPrivAll, api.VATypeVA)
	isErr(err, api.ErrInvalidHandle, "CreateLMR nil PZ")
	_, err = ia.CreateLMR(pz, api.Region{Type: api.MemTypeLMR, LMR: fLMR{}}, api.MemPrivAll, api.VATypeVA)
	isErr(err, api.ErrInvalidHandle, "CreateLMR of a foreign LMR")
	_, err = ia.CreateLMR(pz, api.Region{Type: 9, Bytes: make([]byte, 8)}, api.MemPrivAll, api.VATypeVA)
	isErr(err, api.ErrInvalidParameter, "CreateLMR unknown type")
	_, err = ia.CreateLMR(pz, api.Region{Bytes: make([]byte, 8)}, 0x400, api.VATypeVA)
	isErr(err, api.ErrInvalidParameter, "CreateLMR unknown privilege")
	_, err = ia.CreateLMR(pz, api.Region{Bytes: make([]byte, 8)}, api.MemPrivAll, 5)
	isErr(err, api.ErrInvalidParameter, "CreateLMR unknown VA type")
	_, err = ia.CreateSRQ(pz, api.SRQAttr{MaxRecvDTOs: 0, MaxRecvIOV: 1})
	isErr(err, api.ErrInvalidParameter, "CreateSRQ size 0")
	_, err = ia.CreateSRQ(pz, api.SRQAttr{MaxRecvDTOs: 2, MaxRecvIOV: 1, LowWatermark: 3})
	isErr(err, api.ErrInvalidParameter, "CreateSRQ watermark above size")
	_, err = ia.CreateSRQ(nil, api.SRQAttr{MaxRecvDTOs: 2, MaxRecvIOV: 1})
	isErr(err, api.ErrInvalidHandle, "CreateSRQ nil PZ")
	_, err = ia.CreatePSP(1, nil, api.PSPConsumer)
	isErr(err, api.ErrInvalidHandle, "CreatePSP nil EVD")
	evd, err := ia.CreateEVD(4, nil, api.EVDCR|api.EVDConnection|api.EVDDTO)
	must(t, err, "CreateEVD")
	_, err = ia.CreatePSP(1, evd, 7)
	isErr(err, api.ErrInvalidParameter, "CreatePSP unknown flags")
	_, err = ia.CreateRSP(1, nil, evd)
	isErr(err, api.ErrInvalidHandle, "CreateRSP nil EP")
	ep, err := ia.CreateEP(pz, evd, evd, evd, nil)
	must(t, err, "CreateEP")
	_, err = ia.CreateRSP(1, ep, nil)
	isErr(err, api.ErrInvalidHandle, "CreateRSP nil EVD")
	isErr(ep.Modify(api.EPFieldPZ, nil), api.ErrInvalidParameter, "Modify nil params")
	isErr(ep.Modify(api.EPFieldPZ, &api.EPParam{PZ: fPZ{}}), api.ErrInvalidHandle, "Modify foreign PZ")
	isErr(ep.Modify(api.EPFieldMaxRecvIOV, &api.EPParam{Attr: api.EPAttr{MaxRecvIOV: -1}}), api.ErrInvalidParameter, "Modify negative IOV")
	isErr(ep.DupConnect(fEP{}, -1, nil, 0), api.ErrInvalidHandle, "DupConnect foreign EP")
	isErr(ep.Connect(Addr{}, 1, -2, nil, 0, 0), api.ErrInvalidParameter, "Connect negative timeout")
	isErr(ep.Connect(Addr{}, 1, -1, make([]byte, providerLimits.MaxPrivateData+1), 0, 0), api.ErrInvalidParameter, "Connect long private data")
	isErr(ep.Connect(nil, 1, -1, nil, 0, 0), api.ErrInvalidAddress, "Connect nil address")
	isErr(ep.Connect((*Addr)(nil), 1, -1, nil, 0, 0), api.ErrInvalidAddress, "Connect nil *Addr")
	isErr(ep.Connect(Addr{}, 1, -1, nil, 0, 0x40), api.ErrInvalidParameter, "Connect unknown flags")
	isErr(ep.SetWatermark(-5, 0), api.ErrInvalidParameter, "SetWatermark negative")
	var ev api.Event
	isErr(evd.Dequeue(nil), api.ErrInvalidParameter, "Dequeue nil event")
	//lint:ignore SA1012 checking the nil-context guard on purpose
	_, err = evd.Wait(nil, 1, &ev)
	isErr(err, api.ErrInvalidParameter, "Wait nil context")
	isErr(evd.PostSE(nil), api.ErrInvalidParameter, "PostSE on an EVD without the software stream")
	isErr(evd.Resize(providerLimits.MaxEVDQLen+1), api.ErrInvalidParameter, "Resize over the limit")
	isErr(evd.ModifyCNO(fCNO{}), api.ErrInvalidHandle, "ModifyCNO foreign CNO")
	rmr, err := pz.CreateRMR()
	must(t, err, "CreateRMR")
	_, err = rmr.Bind(nil, api.LMRTriplet{Length: 8}, api.MemPrivRemoteRead, api.VATypeVA, ep, 0, 0)
	isErr(err, api.ErrInvalidHandle, "Bind nil LMR with a length")
	_, err = rmr.Bind(nil, api.LMRTriplet{}, api.MemPrivRemoteRead, api.VATypeVA, nil, 0, 0)
	isErr(err, api.ErrInvalidHandle, "Bind nil EP")
	_, err = rmr.Bind(nil, api.LMRTriplet{}, 0x400, api.VATypeVA, ep, 0, 0)
	isErr(err, api.ErrInvalidParameter, "Bind unknown privilege")
	_, err = rmr.Bind(nil, api.LMRTriplet{}, 0, 9, ep, 0, 0)
	isErr(err, api.ErrInvalidParameter, "Bind unknown VA type")
	cr := &cr{done: true}
	isErr(cr.Accept(nil, nil), api.ErrInvalidHandle, "Accept of a finished CR")
	isErr(cr.Reject(make([]byte, providerLimits.MaxPrivateData+1)), api.ErrInvalidParameter, "Reject long private data")
	if _, err := (Provider{}).Open(context.Background(), api.OpenParams{AsyncEVDQLen: providerLimits.MaxEVDQLen + 1}); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("Open with a huge async queue: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (Provider{}).Open(ctx, api.OpenParams{}); !errors.Is(err, api.ErrInterruptedCall) {
		t.Fatalf("Open with a cancelled context: %v", err)
	}
}

func TestDirectHandleTypesAndFreedObjects(t *testing.T) {
	ia := openDirect(t)
	pz, _ := ia.CreatePZ()
	evd, _ := ia.CreateEVD(4, nil, api.EVDCR|api.EVDConnection|api.EVDDTO)
	cno, _ := ia.CreateCNO(nil)
	ep, _ := ia.CreateEP(pz, evd, evd, evd, nil)
	lmr, _ := ia.CreateLMR(pz, api.Region{Bytes: make([]byte, 8)}, api.MemPrivAll, api.VATypeVA)
	rmr, _ := pz.CreateRMR()
	srq, _ := ia.CreateSRQ(pz, api.SRQAttr{MaxRecvDTOs: 2, MaxRecvIOV: 1})
	psp, _ := ia.CreatePSP(31337, evd, api.PSPConsumer)
	ep2, _ := ia.CreateEP(pz, nil, nil, nil, nil)
	rsp, _ := ia.CreateRSP(31338, ep2, evd)
	c := &cr{}
	for _, o := range []struct {
		obj  api.Object
		want api.HandleType
	}{
		{ia, api.HandleIA}, {pz, api.HandlePZ}, {evd, api.HandleEVD}, {cno, api.HandleCNO}, {ep, api.HandleEP},
		{lmr, api.HandleLMR}, {rmr, api.HandleRMR}, {srq, api.HandleSRQ}, {psp, api.HandlePSP}, {rsp, api.HandleRSP}, {c, api.HandleCR},
	} {
		if got := o.obj.HandleType(); got != o.want {
			t.Errorf("%T.HandleType() = %v, want %v", o.obj, got, o.want)
		}
		must(t, o.obj.SetConsumerContext(o.want), "SetConsumerContext")
		if v, err := o.obj.ConsumerContext(); err != nil || v != o.want {
			t.Errorf("%T consumer context %v %v", o.obj, v, err)
		}
	}
	if (Addr{}).Network() != "loopback" {
		t.Error("Addr.Network")
	}
	for _, f := range []func() error{rsp.Free, psp.Free, srq.Free, rmr.Free, lmr.Free, ep2.Free, ep.Free, cno.Free, evd.Free, pz.Free} {
		must(t, f(), "Free")
		if err := f(); !errors.Is(err, api.ErrInvalidHandle) {
			t.Fatalf("second Free: %v", err)
		}
	}
	for _, q := range []func() error{
		func() error { _, err := pz.Query(); return err },
		func() error { _, err := evd.Query(); return err },
		func() error { _, err := cno.Query(); return err },
		func() error { _, err := ep.Query(); return err },
		func() error { _, _, _, err := ep.GetStatus(); return err },
		func() error { _, _, err := ep.RecvQuery(); return err },
		func() error { return ep.Reset() },
		func() error { return ep.Disconnect(api.CloseAbrupt) },
		func() error { return ep.PostRecv(nil, 0, 0) },
		func() error { return ep.PostSend(nil, 0, 0) },
		func() error { return ep.Modify(api.EPFieldQOS, &api.EPParam{}) },
		func() error { return ep.Connect(Addr{}, 1, -1, nil, 0, 0) },
		func() error { return ep.SetWatermark(1, 1) },
		func() error { _, err := lmr.Query(); return err },
		func() error { _, err := rmr.Query(); return err },
		func() error { _, err := rmr.Bind(nil, api.LMRTriplet{}, 0, 0, ep, 0, 0); return err },
		func() error { _, err := srq.Query(); return err },
		func() error { return srq.PostRecv(nil, 0) },
		func() error { return srq.Resize(2) },
		func() error { return srq.SetLW(1) },
		func() error { _, err := psp.Query(); return err },
		func() error { _, err := rsp.Query(); return err },
		func() error { return evd.ModifyCNO(nil) },
		func() error { _, err := pz.CreateRMR(); return err },
	} {
		if err := q(); !errors.Is(err, api.ErrInvalidHandle) {
			t.Fatalf("call on a freed object: %v", err)
		}
	}
	must(t, ia.Close(api.CloseGraceful), "graceful Close once everything is freed")
	for _, q := range []func() error{
		func() error { _, _, err := ia.Query(); return err },
		func() error { _, err := ia.AsyncEVD(); return err },
		func() error { _, err := ia.CreatePZ(); return err },
		func() error { _, err := ia.CreateEVD(1, nil, api.EVDDTO); return err },
		func() error { _, err := ia.CreateCNO(nil); return err },
		func() error { _, err := ia.CreateEP(nil, nil, nil, nil, nil); return err },
		func() error { _, err := ia.CreatePSP(1, nil, 0); return err },
		func() error { _, _, err := ia.CreatePSPAny(nil, 0); return err },
		func() error { _, err := ia.CreateRSP(1, nil, nil); return err },
		func() error { _, err := ia.CreateLMR(nil, api.Region{}, 0, 0); return err },
		func() error { _, err := ia.CreateSRQ(nil, api.SRQAttr{MaxRecvDTOs: 1, MaxRecvIOV: 1}); return err },
		func() error { return ia.SyncRDMARead(nil) },
	} {
		if err := q(); !errors.Is(err, api.ErrInvalidHandle) {
			t.Fatalf("call on a closed IA: %v", err)
		}
	}
}

func TestIAQueryAttributes(t *testing.T) {
	ia := openDirect(t)
	a, p, err := ia.Query()
	must(t, err, "Query")
	if a.MaxIOVSegmentsPerDTO != providerLimits.MaxIOV || int(a.MaxMessageSize) != providerLimits.MaxMessageSize || !a.ZBSupported || a.Address == nil {
		t.Fatalf("IA attributes %+v", a)
	}
	if !p.ThreadSafe || p.MaxPrivateDataSize != providerLimits.MaxPrivateData || !p.SRQSupported || p.EPCreator != api.PSPCreatesEPIfAsked || p.ProviderName != "loopback" {
		t.Fatalf("provider attributes %+v", p)
	}
	pz, _ := ia.CreatePZ()
	ep, err := ia.CreateEP(pz, nil, nil, nil, &api.EPAttr{MaxRecvDTOs: 3})
	must(t, err, "CreateEP")
	prm, err := ep.Query()
	must(t, err, "EP.Query")
	if prm.Attr.MaxRecvDTOs != 3 || prm.Attr.MaxRequestDTOs != defaultEPAttr.MaxRequestDTOs || int(prm.Attr.MaxMessageSize) != providerLimits.MaxMessageSize {
		t.Fatalf("EP attributes with defaults filled in: %+v", prm.Attr)
	}
	mask := api.EPFieldMaxMessageSize | api.EPFieldMaxRDMASize | api.EPFieldQOS | api.EPFieldRecvCompletionFlags |
		api.EPFieldRequestCompletionFlags | api.EPFieldMaxRecvDTOs | api.EPFieldMaxRequestDTOs | api.EPFieldMaxRecvIOV |
		api.EPFieldMaxRequestIOV | api.EPFieldMaxRDMAReadIn | api.EPFieldMaxRDMAReadOut | api.EPFieldSRQSoftHW |
		api.EPFieldMaxRDMAReadIOV | api.EPFieldMaxRDMAWriteIOV | api.EPFieldServiceType
	want := api.EPAttr{MaxMessageSize: 100, MaxRDMASize: 200, QOS: api.QOSLowLatency, RecvCompletionFlags: api.CompletionSolicitedWait,
		RequestCompletionFlags: api.CompletionUnsignalled, MaxRecvDTOs: 5, MaxRequestDTOs: 6, MaxRecvIOV: 7, MaxRequestIOV: 8,
		MaxRDMAReadIn: 9, MaxRDMAReadOut: 10, SRQSoftHighWatermark: 11, MaxRDMAReadIOV: 12, MaxRDMAWriteIOV: 13}
	must(t, ep.Modify(mask, &api.EPParam{Attr: want}), "Modify all attributes")
	prm, _ = ep.Query()
	if prm.Attr.MaxMessageSize != 100 || prm.Attr.MaxRDMAWriteIOV != 13 || prm.Attr.SRQSoftHighWatermark != 11 || prm.Attr.QOS != api.QOSLowLatency {
		t.Fatalf("modified attributes %+v", prm.Attr)
	}
	must(t, ia.SyncRDMAWrite(nil), "SyncRDMAWrite of nothing")
	if err := ia.SyncRDMARead([]api.LMRTriplet{{Length: 4, LMRContext: 0xFFFF}}); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("sync of an unknown LMR: %v", err)
	}
}

func TestReadToRMRFailures(t *testing.T) {
	p := newPair(t)
	src := p.b.region(32, api.MemPrivAll)
	noWrite := p.a.region(64, api.MemPrivLocalRead|api.MemPrivLocalWrite|api.MemPrivRemoteRead)
	if err := p.ea.PostRDMAReadToRMR(noWrite.rtr(0, 8), 1, src.rtr(0, 32), 0); !errors.Is(err, api.ErrLength) {
		t.Fatalf("local window shorter than the read: %v", err)
	}
	must(t, p.ea.PostRDMAReadToRMR(noWrite.rtr(0, 32), 2, src.rtr(0, 32), 0), "PostRDMAReadToRMR")
	p.a.expectDTO(p.a.req, 2, api.DTOErrLocalProtection)
	p.a.expect(p.a.connEVD, api.ConnectionBrokenEvent)
	if !zero(noWrite.b) {
		t.Fatal("a refused sink was written")
	}
}
