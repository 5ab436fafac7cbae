package loopback

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/testmain"
	"github.com/godat/godat/registry"
)

// The conformance suite opens "loopback" through the default registry.
func TestMain(m *testing.M) { testmain.Run(m, "testdata/dat.conf") }

// reg opens IAs from the embedded configuration, whatever the machine has.
var reg = registry.New(registry.EmbeddedConfig())

const waitFor = 5 * time.Second

// node is one IA with a PZ and three EVDs (receive, request, connect+CR).
type node struct {
	t                  testing.TB
	ia                 api.IA
	pz                 api.PZ
	recv, req, connEVD api.EVD
	async              api.EVD
	addr               Addr
}

func newNode(t testing.TB) *node {
	t.Helper()
	ia, err := reg.Open(context.Background(), "loopback")
	must(t, err, "registry.Open")
	t.Cleanup(func() { ia.Close(api.CloseAbrupt) })
	n := &node{t: t, ia: ia}
	n.pz, err = ia.CreatePZ()
	must(t, err, "CreatePZ")
	n.recv = n.evd(64, api.EVDDTO)
	n.req = n.evd(64, api.EVDDTO|api.EVDRMRBind)
	n.connEVD = n.evd(64, api.EVDConnection|api.EVDCR)
	n.async, err = ia.AsyncEVD()
	must(t, err, "AsyncEVD")
	a, _, err := ia.Query()
	must(t, err, "IA.Query")
	n.addr = a.Address.(Addr)
	return n
}

func (n *node) evd(qlen int, flags api.EVDFlags) api.EVD {
	n.t.Helper()
	e, err := n.ia.CreateEVD(qlen, nil, flags)
	must(n.t, err, "CreateEVD")
	return e
}

func (n *node) ep(attr *api.EPAttr) api.EP {
	n.t.Helper()
	e, err := n.ia.CreateEP(n.pz, n.recv, n.req, n.connEVD, attr)
	must(n.t, err, "CreateEP")
	return e
}

// region is registered memory of a node.
type region struct {
	b   []byte
	lmr api.LMR
	prm api.LMRParam
}

func (n *node) region(size int, priv api.MemPriv) *region {
	n.t.Helper()
	return n.regionIn(n.pz, make([]byte, size), priv, api.VATypeVA)
}

func (n *node) regionIn(z api.PZ, b []byte, priv api.MemPriv, va api.VAType) *region {
	n.t.Helper()
	l, err := n.ia.CreateLMR(z, api.Region{Type: api.MemTypeVirtual, Bytes: b}, priv, va)
	must(n.t, err, "CreateLMR")
	prm, err := l.Query()
	must(n.t, err, "LMR.Query")
	return &region{b: b, lmr: l, prm: prm}
}

// regionOtherPZ registers size bytes with every privilege in a new PZ of
// n's IA: memory that n's EPs, of n.pz, may not use.
func (n *node) regionOtherPZ(size int) *region {
	n.t.Helper()
	z, err := n.ia.CreatePZ()
	must(n.t, err, "CreatePZ")
	return n.regionIn(z, make([]byte, size), api.MemPrivAll, api.VATypeVA)
}

func (r *region) iov(off, n int) []api.LMRTriplet {
	return []api.LMRTriplet{r.prm.Triplet(uint64(off), uint32(n))}
}

// rtr is a remote triplet through the LMR's own RMR context.
func (r *region) rtr(off, n int) api.RMRTriplet {
	return api.RMRTriplet{Addr: r.prm.RegisteredAddress + api.VAddr(off), Length: uint32(n), RMRContext: r.prm.RMRContext}
}

// pair is a connected pair of EPs on two IAs.
type pair struct {
	a, b   *node
	ea, eb api.EP
}

// connect connects a fresh EP of a to a fresh EP of b with the given
// attributes and returns the pair.
func connect(t testing.TB, a, b *node, attr *api.EPAttr) *pair {
	t.Helper()
	ea, eb := a.ep(attr), b.ep(attr)
	psp, q, err := b.ia.CreatePSPAny(b.connEVD, api.PSPConsumer)
	must(t, err, "CreatePSPAny")
	defer psp.Free()
	must(t, ea.Connect(b.addr, q, api.TimeoutInfinite, nil, api.QOSBestEffort, api.ConnectDefault), "Connect")
	ev := b.expect(b.connEVD, api.ConnectionRequestEvent)
	must(t, ev.CR.CR.Accept(eb, nil), "Accept")
	b.expect(b.connEVD, api.ConnectionEstablishedEvent)
	a.expect(a.connEVD, api.ConnectionEstablishedEvent)
	return &pair{a: a, b: b, ea: ea, eb: eb}
}

// listen creates a PSP of n's IA on a free qualifier, with flags, whose
// requests go to n.connEVD, and returns the qualifier.
func (n *node) listen(flags api.PSPFlags) api.ConnQual {
	n.t.Helper()
	_, q, err := n.ia.CreatePSPAny(n.connEVD, flags)
	must(n.t, err, "CreatePSPAny")
	return q
}

// request connects ep to qualifier q of n, without a timeout or private
// data, and returns the connection request n gets.
func (n *node) request(ep api.EP, q api.ConnQual) api.CR {
	n.t.Helper()
	must(n.t, ep.Connect(n.addr, q, -1, nil, 0, 0), "Connect")
	return n.expect(n.connEVD, api.ConnectionRequestEvent).CR.CR
}

// expectBroken checks that both ends of p got BROKEN.
func (p *pair) expectBroken() {
	p.a.t.Helper()
	p.a.expect(p.a.connEVD, api.ConnectionBrokenEvent)
	p.b.expect(p.b.connEVD, api.ConnectionBrokenEvent)
}

func newPair(t testing.TB) *pair { return connect(t, newNode(t), newNode(t), nil) }

// expect waits for the next event on e and checks its number.
func (n *node) expect(e api.EVD, num api.EventNumber) api.Event {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	var ev api.Event
	if _, err := e.Wait(ctx, 1, &ev); err != nil {
		n.t.Fatalf("waiting for %v: %v", num, err)
	}
	if ev.Number != num {
		n.t.Fatalf("got event %v (%+v), want %v", ev.Number, ev, num)
	}
	return ev
}

// expectDTO waits for a DTO completion on e with cookie and status.
func (n *node) expectDTO(e api.EVD, cookie api.Cookie, st api.DTOStatus) api.DTOCompletionData {
	n.t.Helper()
	ev := n.expect(e, api.DTOCompletionEvent)
	if ev.DTO.Cookie != cookie || ev.DTO.Status != st {
		n.t.Fatalf("completion cookie %d status %v, want cookie %d status %v", ev.DTO.Cookie, ev.DTO.Status, cookie, st)
	}
	return ev.DTO
}

// none checks that e holds no event.
func (n *node) none(e api.EVD, what string) {
	n.t.Helper()
	var ev api.Event
	if err := e.Dequeue(&ev); !errors.Is(err, api.ErrQueueEmpty) {
		n.t.Fatalf("%s: got event %v (%v), want none", what, ev.Number, err)
	}
}

// inBackground calls wait in a goroutine, with a context that ends after
// waitFor, and returns the channel that gets its result; it sleeps briefly
// first so that the call is blocked when the caller goes on.
func inBackground[T any](wait func(ctx context.Context) T) <-chan T {
	ch := make(chan T, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		ch <- wait(ctx)
	}()
	time.Sleep(10 * time.Millisecond)
	return ch
}

// waitEvent returns a wait for inBackground: the event e.Wait gives, the
// zero event if none comes.
func waitEvent(e api.EVD) func(ctx context.Context) api.Event {
	return func(ctx context.Context) api.Event {
		var ev api.Event
		e.Wait(ctx, 1, &ev)
		return ev
	}
}

func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func wantErr(t testing.TB, err error, typ api.ReturnType, sub api.Subtype, what string) {
	t.Helper()
	if !errors.Is(err, &api.Error{Type: typ, Sub: sub}) {
		t.Fatalf("%s: got %v, want %v(%v)", what, err, typ, sub)
	}
}

func state(t testing.TB, ep api.EP) api.EPState {
	t.Helper()
	s, _, _, err := ep.GetStatus()
	must(t, err, "GetStatus")
	return s
}

func wantState(t testing.TB, ep api.EP, want api.EPState) {
	t.Helper()
	if s := state(t, ep); s != want {
		t.Fatalf("EP state %v, want %v", s, want)
	}
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

func zero(b []byte) bool { return bytes.Count(b, []byte{0}) == len(b) }
