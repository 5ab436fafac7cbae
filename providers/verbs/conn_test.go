//go:build verbs && cgo

package verbs_test

import (
	"bytes"
	"context"
	"net"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
)

// side is one end of a test connection: an IA with a PZ, one EVD for
// everything, an EP, and a registered buffer.
type side struct {
	ia  api.IA
	pz  api.PZ
	evd api.EVD
	ep  api.EP
	mem *api.Memory
	lmr api.LMR
	lp  api.LMRParam
}

func newSide(t *testing.T) *side {
	t.Helper()
	return newSideOn(t, openIA(t, "verbs"))
}

// newSideOn is newSide on an IA the caller opened.
func newSideOn(t *testing.T, ia api.IA) *side {
	t.Helper()
	s := &side{ia: ia}
	var err error
	if s.pz, err = s.ia.CreatePZ(); err != nil {
		t.Fatal(err)
	}
	if s.evd, err = s.ia.CreateEVD(64, nil, api.EVDDTO|api.EVDConnection|api.EVDCR); err != nil {
		t.Fatal(err)
	}
	if s.ep, err = s.ia.CreateEP(s.pz, s.evd, s.evd, s.evd, nil); err != nil {
		t.Fatal(err)
	}
	if s.mem, err = api.AllocMemory(1 << 16); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.mem.Free() })
	if s.lmr, err = s.ia.CreateLMR(s.pz, api.Region{Type: api.MemTypeVirtual, Bytes: s.mem.Bytes()}, api.MemPrivAll, api.VATypeVA); err != nil {
		t.Fatal(err)
	}
	if s.lp, err = s.lmr.Query(); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *side) wait(t *testing.T, want api.EventNumber) api.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ev api.Event
	if _, err := s.evd.Wait(ctx, 1, &ev); err != nil {
		t.Fatalf("waiting for %v: %v", want, err)
	}
	if ev.Number != want {
		t.Fatalf("event %v (%+v), want %v", ev.Number, ev, want)
	}
	if ev.Number == api.DTOCompletionEvent && ev.DTO.Status != api.DTOSuccess {
		t.Fatalf("DTO completion %+v", ev.DTO)
	}
	return ev
}

func (s *side) seg(off, n int) api.LMRTriplet { return s.lp.Triplet(uint64(off), uint32(n)) }

// epAttr returns the attributes of s's EP, as its Query reports them.
func (s *side) epAttr(t *testing.T) api.EPAttr {
	t.Helper()
	prm, err := s.ep.Query()
	if err != nil {
		t.Fatal(err)
	}
	return prm.Attr
}

func vmIP() net.IP { return net.ParseIP(envOr("RXE_VM_IP", "192.0.2.1")) }

// connect makes a connected pair through a PSP on a port of rdma_cm's
// choosing, with private data both ways.
func connect(t *testing.T) (client, server *side) {
	t.Helper()
	return connectSides(t, newSide(t), newSide(t))
}

// connectSides is connect for sides the caller made.
func connectSides(t *testing.T, client, server *side) (*side, *side) {
	t.Helper()
	psp, q, err := server.ia.CreatePSPAny(server.evd, api.PSPConsumer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { psp.Free() })
	// A receive posted before the connection exists is kept.
	if err := server.ep.PostRecv([]api.LMRTriplet{server.seg(0, 4096)}, 7, 0); err != nil {
		t.Fatal(err)
	}
	if err := client.ep.Connect(&net.IPAddr{IP: vmIP()}, q, 5*time.Second, []byte("hello"), api.QOSBestEffort, 0); err != nil {
		t.Fatal(err)
	}
	ev := server.wait(t, api.ConnectionRequestEvent)
	crp, err := ev.CR.CR.Query()
	if err != nil {
		t.Fatal(err)
	}
	if string(crp.PrivateData) != "hello" {
		t.Errorf("request private data %q, want hello", crp.PrivateData)
	}
	if err := ev.CR.CR.Accept(server.ep, []byte("welcome")); err != nil {
		t.Fatal(err)
	}
	est := client.wait(t, api.ConnectionEstablishedEvent)
	if string(est.Conn.PrivateData) != "welcome" {
		t.Errorf("accept private data %q, want welcome", est.Conn.PrivateData)
	}
	server.wait(t, api.ConnectionEstablishedEvent)
	return client, server
}

func TestConnectSendWriteRead(t *testing.T) {
	needDevice(t)
	client, server := connect(t)

	// Send into the receive posted before the connection.
	copy(client.mem.Bytes(), "a message")
	if err := client.ep.PostSend([]api.LMRTriplet{client.seg(0, 9)}, 1, 0); err != nil {
		t.Fatal(err)
	}
	if ev := client.wait(t, api.DTOCompletionEvent); ev.DTO.Cookie != 1 || ev.DTO.Op != api.OpSend {
		t.Errorf("send completion %+v", ev.DTO)
	}
	if ev := server.wait(t, api.DTOCompletionEvent); ev.DTO.Cookie != 7 || ev.DTO.Length != 9 || ev.DTO.Op != api.OpReceive {
		t.Errorf("receive completion %+v", ev.DTO)
	}
	if got := string(server.mem.Bytes()[:9]); got != "a message" {
		t.Errorf("received %q", got)
	}

	// RDMA write 32 KiB into the server's buffer, read it back.
	src := client.mem.Bytes()[4096 : 4096+32768]
	for k := range src {
		src[k] = byte(k * 13)
	}
	remote := api.RMRTriplet{Addr: server.lp.RegisteredAddress + 8192, Length: 32768, RMRContext: server.lp.RMRContext}
	if err := client.ep.PostRDMAWrite([]api.LMRTriplet{client.seg(4096, 32768)}, 2, remote, 0); err != nil {
		t.Fatal(err)
	}
	if ev := client.wait(t, api.DTOCompletionEvent); ev.DTO.Cookie != 2 || ev.DTO.Op != api.OpRDMAWrite || ev.DTO.Length != 32768 {
		t.Errorf("write completion %+v", ev.DTO)
	}
	if !bytes.Equal(server.mem.Bytes()[8192:8192+32768], src) {
		t.Error("RDMA write: data differs")
	}
	if err := client.ep.PostRDMARead([]api.LMRTriplet{client.seg(40960, 16384)}, 3, api.RMRTriplet{Addr: remote.Addr, Length: 16384, RMRContext: remote.RMRContext}, 0); err != nil {
		t.Fatal(err)
	}
	if ev := client.wait(t, api.DTOCompletionEvent); ev.DTO.Cookie != 3 || ev.DTO.Op != api.OpRDMARead {
		t.Errorf("read completion %+v", ev.DTO)
	}
	if !bytes.Equal(client.mem.Bytes()[40960:40960+16384], src[:16384]) {
		t.Error("RDMA read: data differs")
	}

	// A suppressed send completes silently; the next one is reported.
	if err := client.ep.PostSend([]api.LMRTriplet{client.seg(0, 1)}, 4, api.CompletionSuppress); err != nil {
		t.Fatal(err)
	}
	if err := server.ep.PostRecv([]api.LMRTriplet{server.seg(0, 64)}, 8, 0); err != nil {
		t.Fatal(err)
	}
	if err := server.ep.PostRecv([]api.LMRTriplet{server.seg(64, 64)}, 9, 0); err != nil {
		t.Fatal(err)
	}
	if err := client.ep.PostSend([]api.LMRTriplet{client.seg(0, 2)}, 5, 0); err != nil {
		t.Fatal(err)
	}
	if ev := client.wait(t, api.DTOCompletionEvent); ev.DTO.Cookie != 5 {
		t.Errorf("after a suppressed send: completion %+v, want cookie 5", ev.DTO)
	}
	server.wait(t, api.DTOCompletionEvent)
	server.wait(t, api.DTOCompletionEvent)

	// Disconnect: both sides get DISCONNECTED; a receive left over is
	// flushed.
	if err := server.ep.PostRecv([]api.LMRTriplet{server.seg(0, 64)}, 10, 0); err != nil {
		t.Fatal(err)
	}
	if err := client.ep.Disconnect(api.CloseGraceful); err != nil {
		t.Fatal(err)
	}
	client.wait(t, api.ConnectionDisconnectedEvent)
	var sawFlush, sawDisc bool
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var ev api.Event
		_, err := server.evd.Wait(ctx, 1, &ev)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.Number == api.DTOCompletionEvent && ev.DTO.Status == api.DTOErrFlushed && ev.DTO.Cookie == 10:
			sawFlush = true
		case ev.Number == api.ConnectionDisconnectedEvent:
			sawDisc = true
		default:
			t.Errorf("server event %v %+v", ev.Number, ev.DTO)
		}
	}
	if !sawFlush || !sawDisc {
		t.Errorf("server: flushed receive %v, disconnected %v", sawFlush, sawDisc)
	}
	if st, _, _, _ := client.ep.GetStatus(); st != api.EPDisconnected {
		t.Errorf("client state %v", st)
	}
	if err := client.ep.Reset(); err != nil {
		t.Fatal(err)
	}
}

func TestRejectAndNoListener(t *testing.T) {
	needDevice(t)
	client, server := newSide(t), newSide(t)
	psp, q, err := server.ia.CreatePSPAny(server.evd, api.PSPConsumer)
	if err != nil {
		t.Fatal(err)
	}
	defer psp.Free()
	if _, err := server.ia.CreatePSP(q, server.evd, api.PSPConsumer); err == nil {
		t.Error("a second PSP on the same port was created")
	}
	if err := client.ep.Connect(&net.IPAddr{IP: vmIP()}, q, 5*time.Second, []byte("let me in"), api.QOSBestEffort, 0); err != nil {
		t.Fatal(err)
	}
	ev := server.wait(t, api.ConnectionRequestEvent)
	if err := ev.CR.CR.Reject([]byte("no")); err != nil {
		t.Fatal(err)
	}
	rej := client.wait(t, api.ConnectionPeerRejectedEvent)
	if string(rej.Conn.PrivateData) != "no" {
		t.Errorf("reject private data %q, want no", rej.Conn.PrivateData)
	}
	if err := client.ep.Reset(); err != nil {
		t.Fatal(err)
	}
	// Nobody listens on q+1.
	if err := client.ep.Connect(&net.IPAddr{IP: vmIP()}, q+1, 5*time.Second, nil, api.QOSBestEffort, 0); err != nil {
		t.Fatal(err)
	}
	client.wait(t, api.ConnectionNonPeerRejectedEvent)
}

// TestRefuse refuses a request as the provider (provider.CRRefuser), as
// the plugin host does when its own queue is full: the requester sees
// NON_PEER_REJECTED without private data, and the request is gone.
func TestRefuse(t *testing.T) {
	needDevice(t)
	client, server := newSide(t), newSideOn(t, openRaw(t))
	psp, q, err := server.ia.CreatePSPAny(server.evd, api.PSPConsumer)
	if err != nil {
		t.Fatal(err)
	}
	defer psp.Free()
	if err := client.ep.Connect(&net.IPAddr{IP: vmIP()}, q, 5*time.Second, []byte("let me in"), api.QOSBestEffort, 0); err != nil {
		t.Fatal(err)
	}
	cr := server.wait(t, api.ConnectionRequestEvent).CR.CR
	rf, ok := cr.(provider.CRRefuser)
	if !ok {
		t.Fatalf("the verbs CR %T has no Refuse", cr)
	}
	if err := rf.Refuse(); err != nil {
		t.Fatal(err)
	}
	if ev := client.wait(t, api.ConnectionNonPeerRejectedEvent); len(ev.Conn.PrivateData) != 0 {
		t.Errorf("the refusal carried private data %q", ev.Conn.PrivateData)
	}
	if err := cr.Reject(nil); err == nil {
		t.Error("Reject after Refuse succeeded")
	}
}

// TestGracefulDisconnectLetsRequestsComplete disconnects gracefully
// while a send waits for the peer to post a receive (the device retries
// it: receiver not ready): it completes successfully once the peer posts
// one, and DISCONNECTED comes after it (dat_ep_disconnect(3DAT)); an
// abrupt disconnect would flush it.
func TestGracefulDisconnectLetsRequestsComplete(t *testing.T) {
	needDevice(t)
	client, server := connect(t)
	// connect left the server one receive: the first send takes it, the
	// second has none.
	for i := range 2 {
		if err := client.ep.PostSend([]api.LMRTriplet{client.seg(0, 8)}, api.Cookie(100+i), 0); err != nil {
			t.Fatal(err)
		}
	}
	if ev := client.wait(t, api.DTOCompletionEvent); ev.DTO.Cookie != 100 {
		t.Fatalf("first completion %+v, want the first send's", ev.DTO)
	}
	if err := client.ep.Disconnect(api.CloseGraceful); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the second send is retried meanwhile
	if st, _, _, _ := client.ep.GetStatus(); st != api.EPDisconnectPending {
		t.Errorf("state during the graceful wait: %v, want DISCONNECT_PENDING", st)
	}
	if err := server.ep.PostRecv([]api.LMRTriplet{server.seg(0, 64)}, 8, 0); err != nil {
		t.Fatal(err)
	}
	if ev := client.wait(t, api.DTOCompletionEvent); ev.DTO.Cookie != 101 { // an error status fails the test
		t.Fatalf("second completion %+v, want the second send's", ev.DTO)
	}
	client.wait(t, api.ConnectionDisconnectedEvent)
}

// TestInlineData checks that the EP's QP carries inline data and that
// sends and RDMA writes just under, at and just over that size (inline,
// inline, not inline) arrive whole.
func TestInlineData(t *testing.T) {
	needDevice(t)
	client, server := connect(t)
	v := named(client.epAttr(t).TransportSpecific, "max_inline_data")
	inline, err := strconv.Atoi(v)
	if err != nil || inline <= 0 {
		t.Fatalf("max_inline_data %q: rxe grants inline data, want a positive count", v)
	}
	var cookie api.Cookie = 100
	for _, n := range []int{inline - 1, inline, inline + 1} {
		src := client.mem.Bytes()[:n]
		for k := range src {
			src[k] = byte(n + k*7)
		}
		if err := server.ep.PostRecv([]api.LMRTriplet{server.seg(0, 4096)}, cookie, 0); err != nil {
			t.Fatal(err)
		}
		if err := client.ep.PostSend([]api.LMRTriplet{client.seg(0, n)}, cookie+1, 0); err != nil {
			t.Fatal(err)
		}
		if ev := client.wait(t, api.DTOCompletionEvent); ev.DTO.Cookie != cookie+1 || ev.DTO.Length != uint32(n) {
			t.Errorf("%d B send: completion %+v", n, ev.DTO)
		}
		// (connect left a receive posted: each send lands in the
		// receive posted one round earlier.)
		if ev := server.wait(t, api.DTOCompletionEvent); ev.DTO.Op != api.OpReceive || ev.DTO.Length != uint32(n) {
			t.Errorf("%d B send: receive completion %+v", n, ev.DTO)
		}
		if !bytes.Equal(server.mem.Bytes()[:n], src) {
			t.Errorf("%d B send: data differs", n)
		}
		// The same bytes from two segments, by RDMA write.
		remote := api.RMRTriplet{Addr: server.lp.RegisteredAddress + 8192, Length: uint32(n), RMRContext: server.lp.RMRContext}
		iov := []api.LMRTriplet{client.seg(0, n/2), client.seg(n/2, n-n/2)}
		if err := client.ep.PostRDMAWrite(iov, cookie+2, remote, 0); err != nil {
			t.Fatal(err)
		}
		if ev := client.wait(t, api.DTOCompletionEvent); ev.DTO.Cookie != cookie+2 || ev.DTO.Length != uint32(n) {
			t.Errorf("%d B write: completion %+v", n, ev.DTO)
		}
		if !bytes.Equal(server.mem.Bytes()[8192:8192+n], src) {
			t.Errorf("%d B write: data differs", n)
		}
		cookie += 3
	}
}

// TestSuppressedWritesNeedNoDequeue posts three request queues' worth of
// suppressed RDMA writes, one at a time, learning of each from the target
// memory as an RDMA-write ping-pong does, and never dequeues: no post may
// find the request queue full of writes that are done (a post that finds
// it full looks in the CQ first), and no event may come. GOMAXPROCS is 1
// and the loop never yields, so the CQ's watcher and its timer cannot
// retire the writes in the background.
func TestSuppressedWritesNeedNoDequeue(t *testing.T) {
	needDevice(t)
	client, server := connect(t)
	attr := client.epAttr(t)
	var ev api.Event
	if err := client.evd.Dequeue(&ev); err == nil {
		t.Fatalf("unexpected event %+v", ev) // (a poll: the CQ is left unarmed)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	n := 3*attr.MaxRequestDTOs + 1
	for i := range n {
		if err := writeAndLand(t, client, server, byte(1+i%255), api.Cookie(i), api.CompletionSuppress); err != nil {
			t.Fatalf("suppressed write %d of %d (MaxRequestDTOs %d): %v", i, n, attr.MaxRequestDTOs, err)
		}
	}
	if err := client.evd.Dequeue(&ev); err == nil {
		t.Errorf("suppressed writes that succeeded gave an event: %+v", ev)
	}
}

// writeAndLand posts an RDMA write of 8 bytes of tag from the start of
// client's buffer to offset 8192 of server's, with cookie and flags, and
// spins until the bytes are there, so that the write is done whatever its
// completion says; it returns the post's error.
func writeAndLand(t *testing.T, client, server *side, tag byte, cookie api.Cookie, flags api.CompletionFlags) error {
	t.Helper()
	src := client.mem.Bytes()[:8]
	for k := range src {
		src[k] = tag
	}
	remote := api.RMRTriplet{Addr: server.lp.RegisteredAddress + 8192, Length: 8, RMRContext: server.lp.RMRContext}
	if err := client.ep.PostRDMAWrite([]api.LMRTriplet{client.seg(0, 8)}, cookie, remote, flags); err != nil {
		return err
	}
	word := (*uint32)(unsafe.Pointer(&server.mem.Bytes()[8196])) // (the last four bytes)
	want := uint32(tag) * 0x01010101
	for deadline := time.Now().Add(10 * time.Second); atomic.LoadUint32(word) != want; {
		if time.Now().After(deadline) {
			t.Fatalf("the write of cookie %d did not land", cookie)
		}
	}
	return nil
}

// TestSolicitedWait checks solicited wait on a receive EVD of its own
// (dat_ep_post_recv(3DAT)), whose CQ the provider arms for solicited
// completions alone: the receive of a message sent without the solicited
// flag triggers the EVD's CNO neither when it arrives nor when a Dequeue
// takes it; a solicited message's does. The EP's attributes come from an
// EP made and freed first, as a consumer learns the defaults: that EP
// must not decide how the CQ is armed.
func TestSolicitedWait(t *testing.T) {
	needDevice(t)
	client, server := newSide(t), newSide(t)
	recv, err := server.ia.CreateEVD(16, nil, api.EVDDTO)
	if err != nil {
		t.Fatal(err)
	}
	cno, err := server.ia.CreateCNO(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := recv.ModifyCNO(cno); err != nil {
		t.Fatal(err)
	}
	probe, err := server.ia.CreateEP(server.pz, recv, server.evd, server.evd, nil)
	if err != nil {
		t.Fatal(err)
	}
	prm, err := probe.Query()
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.Free(); err != nil {
		t.Fatal(err)
	}
	a := prm.Attr
	a.RecvCompletionFlags = api.CompletionSolicitedWait
	if err := server.ep.Free(); err != nil {
		t.Fatal(err)
	}
	if server.ep, err = server.ia.CreateEP(server.pz, recv, server.evd, server.evd, &a); err != nil {
		t.Fatal(err)
	}
	connectSides(t, client, server) // (posts receive 7 on the server)
	if err := server.ep.PostRecv([]api.LMRTriplet{server.seg(4096, 64)}, 8, 0); err != nil {
		t.Fatal(err)
	}
	quiet := func(when string) {
		t.Helper()
		for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if e, err := cno.Triggered(); err != nil || e != nil {
				t.Fatalf("the CNO was triggered %s (%v)", when, err)
			}
		}
	}
	send := func(cookie api.Cookie, flags api.CompletionFlags) {
		t.Helper()
		if err := client.ep.PostSend([]api.LMRTriplet{client.seg(0, 8)}, cookie, flags); err != nil {
			t.Fatal(err)
		}
		if ev := client.wait(t, api.DTOCompletionEvent); ev.DTO.Cookie != cookie {
			t.Fatalf("send completion %+v, want cookie %d", ev.DTO, cookie)
		}
	}
	take := func(cookie api.Cookie) {
		t.Helper()
		var ev api.Event
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			err := recv.Dequeue(&ev)
			if err == nil {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("no receive %d: %v", cookie, err)
			}
		}
		if ev.Number != api.DTOCompletionEvent || ev.DTO.Cookie != cookie || ev.DTO.Status != api.DTOSuccess {
			t.Fatalf("receive %+v, want cookie %d", ev, cookie)
		}
	}

	send(1, api.CompletionDefault)
	quiet("by the receive of an unsolicited message")
	take(7)
	quiet("by dequeuing the receive of an unsolicited message")
	send(2, api.CompletionSolicitedWait)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		e, err := cno.Triggered()
		if err != nil {
			t.Fatal(err)
		}
		if e == recv {
			break
		}
		if e != nil || time.Now().After(end) {
			t.Fatalf("the solicited message's receive triggered %v, want the receive EVD", e)
		}
	}
	take(8)
}
