package conformance_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
	"github.com/godat/godat/providers/loopback"
	"github.com/godat/godat/registry"
	"github.com/godat/godat/tests/conformance"
)

// TestConformanceNoCheck runs the suite through the registry over a
// provider that checks nothing the guard checks (nocheck below), so that
// every refusal of a freed, foreign or missing handle, and of freeing an
// object still in use, that the suite expects must come from the guard:
// third-party providers rely on those checks without making them.
func TestConformanceNoCheck(t *testing.T) {
	cfg, err := registry.ParseConfig("nocheck.conf", []byte(`
[[ia]]
name             = "nocheck"
provider         = "nocheck"
api_version      = "u2.0"
threadsafe       = true
provider_version = "godat.1.0"
`))
	if err != nil {
		t.Fatal(err)
	}
	r := registry.New(cfg)
	conformance.RunWith(t, func(ctx context.Context) (api.IA, error) { return r.Open(ctx, "nocheck") })
}

func init() { provider.Register("nocheck", ncProvider{}) }

// ncProvider is a provider that leaves to the guard what the guard
// checks. It forwards every call to a loopback IA, except that
//
//   - a call on an object it has freed, or whose IA it has closed,
//     succeeds and does nothing;
//   - a call that passes a freed object, an object of another IA, or no
//     object where one is needed, succeeds and does nothing (a create
//     returns an object that is already dead);
//   - freeing a PZ, EVD, CNO or SRQ that loopback refuses as still in
//     use succeeds (loopback destroys the object with its IA);
//   - a Wait threshold above the queue length waits for a full queue; an
//     RMR bind whose triplet names another LMR than the handle binds the
//     handle's, and one across protection zones binds all the same.
//
// Loopback checks the other arguments the guard checks too (a queue
// length, private data, attributes), so those checks of the guard are
// proven only for providers that make them as well.
//
// It translates the loopback objects in events and query results into its
// own, as any provider hands out only its own objects.
type ncProvider struct{}

func (ncProvider) Open(ctx context.Context, p api.OpenParams) (api.IA, error) {
	in, err := loopback.Provider{}.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	ia := &ncIA{p: in}
	ia.ncBase = ncBase{ia: ia, in: in}
	ia.objs.Store(in, ia)
	ae, err := in.AsyncEVD()
	if err != nil {
		in.Close(api.CloseAbrupt)
		return nil, err
	}
	ia.async = ncOut(ia, ae).(*ncEVD)
	return ia, nil
}

// ncBase is what every object of the provider shares.
type ncBase struct {
	api.ContextSlot
	ia   *ncIA
	in   any // the loopback object; nil for one made by a call that did nothing
	dead atomic.Bool
}

func (b *ncBase) nc() *ncBase { return b }

// gone reports whether calls on the object must do nothing.
func (b *ncBase) gone() bool { return b.in == nil || b.dead.Load() || b.ia.dead.Load() }

// do returns what f returns, or nil without calling f when the object is
// gone.
func (b *ncBase) do(f func() error) error {
	if b.gone() {
		return nil
	}
	return f()
}

type ncObj interface{ nc() *ncBase }

// ncArg returns the loopback object behind handle x, and false when the
// call must do nothing instead: x is nil though need is set, or an object
// that is dead or of another IA.
func ncArg[T any](ia *ncIA, x any, need bool) (T, bool) {
	var zero T
	if x == nil {
		return zero, !need
	}
	o, ok := x.(ncObj)
	if !ok {
		return zero, false
	}
	b := o.nc()
	if b.ia != ia || b.gone() {
		return zero, false
	}
	in, ok := b.in.(T)
	return in, ok
}

// ncOut returns the provider's object for loopback object x, making one
// for an object loopback created on its own (a CR, the EP of a PSPProvider
// request).
func ncOut[T any](ia *ncIA, x T) T {
	if any(x) == nil {
		return x
	}
	if w, ok := ia.objs.Load(any(x)); ok {
		return w.(T)
	}
	var w ncObj
	switch v := any(x).(type) {
	case api.EP:
		w = &ncEP{p: v, providerMade: true}
	case api.CR:
		w = &ncCR{p: v}
	case api.EVD:
		w = &ncEVD{p: v}
	case api.PZ:
		w = &ncPZ{p: v}
	case api.CNO:
		w = &ncCNO{p: v}
	case api.PSP:
		w = &ncPSP{p: v}
	case api.RSP:
		w = &ncRSP{p: v}
	case api.LMR:
		w = &ncLMR{p: v}
	case api.RMR:
		w = &ncRMR{p: v}
	case api.SRQ:
		w = &ncSRQ{p: v}
	default:
		return x
	}
	b := w.nc()
	b.ia, b.in = ia, any(x)
	got, _ := ia.objs.LoadOrStore(any(x), w)
	return got.(T)
}

// ncMade registers the provider's object w for the loopback object it
// wraps, or marks it dead when the call that made it did nothing.
func ncMade[W ncObj](ia *ncIA, w W, in any) W {
	b := w.nc()
	b.ia = ia
	if in == nil {
		b.dead.Store(true)
		return w
	}
	b.in = in
	ia.objs.Store(in, w)
	return w
}

// ncCreate returns the provider's object, made by wrap, around the
// loopback object create makes. A call that must do nothing (not ok, or
// the IA gone) does not call create and returns a dead object.
func ncCreate[T any](ia *ncIA, ok bool, wrap func(T) T, create func() (T, error)) (T, error) {
	var in T
	if !ok || ia.gone() {
		return ncMade(ia, any(wrap(in)).(ncObj), nil).(T), nil
	}
	in, err := create()
	if err != nil {
		var none T
		return none, err
	}
	return ncMade(ia, any(wrap(in)).(ncObj), in).(T), nil
}

// The wrappers of the kinds of object more than one call makes.
func ncWrapCNO(p api.CNO) api.CNO { return &ncCNO{p: p} }
func ncWrapEP(p api.EP) api.EP    { return &ncEP{p: p} }
func ncWrapPSP(p api.PSP) api.PSP { return &ncPSP{p: p} }

// ncEvent translates the loopback objects an event names.
func ncEvent(ia *ncIA, ev *api.Event, e *ncEVD) {
	ev.EVD = e
	ev.DTO.EP = ncOut(ia, ev.DTO.EP)
	ev.RMRBind.RMR = ncOut(ia, ev.RMRBind.RMR)
	ev.Conn.EP = ncOut(ia, ev.Conn.EP)
	ev.Async.Object = ncOut(ia, ev.Async.Object)
	ev.CR.CR = ncOut(ia, ev.CR.CR)
	ev.CR.PSP = ncOut(ia, ev.CR.PSP)
	ev.CR.RSP = ncOut(ia, ev.CR.RSP)
}

// ncQuery returns what q, the loopback object of b, reports, with the
// loopback objects in it translated (ncParam); the zero parameters when b
// is gone.
func ncQuery[P any](b *ncBase, q interface{ Query() (P, error) }) (P, error) {
	var prm P
	if b.gone() {
		return prm, nil
	}
	prm, err := q.Query()
	ncParam(b.ia, &prm)
	return prm, err
}

// ncParam translates the loopback objects that query parameters name.
func ncParam(ia *ncIA, prm any) {
	switch p := prm.(type) {
	case *api.PZParam:
		p.IA = ncOut(ia, p.IA)
	case *api.EVDParam:
		p.IA, p.CNO = ncOut(ia, p.IA), ncOut(ia, p.CNO)
	case *api.CNOParam:
		p.IA = ncOut(ia, p.IA)
	case *api.EPParam:
		p.IA, p.PZ, p.SRQ = ncOut(ia, p.IA), ncOut(ia, p.PZ), ncOut(ia, p.SRQ)
		p.RecvEVD, p.RequestEVD, p.ConnectEVD = ncOut(ia, p.RecvEVD), ncOut(ia, p.RequestEVD), ncOut(ia, p.ConnectEVD)
	case *api.PSPParam:
		p.IA, p.EVD = ncOut(ia, p.IA), ncOut(ia, p.EVD)
	case *api.RSPParam:
		p.IA, p.EVD, p.EP = ncOut(ia, p.IA), ncOut(ia, p.EVD), ncOut(ia, p.EP)
	case *api.CRParam:
		p.LocalEP = ncOut(ia, p.LocalEP)
	case *api.LMRParam:
		p.IA, p.PZ = ncOut(ia, p.IA), ncOut(ia, p.PZ)
	case *api.RMRParam:
		p.IA, p.PZ = ncOut(ia, p.IA), ncOut(ia, p.PZ)
	case *api.SRQParam:
		p.IA, p.PZ = ncOut(ia, p.IA), ncOut(ia, p.PZ)
	}
}

// free frees the object with f, unless it is dead already; with inUse,
// a refusal to free it while in use (DAT_INVALID_STATE, the guard's to
// make for PZs, EVDs, CNOs and SRQs) is a success all the same.
func (b *ncBase) free(f func() error, inUse bool) error {
	if b.gone() {
		return nil
	}
	if err := f(); err != nil && (!inUse || !errors.Is(err, api.ErrInvalidState)) {
		return err
	}
	b.dead.Store(true)
	return nil
}

// --- IA ---

type ncIA struct {
	ncBase
	p     api.IA
	objs  sync.Map // loopback object → provider object
	async *ncEVD
}

func (ia *ncIA) HandleType() api.HandleType { return api.HandleIA }

func (ia *ncIA) Query() (api.IAAttr, api.ProviderAttr, error) {
	if ia.gone() {
		return api.IAAttr{}, api.ProviderAttr{}, nil
	}
	a, pa, err := ia.p.Query()
	pa.ProviderName = "nocheck"
	// Best effort only, where loopback takes every QOS: the suite's
	// unsupported-QOS check then runs here, against the guard alone.
	pa.QOSSupported = api.QOSBestEffort
	return a, pa, err
}

func (ia *ncIA) AsyncEVD() (api.EVD, error) {
	if ia.gone() {
		return nil, nil
	}
	return ia.async, nil
}

func (ia *ncIA) Close(flags api.CloseFlags) error {
	if ia.gone() {
		return nil
	}
	err := ia.p.Close(flags)
	if err == nil {
		ia.dead.Store(true)
	}
	return err
}

func (ia *ncIA) CreatePZ() (api.PZ, error) {
	return ncCreate(ia, true, func(p api.PZ) api.PZ { return &ncPZ{p: p} }, ia.p.CreatePZ)
}

func (ia *ncIA) CreateEVD(qlen int, cno api.CNO, flags api.EVDFlags) (api.EVD, error) {
	c, ok := ncArg[api.CNO](ia, cno, false)
	return ncCreate(ia, ok, func(p api.EVD) api.EVD { return &ncEVD{p: p} }, func() (api.EVD, error) {
		return ia.p.CreateEVD(qlen, c, flags)
	})
}

// agent makes the loopback agent that hands a's caller the provider's EVD.
func (ia *ncIA) agent(a api.WaitAgent) api.WaitAgent {
	if a == nil {
		return nil
	}
	return func(e api.EVD) { a(ncOut(ia, e)) }
}

func (ia *ncIA) CreateCNO(agent api.WaitAgent) (api.CNO, error) {
	return ncCreate(ia, true, ncWrapCNO, func() (api.CNO, error) { return ia.p.CreateCNO(ia.agent(agent)) })
}

func (ia *ncIA) CreateCNOFD() (api.CNO, int, error) {
	fd := -1
	c, err := ncCreate(ia, true, ncWrapCNO, func() (p api.CNO, err error) {
		p, fd, err = ia.p.CreateCNOFD()
		return p, err
	})
	if err != nil {
		return nil, -1, err
	}
	return c, fd, nil
}

// epArgs resolves the handles of an EP's creation.
func (ia *ncIA) epArgs(pz api.PZ, recv, req, conn api.EVD) (z api.PZ, e [3]api.EVD, ok bool) {
	z, ok = ncArg[api.PZ](ia, pz, true)
	for k, x := range [3]api.EVD{recv, req, conn} {
		var good bool
		e[k], good = ncArg[api.EVD](ia, x, false)
		ok = ok && good
	}
	return z, e, ok && !ia.gone()
}

func (ia *ncIA) CreateEP(pz api.PZ, recv, req, conn api.EVD, attr *api.EPAttr) (api.EP, error) {
	z, e, ok := ia.epArgs(pz, recv, req, conn)
	return ncCreate(ia, ok, ncWrapEP, func() (api.EP, error) { return ia.p.CreateEP(z, e[0], e[1], e[2], attr) })
}

func (ia *ncIA) CreateEPWithSRQ(pz api.PZ, recv, req, conn api.EVD, srq api.SRQ, attr *api.EPAttr) (api.EP, error) {
	z, e, ok := ia.epArgs(pz, recv, req, conn)
	s, sok := ncArg[api.SRQ](ia, srq, true)
	return ncCreate(ia, ok && sok, ncWrapEP, func() (api.EP, error) {
		return ia.p.CreateEPWithSRQ(z, e[0], e[1], e[2], s, attr)
	})
}

func (ia *ncIA) CreatePSP(q api.ConnQual, evd api.EVD, flags api.PSPFlags) (api.PSP, error) {
	e, ok := ncArg[api.EVD](ia, evd, true)
	return ncCreate(ia, ok, ncWrapPSP, func() (api.PSP, error) { return ia.p.CreatePSP(q, e, flags) })
}

func (ia *ncIA) CreatePSPAny(evd api.EVD, flags api.PSPFlags) (api.PSP, api.ConnQual, error) {
	e, ok := ncArg[api.EVD](ia, evd, true)
	var q api.ConnQual
	p, err := ncCreate(ia, ok, ncWrapPSP, func() (p api.PSP, err error) {
		p, q, err = ia.p.CreatePSPAny(e, flags)
		return p, err
	})
	if err != nil {
		return nil, 0, err
	}
	return p, q, nil
}

func (ia *ncIA) CreateRSP(q api.ConnQual, ep api.EP, evd api.EVD) (api.RSP, error) {
	p, pok := ncArg[api.EP](ia, ep, true)
	e, eok := ncArg[api.EVD](ia, evd, true)
	return ncCreate(ia, pok && eok, func(r api.RSP) api.RSP { return &ncRSP{p: r} }, func() (api.RSP, error) {
		return ia.p.CreateRSP(q, p, e)
	})
}

func (ia *ncIA) CreateLMR(pz api.PZ, region api.Region, priv api.MemPriv, va api.VAType) (api.LMR, error) {
	z, ok := ncArg[api.PZ](ia, pz, true)
	if region.Type == api.MemTypeLMR {
		var lok bool
		region.LMR, lok = ncArg[api.LMR](ia, region.LMR, true)
		ok = ok && lok
	}
	return ncCreate(ia, ok, func(p api.LMR) api.LMR { return &ncLMR{p: p} }, func() (api.LMR, error) {
		return ia.p.CreateLMR(z, region, priv, va)
	})
}

func (ia *ncIA) CreateSRQ(pz api.PZ, attr api.SRQAttr) (api.SRQ, error) {
	z, ok := ncArg[api.PZ](ia, pz, true)
	return ncCreate(ia, ok, func(p api.SRQ) api.SRQ { return &ncSRQ{p: p} }, func() (api.SRQ, error) {
		return ia.p.CreateSRQ(z, attr)
	})
}

func (ia *ncIA) SyncRDMARead(segs []api.LMRTriplet) error {
	return ia.do(func() error { return ia.p.SyncRDMARead(segs) })
}

func (ia *ncIA) SyncRDMAWrite(segs []api.LMRTriplet) error {
	return ia.do(func() error { return ia.p.SyncRDMAWrite(segs) })
}

// --- PZ ---

type ncPZ struct {
	ncBase
	p api.PZ
}

func (z *ncPZ) HandleType() api.HandleType { return api.HandlePZ }

func (z *ncPZ) Query() (api.PZParam, error) { return ncQuery(&z.ncBase, z.p) }

func (z *ncPZ) CreateRMR() (api.RMR, error) {
	return ncCreate(z.ia, !z.gone(), func(p api.RMR) api.RMR { return &ncRMR{p: p} }, func() (api.RMR, error) {
		return z.p.CreateRMR()
	})
}

func (z *ncPZ) Free() error { return z.free(func() error { return z.p.Free() }, true) }

// --- EVD ---

type ncEVD struct {
	ncBase
	p api.EVD
}

func (e *ncEVD) HandleType() api.HandleType { return api.HandleEVD }

func (e *ncEVD) Query() (api.EVDParam, error) { return ncQuery(&e.ncBase, e.p) }

func (e *ncEVD) Resize(qlen int) error {
	return e.do(func() error { return e.p.Resize(qlen) })
}

func (e *ncEVD) PostSE(ev *api.Event) error {
	return e.do(func() error { return e.p.PostSE(ev) })
}

func (e *ncEVD) Dequeue(ev *api.Event) error {
	if e.gone() {
		return nil
	}
	if err := e.p.Dequeue(ev); err != nil {
		return err
	}
	ncEvent(e.ia, ev, e)
	return nil
}

func (e *ncEVD) Wait(ctx context.Context, threshold int, ev *api.Event) (int, error) {
	if e.gone() {
		return 0, nil
	}
	// Thresholds above the queue length are the guard's to refuse: this
	// provider waits for a full queue instead.
	if prm, err := e.p.Query(); err == nil && threshold > prm.QLen {
		threshold = prm.QLen
	}
	n, err := e.p.Wait(ctx, threshold, ev)
	if err == nil {
		ncEvent(e.ia, ev, e)
	}
	return n, err
}

func (e *ncEVD) Enable() error        { return e.do(func() error { return e.p.Enable() }) }
func (e *ncEVD) Disable() error       { return e.do(func() error { return e.p.Disable() }) }
func (e *ncEVD) SetUnwaitable() error { return e.do(func() error { return e.p.SetUnwaitable() }) }
func (e *ncEVD) ClearUnwaitable() error {
	return e.do(func() error { return e.p.ClearUnwaitable() })
}

func (e *ncEVD) ModifyCNO(cno api.CNO) error {
	c, ok := ncArg[api.CNO](e.ia, cno, false)
	if e.gone() || !ok {
		return nil
	}
	return e.p.ModifyCNO(c)
}

func (e *ncEVD) Free() error { return e.free(func() error { return e.p.Free() }, true) }

// --- CNO ---

type ncCNO struct {
	ncBase
	p api.CNO
}

func (c *ncCNO) HandleType() api.HandleType { return api.HandleCNO }

func (c *ncCNO) Query() (api.CNOParam, error) { return ncQuery(&c.ncBase, c.p) }

func (c *ncCNO) ModifyAgent(agent api.WaitAgent) error {
	return c.do(func() error { return c.p.ModifyAgent(c.ia.agent(agent)) })
}

func (c *ncCNO) Wait(ctx context.Context) (api.EVD, error) {
	if c.gone() {
		return nil, nil
	}
	e, err := c.p.Wait(ctx)
	return ncOut(c.ia, e), err
}

func (c *ncCNO) Triggered() (api.EVD, error) {
	if c.gone() {
		return nil, nil
	}
	e, err := c.p.Triggered()
	return ncOut(c.ia, e), err
}

func (c *ncCNO) Free() error { return c.free(func() error { return c.p.Free() }, true) }

// --- EP ---

type ncEP struct {
	ncBase
	p            api.EP
	providerMade bool // loopback made it for a PSPProvider request
}

func (p *ncEP) HandleType() api.HandleType { return api.HandleEP }

func (p *ncEP) Query() (api.EPParam, error) { return ncQuery(&p.ncBase, p.p) }

func (p *ncEP) Modify(mask api.EPParamMask, prm *api.EPParam) error {
	if p.gone() || prm == nil {
		return nil
	}
	q := *prm
	ok := true
	if mask&api.EPFieldPZ != 0 {
		var good bool
		q.PZ, good = ncArg[api.PZ](p.ia, prm.PZ, true)
		ok = ok && good
	}
	for _, f := range []struct {
		bit api.EPParamMask
		e   *api.EVD
	}{{api.EPFieldRecvEVD, &q.RecvEVD}, {api.EPFieldRequestEVD, &q.RequestEVD}, {api.EPFieldConnectEVD, &q.ConnectEVD}} {
		if mask&f.bit != 0 {
			var good bool
			*f.e, good = ncArg[api.EVD](p.ia, *f.e, false)
			ok = ok && good
		}
	}
	if !ok {
		return nil
	}
	return p.p.Modify(mask, &q)
}

func (p *ncEP) GetStatus() (api.EPState, bool, bool, error) {
	if p.gone() {
		return 0, false, false, nil
	}
	return p.p.GetStatus()
}

func (p *ncEP) Connect(remote net.Addr, q api.ConnQual, timeout api.Timeout, pd []byte, qos api.QOS, flags api.ConnectFlags) error {
	return p.do(func() error { return p.p.Connect(remote, q, timeout, pd, qos, flags) })
}

func (p *ncEP) DupConnect(dup api.EP, timeout api.Timeout, pd []byte, qos api.QOS) error {
	d, ok := ncArg[api.EP](p.ia, dup, true)
	if p.gone() || !ok {
		return nil
	}
	return p.p.DupConnect(d, timeout, pd, qos)
}

func (p *ncEP) Disconnect(flags api.CloseFlags) error {
	return p.do(func() error { return p.p.Disconnect(flags) })
}

func (p *ncEP) Reset() error {
	return p.do(func() error { return p.p.Reset() })
}

func (p *ncEP) Free() error { return p.free(func() error { return p.p.Free() }, false) }

func (p *ncEP) PostSend(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	return p.do(func() error { return p.p.PostSend(iov, cookie, flags) })
}

func (p *ncEP) PostSendWithInvalidate(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags, inv bool, rmr api.RMRContext) error {
	return p.do(func() error { return p.p.PostSendWithInvalidate(iov, cookie, flags, inv, rmr) })
}

func (p *ncEP) PostRecv(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	return p.do(func() error { return p.p.PostRecv(iov, cookie, flags) })
}

func (p *ncEP) PostRDMAWrite(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	return p.do(func() error { return p.p.PostRDMAWrite(iov, cookie, remote, flags) })
}

func (p *ncEP) PostRDMARead(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	return p.do(func() error { return p.p.PostRDMARead(iov, cookie, remote, flags) })
}

func (p *ncEP) PostRDMAReadToRMR(local api.RMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	return p.do(func() error { return p.p.PostRDMAReadToRMR(local, cookie, remote, flags) })
}

func (p *ncEP) RecvQuery() (int, int, error) {
	if p.gone() {
		return 0, 0, nil
	}
	return p.p.RecvQuery()
}

func (p *ncEP) SetWatermark(soft, hard int) error {
	return p.do(func() error { return p.p.SetWatermark(soft, hard) })
}

// --- PSP, RSP, CR ---

type ncPSP struct {
	ncBase
	p api.PSP
}

func (s *ncPSP) HandleType() api.HandleType { return api.HandlePSP }

func (s *ncPSP) Query() (api.PSPParam, error) { return ncQuery(&s.ncBase, s.p) }

func (s *ncPSP) Free() error { return s.free(func() error { return s.p.Free() }, false) }

type ncRSP struct {
	ncBase
	p api.RSP
}

func (r *ncRSP) HandleType() api.HandleType { return api.HandleRSP }

func (r *ncRSP) Query() (api.RSPParam, error) { return ncQuery(&r.ncBase, r.p) }

func (r *ncRSP) Free() error { return r.free(func() error { return r.p.Free() }, false) }

type ncCR struct {
	ncBase
	p api.CR
}

func (c *ncCR) HandleType() api.HandleType { return api.HandleCR }

func (c *ncCR) Query() (api.CRParam, error) { return ncQuery(&c.ncBase, c.p) }

func (c *ncCR) Accept(ep api.EP, pd []byte) error {
	p, ok := ncArg[api.EP](c.ia, ep, false)
	if c.gone() || !ok {
		return nil
	}
	if err := c.p.Accept(p, pd); err != nil {
		return err
	}
	c.dead.Store(true)
	return nil
}

// finish makes f, a reject or handoff, unless the CR is gone; when f
// succeeds it marks the CR destroyed, and with it the EP loopback made
// for the request, if any.
func (c *ncCR) finish(f func() error) error {
	if c.gone() {
		return nil
	}
	prm, qerr := c.Query()
	if err := f(); err != nil {
		return err
	}
	c.dead.Store(true)
	if e, ok := prm.LocalEP.(*ncEP); qerr == nil && ok && e.providerMade {
		e.dead.Store(true)
	}
	return nil
}

func (c *ncCR) Reject(pd []byte) error {
	return c.finish(func() error { return c.p.Reject(pd) })
}

func (c *ncCR) Handoff(q api.ConnQual) error {
	return c.finish(func() error { return c.p.Handoff(q) })
}

// --- LMR, RMR, SRQ ---

type ncLMR struct {
	ncBase
	p api.LMR
}

func (l *ncLMR) HandleType() api.HandleType { return api.HandleLMR }

func (l *ncLMR) Query() (api.LMRParam, error) { return ncQuery(&l.ncBase, l.p) }

func (l *ncLMR) Free() error { return l.free(func() error { return l.p.Free() }, false) }

type ncRMR struct {
	ncBase
	p api.RMR
}

func (r *ncRMR) HandleType() api.HandleType { return api.HandleRMR }

func (r *ncRMR) Query() (api.RMRParam, error) { return ncQuery(&r.ncBase, r.p) }

func (r *ncRMR) Bind(lmr api.LMR, t api.LMRTriplet, priv api.MemPriv, va api.VAType, ep api.EP, cookie api.Cookie, flags api.CompletionFlags) (api.RMRContext, error) {
	l, lok := ncArg[api.LMR](r.ia, lmr, t.Length > 0)
	p, pok := ncArg[api.EP](r.ia, ep, true)
	if r.gone() || !lok || !pok {
		return 0, nil
	}
	// A triplet that names another LMR than the handle is the guard's to
	// refuse: this provider binds the LMR handed in.
	if l != nil {
		if lp, err := l.Query(); err == nil {
			t.LMRContext = lp.LMRContext
		}
	}
	ctx, err := r.p.Bind(l, t, priv, va, p, cookie, flags)
	if errors.Is(err, api.ErrProtectionViolation) && l != nil {
		// So are protection zones: this provider binds across them.
		return ncBindAcross(r.ia, l, t, priv, va, p, cookie, flags)
	}
	return ctx, err
}

// ncBindAcross binds, for an RMR whose PZ, LMR's PZ and EP's PZ differ,
// an RMR of the EP's PZ over a registration of the LMR's memory there:
// what a provider that does not compare protection zones does.
func ncBindAcross(ia *ncIA, l api.LMR, t api.LMRTriplet, priv api.MemPriv, va api.VAType, ep api.EP, cookie api.Cookie, flags api.CompletionFlags) (api.RMRContext, error) {
	prm, err := ep.Query()
	if err != nil {
		return 0, err
	}
	lp, err := l.Query()
	if err != nil {
		return 0, err
	}
	rmr, err := prm.PZ.CreateRMR()
	if err != nil {
		return 0, err
	}
	l2, err := ia.p.CreateLMR(prm.PZ, api.Region{Type: api.MemTypeLMR, LMR: l}, lp.Priv, lp.VAType)
	if err != nil {
		return 0, err
	}
	lp2, err := l2.Query()
	if err != nil {
		return 0, err
	}
	t.LMRContext = lp2.LMRContext
	return rmr.Bind(l2, t, priv, va, ep, cookie, flags)
}

func (r *ncRMR) Free() error { return r.free(func() error { return r.p.Free() }, false) }

type ncSRQ struct {
	ncBase
	p api.SRQ
}

func (s *ncSRQ) HandleType() api.HandleType { return api.HandleSRQ }

func (s *ncSRQ) Query() (api.SRQParam, error) { return ncQuery(&s.ncBase, s.p) }

func (s *ncSRQ) PostRecv(iov []api.LMRTriplet, cookie api.Cookie) error {
	return s.do(func() error { return s.p.PostRecv(iov, cookie) })
}

func (s *ncSRQ) Resize(n int) error {
	return s.do(func() error { return s.p.Resize(n) })
}

func (s *ncSRQ) SetLW(n int) error {
	return s.do(func() error { return s.p.SetLW(n) })
}

func (s *ncSRQ) Free() error { return s.free(func() error { return s.p.Free() }, true) }
