package registry

import "github.com/godat/godat/api"

// The guards of memory: PZs, LMRs and RMRs.

// pzGuard guards a protection zone.
type pzGuard struct {
	hdr
	p api.PZ
}

func (g *pzGuard) Query() (api.PZParam, error) {
	return query(&g.hdr, opPZQuery, g.p.Query, func(p *api.PZParam) { p.IA = g.ia.asIA(p.IA) })
}

func (g *pzGuard) CreateRMR() (_ api.RMR, err error) {
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
	r := &rmrGuard{p: p, pz: g}
	g.ia.register(p, r, api.HandleRMR)
	g.users.add(&r.hdr, 1)
	return r, nil
}

func (g *pzGuard) Free() error {
	return free(g, opPZFree, g.p, api.SubStatePZInUse, g.p.Free)
}

// lmrGuard guards a local memory region.
type lmrGuard struct {
	hdr
	p      api.LMR
	pz     *pzGuard
	src    *lmrGuard      // the LMR a MemTypeLMR registration shares memory with
	ctx    api.LMRContext // its LMR context, which the triplet of an RMR bind must name
	hasCtx bool           // (the provider's Query reported ctx)
}

func (g *lmrGuard) Query() (api.LMRParam, error) {
	return query(&g.hdr, opLMRQuery, g.p.Query, func(p *api.LMRParam) { p.IA = g.ia.asIA(p.IA); p.PZ = asGuard(g.ia, p.PZ) })
}

func (g *lmrGuard) Free() (err error) {
	err = free(g, opLMRFree, g.p, api.SubStateLMRInUse, g.p.Free, &g.pz.users)
	if err == nil && g.src != nil {
		g.src.users.add(&g.hdr, -1)
	}
	return err
}

// rmrGuard guards a remote memory region.
type rmrGuard struct {
	hdr
	p  api.RMR
	pz *pzGuard
}

func (g *rmrGuard) Query() (api.RMRParam, error) {
	return query(&g.hdr, opRMRQuery, g.p.Query, func(p *api.RMRParam) { p.IA = g.ia.asIA(p.IA); p.PZ = asGuard(g.ia, p.PZ) })
}

// Bind checks handles, that the triplet names the LMR handed in,
// privileges, protection zones and completion flags (dat_rmr_bind(3DAT));
// the provider posts the bind on the EP.
func (g *rmrGuard) Bind(lmr api.LMR, t api.LMRTriplet, priv api.MemPriv, va api.VAType, ep api.EP, cookie api.Cookie, flags api.CompletionFlags) (_ api.RMRContext, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opRMRBind, &g.hdr, h.start(opRMRBind), &err)
	}
	if err := g.live(); err != nil {
		return 0, err
	}
	unbind := t.Length == 0
	glmr, err := own[*lmrGuard](g.ia, lmr, unbind, api.SubHandleLMR, "LMR")
	if err != nil {
		return 0, err
	}
	gep, err := own[*epGuard](g.ia, ep, false, api.SubHandleEP, "EP")
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

func (g *rmrGuard) Free() error {
	return free(g, opRMRFree, g.p, api.NoSubtype, g.p.Free, &g.pz.users)
}
