package registry

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/godat/godat/api"
)

// query runs a provider Query for a live guard, serialized like any call,
// and lets fix translate the provider objects in the result into guards.
func query[P any](h *hdr, q func() (P, error), fix func(*P)) (P, error) {
	if err := h.live(); err != nil {
		var zero P
		return zero, err
	}
	h.ia.enter()
	prm, err := q()
	h.ia.leave()
	fix(&prm)
	return prm, err
}

// gPZ guards a protection zone.
type gPZ struct {
	hdr
	p api.PZ
}

func (g *gPZ) Query() (_ api.PZParam, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opPZQuery, &g.hdr, h.start(opPZQuery), &err)
	}
	return query(&g.hdr, g.p.Query, func(p *api.PZParam) { p.IA = g.ia.asIA(p.IA) })
}

func (g *gPZ) CreateRMR() (_ api.RMR, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opPZCreateRMR, &g.hdr, h.start(opPZCreateRMR), &err)
	}
	if err := g.live(); err != nil {
		return nil, err
	}
	if err := g.ia.beginCreate(); err != nil {
		return nil, err
	}
	defer g.ia.endCreate()
	g.ia.enter()
	p, err := g.p.CreateRMR()
	g.ia.leave()
	if err != nil {
		return nil, err
	}
	r := &gRMR{p: p, pz: g}
	g.ia.register(p, r, api.HandleRMR)
	g.users.add(&r.hdr, 1)
	return r, nil
}

func (g *gPZ) Free() (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opPZFree, &g.hdr, h.start(opPZFree), &err)
	}
	return release(g, g.p, api.SubStatePZInUse, g.p.Free)
}

// gEVD guards an event dispatcher. qlen and flags are cached for the
// argument checks of Wait and of the objects that use the EVD.
type gEVD struct {
	hdr
	p          api.EVD
	flags      api.EVDFlags
	qlen       atomic.Int64
	cno        atomic.Pointer[gCNO]
	restricted atomic.Int32 // EP streams with consumer-controlled notification
	// lastEP is the guard of the EP of the last DTO completion dequeued:
	// an EVD's completions mostly come from one EP, and a hit spares the
	// lookup in the IA's object map. A freed guard is never a hit.
	lastEP atomic.Pointer[gEP]
}

// dtoEP returns the guard of provider EP p, named by a DTO completion of
// this EVD.
func (g *gEVD) dtoEP(p api.EP) api.EP {
	if e := g.lastEP.Load(); e != nil && e.p == p && !e.freed.Load() {
		return e
	}
	e := g.ia.epOf(p)
	if e == nil {
		return nil
	}
	g.lastEP.Store(e)
	return e
}

func (g *gEVD) Query() (_ api.EVDParam, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEVDQuery, &g.hdr, h.start(opEVDQuery), &err)
	}
	return query(&g.hdr, g.p.Query, func(p *api.EVDParam) { p.IA = g.ia.asIA(p.IA); p.CNO = asGuard(g.ia, p.CNO) })
}

func (g *gEVD) Resize(qlen int) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEVDResize, &g.hdr, h.start(opEVDResize), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	if err := g.ia.checkEVDQLen(qlen); err != nil {
		return err
	}
	g.ia.enter()
	err = g.p.Resize(qlen)
	if err == nil {
		if prm, qerr := g.p.Query(); qerr == nil {
			g.qlen.Store(int64(prm.QLen))
		}
	}
	g.ia.leave()
	return err
}

func (g *gEVD) PostSE(ev *api.Event) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEVDPostSE, &g.hdr, h.start(opEVDPostSE), &err)
	}
	if g.freed.Load() {
		return errFreedEVD
	}
	if ev == nil {
		return errNilEvent
	}
	if ev.Number != api.SoftwareEvent {
		return api.Errorf(api.InvalidParameter, api.SubArg2, "only software events may be posted, not "+ev.Number.String())
	}
	g.ia.enter()
	defer g.ia.leave()
	return g.p.PostSE(ev)
}

// Dequeue is the polling fast path: a freed check, the provider call, and
// the handle translation — no allocation, no lock for thread-safe IAs.
func (g *gEVD) Dequeue(ev *api.Event) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEVDDequeue, &g.hdr, h.start(opEVDDequeue), &err)
	}
	if g.freed.Load() {
		return errFreedEVD
	}
	if ev == nil {
		return errNilEvent
	}
	ia := g.ia
	if ia.serial != nil {
		ia.serial.Lock()
		defer ia.serial.Unlock()
	}
	if err := g.p.Dequeue(ev); err != nil {
		return err
	}
	ia.translate(ev, g)
	return nil
}

// Wait checks the threshold rules of dat_evd_wait(3DAT) and blocks in the
// provider. A non-thread-safe IA is not locked while the wait blocks: a
// provider's Wait must tolerate concurrent calls (see docs/decisions.md).
func (g *gEVD) Wait(ctx context.Context, threshold int, ev *api.Event) (_ int, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEVDWait, &g.hdr, h.start(opEVDWait), &err)
	}
	if g.freed.Load() {
		return 0, errFreedEVD
	}
	if ev == nil {
		return 0, api.Errorf(api.InvalidParameter, api.SubArg4, "event pointer is nil")
	}
	if ctx == nil {
		return 0, api.Errorf(api.InvalidParameter, api.SubArg2, "context is nil")
	}
	if q := g.qlen.Load(); threshold <= 0 || int64(threshold) > q {
		return 0, api.Errorf(api.InvalidParameter, api.SubArg3, fmt.Sprintf("threshold %d outside 1..%d (the queue length)", threshold, q))
	}
	if threshold > 1 && g.restricted.Load() > 0 {
		return 0, api.Errorf(api.InvalidState, api.SubStateEVDConfigThreshold,
			"threshold must be 1 on an EVD fed by an EP stream with unsignalled or solicited notification")
	}
	n, err := g.p.Wait(ctx, threshold, ev)
	if err != nil {
		return n, err
	}
	g.ia.translate(ev, g)
	return n, nil
}

func (g *gEVD) Enable() (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEVDEnable, &g.hdr, h.start(opEVDEnable), &err)
	}
	return g.simple(g.p.Enable)
}

func (g *gEVD) Disable() (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEVDDisable, &g.hdr, h.start(opEVDDisable), &err)
	}
	return g.simple(g.p.Disable)
}

func (g *gEVD) SetUnwaitable() (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEVDSetUnwaitable, &g.hdr, h.start(opEVDSetUnwaitable), &err)
	}
	return g.simple(g.p.SetUnwaitable)
}

func (g *gEVD) ClearUnwaitable() (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEVDClearUnwaitable, &g.hdr, h.start(opEVDClearUnwaitable), &err)
	}
	return g.simple(g.p.ClearUnwaitable)
}

func (g *gEVD) ModifyCNO(cno api.CNO) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEVDModifyCNO, &g.hdr, h.start(opEVDModifyCNO), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	gc, err := own[*gCNO](g.ia, cno, true, api.SubHandleCNO, "CNO")
	if err != nil {
		return err
	}
	var pc api.CNO
	if gc != nil {
		pc = gc.p
	}
	g.ia.enter()
	err = g.p.ModifyCNO(pc)
	g.ia.leave()
	if err != nil {
		return err
	}
	if gc != nil {
		gc.users.add(&g.hdr, 1)
	}
	if old := g.cno.Swap(gc); old != nil {
		old.users.add(&g.hdr, -1)
	}
	return nil
}

func (g *gEVD) Free() (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEVDFree, &g.hdr, h.start(opEVDFree), &err)
	}
	err = release(g, g.p, api.SubStateEVDInUse, g.p.Free)
	if err == nil {
		if c := g.cno.Swap(nil); c != nil {
			c.users.add(&g.hdr, -1)
		}
	}
	return err
}

// gCNO guards a consumer notification object.
type gCNO struct {
	hdr
	p     api.CNO
	agent atomic.Pointer[api.WaitAgent]
}

// Query reports the consumer's agent, not the translating wrapper the
// provider holds.
func (g *gCNO) Query() (_ api.CNOParam, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opCNOQuery, &g.hdr, h.start(opCNOQuery), &err)
	}
	return query(&g.hdr, g.p.Query, func(p *api.CNOParam) { p.IA = g.ia.asIA(p.IA); p.Agent = *g.agent.Load() })
}

func (g *gCNO) ModifyAgent(agent api.WaitAgent) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opCNOModifyAgent, &g.hdr, h.start(opCNOModifyAgent), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	g.ia.enter()
	err = g.p.ModifyAgent(g.ia.wrapAgent(agent))
	g.ia.leave()
	if err == nil {
		g.agent.Store(&agent)
	}
	return err
}

func (g *gCNO) Wait(ctx context.Context) (_ api.EVD, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opCNOWait, &g.hdr, h.start(opCNOWait), &err)
	}
	if err := g.live(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg2, "context is nil")
	}
	evd, err := g.p.Wait(ctx)
	if err != nil {
		return nil, err
	}
	return asGuard(g.ia, evd), nil
}

func (g *gCNO) Triggered() (_ api.EVD, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opCNOTriggered, &g.hdr, h.start(opCNOTriggered), &err)
	}
	if err := g.live(); err != nil {
		return nil, err
	}
	g.ia.enter()
	evd, err := g.p.Triggered()
	g.ia.leave()
	if err != nil {
		return nil, err
	}
	return asGuard(g.ia, evd), nil
}

func (g *gCNO) Free() (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opCNOFree, &g.hdr, h.start(opCNOFree), &err)
	}
	return release(g, g.p, api.SubStateCNOInUse, g.p.Free)
}

// gPSP guards a public service point.
type gPSP struct {
	hdr
	p     api.PSP
	evd   *gEVD
	flags api.PSPFlags
}

func (g *gPSP) Query() (_ api.PSPParam, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opPSPQuery, &g.hdr, h.start(opPSPQuery), &err)
	}
	return query(&g.hdr, g.p.Query, func(p *api.PSPParam) { p.IA = g.ia.asIA(p.IA); p.EVD = asGuard(g.ia, p.EVD) })
}

func (g *gPSP) Free() (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opPSPFree, &g.hdr, h.start(opPSPFree), &err)
	}
	return release(g, g.p, api.NoSubtype, g.p.Free, &g.evd.users)
}

// gRSP guards a reserved service point.
type gRSP struct {
	hdr
	p   api.RSP
	evd *gEVD
}

func (g *gRSP) Query() (_ api.RSPParam, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opRSPQuery, &g.hdr, h.start(opRSPQuery), &err)
	}
	return query(&g.hdr, g.p.Query, func(p *api.RSPParam) { p.IA = g.ia.asIA(p.IA); p.EVD = asGuard(g.ia, p.EVD); p.EP = g.ia.asEP(p.EP) })
}

func (g *gRSP) Free() (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opRSPFree, &g.hdr, h.start(opRSPFree), &err)
	}
	return release(g, g.p, api.NoSubtype, g.p.Free, &g.evd.users)
}

// gCR guards a connection request. It is retired when the request is
// accepted, rejected or handed off, as dat_cr_accept(3DAT) destroys it.
type gCR struct {
	hdr
	p          api.CR
	providerEP bool // the CR's local EP was created by the provider for a PSP
}

// dropProviderEP retires the guard of the provider-created local EP of a
// CR that is being rejected or handed off: dat_cr_reject(3DAT) returns that
// EP to the provider, so the consumer's handle dies and stops holding its
// PZ and EVDs in use. ep is the provider's EP, read before the call.
func (g *gCR) dropProviderEP(ep api.EP) {
	if !g.providerEP || ep == nil {
		return
	}
	if e, ok := g.ia.guardOf(ep).(*gEP); ok {
		g.ia.retire(ep, e)
		e.use(-1)
	}
}

// localEP returns the provider's local EP of the request, if any.
func (g *gCR) localEP() api.EP {
	if !g.providerEP {
		return nil
	}
	prm, err := g.p.Query()
	if err != nil {
		return nil
	}
	return prm.LocalEP
}

func (g *gCR) Query() (_ api.CRParam, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opCRQuery, &g.hdr, h.start(opCRQuery), &err)
	}
	return query(&g.hdr, g.p.Query, func(p *api.CRParam) { p.LocalEP = g.ia.asEP(p.LocalEP) })
}

func (g *gCR) Accept(ep api.EP, privateData []byte) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opCRAccept, &g.hdr, h.start(opCRAccept), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	gep, err := own[*gEP](g.ia, ep, true, api.SubHandleEP, "EP")
	if err != nil {
		return err
	}
	if err := g.ia.checkPrivateData(privateData, api.SubArg3); err != nil {
		return err
	}
	var pep api.EP
	if gep != nil {
		pep = gep.p
	}
	return release(g, g.p, api.NoSubtype, func() error { return g.p.Accept(pep, privateData) })
}

func (g *gCR) Reject(privateData []byte) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opCRReject, &g.hdr, h.start(opCRReject), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	if err := g.ia.checkPrivateData(privateData, api.SubArg2); err != nil {
		return err
	}
	ep := g.localEP()
	err = release(g, g.p, api.NoSubtype, func() error { return g.p.Reject(privateData) })
	if err == nil {
		g.dropProviderEP(ep)
	}
	return err
}

func (g *gCR) Handoff(q api.ConnQual) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opCRHandoff, &g.hdr, h.start(opCRHandoff), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	ep := g.localEP()
	err = release(g, g.p, api.NoSubtype, func() error { return g.p.Handoff(q) })
	if err == nil {
		g.dropProviderEP(ep)
	}
	return err
}

// gLMR guards a local memory region.
type gLMR struct {
	hdr
	p      api.LMR
	pz     *gPZ
	src    *gLMR          // the LMR a MemTypeLMR registration shares memory with
	ctx    api.LMRContext // its LMR context, which the triplet of an RMR bind must name
	hasCtx bool           // (the provider's Query reported ctx)
}

func (g *gLMR) Query() (_ api.LMRParam, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opLMRQuery, &g.hdr, h.start(opLMRQuery), &err)
	}
	return query(&g.hdr, g.p.Query, func(p *api.LMRParam) { p.IA = g.ia.asIA(p.IA); p.PZ = asGuard(g.ia, p.PZ) })
}

func (g *gLMR) Free() (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opLMRFree, &g.hdr, h.start(opLMRFree), &err)
	}
	err = release(g, g.p, api.SubStateLMRInUse, g.p.Free, &g.pz.users)
	if err == nil && g.src != nil {
		g.src.users.add(&g.hdr, -1)
	}
	return err
}

// gRMR guards a remote memory region.
type gRMR struct {
	hdr
	p  api.RMR
	pz *gPZ
}

func (g *gRMR) Query() (_ api.RMRParam, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opRMRQuery, &g.hdr, h.start(opRMRQuery), &err)
	}
	return query(&g.hdr, g.p.Query, func(p *api.RMRParam) { p.IA = g.ia.asIA(p.IA); p.PZ = asGuard(g.ia, p.PZ) })
}

// Bind checks handles, that the triplet names the LMR handed in,
// privileges, protection zones and completion flags (dat_rmr_bind(3DAT));
// the provider posts the bind on the EP.
func (g *gRMR) Bind(lmr api.LMR, t api.LMRTriplet, priv api.MemPriv, va api.VAType, ep api.EP, cookie api.Cookie, flags api.CompletionFlags) (_ api.RMRContext, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opRMRBind, &g.hdr, h.start(opRMRBind), &err)
	}
	if err := g.live(); err != nil {
		return 0, err
	}
	unbind := t.Length == 0
	glmr, err := own[*gLMR](g.ia, lmr, unbind, api.SubHandleLMR, "LMR")
	if err != nil {
		return 0, err
	}
	gep, err := own[*gEP](g.ia, ep, false, api.SubHandleEP, "EP")
	if err != nil {
		return 0, err
	}
	if err := api.CheckPrivVA(priv, va, api.SubArg4, api.SubArg5); err != nil {
		return 0, err
	}
	if glmr != nil && glmr.pz != g.pz {
		return 0, api.Errorf(api.ProtectionViolation, api.NoSubtype, "the LMR is in another protection zone than the RMR")
	}
	if gep.pz != g.pz {
		return 0, api.Errorf(api.ProtectionViolation, api.NoSubtype, "the EP is in another protection zone than the RMR")
	}
	if err := gep.checkRequest(flags, 0, bindFlags, 0); err != nil {
		return 0, err
	}
	if glmr != nil && glmr.hasCtx && !unbind && t.LMRContext != glmr.ctx {
		// A provider binds the window of one LMR: a triplet of another
		// describes no window of the LMR handed in.
		return 0, api.Errorf(api.InvalidParameter, api.SubArg2, "the triplet names another LMR than the LMR handle")
	}
	var pl api.LMR
	if glmr != nil {
		pl = glmr.p
	}
	g.ia.enter()
	defer g.ia.leave()
	return g.p.Bind(pl, t, priv, va, gep.p, cookie, flags)
}

func (g *gRMR) Free() (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opRMRFree, &g.hdr, h.start(opRMRFree), &err)
	}
	return release(g, g.p, api.NoSubtype, g.p.Free, &g.pz.users)
}

// gSRQ guards a shared receive queue.
type gSRQ struct {
	hdr
	p      api.SRQ
	pz     *gPZ
	maxIOV atomic.Int64
}

func (g *gSRQ) Query() (_ api.SRQParam, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opSRQQuery, &g.hdr, h.start(opSRQQuery), &err)
	}
	return query(&g.hdr, g.p.Query, func(p *api.SRQParam) { p.IA = g.ia.asIA(p.IA); p.PZ = asGuard(g.ia, p.PZ) })
}

func (g *gSRQ) PostRecv(iov []api.LMRTriplet, cookie api.Cookie) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opSRQPostRecv, &g.hdr, h.start(opSRQPostRecv), &err)
	}
	if g.freed.Load() {
		return errFreedSRQ
	}
	if int64(len(iov)) > g.maxIOV.Load() {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("%d segments exceed the SRQ limit of %d", len(iov), g.maxIOV.Load()))
	}
	ia := g.ia
	if ia.serial != nil {
		ia.serial.Lock()
		defer ia.serial.Unlock()
	}
	return g.p.PostRecv(iov, cookie)
}

func (g *gSRQ) Resize(n int) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opSRQResize, &g.hdr, h.start(opSRQResize), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	if max := g.ia.attr.MaxRecvPerSRQ; n <= 0 || (max > 0 && n > max) {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("SRQ size %d outside 1..%d", n, max))
	}
	g.ia.enter()
	defer g.ia.leave()
	return g.p.Resize(n)
}

func (g *gSRQ) SetLW(n int) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opSRQSetLW, &g.hdr, h.start(opSRQSetLW), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	if n < 0 {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("low watermark %d is negative", n))
	}
	g.ia.enter()
	defer g.ia.leave()
	return g.p.SetLW(n)
}

func (g *gSRQ) Free() (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opSRQFree, &g.hdr, h.start(opSRQFree), &err)
	}
	return release(g, g.p, api.SubStateSRQInUse, g.p.Free, &g.pz.users)
}
