package registry

// A provider that checks nothing: every call succeeds, is counted, and
// objects are plain structs. The guard tests use it to prove that the guard
// alone catches each misuse with the right DAT code before the provider is
// reached.

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
)

type fakeProvider struct{}

func (fakeProvider) Open(ctx context.Context, p api.OpenParams) (api.IA, error) {
	ia := &fakeIA{}
	ia.async = &fakeEVD{ia: ia, qlen: p.AsyncEVDQLen, flags: api.EVDAsync}
	return ia, nil
}

func init() { provider.Register("guardtest", fakeProvider{}) }

type fakeBase struct {
	api.ContextSlot
	t api.HandleType
}

func (b *fakeBase) HandleType() api.HandleType { return b.t }

type fakeIA struct {
	fakeBase
	calls   atomic.Int64
	async   *fakeEVD
	closed  atomic.Bool
	inCall  atomic.Int32 // calls in progress, to detect missing serialization
	overlap atomic.Bool
	lmrs    atomic.Uint32 // LMR contexts handed out
}

// hit counts a call and notes overlapping calls; the caller defers done on
// its result. It allocates nothing, so the allocation test measures the
// guard alone.
func (ia *fakeIA) hit() callMark {
	ia.calls.Add(1)
	if ia.inCall.Add(1) > 1 {
		ia.overlap.Store(true)
	}
	return callMark{ia}
}

type callMark struct{ ia *fakeIA }

func (m callMark) done() { m.ia.inCall.Add(-1) }

func (ia *fakeIA) Query() (api.IAAttr, api.ProviderAttr, error) {
	defer ia.hit().done()
	return api.IAAttr{
			AdapterName: "fake", MaxEVDQLen: 1024, MaxIOVSegmentsPerDTO: 4, MaxDTOPerEP: 64,
			MaxMessageSize: 1 << 20, MaxRDMASize: 1 << 20, MaxRecvPerSRQ: 64,
			MaxIOVSegmentsPerRDMARead: 4, MaxIOVSegmentsPerRDMAWrite: 4,
		}, api.ProviderAttr{
			ProviderName: "guardtest", MaxPrivateDataSize: 16, SRQSupported: true,
			EPCreator: api.PSPCreatesEPIfAsked, ThreadSafe: true,
		}, nil
}
func (ia *fakeIA) AsyncEVD() (api.EVD, error) { return ia.async, nil }
func (ia *fakeIA) Close(api.CloseFlags) error {
	defer ia.hit().done()
	ia.closed.Store(true)
	return nil
}
func (ia *fakeIA) CreatePZ() (api.PZ, error) { defer ia.hit().done(); return &fakePZ{ia: ia}, nil }
func (ia *fakeIA) CreateEVD(qlen int, cno api.CNO, flags api.EVDFlags) (api.EVD, error) {
	defer ia.hit().done()
	return &fakeEVD{ia: ia, qlen: qlen, flags: flags, cno: cno}, nil
}
func (ia *fakeIA) CreateCNO(agent api.WaitAgent) (api.CNO, error) {
	defer ia.hit().done()
	return &fakeCNO{ia: ia, agent: agent}, nil
}
func (ia *fakeIA) CreateCNOFD() (api.CNO, int, error) {
	defer ia.hit().done()
	return &fakeCNO{ia: ia}, fakeCNOFD, nil
}

// fakeCNOFD is the descriptor number fakeIA.CreateCNOFD reports.
const fakeCNOFD = 97

func (ia *fakeIA) CreateEP(pz api.PZ, r, q, c api.EVD, attr *api.EPAttr) (api.EP, error) {
	return ia.CreateEPWithSRQ(pz, r, q, c, nil, attr)
}
func (ia *fakeIA) CreateEPWithSRQ(pz api.PZ, r, q, c api.EVD, srq api.SRQ, attr *api.EPAttr) (api.EP, error) {
	defer ia.hit().done()
	a := api.EPAttr{MaxRecvIOV: 2, MaxRequestIOV: 2, MaxRecvDTOs: 8, MaxRequestDTOs: 8}
	if attr != nil {
		a = *attr
	}
	return &fakeEP{fakeHolding(ia, api.EPParam{IA: ia, PZ: pz, RecvEVD: r, RequestEVD: q, ConnectEVD: c, SRQ: srq, Attr: a})}, nil
}
func (ia *fakeIA) CreatePSP(q api.ConnQual, evd api.EVD, f api.PSPFlags) (api.PSP, error) {
	defer ia.hit().done()
	return &fakePSP{fakeHolding(ia, api.PSPParam{IA: ia, ConnQual: q, EVD: evd, Flags: f})}, nil
}
func (ia *fakeIA) CreatePSPAny(evd api.EVD, f api.PSPFlags) (api.PSP, api.ConnQual, error) {
	p, err := ia.CreatePSP(99, evd, f)
	return p, 99, err
}
func (ia *fakeIA) CreateRSP(q api.ConnQual, ep api.EP, evd api.EVD) (api.RSP, error) {
	defer ia.hit().done()
	return &fakeRSP{fakeHolding(ia, api.RSPParam{IA: ia, ConnQual: q, EVD: evd, EP: ep})}, nil
}
func (ia *fakeIA) CreateLMR(pz api.PZ, r api.Region, priv api.MemPriv, va api.VAType) (api.LMR, error) {
	defer ia.hit().done()
	return &fakeLMR{fakeHolding(ia, api.LMRParam{IA: ia, PZ: pz, Priv: priv, VAType: va, Length: uint64(len(r.Bytes)),
		LMRContext: api.LMRContext(ia.lmrs.Add(1))})}, nil
}
func (ia *fakeIA) CreateSRQ(pz api.PZ, a api.SRQAttr) (api.SRQ, error) {
	defer ia.hit().done()
	// Like some devices, it rounds the IOV limit up to a power of two.
	iov := 1
	for iov < a.MaxRecvIOV {
		iov *= 2
	}
	return &fakeSRQ{fakeHolding(ia, api.SRQParam{IA: ia, PZ: pz, MaxRecvDTOs: a.MaxRecvDTOs, MaxRecvIOV: iov})}, nil
}
func (ia *fakeIA) SyncRDMARead([]api.LMRTriplet) error  { defer ia.hit().done(); return nil }
func (ia *fakeIA) SyncRDMAWrite([]api.LMRTriplet) error { defer ia.hit().done(); return nil }

type fakePZ struct {
	fakeBase
	ia *fakeIA
}

func (p *fakePZ) Query() (api.PZParam, error) {
	defer p.ia.hit().done()
	return api.PZParam{IA: p.ia}, nil
}
func (p *fakePZ) CreateRMR() (api.RMR, error) {
	defer p.ia.hit().done()
	return &fakeRMR{ia: p.ia, pz: p}, nil
}
func (p *fakePZ) Free() error { defer p.ia.hit().done(); return nil }

type fakeEVD struct {
	fakeBase
	ia    *fakeIA
	mu    sync.Mutex
	q     []api.Event
	qlen  int
	flags api.EVDFlags
	cno   api.CNO
}

func (e *fakeEVD) push(ev api.Event) {
	e.mu.Lock()
	e.q = append(e.q, ev)
	e.mu.Unlock()
}
func (e *fakeEVD) Query() (api.EVDParam, error) {
	return api.EVDParam{IA: e.ia, QLen: e.qlen, Flags: e.flags, CNO: e.cno}, nil
}
func (e *fakeEVD) Resize(n int) error         { defer e.ia.hit().done(); e.qlen = n; return nil }
func (e *fakeEVD) PostSE(ev *api.Event) error { defer e.ia.hit().done(); e.push(*ev); return nil }
func (e *fakeEVD) Dequeue(ev *api.Event) error {
	defer e.ia.hit().done()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.q) == 0 {
		return api.ErrQueueEmpty
	}
	*ev = e.q[0]
	e.q = e.q[1:]
	return nil
}
func (e *fakeEVD) Wait(ctx context.Context, n int, ev *api.Event) (int, error) {
	e.ia.calls.Add(1)
	if err := e.Dequeue(ev); err != nil {
		return 0, err
	}
	return 0, nil
}
func (e *fakeEVD) Enable() error             { defer e.ia.hit().done(); return nil }
func (e *fakeEVD) Disable() error            { defer e.ia.hit().done(); return nil }
func (e *fakeEVD) SetUnwaitable() error      { defer e.ia.hit().done(); return nil }
func (e *fakeEVD) ClearUnwaitable() error    { defer e.ia.hit().done(); return nil }
func (e *fakeEVD) ModifyCNO(c api.CNO) error { defer e.ia.hit().done(); e.cno = c; return nil }
func (e *fakeEVD) Free() error               { defer e.ia.hit().done(); return nil }

type fakeCNO struct {
	fakeBase
	ia    *fakeIA
	agent api.WaitAgent
}

func (c *fakeCNO) Query() (api.CNOParam, error) { return api.CNOParam{IA: c.ia, Agent: c.agent}, nil }
func (c *fakeCNO) ModifyAgent(a api.WaitAgent) error {
	defer c.ia.hit().done()
	c.agent = a
	return nil
}
func (c *fakeCNO) Wait(ctx context.Context) (api.EVD, error) {
	c.ia.calls.Add(1)
	return c.ia.async, nil
}
func (c *fakeCNO) Triggered() (api.EVD, error) {
	defer c.ia.hit().done()
	return c.ia.async, nil
}
func (c *fakeCNO) Free() error { defer c.ia.hit().done(); return nil }

// fakeHeld is what the fakes that keep their parameters share: Query
// returns the parameters they were made with (and Modify changed), and
// Free only counts as a call into the provider.
type fakeHeld[P any] struct {
	fakeBase
	ia  *fakeIA
	prm P
}

func fakeHolding[P any](ia *fakeIA, prm P) fakeHeld[P] { return fakeHeld[P]{ia: ia, prm: prm} }

func (o *fakeHeld[P]) Query() (P, error) { return o.prm, nil }
func (o *fakeHeld[P]) Free() error       { defer o.ia.hit().done(); return nil }

type fakeEP struct{ fakeHeld[api.EPParam] }

func (e *fakeEP) Modify(m api.EPParamMask, p *api.EPParam) error {
	defer e.ia.hit().done()
	if m&api.EPFieldAttrAll != 0 {
		e.prm.Attr = p.Attr
	}
	if m&api.EPFieldRecvEVD != 0 {
		e.prm.RecvEVD = p.RecvEVD
	}
	return nil
}
func (e *fakeEP) GetStatus() (api.EPState, bool, bool, error) {
	defer e.ia.hit().done()
	return api.EPUnconnected, true, true, nil
}
func (e *fakeEP) Connect(net.Addr, api.ConnQual, api.Timeout, []byte, api.QOS, api.ConnectFlags) error {
	defer e.ia.hit().done()
	return nil
}
func (e *fakeEP) DupConnect(api.EP, api.Timeout, []byte, api.QOS) error {
	defer e.ia.hit().done()
	return nil
}
func (e *fakeEP) Disconnect(api.CloseFlags) error { defer e.ia.hit().done(); return nil }
func (e *fakeEP) Reset() error                    { defer e.ia.hit().done(); return nil }

// complete queues a successful completion naming the provider's own EP, so
// the tests can see the guard translate it.
func (e *fakeEP) complete(c api.Cookie, op api.DTOOp, evd api.EVD) {
	if evd != nil {
		evd.(*fakeEVD).push(api.Event{Number: api.DTOCompletionEvent, DTO: api.DTOCompletionData{EP: e, Cookie: c, Op: op}})
	}
}
func (e *fakeEP) PostSend(iov []api.LMRTriplet, c api.Cookie, f api.CompletionFlags) error {
	defer e.ia.hit().done()
	e.complete(c, api.OpSend, e.prm.RequestEVD)
	return nil
}
func (e *fakeEP) PostSendWithInvalidate(iov []api.LMRTriplet, c api.Cookie, f api.CompletionFlags, inv bool, r api.RMRContext) error {
	return e.PostSend(iov, c, f)
}
func (e *fakeEP) PostRecv(iov []api.LMRTriplet, c api.Cookie, f api.CompletionFlags) error {
	defer e.ia.hit().done()
	e.complete(c, api.OpReceive, e.prm.RecvEVD)
	return nil
}
func (e *fakeEP) PostRDMAWrite(iov []api.LMRTriplet, c api.Cookie, r api.RMRTriplet, f api.CompletionFlags) error {
	defer e.ia.hit().done()
	e.complete(c, api.OpRDMAWrite, e.prm.RequestEVD)
	return nil
}
func (e *fakeEP) PostRDMARead(iov []api.LMRTriplet, c api.Cookie, r api.RMRTriplet, f api.CompletionFlags) error {
	defer e.ia.hit().done()
	e.complete(c, api.OpRDMARead, e.prm.RequestEVD)
	return nil
}
func (e *fakeEP) PostRDMAReadToRMR(l api.RMRTriplet, c api.Cookie, r api.RMRTriplet, f api.CompletionFlags) error {
	defer e.ia.hit().done()
	return nil
}
func (e *fakeEP) RecvQuery() (int, int, error) { defer e.ia.hit().done(); return 0, 0, nil }
func (e *fakeEP) SetWatermark(s, h int) error  { defer e.ia.hit().done(); return nil }

type fakePSP struct{ fakeHeld[api.PSPParam] }

// arrive queues a connection request from the provider's side.
func (p *fakePSP) arrive(cr *fakeCR) {
	p.prm.EVD.(*fakeEVD).push(api.Event{Number: api.ConnectionRequestEvent, CR: api.CRArrivalData{PSP: p, CR: cr, ConnQual: p.prm.ConnQual}})
}

type fakeRSP struct{ fakeHeld[api.RSPParam] }

type fakeCR struct {
	fakeBase
	ia *fakeIA
	ep api.EP
}

func (c *fakeCR) Query() (api.CRParam, error)       { return api.CRParam{LocalEP: c.ep}, nil }
func (c *fakeCR) Accept(ep api.EP, pd []byte) error { defer c.ia.hit().done(); return nil }
func (c *fakeCR) Reject(pd []byte) error            { defer c.ia.hit().done(); return nil }
func (c *fakeCR) Handoff(q api.ConnQual) error      { defer c.ia.hit().done(); return nil }

type fakeLMR struct{ fakeHeld[api.LMRParam] }

type fakeRMR struct {
	fakeBase
	ia *fakeIA
	pz *fakePZ
}

func (r *fakeRMR) Query() (api.RMRParam, error) { return api.RMRParam{IA: r.ia, PZ: r.pz}, nil }
func (r *fakeRMR) Bind(api.LMR, api.LMRTriplet, api.MemPriv, api.VAType, api.EP, api.Cookie, api.CompletionFlags) (api.RMRContext, error) {
	defer r.ia.hit().done()
	return 7, nil
}
func (r *fakeRMR) Free() error { defer r.ia.hit().done(); return nil }

type fakeSRQ struct{ fakeHeld[api.SRQParam] }

func (s *fakeSRQ) PostRecv(iov []api.LMRTriplet, c api.Cookie) error {
	defer s.ia.hit().done()
	return nil
}
func (s *fakeSRQ) Resize(n int) error { defer s.ia.hit().done(); return nil }
func (s *fakeSRQ) SetLW(n int) error  { defer s.ia.hit().done(); return nil }
