package registry

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/godat/godat/api"
)

// The guards of the event objects: EVDs and CNOs.

// evdGuard guards an event dispatcher. qlen and flags are cached for the
// argument checks of Wait and of the objects that use the EVD.
type evdGuard struct {
	hdr
	p          api.EVD
	flags      api.EVDFlags
	qlen       atomic.Int64
	cno        atomic.Pointer[cnoGuard]
	restricted atomic.Int32 // EP streams with consumer-controlled notification
	// lastEP is the guard of the EP of the last DTO completion dequeued:
	// an EVD's completions mostly come from one EP, and a hit spares the
	// lookup in the IA's object map. A freed guard is never a hit.
	lastEP atomic.Pointer[epGuard]
}

// dtoEP returns the guard of provider EP p, named by a DTO completion of
// this EVD.
func (g *evdGuard) dtoEP(p api.EP) api.EP {
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

func (g *evdGuard) Query() (api.EVDParam, error) {
	return query(&g.hdr, opEVDQuery, g.p.Query, func(p *api.EVDParam) { p.IA = g.ia.asIA(p.IA); p.CNO = asGuard(g.ia, p.CNO) })
}

func (g *evdGuard) Resize(qlen int) (err error) {
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

func (g *evdGuard) PostSE(ev *api.Event) (err error) {
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
func (g *evdGuard) Dequeue(ev *api.Event) (err error) {
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
func (g *evdGuard) Wait(ctx context.Context, threshold int, ev *api.Event) (_ int, err error) {
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

func (g *evdGuard) Enable() error {
	return g.simple(opEVDEnable, g.p.Enable)
}

func (g *evdGuard) Disable() error {
	return g.simple(opEVDDisable, g.p.Disable)
}

func (g *evdGuard) SetUnwaitable() error {
	return g.simple(opEVDSetUnwaitable, g.p.SetUnwaitable)
}

func (g *evdGuard) ClearUnwaitable() error {
	return g.simple(opEVDClearUnwaitable, g.p.ClearUnwaitable)
}

func (g *evdGuard) ModifyCNO(cno api.CNO) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEVDModifyCNO, &g.hdr, h.start(opEVDModifyCNO), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	gc, err := own[*cnoGuard](g.ia, cno, true, api.SubHandleCNO, "CNO")
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

func (g *evdGuard) Free() (err error) {
	err = free(g, opEVDFree, g.p, api.SubStateEVDInUse, g.p.Free)
	if err == nil {
		if c := g.cno.Swap(nil); c != nil {
			c.users.add(&g.hdr, -1)
		}
	}
	return err
}

// cnoGuard guards a consumer notification object.
type cnoGuard struct {
	hdr
	p     api.CNO
	agent atomic.Pointer[api.WaitAgent]
}

// Query reports the consumer's agent, not the translating wrapper the
// provider holds.
func (g *cnoGuard) Query() (api.CNOParam, error) {
	return query(&g.hdr, opCNOQuery, g.p.Query, func(p *api.CNOParam) { p.IA = g.ia.asIA(p.IA); p.Agent = *g.agent.Load() })
}

func (g *cnoGuard) ModifyAgent(agent api.WaitAgent) (err error) {
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

func (g *cnoGuard) Wait(ctx context.Context) (_ api.EVD, err error) {
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

func (g *cnoGuard) Triggered() (_ api.EVD, err error) {
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

func (g *cnoGuard) Free() error {
	return free(g, opCNOFree, g.p, api.SubStateCNOInUse, g.p.Free)
}
