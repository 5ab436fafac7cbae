package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/godat/godat/api"
)

// guardEnv is one IA of the checking-free provider with a few objects.
type guardEnv struct {
	ia            api.IA
	fake          *fakeIA
	pz            api.PZ
	dto, conn, cr api.EVD
	ep            api.EP
	lmr           api.LMR
	buf           []byte
}

func testRegistry() *Registry {
	return New(&Config{File: "test", IAs: []IAEntry{
		{Name: "g", Provider: "guardtest", ThreadSafe: true},
		{Name: "g2", Provider: "guardtest", ThreadSafe: true},
		{Name: "serial", Provider: "guardtest", ThreadSafe: false},
		{Name: "gone", Provider: "nosuch"},
	}})
}

func newGuardEnv(t *testing.T, name string) *guardEnv {
	t.Helper()
	ia, err := testRegistry().Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	e := &guardEnv{ia: ia, fake: ia.(*iaGuard).p.(*fakeIA), buf: make([]byte, 64)}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	e.pz, err = ia.CreatePZ()
	must(err)
	e.dto, err = ia.CreateEVD(8, nil, api.EVDDTO)
	must(err)
	e.conn, err = ia.CreateEVD(8, nil, api.EVDConnection)
	must(err)
	e.cr, err = ia.CreateEVD(8, nil, api.EVDCR)
	must(err)
	e.ep, err = ia.CreateEP(e.pz, e.dto, e.dto, e.conn, nil)
	must(err)
	e.lmr, err = ia.CreateLMR(e.pz, api.Region{Bytes: e.buf}, api.MemPrivAll, api.VATypeVA)
	must(err)
	return e
}

// rejects runs f and checks that the guard refused it with type typ and
// subtype sub (NoSubtype: any) without reaching the provider.
func (e *guardEnv) rejects(t *testing.T, typ api.ReturnType, sub api.Subtype, f func() error) {
	t.Helper()
	before := e.fake.calls.Load()
	err := f()
	var de *api.Error
	if !errors.As(err, &de) {
		t.Fatalf("got %v, want a DAT error of type %v", err, typ)
	}
	if de.Type != typ || (sub != api.NoSubtype && de.Sub != sub) {
		t.Fatalf("got %v (code %#x), want %v/%v", err, de.Code(), typ, sub)
	}
	if !errors.Is(err, &api.Error{Type: typ}) {
		t.Fatalf("errors.Is(%v, %v) is false", err, typ)
	}
	if n := e.fake.calls.Load() - before; n != 0 {
		t.Fatalf("the guard let %d call(s) reach the provider", n)
	}
}

func TestGuardHandleLifetime(t *testing.T) {
	e := newGuardEnv(t, "g")
	pz2, _ := e.ia.CreatePZ()
	if err := pz2.Free(); err != nil {
		t.Fatal(err)
	}
	e.rejects(t, api.InvalidHandle, api.SubHandlePZ, func() error { _, err := pz2.Query(); return err })
	e.rejects(t, api.InvalidHandle, api.SubHandlePZ, pz2.Free)
	e.rejects(t, api.InvalidHandle, api.SubHandlePZ, func() error { _, err := pz2.CreateRMR(); return err })
	e.rejects(t, api.InvalidHandle, api.SubHandlePZ, func() error { _, err := pz2.ConsumerContext(); return err })

	ep2, _ := e.ia.CreateEP(e.pz, e.dto, e.dto, e.conn, nil)
	if err := ep2.Free(); err != nil {
		t.Fatal(err)
	}
	e.rejects(t, api.InvalidHandle, api.SubHandleEP, func() error { return ep2.PostSend(nil, 1, 0) })
	e.rejects(t, api.InvalidHandle, api.SubHandleEP, func() error { return ep2.PostRecv(nil, 1, 0) })
	e.rejects(t, api.InvalidHandle, api.SubHandleEP, ep2.Reset)
	// Using a freed handle as an argument is refused too.
	e.rejects(t, api.InvalidHandle, api.SubHandlePZ, func() error {
		_, err := e.ia.CreateEP(pz2, nil, nil, nil, nil)
		return err
	})

	if err := e.ia.Close(api.CloseAbrupt); err != nil {
		t.Fatal(err)
	}
	e.rejects(t, api.InvalidHandle, api.SubHandleIA, func() error { _, err := e.ia.CreatePZ(); return err })
	e.rejects(t, api.InvalidHandle, api.SubHandleIA, func() error { return e.ia.Close(api.CloseAbrupt) })
	e.rejects(t, api.InvalidHandle, api.SubHandleEP, func() error { return e.ep.PostSend(nil, 1, 0) })
	e.rejects(t, api.InvalidHandle, api.NoSubtype, func() error { return e.dto.Dequeue(&api.Event{}) })
	e.rejects(t, api.InvalidHandle, api.SubHandleLMR, e.lmr.Free)
}

// TestGuardCNOFD checks the guard's part of dat_cno_fd_create and
// dat_cno_trigger: the provider's descriptor is passed through, the EVD a
// trigger names comes back as its guard, and a freed CNO or closed IA is
// refused.
func TestGuardCNOFD(t *testing.T) {
	e := newGuardEnv(t, "g")
	cno, fd, err := e.ia.CreateCNOFD()
	if err != nil || fd != fakeCNOFD {
		t.Fatalf("CreateCNOFD = %d, %v; want the provider's descriptor %d", fd, err, fakeCNOFD)
	}
	async, _ := e.ia.AsyncEVD()
	if evd, err := cno.Triggered(); err != nil || evd != async {
		t.Fatalf("Triggered = %v, %v; want the async EVD's guard", evd, err)
	}
	if p, err := cno.Query(); err != nil || p.Agent != nil || p.IA != e.ia {
		t.Fatalf("Query of an FD CNO = %+v, %v; want no agent and its IA", p, err)
	}
	//lint:ignore SA1012 the guard's nil-context check, on purpose
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { _, err := cno.Wait(nil); return err })
	if err := cno.Free(); err != nil {
		t.Fatal(err)
	}
	e.rejects(t, api.InvalidHandle, api.SubHandleCNO, func() error { _, err := cno.Triggered(); return err })
	if err := e.ia.Close(api.CloseAbrupt); err != nil {
		t.Fatal(err)
	}
	e.rejects(t, api.InvalidHandle, api.SubHandleIA, func() error { _, _, err := e.ia.CreateCNOFD(); return err })
}

func TestGuardInUse(t *testing.T) {
	e := newGuardEnv(t, "g")
	async, _ := e.ia.AsyncEVD()
	e.rejects(t, api.InvalidState, api.SubStatePZInUse, e.pz.Free)
	e.rejects(t, api.InvalidState, api.SubStateEVDInUse, e.dto.Free)
	e.rejects(t, api.InvalidState, api.SubStateEVDInUse, e.conn.Free)
	e.rejects(t, api.InvalidState, api.SubStateEVDInUse, async.Free)

	psp, err := e.ia.CreatePSP(5, e.cr, api.PSPConsumer)
	if err != nil {
		t.Fatal(err)
	}
	e.rejects(t, api.InvalidState, api.SubStateEVDInUse, e.cr.Free)
	if err := psp.Free(); err != nil {
		t.Fatal(err)
	}
	if err := e.cr.Free(); err != nil {
		t.Fatalf("EVD free after its PSP is gone: %v", err)
	}

	cno, _ := e.ia.CreateCNO(nil)
	evd, err := e.ia.CreateEVD(4, cno, api.EVDDTO)
	if err != nil {
		t.Fatal(err)
	}
	e.rejects(t, api.InvalidState, api.SubStateCNOInUse, cno.Free)
	if err := evd.ModifyCNO(nil); err != nil {
		t.Fatal(err)
	}
	if err := cno.Free(); err != nil {
		t.Fatalf("CNO free after detaching it: %v", err)
	}

	srq, err := e.ia.CreateSRQ(e.pz, api.SRQAttr{MaxRecvDTOs: 4, MaxRecvIOV: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.rejects(t, api.InvalidParameter, api.SubArg7, func() error {
		_, err := e.ia.CreateEPWithSRQ(e.pz, e.dto, e.dto, e.conn, srq, nil)
		return err
	})
	ep2, err := e.ia.CreateEPWithSRQ(e.pz, e.dto, e.dto, e.conn, srq, &api.EPAttr{MaxRecvIOV: 1, MaxRequestIOV: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.rejects(t, api.InvalidState, api.SubStateSRQInUse, srq.Free)
	ep2.Free()
	if err := srq.Free(); err != nil {
		t.Fatal(err)
	}

	shared, err := e.ia.CreateLMR(e.pz, api.Region{Type: api.MemTypeLMR, LMR: e.lmr}, api.MemPrivAll, api.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	e.rejects(t, api.InvalidState, api.SubStateLMRInUse, e.lmr.Free)
	shared.Free()

	// Once every user is gone, everything frees.
	for _, f := range []func() error{e.ep.Free, e.lmr.Free, e.dto.Free, e.conn.Free, e.pz.Free} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.ia.Close(api.CloseGraceful); err != nil {
		t.Fatal(err)
	}
}

// TestGuardInUseNamesUsers checks the words of the guard's in-use
// refusals: the object and each object that uses it, once, by the names
// the trace gives them, with the DAT code and subtype of TestGuardInUse.
func TestGuardInUseNamesUsers(t *testing.T) {
	e := newGuardEnv(t, "g")
	name := func(o any) string { return o.(guarded).header().name() }
	refused := func(f func() error, sub api.Subtype, want string) {
		t.Helper()
		err := f()
		if !errors.Is(err, &api.Error{Type: api.InvalidState, Sub: sub}) {
			t.Fatalf("got %v, want DAT_INVALID_STATE(%v)", err, sub)
		}
		if got := err.(*api.Error).Msg; got != want {
			t.Errorf("message %q, want %q", got, want)
		}
	}
	async, _ := e.ia.AsyncEVD()
	psp, err := e.ia.CreatePSP(5, e.cr, api.PSPConsumer)
	if err != nil {
		t.Fatal(err)
	}
	cno, _ := e.ia.CreateCNO(nil)
	evd, _ := e.ia.CreateEVD(4, cno, api.EVDDTO)
	srq, _ := e.ia.CreateSRQ(e.pz, api.SRQAttr{MaxRecvDTOs: 4, MaxRecvIOV: 1})
	ep2, err := e.ia.CreateEPWithSRQ(e.pz, evd, evd, e.conn, srq, &api.EPAttr{MaxRecvIOV: 1, MaxRequestIOV: 1})
	if err != nil {
		t.Fatal(err)
	}
	shared, _ := e.ia.CreateLMR(e.pz, api.Region{Type: api.MemTypeLMR, LMR: e.lmr}, api.MemPrivAll, api.VATypeVA)
	rmr, _ := e.pz.CreateRMR()

	refused(e.pz.Free, api.SubStatePZInUse, fmt.Sprintf("%s is still used by 6 object(s): %s, %s, %s, %s, %s, %s",
		name(e.pz), name(e.ep), name(e.lmr), name(srq), name(ep2), name(shared), name(rmr)))
	// e.ep's receive and request queues both report to e.dto: one user.
	refused(e.dto.Free, api.SubStateEVDInUse, fmt.Sprintf("%s is still used by 1 object(s): %s", name(e.dto), name(e.ep)))
	refused(e.conn.Free, api.SubStateEVDInUse, fmt.Sprintf("%s is still used by 2 object(s): %s, %s", name(e.conn), name(e.ep), name(ep2)))
	refused(e.cr.Free, api.SubStateEVDInUse, fmt.Sprintf("%s is still used by 1 object(s): %s", name(e.cr), name(psp)))
	refused(async.Free, api.SubStateEVDInUse, fmt.Sprintf("%s is still used by 1 object(s): %s", name(async), name(e.ia)))
	refused(cno.Free, api.SubStateCNOInUse, fmt.Sprintf("%s is still used by 1 object(s): %s", name(cno), name(evd)))
	refused(srq.Free, api.SubStateSRQInUse, fmt.Sprintf("%s is still used by 1 object(s): %s", name(srq), name(ep2)))
	refused(e.lmr.Free, api.SubStateLMRInUse, fmt.Sprintf("%s is still used by 1 object(s): %s", name(e.lmr), name(shared)))

	// A user that goes is no longer named.
	if err := ep2.Free(); err != nil {
		t.Fatal(err)
	}
	refused(e.conn.Free, api.SubStateEVDInUse, fmt.Sprintf("%s is still used by 1 object(s): %s", name(e.conn), name(e.ep)))
	if err := evd.ModifyCNO(nil); err != nil {
		t.Fatal(err)
	}
	if err := cno.Free(); err != nil {
		t.Fatalf("CNO free after its EVD left it: %v", err)
	}
}

func TestGuardOwnership(t *testing.T) {
	e := newGuardEnv(t, "g")
	o := newGuardEnv(t, "g2")
	e.rejects(t, api.InvalidHandle, api.SubHandlePZ, func() error { _, err := e.ia.CreateEP(o.pz, nil, nil, nil, nil); return err })
	e.rejects(t, api.InvalidHandle, api.SubHandleEVDRecv, func() error { _, err := e.ia.CreateEP(e.pz, o.dto, nil, nil, nil); return err })
	e.rejects(t, api.InvalidHandle, api.SubHandleEP, func() error { _, err := e.ia.CreateRSP(1, o.ep, e.cr); return err })
	e.rejects(t, api.InvalidHandle, api.SubHandle2, func() error { return e.ep.DupConnect(o.ep, 0, nil, 0) })
	e.rejects(t, api.InvalidHandle, api.SubHandlePZ, func() error { _, err := e.ia.CreateEP(nil, nil, nil, nil, nil); return err })
	// A provider object handed in directly is not a registry handle.
	e.rejects(t, api.InvalidHandle, api.SubHandlePZ, func() error {
		_, err := e.ia.CreateEP(&fakePZ{ia: e.fake}, nil, nil, nil, nil)
		return err
	})
	rmr, err := o.pz.CreateRMR()
	if err != nil {
		t.Fatal(err)
	}
	e.rejects(t, api.InvalidHandle, api.SubHandleLMR, func() error {
		_, err := rmr.Bind(e.lmr, api.LMRTriplet{Length: 8}, api.MemPrivAll, api.VATypeVA, o.ep, 1, 0)
		return err
	})
	// Same IA, other protection zone.
	pz2, _ := e.ia.CreatePZ()
	rmr2, _ := pz2.CreateRMR()
	e.rejects(t, api.ProtectionViolation, api.NoSubtype, func() error {
		_, err := rmr2.Bind(e.lmr, api.LMRTriplet{Length: 8}, api.MemPrivAll, api.VATypeVA, e.ep, 1, 0)
		return err
	})
	srq, _ := e.ia.CreateSRQ(pz2, api.SRQAttr{MaxRecvDTOs: 2, MaxRecvIOV: 1})
	e.rejects(t, api.InvalidParameter, api.SubArg6, func() error {
		_, err := e.ia.CreateEPWithSRQ(e.pz, e.dto, e.dto, e.conn, srq, &api.EPAttr{})
		return err
	})
}

func TestGuardStreams(t *testing.T) {
	e := newGuardEnv(t, "g")
	e.rejects(t, api.InvalidHandle, api.SubHandleEVDRecv, func() error { _, err := e.ia.CreateEP(e.pz, e.conn, nil, nil, nil); return err })
	e.rejects(t, api.InvalidHandle, api.SubHandleEVDRequest, func() error { _, err := e.ia.CreateEP(e.pz, nil, e.cr, nil, nil); return err })
	e.rejects(t, api.InvalidHandle, api.SubHandleEVDConn, func() error { _, err := e.ia.CreateEP(e.pz, nil, nil, e.dto, nil); return err })
	e.rejects(t, api.InvalidHandle, api.SubHandleEVDCR, func() error { _, err := e.ia.CreatePSP(1, e.dto, api.PSPConsumer); return err })
	e.rejects(t, api.InvalidHandle, api.SubHandleEVDCR, func() error { _, _, err := e.ia.CreatePSPAny(nil, api.PSPConsumer); return err })
	e.rejects(t, api.InvalidHandle, api.SubHandleEVDCR, func() error { _, err := e.ia.CreateRSP(1, e.ep, e.conn); return err })
	e.rejects(t, api.InvalidParameter, api.SubArg4, func() error { _, err := e.ia.CreatePSP(1, e.cr, 7); return err })

	bare, _ := e.ia.CreateEP(e.pz, nil, nil, nil, nil)
	e.rejects(t, api.InvalidState, api.SubStateEPEVDRequest, func() error { return bare.PostSend(nil, 1, 0) })
	e.rejects(t, api.InvalidState, api.SubStateEPEVDRequest, func() error { return bare.PostRDMAWrite(nil, 1, api.RMRTriplet{}, 0) })
	e.rejects(t, api.InvalidState, api.SubStateEPEVDRecv, func() error { return bare.PostRecv(nil, 1, 0) })
	e.rejects(t, api.InvalidState, api.SubStateEPEVDConnect, func() error {
		return bare.Connect(&net.IPAddr{}, 1, api.TimeoutInfinite, nil, 0, 0)
	})
}

func TestGuardPostArguments(t *testing.T) {
	e := newGuardEnv(t, "g")
	three := make([]api.LMRTriplet, 3) // the fake EP allows 2 segments
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return e.ep.PostSend(three, 1, 0) })
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return e.ep.PostRecv(three, 1, 0) })
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return e.ep.PostRDMARead(three, 1, api.RMRTriplet{}, 0) })
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return e.ep.PostRDMAWrite(three, 1, api.RMRTriplet{}, 0) })
	e.rejects(t, api.InvalidParameter, api.SubArg5, func() error { return e.ep.PostSend(nil, 1, api.CompletionUnsignalled) })
	e.rejects(t, api.InvalidParameter, api.SubArg5, func() error { return e.ep.PostRecv(nil, 1, api.CompletionUnsignalled) })
	e.rejects(t, api.InvalidParameter, api.SubArg5, func() error { return e.ep.PostRecv(nil, 1, api.CompletionSolicitedWait) })
	e.rejects(t, api.InvalidParameter, api.SubArg5, func() error { return e.ep.PostRDMAWrite(nil, 1, api.RMRTriplet{}, api.CompletionSolicitedWait) })
	e.rejects(t, api.InvalidParameter, api.SubArg5, func() error { return e.ep.PostSend(nil, 1, 0x40) })
	// The local and remote lengths of an RDMA operation must fit each other.
	seg := []api.LMRTriplet{{Length: 32}}
	e.rejects(t, api.LengthError, api.NoSubtype, func() error { return e.ep.PostRDMAWrite(seg, 1, api.RMRTriplet{Length: 31}, 0) })
	e.rejects(t, api.LengthError, api.NoSubtype, func() error { return e.ep.PostRDMARead(seg, 1, api.RMRTriplet{Length: 33}, 0) })
	e.rejects(t, api.LengthError, api.NoSubtype, func() error {
		return e.ep.PostRDMAReadToRMR(api.RMRTriplet{Length: 8}, 1, api.RMRTriplet{Length: 9}, 0)
	})

	// An EP whose attributes allow unsignalled completions may use them.
	ep2, err := e.ia.CreateEP(e.pz, e.dto, e.dto, e.conn, &api.EPAttr{MaxRecvIOV: 1, MaxRequestIOV: 1,
		RecvCompletionFlags: api.CompletionUnsignalled, RequestCompletionFlags: api.CompletionUnsignalled})
	if err != nil {
		t.Fatal(err)
	}
	if err := ep2.PostSend(nil, 1, api.CompletionUnsignalled); err != nil {
		t.Fatal(err)
	}
	// ... and its EVD then only accepts threshold 1 (dat_evd_wait(3DAT)).
	e.rejects(t, api.InvalidState, api.SubStateEVDConfigThreshold, func() error { _, err := e.dto.Wait(context.Background(), 2, &api.Event{}); return err })
	ep2.Free()
	var ev api.Event
	if _, err := e.dto.Wait(context.Background(), 2, &ev); errors.Is(err, api.ErrInvalidState) {
		t.Fatalf("threshold restriction outlived the EP: %v", err)
	}

	e.rejects(t, api.InvalidParameter, api.SubArg6, func() error {
		_, err := e.ia.CreateEP(e.pz, nil, nil, nil, &api.EPAttr{MaxRequestIOV: 5})
		return err
	})
	e.rejects(t, api.InvalidParameter, api.SubArg6, func() error {
		_, err := e.ia.CreateEP(e.pz, nil, nil, nil, &api.EPAttr{MaxMessageSize: 1<<20 + 1})
		return err
	})
	e.rejects(t, api.InvalidParameter, api.SubArg6, func() error {
		return e.ep.Modify(api.EPFieldMaxRecvIOV, &api.EPParam{Attr: api.EPAttr{MaxRecvIOV: 9}})
	})
}

func TestGuardConnectArguments(t *testing.T) {
	e := newGuardEnv(t, "g")
	long := make([]byte, 17) // the fake provider allows 16 bytes
	addr := &net.IPAddr{}
	e.rejects(t, api.InvalidParameter, api.SubArg5, func() error { return e.ep.Connect(addr, 1, api.TimeoutInfinite, long, 0, 0) })
	e.rejects(t, api.InvalidParameter, api.SubArg4, func() error { return e.ep.Connect(addr, 1, -5, nil, 0, 0) })
	e.rejects(t, api.InvalidAddress, api.SubAddressMalformed, func() error { return e.ep.Connect(nil, 1, 0, nil, 0, 0) })
	e.rejects(t, api.InvalidParameter, api.SubArg8, func() error { return e.ep.Connect(addr, 1, 0, nil, 0, 8) })
	e.rejects(t, api.ModelNotSupported, api.NoSubtype, func() error { return e.ep.Connect(addr, 1, 0, nil, api.QOSPremium, 0) })
	e.rejects(t, api.ModelNotSupported, api.NoSubtype, func() error { return e.ep.DupConnect(e.ep, 0, nil, api.QOSLowLatency) })
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return e.ep.Disconnect(3) })
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return e.ia.Close(9) })
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return e.ep.SetWatermark(-3, 0) })

	// A CR the provider delivers: the guard wraps it, checks its arguments
	// and retires it once accepted.
	psp, _ := e.ia.CreatePSP(4, e.cr, api.PSPConsumer)
	fpsp := psp.(*pspGuard).p.(*fakePSP)
	fpsp.arrive(&fakeCR{ia: e.fake})
	var ev api.Event
	if err := e.cr.Dequeue(&ev); err != nil {
		t.Fatal(err)
	}
	if ev.Number != api.ConnectionRequestEvent || ev.CR.PSP != psp || ev.EVD != e.cr {
		t.Fatalf("CR event not translated: %+v", ev)
	}
	cr := ev.CR.CR
	if _, ok := cr.(*crGuard); !ok {
		t.Fatalf("CR handle %T is not a guard", cr)
	}
	e.rejects(t, api.InvalidParameter, api.SubArg3, func() error { return cr.Accept(e.ep, long) })
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return cr.Reject(long) })
	if err := cr.Accept(e.ep, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	e.rejects(t, api.InvalidHandle, api.SubHandleCR, func() error { return cr.Reject(nil) })
	if cr.HandleType() != api.HandleCR {
		t.Fatal("CR handle type")
	}
}

func TestGuardEVDArguments(t *testing.T) {
	e := newGuardEnv(t, "g")
	var ev api.Event
	ctx := context.Background()
	e.rejects(t, api.InvalidParameter, api.SubArg3, func() error { _, err := e.dto.Wait(ctx, 0, &ev); return err })
	e.rejects(t, api.InvalidParameter, api.SubArg3, func() error { _, err := e.dto.Wait(ctx, 9, &ev); return err })
	e.rejects(t, api.InvalidParameter, api.SubArg4, func() error { _, err := e.dto.Wait(ctx, 1, nil); return err })
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return e.dto.Dequeue(nil) })
	//lint:ignore SA1012 the guard's nil-context check, on purpose
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { _, err := e.dto.Wait(nil, 1, &ev); return err })
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return e.dto.PostSE(nil) })
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return e.dto.PostSE(&api.Event{Number: api.DTOCompletionEvent}) })
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return e.dto.Resize(0) })
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { _, err := e.ia.CreateEVD(0, nil, api.EVDDTO); return err })
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { _, err := e.ia.CreateEVD(1025, nil, api.EVDDTO); return err })
	e.rejects(t, api.InvalidParameter, api.SubArg4, func() error { _, err := e.ia.CreateEVD(4, nil, 0); return err })
	e.rejects(t, api.InvalidParameter, api.SubArg4, func() error { _, err := e.ia.CreateEVD(4, nil, 0x2000); return err })
	if err := e.dto.Resize(16); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dto.Wait(ctx, 9, &ev); errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("threshold 9 refused after resizing to 16: %v", err)
	}
}

func TestGuardMemoryArguments(t *testing.T) {
	e := newGuardEnv(t, "g")
	e.rejects(t, api.InvalidParameter, api.SubArg3, func() error {
		_, err := e.ia.CreateLMR(e.pz, api.Region{}, api.MemPrivAll, api.VATypeVA)
		return err
	})
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error {
		_, err := e.ia.CreateLMR(e.pz, api.Region{Type: 9, Bytes: e.buf}, api.MemPrivAll, api.VATypeVA)
		return err
	})
	e.rejects(t, api.InvalidParameter, api.SubArg6, func() error {
		_, err := e.ia.CreateLMR(e.pz, api.Region{Bytes: e.buf}, 0x80, api.VATypeVA)
		return err
	})
	e.rejects(t, api.InvalidParameter, api.SubArg7, func() error {
		_, err := e.ia.CreateLMR(e.pz, api.Region{Bytes: e.buf}, api.MemPrivAll, api.VATypeZB+1)
		return err
	})
	e.rejects(t, api.ModelNotSupported, api.NoSubtype, func() error {
		_, err := e.ia.CreateLMR(e.pz, api.Region{Bytes: e.buf}, api.MemPrivAll, api.VATypeZB)
		return err
	})
	e.rejects(t, api.InvalidParameter, api.SubArg3, func() error {
		_, err := e.ia.CreateLMR(e.pz, api.Region{Type: api.MemTypeSharedVirtual, Bytes: e.buf}, api.MemPrivAll, api.VATypeVA)
		return err
	})
	e.rejects(t, api.InvalidParameter, api.SubArg3, func() error { _, err := e.ia.CreateSRQ(e.pz, api.SRQAttr{MaxRecvDTOs: 0, MaxRecvIOV: 1}); return err })
	e.rejects(t, api.InvalidParameter, api.SubArg3, func() error { _, err := e.ia.CreateSRQ(e.pz, api.SRQAttr{MaxRecvDTOs: 2, MaxRecvIOV: 9}); return err })
	e.rejects(t, api.InvalidParameter, api.SubArg3, func() error {
		_, err := e.ia.CreateSRQ(e.pz, api.SRQAttr{MaxRecvDTOs: 2, MaxRecvIOV: 1, LowWatermark: 3})
		return err
	})
	srq, _ := e.ia.CreateSRQ(e.pz, api.SRQAttr{MaxRecvDTOs: 2, MaxRecvIOV: 1})
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return srq.PostRecv(make([]api.LMRTriplet, 2), 1) })
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return srq.SetLW(-1) })
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return srq.Resize(65) })
	rmr, _ := e.pz.CreateRMR()
	e.rejects(t, api.InvalidHandle, api.SubHandleLMR, func() error {
		_, err := rmr.Bind(nil, api.LMRTriplet{Length: 8}, api.MemPrivAll, api.VATypeVA, e.ep, 1, 0)
		return err
	})
	e.rejects(t, api.InvalidParameter, api.SubArg4, func() error {
		_, err := rmr.Bind(e.lmr, api.LMRTriplet{Length: 8}, 0x100, api.VATypeVA, e.ep, 1, 0)
		return err
	})
	e.rejects(t, api.InvalidParameter, api.SubArg5, func() error {
		_, err := rmr.Bind(e.lmr, api.LMRTriplet{Length: 8}, api.MemPrivAll, api.VATypeZB+1, e.ep, 1, 0)
		return err
	})
	e.rejects(t, api.InvalidParameter, api.SubArg5, func() error {
		_, err := rmr.Bind(e.lmr, api.LMRTriplet{Length: 8}, api.MemPrivAll, api.VATypeVA, e.ep, 1, api.CompletionSolicitedWait)
		return err
	})
	// A zero-length triplet unbinds and needs no LMR.
	if _, err := rmr.Bind(nil, api.LMRTriplet{}, 0, api.VATypeVA, e.ep, 1, 0); err != nil {
		t.Fatal(err)
	}
	// The triplet must name the LMR handed in (dat_rmr_bind(3DAT)).
	other, err := e.ia.CreateLMR(e.pz, api.Region{Bytes: e.buf}, api.MemPrivAll, api.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	op, _ := other.Query()
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error {
		_, err := rmr.Bind(e.lmr, api.LMRTriplet{Length: 8, LMRContext: op.LMRContext}, api.MemPrivAll, api.VATypeVA, e.ep, 1, 0)
		return err
	})
	lp, _ := e.lmr.Query()
	if _, err := rmr.Bind(e.lmr, api.LMRTriplet{Length: 8, LMRContext: lp.LMRContext}, api.MemPrivAll, api.VATypeVA, e.ep, 1, 0); err != nil {
		t.Fatal(err)
	}
}

// TestGuardSRQIOVLimit: the guard holds SRQ receives to the IOV limit the
// provider reports (dat_srq_query(3DAT)), which may exceed the one asked
// for.
func TestGuardSRQIOVLimit(t *testing.T) {
	e := newGuardEnv(t, "g")
	srq, err := e.ia.CreateSRQ(e.pz, api.SRQAttr{MaxRecvDTOs: 2, MaxRecvIOV: 3})
	if err != nil {
		t.Fatal(err)
	}
	p, err := srq.Query()
	if err != nil || p.MaxRecvIOV != 4 {
		t.Fatalf("SRQ.Query = %+v, %v; want the fake's MaxRecvIOV 4", p, err)
	}
	if err := srq.PostRecv(make([]api.LMRTriplet, 4), 1); err != nil {
		t.Fatalf("PostRecv with the reported MaxRecvIOV segments: %v", err)
	}
	e.rejects(t, api.InvalidParameter, api.SubArg2, func() error { return srq.PostRecv(make([]api.LMRTriplet, 5), 2) })
}

func TestGuardTranslatesEvents(t *testing.T) {
	e := newGuardEnv(t, "g")
	if err := e.ep.PostSend(nil, 42, 0); err != nil {
		t.Fatal(err)
	}
	var ev api.Event
	if err := e.dto.Dequeue(&ev); err != nil {
		t.Fatal(err)
	}
	if ev.DTO.EP != e.ep || ev.EVD != e.dto || ev.DTO.Cookie != 42 {
		t.Fatalf("DTO event not translated to the consumer's handles: %+v", ev.DTO)
	}
	prm, err := e.ep.Query()
	if err != nil {
		t.Fatal(err)
	}
	if prm.IA != e.ia || prm.PZ != e.pz || prm.RecvEVD != e.dto || prm.ConnectEVD != e.conn {
		t.Fatalf("EP query not translated: %+v", prm)
	}
	if err := e.dto.Dequeue(&ev); !errors.Is(err, api.ErrQueueEmpty) {
		t.Fatalf("empty dequeue: %v", err)
	}
}

func TestGuardConsumerContextAndTypes(t *testing.T) {
	e := newGuardEnv(t, "g")
	rmr, _ := e.pz.CreateRMR()
	cno, _ := e.ia.CreateCNO(nil)
	srq, _ := e.ia.CreateSRQ(e.pz, api.SRQAttr{MaxRecvDTOs: 2, MaxRecvIOV: 1})
	psp, _ := e.ia.CreatePSP(3, e.cr, api.PSPConsumer)
	ep2, _ := e.ia.CreateEP(e.pz, nil, nil, nil, nil)
	rsp, _ := e.ia.CreateRSP(4, ep2, e.cr)
	for _, c := range []struct {
		o api.Object
		t api.HandleType
	}{{e.ia, api.HandleIA}, {e.pz, api.HandlePZ}, {e.dto, api.HandleEVD}, {e.ep, api.HandleEP}, {e.lmr, api.HandleLMR},
		{rmr, api.HandleRMR}, {cno, api.HandleCNO}, {srq, api.HandleSRQ}, {psp, api.HandlePSP}, {rsp, api.HandleRSP}} {
		if c.o.HandleType() != c.t {
			t.Errorf("%T: handle type %v, want %v", c.o, c.o.HandleType(), c.t)
		}
		if err := c.o.SetConsumerContext(c.t); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []api.Object{e.ia, e.pz, e.ep, rmr, rsp} {
		v, err := o.ConsumerContext()
		if err != nil || v != o.HandleType() {
			t.Errorf("%v: context %v, %v", o.HandleType(), v, err)
		}
	}
}

func TestGuardSerializesNonThreadSafe(t *testing.T) {
	e := newGuardEnv(t, "serial")
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ev api.Event
			for j := 0; j < 500; j++ {
				e.ep.PostSend(nil, 1, 0)
				e.dto.Dequeue(&ev)
				e.ep.GetStatus()
			}
		}()
	}
	wg.Wait()
	if e.fake.overlap.Load() {
		t.Fatal("calls overlapped in a provider configured non-thread-safe")
	}
}

func TestGuardFastPathAllocatesNothing(t *testing.T) {
	e := newGuardEnv(t, "g")
	g := e.dto.(*evdGuard)
	pep := e.ep.(*epGuard).p
	var ev api.Event
	n := testing.AllocsPerRun(1000, func() {
		e.ep.PostRDMAReadToRMR(api.RMRTriplet{}, 1, api.RMRTriplet{}, 0)
		e.dto.Dequeue(&ev) // empty: the common answer of a polling loop
		ev = api.Event{Number: api.DTOCompletionEvent, DTO: api.DTOCompletionData{EP: pep}}
		e.ia.(*iaGuard).translate(&ev, g)
	})
	if n != 0 {
		t.Fatalf("post/dequeue/translate allocated %v times per run", n)
	}
	if ev.DTO.EP != e.ep {
		t.Fatal("translate did not find the EP")
	}
}

// TestGuardTranslateAllocatesNothing: rewriting the objects an RMR bind,
// connection or async event names into their guards allocates nothing,
// so the generic lookup behind it (asGuard) costs no more than a typed one.
func TestGuardTranslateAllocatesNothing(t *testing.T) {
	e := newGuardEnv(t, "g")
	rmr, err := e.pz.CreateRMR()
	if err != nil {
		t.Fatal(err)
	}
	ia, g := e.ia.(*iaGuard), e.dto.(*evdGuard)
	prmr, pep := rmr.(*rmrGuard).p, e.ep.(*epGuard).p
	var bind, conn, async api.Event
	n := testing.AllocsPerRun(1000, func() {
		bind = api.Event{Number: api.RMRBindCompletionEvent, RMRBind: api.RMRBindCompletionData{RMR: prmr}}
		ia.translate(&bind, g)
		conn = api.Event{Number: api.ConnectionEstablishedEvent, Conn: api.ConnectionData{EP: pep}}
		ia.translate(&conn, g)
		async = api.Event{Number: api.AsyncEPBrokenEvent, Async: api.AsyncErrorData{Object: pep}}
		ia.translate(&async, g)
	})
	if n != 0 {
		t.Fatalf("translating bind, connection and async events allocated %v times per run", n)
	}
	if bind.RMRBind.RMR != rmr || conn.Conn.EP != e.ep || async.Async.Object != e.ep {
		t.Fatal("translate did not find the guards of the RMR and the EP")
	}
}

func TestOpenErrors(t *testing.T) {
	r := testRegistry()
	_, err := r.Open(context.Background(), "nope")
	if !errors.Is(err, &api.Error{Type: api.ProviderNotFound, Sub: api.SubNameNotRegistered}) {
		t.Fatalf("unknown IA: %v", err)
	}
	_, err = r.Open(context.Background(), "gone")
	if !errors.Is(err, api.ErrProviderNotFound) {
		t.Fatalf("IA of a missing provider: %v", err)
	}
	var ok bool
	for _, pi := range r.List() {
		if pi.IAName == "gone" {
			ok = !pi.Available && pi.Reason != ""
		}
	}
	if !ok {
		t.Fatal("List does not show the IA of a missing provider as unavailable with a reason")
	}
	if _, err := r.Open(context.Background(), "g", WithAsyncEVDQLen(0)); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("async qlen 0: %v", err)
	}
}

func TestGuardRejectReturnsProviderEP(t *testing.T) {
	e := newGuardEnv(t, "g")
	pz2, _ := e.ia.CreatePZ()
	psp, err := e.ia.CreatePSP(6, e.cr, api.PSPProvider)
	if err != nil {
		t.Fatal(err)
	}
	// The provider creates an EP in pz2 for the request.
	pep, _ := e.fake.CreateEP(pz2.(*pzGuard).p, nil, nil, nil, nil)
	psp.(*pspGuard).p.(*fakePSP).arrive(&fakeCR{ia: e.fake, ep: pep})
	var ev api.Event
	if err := e.cr.Dequeue(&ev); err != nil {
		t.Fatal(err)
	}
	prm, err := ev.CR.CR.Query()
	if err != nil || prm.LocalEP == nil {
		t.Fatalf("CR local EP: %v %v", prm.LocalEP, err)
	}
	local := prm.LocalEP
	e.rejects(t, api.InvalidState, api.SubStatePZInUse, pz2.Free)
	if err := ev.CR.CR.Reject(nil); err != nil {
		t.Fatal(err)
	}
	// dat_cr_reject(3DAT): the EP went back to the provider.
	e.rejects(t, api.InvalidHandle, api.SubHandleEP, func() error { _, err := local.Query(); return err })
	if err := pz2.Free(); err != nil {
		t.Fatalf("PZ still held by the returned EP: %v", err)
	}
}

// TestGuardTranslatesEventsOfSeveralEPs checks the EVD's memory of the
// last EP: completions of two EPs that alternate on one EVD each name
// their own EP, and none names a guard that was freed.
func TestGuardTranslatesEventsOfSeveralEPs(t *testing.T) {
	e := newGuardEnv(t, "g")
	ep2, err := e.ia.CreateEP(e.pz, e.dto, e.dto, e.conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ev api.Event
	for i, ep := range []api.EP{e.ep, e.ep, ep2, e.ep, ep2, ep2} {
		if err := ep.PostSend(nil, api.Cookie(i), 0); err != nil {
			t.Fatal(err)
		}
		if err := e.dto.Dequeue(&ev); err != nil {
			t.Fatal(err)
		}
		if ev.DTO.EP != ep || ev.DTO.Cookie != api.Cookie(i) {
			t.Fatalf("completion %d names EP %p, want %p", i, ev.DTO.EP, ep)
		}
	}
	// A completion of ep2 still queued when ep2 is freed: it must not
	// come back with the freed guard the EVD saw last.
	if err := ep2.PostSend(nil, 99, 0); err != nil {
		t.Fatal(err)
	}
	if err := ep2.Free(); err != nil {
		t.Fatal(err)
	}
	if err := e.dto.Dequeue(&ev); err != nil {
		t.Fatal(err)
	}
	if ev.DTO.EP == ep2 {
		t.Fatal("a completion dequeued after Free names the freed EP's guard")
	}
}
