package loopback

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/godat/godat/api"
)

func TestSendRecvMultiSegment(t *testing.T) {
	p := newPair(t)
	src := p.a.region(100, api.MemPrivLocalRead)
	copy(src.b, pattern(100, 1))
	dst := p.b.region(120, api.MemPrivLocalWrite)
	// Receive into 3 segments: 10, 50, 60 bytes (in a shuffled layout).
	riov := []api.LMRTriplet{dst.prm.Triplet(100, 10), dst.prm.Triplet(0, 50), dst.prm.Triplet(50, 50)}
	must(t, p.eb.PostRecv(riov, 9, 0), "PostRecv")
	siov := []api.LMRTriplet{src.prm.Triplet(60, 40), src.prm.Triplet(0, 0), src.prm.Triplet(0, 60)}
	must(t, p.ea.PostSend(siov, 8, 0), "PostSend")
	c := p.a.expectDTO(p.a.req, 8, api.DTOSuccess)
	if c.Op != api.OpSend || c.Length != 100 || c.EP != p.ea {
		t.Fatalf("send completion %+v", c)
	}
	r := p.b.expectDTO(p.b.recv, 9, api.DTOSuccess)
	if r.Op != api.OpReceive || r.Length != 100 || r.EP != p.eb {
		t.Fatalf("recv completion %+v", r)
	}
	want := append(append([]byte{}, src.b[60:100]...), src.b[0:60]...)
	got := append(append(append([]byte{}, dst.b[100:110]...), dst.b[0:50]...), dst.b[50:90]...)
	if !bytes.Equal(got, want) {
		t.Fatal("scattered bytes differ")
	}
	if !zero(dst.b[90:100]) || !zero(dst.b[110:]) {
		t.Fatal("bytes past the message were written")
	}
}

func TestRDMAWriteReadAndZeroBased(t *testing.T) {
	p := newPair(t)
	loc := p.a.region(64, api.MemPrivAll)
	copy(loc.b, pattern(64, 9))
	zb := p.b.regionIn(p.b.pz, make([]byte, 128), api.MemPrivAll, api.VATypeZB)
	if zb.prm.RegisteredAddress != 0 {
		t.Fatalf("ZB registered address %#x", zb.prm.RegisteredAddress)
	}
	// Write 2 segments to offset 32 of the zero-based region.
	iov := []api.LMRTriplet{loc.prm.Triplet(0, 16), loc.prm.Triplet(32, 16)}
	must(t, p.ea.PostRDMAWrite(iov, 1, api.RMRTriplet{Addr: 32, Length: 32, RMRContext: zb.prm.RMRContext}, 0), "PostRDMAWrite")
	c := p.a.expectDTO(p.a.req, 1, api.DTOSuccess)
	if c.Op != api.OpRDMAWrite || c.Length != 32 {
		t.Fatalf("write completion %+v", c)
	}
	if !bytes.Equal(zb.b[32:48], loc.b[0:16]) || !bytes.Equal(zb.b[48:64], loc.b[32:48]) || !zero(zb.b[:32]) || !zero(zb.b[64:]) {
		t.Fatal("write placed the wrong bytes")
	}
	p.b.none(p.b.recv, "an RDMA write consumes no receive")
	// Read it back into 2 segments.
	back := p.a.region(32, api.MemPrivLocalWrite)
	must(t, p.ea.PostRDMARead([]api.LMRTriplet{back.prm.Triplet(16, 16), back.prm.Triplet(0, 16)}, 2,
		api.RMRTriplet{Addr: 32, Length: 32, RMRContext: zb.prm.RMRContext}, 0), "PostRDMARead")
	c = p.a.expectDTO(p.a.req, 2, api.DTOSuccess)
	if c.Op != api.OpRDMARead || c.Length != 32 {
		t.Fatalf("read completion %+v", c)
	}
	if !bytes.Equal(back.b[16:32], zb.b[32:48]) || !bytes.Equal(back.b[0:16], zb.b[48:64]) {
		t.Fatal("read fetched the wrong bytes")
	}
	// Length errors are synchronous.
	if err := p.ea.PostRDMAWrite(loc.iov(0, 64), 3, zb.rtr(0, 32), 0); !errors.Is(err, api.ErrLength) {
		t.Fatalf("write longer than the remote triplet: %v", err)
	}
	if err := p.ea.PostRDMARead(back.iov(0, 16), 3, zb.rtr(0, 32), 0); !errors.Is(err, api.ErrLength) {
		t.Fatalf("read longer than the local IOV: %v", err)
	}
	wantState(t, p.ea, api.EPConnected)
}

func TestMemTypesAllocAndLMR(t *testing.T) {
	p := newPair(t)
	m, err := api.AllocMemory(4096)
	must(t, err, "AllocMemory")
	defer m.Free()
	shared, err := p.b.ia.CreateLMR(p.b.pz, api.Region{Type: api.MemTypeSharedVirtual, Bytes: m.Bytes()}, api.MemPrivAll, api.VATypeVA)
	must(t, err, "CreateLMR shared")
	if _, err := p.b.ia.CreateLMR(p.b.pz, api.Region{Type: api.MemTypeSharedVirtual, Bytes: make([]byte, 8)}, api.MemPrivAll, api.VATypeVA); !errors.Is(err, api.ErrInvalidParameter) && !errors.Is(err, api.ErrInvalidState) {
		t.Fatalf("shared virtual over Go memory: %v", err)
	}
	again, err := p.b.ia.CreateLMR(p.b.pz, api.Region{Type: api.MemTypeLMR, LMR: shared}, api.MemPrivLocalWrite|api.MemPrivRemoteWrite, api.VATypeZB)
	must(t, err, "CreateLMR of an LMR")
	ap, err := again.Query()
	must(t, err, "Query")
	sp, _ := shared.Query()
	if ap.LMRContext == sp.LMRContext || ap.RMRContext == sp.RMRContext || ap.Length != 4096 {
		t.Fatalf("re-registration params %+v vs %+v", ap, sp)
	}
	src := p.a.region(8, api.MemPrivAll)
	copy(src.b, "8 bytes!")
	must(t, p.ea.PostRDMAWrite(src.iov(0, 8), 1, api.RMRTriplet{Addr: 100, Length: 8, RMRContext: ap.RMRContext}, 0), "write via the second registration")
	p.a.expectDTO(p.a.req, 1, api.DTOSuccess)
	if string(m.Bytes()[100:108]) != "8 bytes!" {
		t.Fatalf("AllocMemory holds %q", m.Bytes()[100:108])
	}
	must(t, again.Free(), "Free")
	must(t, shared.Free(), "Free")
}

func TestReadToRMRAndSendWithInvalidate(t *testing.T) {
	p := newPair(t)
	src := p.b.region(32, api.MemPrivAll)
	copy(src.b, pattern(32, 3))
	sink := p.a.region(64, api.MemPrivAll)
	must(t, p.ea.PostRDMAReadToRMR(sink.rtr(16, 32), 1, src.rtr(0, 32), 0), "PostRDMAReadToRMR")
	c := p.a.expectDTO(p.a.req, 1, api.DTOSuccess)
	if c.Op != api.OpRDMARead || c.Length != 32 || !bytes.Equal(sink.b[16:48], src.b) {
		t.Fatalf("read-to-RMR %+v, data %x", c, sink.b)
	}

	// b binds an RMR on its EP, a invalidates it with its send.
	win := p.b.region(64, api.MemPrivAll)
	rmr, err := p.b.pz.CreateRMR()
	must(t, err, "CreateRMR")
	ctx, err := rmr.Bind(win.lmr, win.prm.Triplet(0, 64), api.MemPrivRemoteWrite, api.VATypeVA, p.eb, 5, 0)
	must(t, err, "Bind")
	ev := p.b.expect(p.b.req, api.RMRBindCompletionEvent)
	if ev.RMRBind.RMR != rmr || ev.RMRBind.Cookie != 5 || ev.RMRBind.Status != api.DTOSuccess {
		t.Fatalf("bind completion %+v", ev.RMRBind)
	}
	rb := p.b.region(8, api.MemPrivLocalWrite)
	must(t, p.eb.PostRecv(rb.iov(0, 8), 6, 0), "PostRecv")
	sb := p.a.region(8, api.MemPrivLocalRead)
	must(t, p.ea.PostSendWithInvalidate(sb.iov(0, 8), 7, 0, true, ctx), "PostSendWithInvalidate")
	p.a.expectDTO(p.a.req, 7, api.DTOSuccess)
	r := p.b.expectDTO(p.b.recv, 6, api.DTOSuccess)
	if r.Op != api.OpReceiveWithInvalidate || r.RMRContext != ctx {
		t.Fatalf("receive %+v", r)
	}
	if prm, _ := rmr.Query(); prm.LMRTriplet.Length != 0 {
		t.Fatalf("invalidated RMR still bound: %+v", prm)
	}
	must(t, win.lmr.Free(), "LMR.Free after the RMR was invalidated")
	// The context is dead now: a write through it breaks the connection.
	must(t, p.ea.PostRDMAWrite(sb.iov(0, 8), 8, api.RMRTriplet{Addr: api.AddrOf(win.b), Length: 8, RMRContext: ctx}, 0), "PostRDMAWrite")
	p.a.expectDTO(p.a.req, 8, api.DTOErrRemoteAccess)
	p.expectBroken()
}

func TestSendWithInvalidateOfLMRContextFails(t *testing.T) {
	p := newPair(t)
	win := p.b.region(64, api.MemPrivAll)
	rb := p.b.region(8, api.MemPrivLocalWrite)
	must(t, p.eb.PostRecv(rb.iov(0, 8), 1, 0), "PostRecv")
	sb := p.a.region(8, api.MemPrivAll)
	copy(sb.b, "xxxxxxxx")
	must(t, p.ea.PostSendWithInvalidate(sb.iov(0, 8), 2, 0, true, win.prm.RMRContext), "PostSendWithInvalidate")
	p.a.expectDTO(p.a.req, 2, api.DTOErrRemoteAccess)
	p.b.expectDTO(p.b.recv, 1, api.DTOErrLocalProtection)
	if !zero(rb.b) {
		t.Fatal("the message was placed although the invalidate failed")
	}
	p.expectBroken()
}

// TestRNRSendWaitsForReceive checks the receiver-not-ready choice: a send
// without a receive waits, later requests wait behind it in order, and a
// receive posted later delivers it.
func TestRNRSendWaitsForReceive(t *testing.T) {
	p := newPair(t)
	s := p.a.region(64, api.MemPrivAll)
	copy(s.b, pattern(64, 5))
	remote := p.b.region(64, api.MemPrivAll)
	must(t, p.ea.PostSend(s.iov(0, 16), 1, 0), "PostSend")
	must(t, p.ea.PostRDMAWrite(s.iov(16, 16), 2, remote.rtr(0, 16), 0), "PostRDMAWrite behind it")
	must(t, p.ea.PostSend(s.iov(32, 16), 3, 0), "second PostSend")
	p.a.none(p.a.req, "nothing completes before the peer has a receive")
	if !zero(remote.b) {
		t.Fatal("the RDMA write overtook the waiting send")
	}
	_, _, idle, err := p.ea.GetStatus()
	must(t, err, "GetStatus")
	if idle {
		t.Fatal("request queue reported idle with requests waiting")
	}
	r := p.b.region(64, api.MemPrivAll)
	must(t, p.eb.PostRecv(r.iov(0, 32), 10, 0), "PostRecv")
	p.a.expectDTO(p.a.req, 1, api.DTOSuccess)
	p.a.expectDTO(p.a.req, 2, api.DTOSuccess)
	p.a.none(p.a.req, "the second send still waits")
	if !bytes.Equal(remote.b[:16], s.b[16:32]) || !bytes.Equal(r.b[:16], s.b[:16]) {
		t.Fatal("data of the released requests is wrong")
	}
	must(t, p.eb.PostRecv(r.iov(32, 32), 11, 0), "PostRecv")
	p.a.expectDTO(p.a.req, 3, api.DTOSuccess)
	p.b.expectDTO(p.b.recv, 10, api.DTOSuccess)
	p.b.expectDTO(p.b.recv, 11, api.DTOSuccess)
	if !bytes.Equal(r.b[32:48], s.b[32:48]) {
		t.Fatal("second message wrong")
	}
}

func TestRNRQueueLimitAndFlush(t *testing.T) {
	a, b := newNode(t), newNode(t)
	p := connect(t, a, b, &api.EPAttr{MaxRequestDTOs: 2})
	s := a.region(8, api.MemPrivAll)
	must(t, p.ea.PostSend(s.iov(0, 8), 1, 0), "PostSend")
	must(t, p.ea.PostSend(s.iov(0, 8), 2, 0), "PostSend")
	if err := p.ea.PostSend(s.iov(0, 8), 3, 0); !errors.Is(err, api.ErrInsufficientResources) {
		t.Fatalf("third waiting send: %v", err)
	}
	must(t, p.eb.Disconnect(api.CloseAbrupt), "peer Disconnect")
	a.expectDTO(a.req, 1, api.DTOErrFlushed)
	a.expectDTO(a.req, 2, api.DTOErrFlushed)
	a.expect(a.connEVD, api.ConnectionDisconnectedEvent)
}

func TestGracefulDisconnectWaitsForQueuedSends(t *testing.T) {
	p := newPair(t)
	s := p.a.region(8, api.MemPrivAll)
	must(t, p.ea.PostSend(s.iov(0, 8), 1, 0), "PostSend")
	must(t, p.ea.Disconnect(api.CloseGraceful), "Disconnect")
	wantState(t, p.ea, api.EPDisconnectPending)
	p.a.none(p.a.connEVD, "no DISCONNECTED while a send waits")
	r := p.b.region(8, api.MemPrivAll)
	must(t, p.eb.PostRecv(r.iov(0, 8), 2, 0), "PostRecv")
	p.a.expectDTO(p.a.req, 1, api.DTOSuccess)
	p.a.expect(p.a.connEVD, api.ConnectionDisconnectedEvent)
	p.b.expectDTO(p.b.recv, 2, api.DTOSuccess)
	p.b.expect(p.b.connEVD, api.ConnectionDisconnectedEvent)
}

func TestReceiveTooSmallBreaks(t *testing.T) {
	p := newPair(t)
	r := p.b.region(16, api.MemPrivAll)
	must(t, p.eb.PostRecv(r.iov(0, 8), 1, 0), "PostRecv")
	must(t, p.eb.PostRecv(r.iov(8, 8), 2, 0), "PostRecv")
	s := p.a.region(16, api.MemPrivAll)
	copy(s.b, pattern(16, 1))
	must(t, p.ea.PostSend(s.iov(0, 16), 3, 0), "PostSend")
	must(t, p.ea.PostSend(s.iov(0, 4), 4, 0), "PostSend after the break: flushed") // DISCONNECTED already
	p.a.expectDTO(p.a.req, 3, api.DTOErrRemoteResponder)
	p.b.expectDTO(p.b.recv, 1, api.DTOErrLocalLength)
	p.b.expectDTO(p.b.recv, 2, api.DTOErrFlushed)
	p.expectBroken()
	p.a.expectDTO(p.a.req, 4, api.DTOErrFlushed)
	if !zero(r.b) {
		t.Fatal("a too-small receive was written")
	}
}

func TestLocalProtectionFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		iov  func(n *node, r *region) []api.LMRTriplet
	}{
		{"unknown context", func(n *node, r *region) []api.LMRTriplet {
			return []api.LMRTriplet{{Addr: r.prm.RegisteredAddress, Length: 8, LMRContext: 0xFFFFFF}}
		}},
		{"past the end", func(n *node, r *region) []api.LMRTriplet { return r.iov(60, 8) }},
		{"before the start", func(n *node, r *region) []api.LMRTriplet {
			return []api.LMRTriplet{{Addr: r.prm.RegisteredAddress - 1, Length: 8, LMRContext: r.prm.LMRContext}}
		}},
		{"no local read", func(n *node, r *region) []api.LMRTriplet {
			return n.region(64, api.MemPrivLocalWrite).iov(0, 8)
		}},
		{"other PZ", func(n *node, r *region) []api.LMRTriplet {
			return n.regionOtherPZ(64).iov(0, 8)
		}},
		{"freed LMR", func(n *node, r *region) []api.LMRTriplet {
			x := n.region(64, api.MemPrivAll)
			must(n.t, x.lmr.Free(), "LMR.Free")
			return x.iov(0, 8)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t)
			r := p.a.region(64, api.MemPrivAll)
			rr := p.b.region(64, api.MemPrivAll)
			must(t, p.eb.PostRecv(rr.iov(0, 64), 1, 0), "PostRecv")
			iov := append(r.iov(0, 8), tc.iov(p.a, r)...) // the valid segment first
			must(t, p.ea.PostSend(iov, 2, 0), "PostSend")
			p.a.expectDTO(p.a.req, 2, api.DTOErrLocalProtection)
			p.b.expectDTO(p.b.recv, 1, api.DTOErrFlushed)
			p.expectBroken()
			if !zero(rr.b) {
				t.Fatal("the peer got data")
			}
		})
	}
}

func TestRemoteAccessFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remote func(p *pair, r *region) api.RMRTriplet
	}{
		{"wrong context", func(p *pair, r *region) api.RMRTriplet {
			t := r.rtr(0, 8)
			t.RMRContext ^= 0x5A5A5A5A
			return t
		}},
		{"past the end", func(p *pair, r *region) api.RMRTriplet { return r.rtr(60, 8) }},
		{"before the start", func(p *pair, r *region) api.RMRTriplet {
			t := r.rtr(0, 8)
			t.Addr--
			return t
		}},
		{"no remote write", func(p *pair, r *region) api.RMRTriplet {
			return p.b.region(64, api.MemPrivLocalWrite|api.MemPrivRemoteRead).rtr(0, 8)
		}},
		{"target EP in another PZ", func(p *pair, r *region) api.RMRTriplet {
			return p.b.regionOtherPZ(64).rtr(0, 8)
		}},
		{"RMR bound to another EP", func(p *pair, r *region) api.RMRTriplet {
			other := connect(p.a.t, p.a, p.b, nil)
			rmr, err := p.b.pz.CreateRMR()
			must(p.b.t, err, "CreateRMR")
			ctx, err := rmr.Bind(r.lmr, r.prm.Triplet(0, 64), api.MemPrivRemoteWrite, api.VATypeVA, other.eb, 1, api.CompletionSuppress)
			must(p.b.t, err, "Bind")
			return api.RMRTriplet{Addr: r.prm.RegisteredAddress, Length: 8, RMRContext: ctx}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t)
			target := p.b.region(64, api.MemPrivAll)
			copy(target.b, pattern(64, 77))
			before := bytes.Clone(target.b)
			src := p.a.region(8, api.MemPrivAll)
			copy(src.b, "XXXXXXXX")
			rt := tc.remote(p, target)
			must(t, p.ea.PostRDMAWrite(src.iov(0, 8), 1, rt, 0), "PostRDMAWrite")
			p.a.expectDTO(p.a.req, 1, api.DTOErrRemoteAccess)
			p.expectBroken()
			if !bytes.Equal(target.b, before) {
				t.Fatal("a refused write changed memory")
			}
			wantState(t, p.ea, api.EPDisconnected)
			wantState(t, p.eb, api.EPDisconnected)
		})
	}
}

func TestCompletionFlags(t *testing.T) {
	a, b := newNode(t), newNode(t)
	attr := &api.EPAttr{RequestCompletionFlags: api.CompletionUnsignalled, RecvCompletionFlags: api.CompletionSolicitedWait}
	p := connect(t, a, b, attr)
	s := a.region(8, api.MemPrivAll)
	r := b.region(64, api.MemPrivAll)

	// Suppressed: no completion at all.
	must(t, p.eb.PostRecv(r.iov(0, 8), 1, 0), "PostRecv")
	must(t, p.ea.PostSend(s.iov(0, 8), 2, api.CompletionSuppress|api.CompletionSolicitedWait), "PostSend")
	a.none(a.req, "a suppressed send")
	b.expectDTO(b.recv, 1, api.DTOSuccess)

	// Unsignalled: queued, but a waiter is not woken by it.
	woke := inBackground(waitEvent(a.req))
	must(t, p.eb.PostRecv(r.iov(8, 8), 3, 0), "PostRecv")
	must(t, p.ea.PostSend(s.iov(0, 8), 4, api.CompletionUnsignalled|api.CompletionSolicitedWait), "unsignalled PostSend")
	select {
	case ev := <-woke:
		t.Fatalf("an unsignalled completion woke the waiter: %+v", ev.DTO)
	case <-time.After(20 * time.Millisecond):
	}
	must(t, p.eb.PostRecv(r.iov(16, 8), 5, 0), "PostRecv")
	must(t, p.ea.PostSend(s.iov(0, 8), 6, api.CompletionSolicitedWait), "signalled PostSend")
	if ev := <-woke; ev.DTO.Cookie != 4 {
		t.Fatalf("waiter got cookie %d, want the unsignalled 4 first", ev.DTO.Cookie)
	}
	a.expectDTO(a.req, 6, api.DTOSuccess)
	b.expectDTO(b.recv, 3, api.DTOSuccess)
	b.expectDTO(b.recv, 5, api.DTOSuccess)

	// Solicited wait: an unsolicited send's receive does not wake the waiter.
	woke = inBackground(waitEvent(b.recv))
	must(t, p.eb.PostRecv(r.iov(24, 8), 7, 0), "PostRecv")
	must(t, p.ea.PostSend(s.iov(0, 8), 8, api.CompletionSuppress), "unsolicited PostSend")
	select {
	case ev := <-woke:
		t.Fatalf("an unsolicited receive woke the waiter: %+v", ev.DTO)
	case <-time.After(20 * time.Millisecond):
	}
	must(t, p.eb.PostRecv(r.iov(32, 8), 9, 0), "PostRecv")
	must(t, p.ea.PostSend(s.iov(0, 8), 10, api.CompletionSuppress|api.CompletionSolicitedWait), "solicited PostSend")
	if ev := <-woke; ev.DTO.Cookie != 7 {
		t.Fatalf("waiter got cookie %d, want 7", ev.DTO.Cookie)
	}
	b.expectDTO(b.recv, 9, api.DTOSuccess)
}

func TestPostOnDisconnectedFlushes(t *testing.T) {
	p := newPair(t)
	must(t, p.ea.Disconnect(api.CloseAbrupt), "Disconnect")
	p.a.expect(p.a.connEVD, api.ConnectionDisconnectedEvent)
	r := p.a.region(8, api.MemPrivAll)
	must(t, p.ea.PostRecv(r.iov(0, 8), 1, 0), "PostRecv")
	p.a.expectDTO(p.a.recv, 1, api.DTOErrFlushed)
	must(t, p.ea.PostRDMARead(r.iov(0, 8), 2, r.rtr(0, 8), 0), "PostRDMARead")
	p.a.expectDTO(p.a.req, 2, api.DTOErrFlushed)
	rmr, err := p.a.pz.CreateRMR()
	must(t, err, "CreateRMR")
	_, err = rmr.Bind(r.lmr, r.prm.Triplet(0, 8), api.MemPrivRemoteRead, api.VATypeVA, p.ea, 3, 0)
	must(t, err, "Bind on a DISCONNECTED EP")
	ev := p.a.expect(p.a.req, api.RMRBindCompletionEvent)
	if ev.RMRBind.Status != api.DTOErrFlushed || ev.RMRBind.Cookie != 3 {
		t.Fatalf("flushed bind %+v", ev.RMRBind)
	}
	if prm, _ := rmr.Query(); prm.LMRTriplet.Length != 0 {
		t.Fatal("a flushed bind bound the RMR")
	}
	must(t, r.lmr.Free(), "LMR.Free: the flushed bind holds nothing")
}

func TestReceivesFlushInOrderAndResetKeepsUnconnected(t *testing.T) {
	n := newNode(t)
	e := n.ep(nil)
	r := n.region(64, api.MemPrivAll)
	for i := range 3 {
		must(t, e.PostRecv(r.iov(i*8, 8), api.Cookie(i), 0), "PostRecv")
	}
	must(t, e.Reset(), "Reset of an UNCONNECTED EP")
	if nb, span, err := e.RecvQuery(); err != nil || nb != 3 || span != 3 {
		t.Fatalf("RecvQuery = %d %d %v", nb, span, err)
	}
	must(t, e.Connect(Addr{Name: "nowhere"}, 1, -1, nil, 0, 0), "Connect")
	for i := range 3 {
		n.expectDTO(n.recv, api.Cookie(i), api.DTOErrFlushed)
	}
	n.expect(n.connEVD, api.ConnectionUnreachableEvent)
}
