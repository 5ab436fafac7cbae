package registry

import (
	"fmt"

	"github.com/godat/godat/api"
)

// checkPrivateData enforces the provider's private data limit.
func (ia *iaGuard) checkPrivateData(pd []byte, sub api.Subtype) error {
	if len(pd) > ia.pattr.MaxPrivateDataSize {
		return api.Errorf(api.InvalidParameter, sub,
			fmt.Sprintf("private data of %d bytes exceeds the provider limit of %d", len(pd), ia.pattr.MaxPrivateDataSize))
	}
	return nil
}

// checkQOS refuses a QOS the provider does not offer
// (ProviderAttr.QOSSupported) with DAT_MODEL_NOT_SUPPORTED.
func (ia *iaGuard) checkQOS(q api.QOS) error {
	if q&^ia.pattr.QOSSupported != 0 {
		return api.Errorf(api.ModelNotSupported, api.NoSubtype,
			fmt.Sprintf("QOS %#x is not among those the provider supports (%#x)", uint32(q), uint32(ia.pattr.QOSSupported)))
	}
	return nil
}

// checkCloseFlags refuses close flags other than abrupt and graceful, for
// dat_ia_close(3DAT) and dat_ep_disconnect(3DAT) (argument 2 of both).
func checkCloseFlags(flags api.CloseFlags) error {
	if flags != api.CloseAbrupt && flags != api.CloseGraceful {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("close flags %#x are neither abrupt nor graceful", uint32(flags)))
	}
	return nil
}

// checkEVDQLen refuses an EVD queue length outside 1..MaxEVDQLen, for
// dat_evd_create(3DAT) and dat_evd_resize(3DAT) (argument 2 of both).
func (ia *iaGuard) checkEVDQLen(qlen int) error {
	if max := ia.attr.MaxEVDQLen; qlen <= 0 || (max > 0 && qlen > max) {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("EVD queue length %d outside 1..%d", qlen, max))
	}
	return nil
}

// checkTimeout rejects negative timeouts other than TimeoutInfinite.
func checkTimeout(t api.Timeout, sub api.Subtype) error {
	if t < 0 && t != api.TimeoutInfinite {
		return api.Errorf(api.InvalidParameter, sub, fmt.Sprintf("timeout %v is negative and not TimeoutInfinite", t))
	}
	return nil
}

// Query returns the provider's attributes with the adapter name set to the
// IA name the consumer opened, as dat_ia_query(3DAT) defines it.
func (ia *iaGuard) Query() (_ api.IAAttr, _ api.ProviderAttr, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIAQuery, &ia.hdr, h.start(opIAQuery), &err)
	}
	if err := ia.live(); err != nil {
		return api.IAAttr{}, api.ProviderAttr{}, err
	}
	ia.enter()
	attr, pattr, err := ia.p.Query()
	ia.leave()
	if err == nil {
		attr.AdapterName = ia.entry.Name
	}
	return attr, pattr, err
}

func (ia *iaGuard) AsyncEVD() (_ api.EVD, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIAAsyncEVD, &ia.hdr, h.start(opIAAsyncEVD), &err)
	}
	if err := ia.live(); err != nil {
		return nil, err
	}
	return ia.async, nil
}

func (ia *iaGuard) Close(flags api.CloseFlags) (err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIAClose, &ia.hdr, h.start(opIAClose), &err)
	}
	if err := ia.live(); err != nil {
		return err
	}
	if err := checkCloseFlags(flags); err != nil {
		return err
	}
	// No create reaches the provider from here on, and those under way
	// end first: a provider's Close cleans up what exists when it runs.
	ia.life.Lock()
	if ia.closing {
		ia.life.Unlock()
		return freedErr(api.HandleIA)
	}
	ia.closing = true
	ia.life.Unlock()
	ia.enter()
	err = ia.p.Close(flags)
	ia.leave()
	if err != nil {
		ia.life.Lock()
		ia.closing = false // (a graceful Close refused: the IA lives on)
		ia.life.Unlock()
		if pe := providerInUse(err, api.SubStateIAInUse); pe != nil {
			return inUseErr(&ia.hdr, api.SubStateIAInUse, ia.liveObjects(), pe)
		}
		return err
	}
	if !ia.freed.CompareAndSwap(false, true) {
		return freedErr(api.HandleIA)
	}
	ia.objs.Range(func(k, v any) bool {
		v.(guarded).header().freed.Store(true)
		ia.objs.Delete(k)
		return true
	})
	return nil
}

// liveObjects returns the objects of the IA that a graceful Close waits
// for: every live handle but the IA and its async EVD, oldest first.
func (ia *iaGuard) liveObjects() []*hdr {
	var l []*hdr
	ia.objs.Range(func(_, v any) bool {
		if h := v.(guarded).header(); h != &ia.hdr && h != &ia.async.hdr && !h.freed.Load() {
			l = append(l, h)
		}
		return true
	})
	return sortHandles(l)
}

func (ia *iaGuard) CreatePZ() (_ api.PZ, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreatePZ, &ia.hdr, h.start(opIACreatePZ), &err)
	}
	if err := ia.admitCreate(); err != nil {
		return nil, err
	}
	defer ia.endCreate()
	ia.enter()
	p, err := ia.p.CreatePZ()
	ia.leave()
	if err != nil {
		return nil, err
	}
	g := &pzGuard{p: p}
	ia.register(p, g, api.HandlePZ)
	return g, nil
}

func (ia *iaGuard) CreateEVD(qlen int, cno api.CNO, flags api.EVDFlags) (_ api.EVD, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateEVD, &ia.hdr, h.start(opIACreateEVD), &err)
	}
	if err := ia.admitCreate(); err != nil {
		return nil, err
	}
	defer ia.endCreate()
	if err := ia.checkEVDQLen(qlen); err != nil {
		return nil, err
	}
	if flags == 0 || flags&^(api.EVDDefault|api.EVDSoftware) != 0 {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg4, fmt.Sprintf("EVD flags %#x are empty or unknown", uint32(flags)))
	}
	gc, err := own[*cnoGuard](ia, cno, true, api.SubHandleCNO, "CNO")
	if err != nil {
		return nil, err
	}
	var pc api.CNO
	if gc != nil {
		pc = gc.p
	}
	ia.enter()
	p, err := ia.p.CreateEVD(qlen, pc, flags)
	ia.leave()
	if err != nil {
		return nil, err
	}
	g := ia.adoptEVD(p)
	g.cno.Store(gc)
	if gc != nil {
		gc.users.add(&g.hdr, 1)
	}
	return g, nil
}

func (ia *iaGuard) CreateCNO(agent api.WaitAgent) (_ api.CNO, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateCNO, &ia.hdr, h.start(opIACreateCNO), &err)
	}
	if err := ia.admitCreate(); err != nil {
		return nil, err
	}
	defer ia.endCreate()
	ia.enter()
	p, err := ia.p.CreateCNO(ia.wrapAgent(agent))
	ia.leave()
	if err != nil {
		return nil, err
	}
	g := &cnoGuard{p: p}
	g.agent.Store(&agent)
	ia.register(p, g, api.HandleCNO)
	return g, nil
}

func (ia *iaGuard) CreateCNOFD() (_ api.CNO, _ int, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateCNOFD, &ia.hdr, h.start(opIACreateCNOFD), &err)
	}
	if err := ia.admitCreate(); err != nil {
		return nil, -1, err
	}
	defer ia.endCreate()
	ia.enter()
	p, fd, err := ia.p.CreateCNOFD()
	ia.leave()
	if err != nil {
		return nil, -1, err
	}
	g := &cnoGuard{p: p}
	var none api.WaitAgent
	g.agent.Store(&none)
	ia.register(p, g, api.HandleCNO)
	return g, fd, nil
}

// wrapAgent makes a provider-facing agent that hands the consumer's agent
// the guard of the EVD that triggered.
func (ia *iaGuard) wrapAgent(agent api.WaitAgent) api.WaitAgent {
	if agent == nil {
		return nil
	}
	return func(evd api.EVD) { agent(asGuard(ia, evd)) }
}

func (ia *iaGuard) CreateEP(pz api.PZ, recvEVD, requestEVD, connectEVD api.EVD, attr *api.EPAttr) (_ api.EP, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateEP, &ia.hdr, h.start(opIACreateEP), &err)
	}
	return ia.createEP(pz, recvEVD, requestEVD, connectEVD, nil, false, attr)
}

func (ia *iaGuard) CreateEPWithSRQ(pz api.PZ, recvEVD, requestEVD, connectEVD api.EVD, srq api.SRQ, attr *api.EPAttr) (_ api.EP, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateEPSRQ, &ia.hdr, h.start(opIACreateEPSRQ), &err)
	}
	return ia.createEP(pz, recvEVD, requestEVD, connectEVD, srq, true, attr)
}

// evdFor checks an EVD argument and that it accepts the stream need.
func (ia *iaGuard) evdFor(h api.EVD, need api.EVDFlags, sub api.Subtype, what string) (*evdGuard, error) {
	g, err := own[*evdGuard](ia, h, true, sub, what)
	if err != nil || g == nil {
		return g, err
	}
	if g.flags&need == 0 {
		return nil, api.Errorf(api.InvalidHandle, sub, fmt.Sprintf("%s was not created with the %s stream flag", what, streamName(need)))
	}
	return g, nil
}

func streamName(f api.EVDFlags) string {
	switch f {
	case api.EVDDTO:
		return "DTO"
	case api.EVDConnection:
		return "connection"
	case api.EVDCR:
		return "connection-request"
	}
	return fmt.Sprintf("%#x", uint32(f))
}

// admitCreateIn is admitCreate for an object created in a protection
// zone: it also checks the PZ argument. On success the caller owes an
// endCreate; on failure nothing is owed.
func (ia *iaGuard) admitCreateIn(pz api.PZ) (*pzGuard, error) {
	if err := ia.admitCreate(); err != nil {
		return nil, err
	}
	gpz, err := own[*pzGuard](ia, pz, false, api.SubHandlePZ, "PZ")
	if err != nil {
		ia.endCreate()
		return nil, err
	}
	return gpz, nil
}

func (ia *iaGuard) createEP(pz api.PZ, recvEVD, requestEVD, connectEVD api.EVD, srq api.SRQ, withSRQ bool, attr *api.EPAttr) (api.EP, error) {
	gpz, err := ia.admitCreateIn(pz)
	if err != nil {
		return nil, err
	}
	defer ia.endCreate()
	grecv, err := ia.evdFor(recvEVD, api.EVDDTO, api.SubHandleEVDRecv, "receive EVD")
	if err != nil {
		return nil, err
	}
	greq, err := ia.evdFor(requestEVD, api.EVDDTO, api.SubHandleEVDRequest, "request EVD")
	if err != nil {
		return nil, err
	}
	gconn, err := ia.evdFor(connectEVD, api.EVDConnection, api.SubHandleEVDConn, "connect EVD")
	if err != nil {
		return nil, err
	}
	var gsrq *srqGuard
	if withSRQ {
		if gsrq, err = own[*srqGuard](ia, srq, false, api.SubHandleSRQ, "SRQ"); err != nil {
			return nil, err
		}
		if attr == nil {
			// dat_ep_create_with_srq(3DAT): the attributes are not optional.
			return nil, api.Errorf(api.InvalidParameter, api.SubArg7, "an EP on an SRQ needs attributes")
		}
		if gsrq.pz != gpz && !ia.pattr.SRQEPPZDifferenceSupported {
			return nil, api.Errorf(api.InvalidParameter, api.SubArg6, "the SRQ is in another protection zone and the provider does not support that")
		}
	}
	if attr != nil {
		if err := ia.checkEPAttr(attr); err != nil {
			return nil, err
		}
	}
	ia.enter()
	var p api.EP
	if withSRQ {
		p, err = ia.p.CreateEPWithSRQ(gpz.p, evdP(grecv), evdP(greq), evdP(gconn), gsrq.p, attr)
	} else {
		p, err = ia.p.CreateEP(gpz.p, evdP(grecv), evdP(greq), evdP(gconn), attr)
	}
	ia.leave()
	if err != nil {
		return nil, err
	}
	g := &epGuard{p: p, pz: gpz, recv: grecv, req: greq, conn: gconn, srq: gsrq}
	prm, err := p.Query()
	if err != nil {
		p.Free()
		return nil, err
	}
	g.setLimits(prm.Attr)
	ia.register(p, g, api.HandleEP)
	g.use(1)
	return g, nil
}

// checkEPAttr checks EP attributes against the IA's limits
// (dat_ep_create(3DAT), dat_ep_modify(3DAT)).
func (ia *iaGuard) checkEPAttr(a *api.EPAttr) error {
	bad := func(field string, v, max int) error {
		return api.Errorf(api.InvalidParameter, api.SubArg6, fmt.Sprintf("EP attribute %s = %d outside 0..%d", field, v, max))
	}
	lim := func(field string, v, max int) error {
		if v < 0 || (max > 0 && v > max) {
			return bad(field, v, max)
		}
		return nil
	}
	if a.ServiceType != api.ServiceRC {
		return api.Errorf(api.InvalidParameter, api.SubArg6, "EP service type must be reliable connection")
	}
	for _, c := range []struct {
		f      string
		v, max int
	}{
		{"MaxRecvDTOs", a.MaxRecvDTOs, ia.attr.MaxDTOPerEP},
		{"MaxRequestDTOs", a.MaxRequestDTOs, ia.attr.MaxDTOPerEP},
		{"MaxRecvIOV", a.MaxRecvIOV, ia.attr.MaxIOVSegmentsPerDTO},
		{"MaxRequestIOV", a.MaxRequestIOV, ia.attr.MaxIOVSegmentsPerDTO},
		{"MaxRDMAReadIn", a.MaxRDMAReadIn, ia.attr.MaxRDMAReadPerEPIn},
		{"MaxRDMAReadOut", a.MaxRDMAReadOut, ia.attr.MaxRDMAReadPerEPOut},
		{"MaxRDMAReadIOV", a.MaxRDMAReadIOV, ia.attr.MaxIOVSegmentsPerRDMARead},
		{"MaxRDMAWriteIOV", a.MaxRDMAWriteIOV, ia.attr.MaxIOVSegmentsPerRDMAWrite},
	} {
		if err := lim(c.f, c.v, c.max); err != nil {
			return err
		}
	}
	if ia.attr.MaxMessageSize > 0 && a.MaxMessageSize > ia.attr.MaxMessageSize {
		return api.Errorf(api.InvalidParameter, api.SubArg6, fmt.Sprintf("EP MaxMessageSize %d exceeds the IA limit %d", a.MaxMessageSize, ia.attr.MaxMessageSize))
	}
	if ia.attr.MaxRDMASize > 0 && a.MaxRDMASize > ia.attr.MaxRDMASize {
		return api.Errorf(api.InvalidParameter, api.SubArg6, fmt.Sprintf("EP MaxRDMASize %d exceeds the IA limit %d", a.MaxRDMASize, ia.attr.MaxRDMASize))
	}
	const known = api.CompletionSuppress | api.CompletionSolicitedWait | api.CompletionUnsignalled | api.CompletionBarrierFence | api.CompletionEVDThreshold
	if a.RecvCompletionFlags&^known != 0 || a.RequestCompletionFlags&^known != 0 {
		return api.Errorf(api.InvalidParameter, api.SubArg6, "EP completion flags name unknown bits")
	}
	if a.RecvCompletionFlags&api.CompletionEVDThreshold != 0 && a.RecvCompletionFlags&api.CompletionUnsignalled != 0 {
		return api.Errorf(api.InvalidParameter, api.SubArg6, "receive completion flags may not combine EVD threshold with unsignalled")
	}
	return nil
}

func evdP(g *evdGuard) api.EVD {
	if g == nil {
		return nil
	}
	return g.p
}

// crEVD checks the connection-request EVD a service point is created on:
// unlike the EVDs of an EP it may not be nil.
func (ia *iaGuard) crEVD(evd api.EVD) (*evdGuard, error) {
	g, err := ia.evdFor(evd, api.EVDCR, api.SubHandleEVDCR, "connection-request EVD")
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandleEVDCR, "connection-request EVD handle is nil")
	}
	return g, nil
}

func (ia *iaGuard) CreatePSP(q api.ConnQual, evd api.EVD, flags api.PSPFlags) (_ api.PSP, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreatePSP, &ia.hdr, h.start(opIACreatePSP), &err)
	}
	g, err := ia.pspArgs(evd, flags)
	if err != nil {
		return nil, err
	}
	if err := ia.beginCreate(); err != nil {
		return nil, err
	}
	defer ia.endCreate()
	ia.enter()
	p, err := ia.p.CreatePSP(q, g.p, flags)
	ia.leave()
	if err != nil {
		return nil, err
	}
	return ia.newPSP(p, g, flags), nil
}

func (ia *iaGuard) CreatePSPAny(evd api.EVD, flags api.PSPFlags) (_ api.PSP, _ api.ConnQual, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreatePSPAny, &ia.hdr, h.start(opIACreatePSPAny), &err)
	}
	g, err := ia.pspArgs(evd, flags)
	if err != nil {
		return nil, 0, err
	}
	if err := ia.beginCreate(); err != nil {
		return nil, 0, err
	}
	defer ia.endCreate()
	ia.enter()
	p, q, err := ia.p.CreatePSPAny(g.p, flags)
	ia.leave()
	if err != nil {
		return nil, 0, err
	}
	return ia.newPSP(p, g, flags), q, nil
}

func (ia *iaGuard) pspArgs(evd api.EVD, flags api.PSPFlags) (*evdGuard, error) {
	if err := ia.live(); err != nil {
		return nil, err
	}
	g, err := ia.crEVD(evd)
	if err != nil {
		return nil, err
	}
	switch flags {
	case api.PSPConsumer:
	case api.PSPProvider:
		if ia.pattr.EPCreator == api.PSPCreatesEPNever {
			return nil, api.Errorf(api.ModelNotSupported, api.NoSubtype, "the provider never creates EPs for PSPs")
		}
	default:
		return nil, api.Errorf(api.InvalidParameter, api.SubArg4, fmt.Sprintf("PSP flags %#x are unknown", uint32(flags)))
	}
	return g, nil
}

func (ia *iaGuard) newPSP(p api.PSP, evd *evdGuard, flags api.PSPFlags) *pspGuard {
	g := &pspGuard{p: p, evd: evd, flags: flags}
	ia.register(p, g, api.HandlePSP)
	evd.users.add(&g.hdr, 1)
	return g
}

func (ia *iaGuard) CreateRSP(q api.ConnQual, ep api.EP, evd api.EVD) (_ api.RSP, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateRSP, &ia.hdr, h.start(opIACreateRSP), &err)
	}
	if err := ia.admitCreate(); err != nil {
		return nil, err
	}
	defer ia.endCreate()
	gep, err := own[*epGuard](ia, ep, false, api.SubHandleEP, "EP")
	if err != nil {
		return nil, err
	}
	gevd, err := ia.crEVD(evd)
	if err != nil {
		return nil, err
	}
	ia.enter()
	p, err := ia.p.CreateRSP(q, gep.p, gevd.p)
	ia.leave()
	if err != nil {
		return nil, err
	}
	g := &rspGuard{p: p, evd: gevd}
	ia.register(p, g, api.HandleRSP)
	gevd.users.add(&g.hdr, 1)
	return g, nil
}

func (ia *iaGuard) CreateLMR(pz api.PZ, region api.Region, priv api.MemPriv, va api.VAType) (_ api.LMR, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateLMR, &ia.hdr, h.start(opIACreateLMR), &err)
	}
	gpz, err := ia.admitCreateIn(pz)
	if err != nil {
		return nil, err
	}
	defer ia.endCreate()
	preg := region
	var src *lmrGuard
	switch region.Type {
	case api.MemTypeVirtual, api.MemTypeSharedVirtual:
		if len(region.Bytes) == 0 {
			return nil, api.Errorf(api.InvalidParameter, api.SubArg3, "the region to register is empty")
		}
		if region.Type == api.MemTypeSharedVirtual {
			if _, _, ok := api.MemoryOf(region.Bytes); !ok {
				return nil, api.Errorf(api.InvalidParameter, api.SubArg3, "shared virtual memory must come from api.AllocMemory")
			}
		}
	case api.MemTypeLMR:
		if src, err = own[*lmrGuard](ia, region.LMR, false, api.SubHandleLMR, "region LMR"); err != nil {
			return nil, err
		}
		preg.LMR = src.p
	default:
		return nil, api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("memory type %#x is unknown", uint32(region.Type)))
	}
	if err := api.CheckPrivVA(priv, va, api.SubArg6, api.SubArg7); err != nil {
		return nil, err
	}
	if va == api.VATypeZB && !ia.attr.ZBSupported {
		return nil, api.Errorf(api.ModelNotSupported, api.NoSubtype, "the provider does not support zero-based LMRs")
	}
	ia.enter()
	p, err := ia.p.CreateLMR(gpz.p, preg, priv, va)
	ia.leave()
	if err != nil {
		return nil, err
	}
	g := &lmrGuard{p: p, pz: gpz, src: src}
	if prm, err := p.Query(); err == nil {
		g.ctx, g.hasCtx = prm.LMRContext, true
	}
	ia.register(p, g, api.HandleLMR)
	gpz.users.add(&g.hdr, 1)
	if src != nil {
		src.users.add(&g.hdr, 1)
	}
	return g, nil
}

func (ia *iaGuard) CreateSRQ(pz api.PZ, attr api.SRQAttr) (_ api.SRQ, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateSRQ, &ia.hdr, h.start(opIACreateSRQ), &err)
	}
	gpz, err := ia.admitCreateIn(pz)
	if err != nil {
		return nil, err
	}
	defer ia.endCreate()
	if !ia.pattr.SRQSupported {
		return nil, api.Errorf(api.ModelNotSupported, api.NoSubtype, "the provider does not support shared receive queues")
	}
	if attr.MaxRecvDTOs <= 0 || (ia.attr.MaxRecvPerSRQ > 0 && attr.MaxRecvDTOs > ia.attr.MaxRecvPerSRQ) {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg3, fmt.Sprintf("SRQ MaxRecvDTOs %d outside 1..%d", attr.MaxRecvDTOs, ia.attr.MaxRecvPerSRQ))
	}
	if attr.MaxRecvIOV <= 0 || (ia.attr.MaxIOVSegmentsPerDTO > 0 && attr.MaxRecvIOV > ia.attr.MaxIOVSegmentsPerDTO) {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg3, fmt.Sprintf("SRQ MaxRecvIOV %d outside 1..%d", attr.MaxRecvIOV, ia.attr.MaxIOVSegmentsPerDTO))
	}
	if attr.LowWatermark < 0 || attr.LowWatermark > attr.MaxRecvDTOs {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg3, fmt.Sprintf("SRQ low watermark %d outside 0..%d", attr.LowWatermark, attr.MaxRecvDTOs))
	}
	ia.enter()
	p, err := ia.p.CreateSRQ(gpz.p, attr)
	ia.leave()
	if err != nil {
		return nil, err
	}
	g := &srqGuard{p: p, pz: gpz}
	// The limit is the provider's, which may exceed the one asked for.
	iov := attr.MaxRecvIOV
	if prm, err := p.Query(); err == nil && prm.MaxRecvIOV > iov {
		iov = prm.MaxRecvIOV
	}
	g.maxIOV.Store(int64(iov))
	ia.register(p, g, api.HandleSRQ)
	gpz.users.add(&g.hdr, 1)
	return g, nil
}

func (ia *iaGuard) SyncRDMARead(segs []api.LMRTriplet) error {
	return ia.simple(opIASyncRead, func() error { return ia.p.SyncRDMARead(segs) })
}

func (ia *iaGuard) SyncRDMAWrite(segs []api.LMRTriplet) error {
	return ia.simple(opIASyncWrite, func() error { return ia.p.SyncRDMAWrite(segs) })
}
