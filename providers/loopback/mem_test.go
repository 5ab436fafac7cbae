package loopback

import (
	"bytes"
	"errors"
	"testing"

	"github.com/godat/godat/api"
)

func TestRMRBindRebindUnbind(t *testing.T) {
	p := newPair(t)
	win := p.b.region(128, api.MemPrivAll)
	rmr, err := p.b.pz.CreateRMR()
	must(t, err, "CreateRMR")
	src := p.a.region(16, api.MemPrivAll)
	copy(src.b, pattern(16, 4))

	ctx1, err := rmr.Bind(win.lmr, win.prm.Triplet(32, 64), api.MemPrivRemoteWrite|api.MemPrivRemoteRead, api.VATypeZB, p.eb, 1, 0)
	must(t, err, "Bind")
	p.b.expect(p.b.req, api.RMRBindCompletionEvent)
	prm, err := rmr.Query()
	must(t, err, "RMR.Query")
	if prm.RMRContext != ctx1 || prm.LMRTriplet.Length != 64 || prm.Scope != api.RMRScopeEP || prm.VAType != api.VATypeZB {
		t.Fatalf("RMR params %+v", prm)
	}
	wantErr(t, win.lmr.Free(), api.InvalidState, api.SubStateLMRInUse, "LMR.Free with a bound RMR")

	// Zero-based window: address 0 is the window start (offset 32 of the LMR).
	must(t, p.ea.PostRDMAWrite(src.iov(0, 16), 2, api.RMRTriplet{Addr: 0, Length: 16, RMRContext: ctx1}, 0), "write")
	p.a.expectDTO(p.a.req, 2, api.DTOSuccess)
	if !bytes.Equal(win.b[32:48], src.b) || !zero(win.b[:32]) {
		t.Fatal("write through a zero-based window misplaced")
	}

	ctx2, err := rmr.Bind(win.lmr, win.prm.Triplet(0, 16), api.MemPrivRemoteRead, api.VATypeVA, p.eb, 3, 0)
	must(t, err, "rebind")
	p.b.expect(p.b.req, api.RMRBindCompletionEvent)
	if ctx2 == ctx1 {
		t.Fatal("rebind returned the same context")
	}
	// Read via the new one works, the old one is dead.
	dst := p.a.region(16, api.MemPrivAll)
	must(t, p.ea.PostRDMARead(dst.iov(0, 16), 4, api.RMRTriplet{Addr: api.AddrOf(win.b), Length: 16, RMRContext: ctx2}, 0), "read")
	p.a.expectDTO(p.a.req, 4, api.DTOSuccess)
	must(t, p.ea.PostRDMAWrite(src.iov(0, 16), 5, api.RMRTriplet{Addr: 0, Length: 16, RMRContext: ctx1}, 0), "write via the old context")
	p.a.expectDTO(p.a.req, 5, api.DTOErrRemoteAccess)
	p.expectBroken()
}

func TestRMRUnbindAndFree(t *testing.T) {
	p := newPair(t)
	win := p.b.region(64, api.MemPrivAll)
	rmr, err := p.b.pz.CreateRMR()
	must(t, err, "CreateRMR")
	ctx, err := rmr.Bind(win.lmr, win.prm.Triplet(0, 64), api.MemPrivRemoteWrite, api.VATypeVA, p.eb, 1, api.CompletionSuppress)
	must(t, err, "Bind")
	p.b.none(p.b.req, "a suppressed bind")
	got, err := rmr.Bind(nil, api.LMRTriplet{}, 0, api.VATypeVA, p.eb, 2, 0)
	must(t, err, "unbind")
	if got != 0 {
		t.Fatalf("unbind returned context %#x", got)
	}
	p.b.expect(p.b.req, api.RMRBindCompletionEvent)
	prm, _ := rmr.Query()
	if prm.LMRTriplet.Length != 0 || prm.RMRContext != ctx {
		t.Fatalf("unbound RMR params %+v (stale context %#x)", prm, ctx)
	}
	must(t, win.lmr.Free(), "LMR.Free after unbind")

	win2 := p.b.region(64, api.MemPrivAll)
	ctx2, err := rmr.Bind(win2.lmr, win2.prm.Triplet(0, 64), api.MemPrivRemoteWrite, api.VATypeVA, p.eb, 3, api.CompletionSuppress)
	must(t, err, "Bind")
	must(t, rmr.Free(), "RMR.Free of a bound RMR")
	must(t, win2.lmr.Free(), "LMR.Free after RMR.Free")
	src := p.a.region(8, api.MemPrivAll)
	must(t, p.ea.PostRDMAWrite(src.iov(0, 8), 4, api.RMRTriplet{Addr: api.AddrOf(win2.b), Length: 8, RMRContext: ctx2}, 0), "write")
	p.a.expectDTO(p.a.req, 4, api.DTOErrRemoteAccess)
}

func TestRMRBindErrors(t *testing.T) {
	p := newPair(t)
	win := p.b.region(64, api.MemPrivAll)
	ro := p.b.region(64, api.MemPrivLocalRead|api.MemPrivRemoteRead)
	rmr, err := p.b.pz.CreateRMR()
	must(t, err, "CreateRMR")
	bind := func(l api.LMR, tr api.LMRTriplet, priv api.MemPriv) error {
		_, err := rmr.Bind(l, tr, priv, api.VATypeVA, p.eb, 1, 0)
		return err
	}
	if err := bind(win.lmr, win.prm.Triplet(60, 8), api.MemPrivRemoteRead); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("triplet outside the LMR: %v", err)
	}
	if err := bind(win.lmr, ro.prm.Triplet(0, 8), api.MemPrivRemoteRead); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("triplet naming another LMR: %v", err)
	}
	if err := bind(ro.lmr, ro.prm.Triplet(0, 8), api.MemPrivRemoteWrite); !errors.Is(err, api.ErrPrivilegesViolation) {
		t.Fatalf("remote write over an LMR without local write: %v", err)
	}
	other := p.b.regionOtherPZ(64)
	if err := bind(other.lmr, other.prm.Triplet(0, 8), api.MemPrivRemoteRead); !errors.Is(err, api.ErrProtectionViolation) {
		t.Fatalf("LMR of another PZ: %v", err)
	}
	p.b.none(p.b.req, "failed binds post nothing")
	must(t, win.lmr.Free(), "nothing holds the LMR")
}

func TestRMRContextsAreFreshAndDistinct(t *testing.T) {
	p := newPair(t)
	win := p.b.region(64, api.MemPrivAll)
	seen := map[api.RMRContext]bool{}
	for range 4 {
		rmr, err := p.b.pz.CreateRMR()
		must(t, err, "CreateRMR")
		for range 8 {
			ctx, err := rmr.Bind(win.lmr, win.prm.Triplet(0, 64), api.MemPrivRemoteRead, api.VATypeVA, p.eb, 0, api.CompletionSuppress)
			must(t, err, "Bind")
			if ctx == 0 || seen[ctx] {
				t.Fatalf("context %#x repeats or is zero", ctx)
			}
			seen[ctx] = true
		}
		must(t, rmr.Free(), "RMR.Free")
	}
}

func TestBindQueuedBehindWaitingSend(t *testing.T) {
	p := newPair(t)
	win := p.a.region(64, api.MemPrivAll)
	s := p.a.region(8, api.MemPrivAll)
	must(t, p.ea.PostSend(s.iov(0, 8), 1, 0), "PostSend (waits)")
	rmr, err := p.a.pz.CreateRMR()
	must(t, err, "CreateRMR")
	ctx, err := rmr.Bind(win.lmr, win.prm.Triplet(0, 64), api.MemPrivRemoteWrite, api.VATypeVA, p.ea, 2, 0)
	must(t, err, "Bind behind a waiting send")
	p.a.none(p.a.req, "the bind waits behind the send")
	wantErr(t, win.lmr.Free(), api.InvalidState, api.SubStateLMRInUse, "LMR.Free with a bind queued")
	if prm, _ := rmr.Query(); prm.LMRTriplet.Length != 0 {
		t.Fatal("a queued bind is already bound")
	}
	r := p.b.region(8, api.MemPrivAll)
	must(t, p.eb.PostRecv(r.iov(0, 8), 3, 0), "PostRecv")
	p.a.expectDTO(p.a.req, 1, api.DTOSuccess)
	ev := p.a.expect(p.a.req, api.RMRBindCompletionEvent)
	if ev.RMRBind.Cookie != 2 || ev.RMRBind.Status != api.DTOSuccess {
		t.Fatalf("bind completion %+v", ev.RMRBind)
	}
	src := p.b.region(8, api.MemPrivAll)
	copy(src.b, "written!")
	must(t, p.eb.PostRDMAWrite(src.iov(0, 8), 4, api.RMRTriplet{Addr: api.AddrOf(win.b), Length: 8, RMRContext: ctx}, 0), "write")
	p.b.expectDTO(p.b.req, 4, api.DTOSuccess)
	if string(win.b[:8]) != "written!" {
		t.Fatal("write through the queued bind's context failed")
	}

	// A queued bind that is flushed releases its LMR and binds nothing.
	must(t, p.ea.PostSend(s.iov(0, 8), 5, 0), "PostSend (waits)")
	win2 := p.a.region(64, api.MemPrivAll)
	_, err = rmr.Bind(win2.lmr, win2.prm.Triplet(0, 64), api.MemPrivRemoteWrite, api.VATypeVA, p.ea, 6, 0)
	must(t, err, "Bind behind a waiting send")
	must(t, p.ea.Disconnect(api.CloseAbrupt), "Disconnect")
	p.a.expectDTO(p.a.req, 5, api.DTOErrFlushed)
	ev = p.a.expect(p.a.req, api.RMRBindCompletionEvent)
	if ev.RMRBind.Status != api.DTOErrFlushed {
		t.Fatalf("flushed bind %+v", ev.RMRBind)
	}
	must(t, win2.lmr.Free(), "LMR.Free after the bind was flushed")
	if prm, _ := rmr.Query(); prm.LMRTriplet.Length != 0 {
		t.Fatal("the RMR stayed bound to the old window after a rebind was posted")
	}
	must(t, win.lmr.Free(), "LMR.Free: the rebind withdrew the old window")
}

func TestLMRQueryAndContexts(t *testing.T) {
	n := newNode(t)
	b := make([]byte, 100)
	r := n.regionIn(n.pz, b, api.MemPrivLocalRead|api.MemPrivLocalWrite, api.VATypeVA)
	if r.prm.RMRContext != 0 {
		t.Fatal("an LMR without remote privileges has an RMR context")
	}
	if r.prm.RegisteredAddress != api.AddrOf(b) || r.prm.RegisteredSize != 100 || r.prm.Length != 100 || r.prm.PZ != n.pz {
		t.Fatalf("LMR params %+v", r.prm)
	}
	r2 := n.region(8, api.MemPrivAll)
	if r2.prm.LMRContext == r.prm.LMRContext || r2.prm.RMRContext == 0 {
		t.Fatalf("contexts %+v %+v", r.prm, r2.prm)
	}
	if _, err := n.ia.CreateLMR(n.pz, api.Region{Type: api.MemTypeVirtual}, api.MemPrivAll, api.VATypeVA); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("empty region: %v", err)
	}
	wantErr(t, n.pz.Free(), api.InvalidState, api.SubStatePZInUse, "PZ.Free with LMRs")
	must(t, r.lmr.Free(), "Free")
	must(t, r2.lmr.Free(), "Free")
}
