package loopback

import (
	"context"
	"errors"
	"testing"

	"github.com/godat/godat/api"
)

// These tests call the provider without the registry's guard, checking
// that the arguments the provider itself checks (attributes against its
// limits, addresses) give DAT errors. What package api's doc lists as the
// guard's never reaches a provider unchecked: handles (a freed, foreign or
// missing one), unknown flags, memory privileges and VA types among them;
// the registry's guard_test.go and tests/conformance's
// TestConformanceNoCheck prove the guard refuses each of them.

func openDirect(t *testing.T) api.IA {
	t.Helper()
	ia, err := Provider{}.Open(context.Background(), api.OpenParams{Name: "direct", AsyncEVDQLen: 8})
	must(t, err, "Open")
	t.Cleanup(func() { ia.Close(api.CloseAbrupt) })
	return ia
}

func TestDirectBadArguments(t *testing.T) {
	ia := openDirect(t)
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
	_, err = ia.CreateEP(pz, nil, nil, nil, &api.EPAttr{MaxRecvIOV: providerLimits.MaxIOV + 1})
	isErr(err, api.ErrInvalidParameter, "CreateEP IOV over the limit")
	_, err = ia.CreateEP(pz, nil, nil, nil, &api.EPAttr{ServiceType: 7})
	isErr(err, api.ErrInvalidParameter, "CreateEP unknown service")
	_, err = ia.CreateEP(pz, nil, nil, nil, &api.EPAttr{QOS: 0x80})
	isErr(err, api.ErrModelNotSupported, "CreateEP unknown QOS")
	_, err = ia.CreateLMR(pz, api.Region{Type: 9, Bytes: make([]byte, 8)}, api.MemPrivAll, api.VATypeVA)
	isErr(err, api.ErrInvalidParameter, "CreateLMR unknown type")
	_, err = ia.CreateSRQ(pz, api.SRQAttr{MaxRecvDTOs: 0, MaxRecvIOV: 1})
	isErr(err, api.ErrInvalidParameter, "CreateSRQ size 0")
	_, err = ia.CreateSRQ(pz, api.SRQAttr{MaxRecvDTOs: 2, MaxRecvIOV: 1, LowWatermark: 3})
	isErr(err, api.ErrInvalidParameter, "CreateSRQ watermark above size")
	evd, err := ia.CreateEVD(4, nil, api.EVDCR|api.EVDConnection|api.EVDDTO)
	must(t, err, "CreateEVD")
	ep, err := ia.CreateEP(pz, evd, evd, evd, nil)
	must(t, err, "CreateEP")
	isErr(ep.Modify(api.EPFieldPZ, nil), api.ErrInvalidParameter, "Modify nil params")
	isErr(ep.Modify(api.EPFieldMaxRecvIOV, &api.EPParam{Attr: api.EPAttr{MaxRecvIOV: -1}}), api.ErrInvalidParameter, "Modify negative IOV")
	isErr(ep.Connect(nil, 1, -1, nil, 0, 0), api.ErrInvalidAddress, "Connect nil address")
	isErr(ep.Connect((*Addr)(nil), 1, -1, nil, 0, 0), api.ErrInvalidAddress, "Connect nil *Addr")
	isErr(evd.PostSE(nil), api.ErrInvalidParameter, "PostSE on an EVD without the software stream")
	isErr(evd.Resize(providerLimits.MaxEVDQLen+1), api.ErrInvalidParameter, "Resize over the limit")
	done := &cr{}
	done.Done = true
	isErr(done.Accept(nil, nil), api.ErrInvalidHandle, "Accept of a finished CR")
	isErr(done.Reject(nil), api.ErrInvalidHandle, "Reject of a finished CR")
	if _, err := (Provider{}).Open(context.Background(), api.OpenParams{AsyncEVDQLen: providerLimits.MaxEVDQLen + 1}); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("Open with a huge async queue: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (Provider{}).Open(ctx, api.OpenParams{}); !errors.Is(err, api.ErrInterruptedCall) {
		t.Fatalf("Open with a cancelled context: %v", err)
	}
}

func TestDirectHandleTypesAndGracefulClose(t *testing.T) {
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
	// Each Free takes its object out of the IA's tables: the graceful
	// Close that follows finds none in use.
	for _, f := range []func() error{rsp.Free, psp.Free, srq.Free, rmr.Free, lmr.Free, ep2.Free, ep.Free, cno.Free, evd.Free, pz.Free} {
		must(t, f(), "Free")
	}
	must(t, ia.Close(api.CloseGraceful), "graceful Close once everything is freed")
	// The guard keeps every other call from a closed IA; these two are
	// the IA's own and answer for themselves.
	for _, q := range []func() error{
		func() error { _, _, err := ia.Query(); return err },
		func() error { _, err := ia.AsyncEVD(); return err },
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
