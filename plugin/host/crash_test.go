package host_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/godat/godat/api"
	_ "github.com/godat/godat/providers/loopback"
	"github.com/godat/godat/registry"
)

// side is one IA with the objects of one end of a connection.
type side struct {
	t                     *testing.T
	ia                    api.IA
	async, req, recv, con api.EVD
	cr                    api.EVD
	pz                    api.PZ
	ep                    api.EP
	mem                   *api.Memory
	lmr                   api.LMR
	lp                    api.LMRParam
}

func newSide(t *testing.T, r *registry.Registry, name string) *side {
	t.Helper()
	s := &side{t: t}
	var err error
	s.ia, err = r.Open(context.Background(), name)
	must(t, err)
	s.async, err = s.ia.AsyncEVD()
	must(t, err)
	s.pz, err = s.ia.CreatePZ()
	must(t, err)
	for _, p := range []*api.EVD{&s.req, &s.recv, &s.con, &s.cr} {
		flags := map[*api.EVD]api.EVDFlags{&s.req: api.EVDDTO | api.EVDRMRBind, &s.recv: api.EVDDTO, &s.con: api.EVDConnection, &s.cr: api.EVDCR}[p]
		*p, err = s.ia.CreateEVD(64, nil, flags)
		must(t, err)
	}
	s.ep, err = s.ia.CreateEP(s.pz, s.recv, s.req, s.con, nil)
	must(t, err)
	s.mem, s.lmr, s.lp = registerMemory(t, s.ia, s.pz, 1<<16)
	return s
}

func (s *side) wait(evd api.EVD, what string) api.Event {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ev api.Event
	if _, err := evd.Wait(ctx, 1, &ev); err != nil {
		s.t.Fatalf("waiting for %s: %v", what, err)
	}
	return ev
}

// connect connects cli to srv (both opened by the caller).
func connect(t *testing.T, cli, srv *side) {
	t.Helper()
	psp, q, err := srv.ia.CreatePSPAny(srv.cr, api.PSPConsumer)
	if err != nil {
		t.Fatal(err)
	}
	attr, _, err := srv.ia.Query()
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.ep.Connect(attr.Address, q, 10*time.Second, nil, api.QOSBestEffort, api.ConnectDefault); err != nil {
		t.Fatal(err)
	}
	ev := srv.wait(srv.cr, "the connection request")
	if err := ev.CR.CR.Accept(srv.ep, nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*side{cli, srv} {
		if ev := s.wait(s.con, "ESTABLISHED"); ev.Number != api.ConnectionEstablishedEvent {
			t.Fatalf("got %v, want ESTABLISHED", ev.Number)
		}
	}
	if err := psp.Free(); err != nil {
		t.Fatal(err)
	}
}

// A plugin killed in the middle of traffic costs only its own IAs: each
// gets the catastrophic event, its connections break, its outstanding DTOs
// complete flushed in order, later calls fail with a clear error, the host
// and its other providers go on, and opening the IA again starts a new
// plugin.
func TestCrashIsolation(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := loadRegistry(t, writeConfig(t, examplePath, "", "a", "b"))
	a, b := newSide(t, r, "a"), newSide(t, r, "b")
	connect(t, a, b)

	// Outstanding work: sends that wait for receives b never posts,
	// receives on a that nothing will fill.
	const nsend, nrecv = 3, 2
	for i := range nsend {
		if err := a.ep.PostSend([]api.LMRTriplet{a.lp.Triplet(0, 64)}, api.Cookie(100+i), api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
	}
	for i := range nrecv {
		if err := a.ep.PostRecv([]api.LMRTriplet{a.lp.Triplet(4096, 64)}, api.Cookie(200+i), api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
	}

	// An in-process loopback IA next to the plugin.
	lo := newSide(t, registry.New(&registry.Config{File: "inline", IAs: []registry.IAEntry{
		{Name: "lo", Provider: "loopback", APIVersion: "u2.0", ThreadSafe: true}}}), "lo")

	// Traffic on b while the plugin dies: RDMA writes into a's memory.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		remote := api.RMRTriplet{Addr: a.lp.RegisteredAddress + 8192, Length: 64, RMRContext: a.lp.RMRContext}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			err := b.ep.PostRDMAWrite([]api.LMRTriplet{b.lp.Triplet(0, 64)}, api.Cookie(i), remote, api.CompletionSuppress)
			if err != nil {
				return // the plugin is gone
			}
		}
	}()
	time.Sleep(20 * time.Millisecond)

	st := pluginStatus(t, r)
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	for _, s := range []*side{a, b} {
		if ev := s.wait(s.async, "the catastrophic event"); ev.Number != api.AsyncIACatastrophicEvent || ev.Async.Object != s.ia {
			t.Fatalf("async EVD: got %v about %v, want ASYNC_ERROR_IA_CATASTROPHIC about the IA", ev.Number, ev.Async.Object)
		}
		if ev := s.wait(s.con, "the broken connection"); ev.Number != api.ConnectionBrokenEvent || ev.Conn.EP != s.ep {
			t.Fatalf("connect EVD: got %v, want CONNECTION_BROKEN for the EP", ev.Number)
		}
	}
	close(stop)
	wg.Wait()
	for i := range nsend {
		ev := a.wait(a.req, "a flushed send")
		if ev.Number != api.DTOCompletionEvent || ev.DTO.Status != api.DTOErrFlushed || ev.DTO.Cookie != api.Cookie(100+i) || ev.DTO.EP != a.ep || ev.DTO.Op != api.OpSend {
			t.Fatalf("send %d: got %v status %v cookie %d op %v, want FLUSHED cookie %d", i, ev.Number, ev.DTO.Status, ev.DTO.Cookie, ev.DTO.Op, 100+i)
		}
	}
	for i := range nrecv {
		ev := a.wait(a.recv, "a flushed receive")
		if ev.DTO.Status != api.DTOErrFlushed || ev.DTO.Cookie != api.Cookie(200+i) || ev.DTO.Op != api.OpReceive {
			t.Fatalf("receive %d: got status %v cookie %d, want FLUSHED cookie %d", i, ev.DTO.Status, ev.DTO.Cookie, 200+i)
		}
	}
	// Every write b posted completed, before the crash or flushed by it:
	// whatever is left on its request EVD is flushed writes.
	for {
		var ev api.Event
		if err := b.req.Dequeue(&ev); err != nil {
			break
		}
		if ev.DTO.Op != api.OpRDMAWrite || (ev.DTO.Status != api.DTOErrFlushed && ev.DTO.Status != api.DTOSuccess) {
			t.Fatalf("b's request EVD: op %v status %v", ev.DTO.Op, ev.DTO.Status)
		}
	}

	// Further calls fail and say why.
	if _, err := a.ia.CreatePZ(); err == nil || !strings.Contains(err.Error(), "exited unexpectedly") {
		t.Fatalf("CreatePZ after the crash: %v", err)
	}
	if err := a.ep.PostSend([]api.LMRTriplet{a.lp.Triplet(0, 8)}, 1, api.CompletionDefault); !errors.Is(err, api.ErrInternal) {
		t.Fatalf("PostSend after the crash: %v", err)
	}
	if !exited(st.PID) {
		t.Fatalf("the killed plugin %d was not reaped", st.PID)
	}

	// The other provider works.
	if _, err := lo.ia.CreatePZ(); err != nil {
		t.Fatalf("the loopback IA after the plugin crash: %v", err)
	}

	// The crashed IAs close, and reopening starts a new plugin that works.
	for _, s := range []*side{a, b, lo} {
		if err := s.ia.Close(api.CloseAbrupt); err != nil {
			t.Fatalf("closing an IA after the crash: %v", err)
		}
		s.mem.Free()
	}
	a2, b2 := newSide(t, r, "a"), newSide(t, r, "b")
	if st2 := pluginStatus(t, r); st2.PID == st.PID || st2.State != "running" {
		t.Fatalf("after reopening: %+v", st2)
	}
	connect(t, a2, b2)
	if err := b2.ep.PostRecv([]api.LMRTriplet{b2.lp.Triplet(0, 64)}, 1, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	copy(a2.mem.Bytes(), "after the crash")
	if err := a2.ep.PostSend([]api.LMRTriplet{a2.lp.Triplet(0, 15)}, 2, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if ev := b2.wait(b2.recv, "the receive"); ev.DTO.Status != api.DTOSuccess || string(b2.mem.Bytes()[:15]) != "after the crash" {
		t.Fatalf("receive after reopening: %v %q", ev.DTO.Status, b2.mem.Bytes()[:15])
	}
	for _, s := range []*side{a2, b2} {
		if err := s.ia.Close(api.CloseAbrupt); err != nil {
			t.Fatal(err)
		}
		s.mem.Free()
	}
}
