package registry

import (
	"fmt"
	"net"
	"sync/atomic"

	"github.com/godat/godat/api"
)

// Completion flags each kind of post accepts (dat_ep_post_send(3DAT),
// dat_ep_post_recv(3DAT), dat_ep_post_rdma_write(3DAT),
// dat_ep_post_rdma_read(3DAT), dat_rmr_bind(3DAT)).
const (
	sendFlags = api.CompletionSuppress | api.CompletionSolicitedWait | api.CompletionUnsignalled | api.CompletionBarrierFence
	rdmaFlags = api.CompletionSuppress | api.CompletionUnsignalled | api.CompletionBarrierFence
	bindFlags = rdmaFlags
	recvFlags = api.CompletionUnsignalled
)

var (
	errNoRequestEVD   = api.Errorf(api.InvalidState, api.SubStateEPEVDRequest, "the EP has no request EVD")
	errNoRecvEVD      = api.Errorf(api.InvalidState, api.SubStateEPEVDRecv, "the EP has no receive EVD")
	errNoConnectEVD   = api.Errorf(api.InvalidState, api.SubStateEPEVDConnect, "the EP has no connect EVD")
	errTooManySegs    = api.Errorf(api.InvalidParameter, api.SubArg2, "more IOV segments than the EP attributes allow")
	errBadFlags       = api.Errorf(api.InvalidParameter, api.SubArg5, "completion flags not allowed for this operation")
	errUnsignalledReq = api.Errorf(api.InvalidParameter, api.SubArg5, "unsignalled completion needs the EP's completion-flag attribute to allow it")
	errWriteTooLong   = api.Errorf(api.LengthError, api.NoSubtype, "the local data is longer than the remote segment")
	errReadTooLong    = api.Errorf(api.LengthError, api.NoSubtype, "the local buffer is shorter than the remote segment")
)

// iovLen is the number of bytes an IOV names.
func iovLen(iov []api.LMRTriplet) uint64 {
	var n uint64
	for i := range iov {
		n += uint64(iov[i].Length)
	}
	return n
}

// epLimits is what the post path checks: the EP's limits and flags and
// whether it has the EVDs its queues need. It is replaced as a whole when
// the EP is modified, so a post reads it with one atomic load and a
// concurrent Modify never shows it half changed.
type epLimits struct {
	recvIOV, reqIOV, readIOV, writeIOV int
	recvFlags, reqFlags                api.CompletionFlags
	hasRecv, hasReq, hasConn           bool
}

// epGuard guards an Endpoint.
type epGuard struct {
	hdr
	p               api.EP
	pz              *pzGuard
	recv, req, conn *evdGuard
	srq             *srqGuard
	lim             atomic.Pointer[epLimits]
}

func (g *epGuard) setLimits(a api.EPAttr) {
	g.lim.Store(&epLimits{
		recvIOV: a.MaxRecvIOV, reqIOV: a.MaxRequestIOV,
		readIOV: orIOV(a.MaxRDMAReadIOV, a.MaxRequestIOV), writeIOV: orIOV(a.MaxRDMAWriteIOV, a.MaxRequestIOV),
		recvFlags: a.RecvCompletionFlags, reqFlags: a.RequestCompletionFlags,
		hasRecv: g.recv != nil, hasReq: g.req != nil, hasConn: g.conn != nil,
	})
}

// orIOV uses the request IOV limit where a provider reports no separate
// RDMA limit.
func orIOV(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// use adds delta to the in-use counts of everything the EP references and
// to the notification-restriction counts of its EVDs.
func (g *epGuard) use(delta int32) {
	l := g.lim.Load()
	if g.pz != nil {
		g.pz.users.add(&g.hdr, delta)
	}
	for _, e := range [...]*evdGuard{g.recv, g.req, g.conn} {
		if e != nil {
			e.users.add(&g.hdr, delta)
			if delta < 0 {
				e.lastEP.CompareAndSwap(g, nil) // (no EVD keeps an EP it no longer serves)
			}
		}
	}
	if g.srq != nil {
		g.srq.users.add(&g.hdr, delta)
	}
	if g.recv != nil && l.recvFlags&(api.CompletionUnsignalled|api.CompletionSolicitedWait) != 0 {
		g.recv.restricted.Add(delta)
	}
	if g.req != nil && l.reqFlags&api.CompletionUnsignalled != 0 {
		g.req.restricted.Add(delta)
	}
}

// checkRequest applies the common checks of a request-queue post.
func (g *epGuard) checkRequest(flags api.CompletionFlags, nseg int, allowed api.CompletionFlags, maxSeg int) error {
	l := g.lim.Load()
	if !l.hasReq {
		return errNoRequestEVD
	}
	if maxSeg >= 0 && nseg > maxSeg {
		return errTooManySegs
	}
	if flags&^allowed != 0 {
		return errBadFlags
	}
	if flags&api.CompletionUnsignalled != 0 && l.reqFlags&api.CompletionUnsignalled == 0 {
		return errUnsignalledReq
	}
	return nil
}

func (g *epGuard) Query() (api.EPParam, error) {
	return query(&g.hdr, opEPQuery, g.p.Query, g.translateParam)
}

func (g *epGuard) translateParam(prm *api.EPParam) {
	ia := g.ia
	prm.IA = ia.asIA(prm.IA)
	prm.PZ = asGuard(ia, prm.PZ)
	prm.RecvEVD = asGuard(ia, prm.RecvEVD)
	prm.RequestEVD = asGuard(ia, prm.RequestEVD)
	prm.ConnectEVD = asGuard(ia, prm.ConnectEVD)
	prm.SRQ = asGuard(ia, prm.SRQ)
}

// Modify unwraps the handles p names, checks new attributes against the IA
// limits, and keeps the guard's references and limits in step with the
// provider (dat_ep_modify(3DAT)).
func (g *epGuard) Modify(mask api.EPParamMask, p *api.EPParam) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEPModify, &g.hdr, h.start(opEPModify), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	if p == nil {
		return api.Errorf(api.InvalidParameter, api.SubArg3, "EP parameters are nil")
	}
	if mask&^api.EPFieldAll != 0 {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("EP parameter mask %#x names unknown fields", uint64(mask)))
	}
	if mask&(api.EPFieldIA|api.EPFieldState|api.EPFieldSRQ) != 0 {
		return api.Errorf(api.InvalidParameter, api.SubArg2, "the IA, state and SRQ of an EP cannot be modified")
	}
	ia := g.ia
	pp := *p
	npz, nrecv, nreq, nconn := g.pz, g.recv, g.req, g.conn
	if mask&api.EPFieldPZ != 0 {
		if npz, err = own[*pzGuard](ia, p.PZ, false, api.SubHandlePZ, "PZ"); err != nil {
			return err
		}
		pp.PZ = npz.p
	}
	if mask&api.EPFieldRecvEVD != 0 {
		if nrecv, err = ia.evdFor(p.RecvEVD, api.EVDDTO, api.SubHandleEVDRecv, "receive EVD"); err != nil {
			return err
		}
		pp.RecvEVD = evdP(nrecv)
	}
	if mask&api.EPFieldRequestEVD != 0 {
		if nreq, err = ia.evdFor(p.RequestEVD, api.EVDDTO, api.SubHandleEVDRequest, "request EVD"); err != nil {
			return err
		}
		pp.RequestEVD = evdP(nreq)
	}
	if mask&api.EPFieldConnectEVD != 0 {
		if nconn, err = ia.evdFor(p.ConnectEVD, api.EVDConnection, api.SubHandleEVDConn, "connect EVD"); err != nil {
			return err
		}
		pp.ConnectEVD = evdP(nconn)
	}
	if mask&api.EPFieldAttrAll != 0 {
		if err := ia.checkEPAttr(&p.Attr); err != nil {
			return err
		}
	}
	pp.IA, pp.SRQ = nil, nil
	ia.enter()
	defer ia.leave()
	if err := g.p.Modify(mask, &pp); err != nil {
		return err
	}
	prm, err := g.p.Query()
	if err != nil {
		return err
	}
	g.use(-1)
	g.pz, g.recv, g.req, g.conn = npz, nrecv, nreq, nconn
	g.setLimits(prm.Attr)
	g.use(1)
	return nil
}

func (g *epGuard) GetStatus() (_ api.EPState, _ bool, _ bool, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEPGetStatus, &g.hdr, h.start(opEPGetStatus), &err)
	}
	if err := g.live(); err != nil {
		return 0, false, false, err
	}
	g.ia.enter()
	defer g.ia.leave()
	return g.p.GetStatus()
}

func (g *epGuard) Connect(remote net.Addr, q api.ConnQual, timeout api.Timeout, privateData []byte, qos api.QOS, flags api.ConnectFlags) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEPConnect, &g.hdr, h.start(opEPConnect), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	if remote == nil {
		return api.Errorf(api.InvalidAddress, api.SubAddressMalformed, "remote address is nil")
	}
	if err := checkTimeout(timeout, api.SubArg4); err != nil {
		return err
	}
	if err := g.ia.checkPrivateData(privateData, api.SubArg5); err != nil {
		return err
	}
	if err := g.ia.checkQOS(qos); err != nil {
		return err
	}
	if flags&^(api.ConnectMultipathRequested|api.ConnectMultipathRequired) != 0 {
		return api.Errorf(api.InvalidParameter, api.SubArg8, fmt.Sprintf("connect flags %#x are unknown", uint32(flags)))
	}
	if !g.lim.Load().hasConn {
		return errNoConnectEVD
	}
	g.ia.enter()
	defer g.ia.leave()
	return g.p.Connect(remote, q, timeout, privateData, qos, flags)
}

func (g *epGuard) DupConnect(dup api.EP, timeout api.Timeout, privateData []byte, qos api.QOS) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEPDupConnect, &g.hdr, h.start(opEPDupConnect), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	gd, err := own[*epGuard](g.ia, dup, false, api.SubHandle2, "duplicate EP")
	if err != nil {
		return err
	}
	if err := checkTimeout(timeout, api.SubArg3); err != nil {
		return err
	}
	if err := g.ia.checkPrivateData(privateData, api.SubArg4); err != nil {
		return err
	}
	if err := g.ia.checkQOS(qos); err != nil {
		return err
	}
	if !g.lim.Load().hasConn {
		return errNoConnectEVD
	}
	g.ia.enter()
	defer g.ia.leave()
	return g.p.DupConnect(gd.p, timeout, privateData, qos)
}

func (g *epGuard) Disconnect(flags api.CloseFlags) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEPDisconnect, &g.hdr, h.start(opEPDisconnect), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	if err := checkCloseFlags(flags); err != nil {
		return err
	}
	g.ia.enter()
	defer g.ia.leave()
	return g.p.Disconnect(flags)
}

func (g *epGuard) Reset() error {
	return g.simple(opEPReset, g.p.Reset)
}

func (g *epGuard) Free() (err error) {
	err = free(g, opEPFree, g.p, api.NoSubtype, g.p.Free)
	if err == nil {
		g.use(-1)
	}
	return err
}

// The post methods are the fast path: a freed check, a limits load, a few
// comparisons, then the provider. They allocate nothing.

func (g *epGuard) PostSend(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEPPostSend, &g.hdr, h.start(opEPPostSend), &err)
	}
	if g.freed.Load() {
		return errFreedEP
	}
	if err := g.checkRequest(flags, len(iov), sendFlags, g.lim.Load().reqIOV); err != nil {
		return err
	}
	if s := g.ia.serial; s != nil {
		s.Lock()
		defer s.Unlock()
	}
	return g.p.PostSend(iov, cookie, flags)
}

func (g *epGuard) PostSendWithInvalidate(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags, invalidate bool, rmr api.RMRContext) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEPPostSendInv, &g.hdr, h.start(opEPPostSendInv), &err)
	}
	if g.freed.Load() {
		return errFreedEP
	}
	if err := g.checkRequest(flags, len(iov), sendFlags, g.lim.Load().reqIOV); err != nil {
		return err
	}
	if s := g.ia.serial; s != nil {
		s.Lock()
		defer s.Unlock()
	}
	return g.p.PostSendWithInvalidate(iov, cookie, flags, invalidate, rmr)
}

func (g *epGuard) PostRecv(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEPPostRecv, &g.hdr, h.start(opEPPostRecv), &err)
	}
	if g.freed.Load() {
		return errFreedEP
	}
	l := g.lim.Load()
	if !l.hasRecv {
		return errNoRecvEVD
	}
	if len(iov) > l.recvIOV {
		return errTooManySegs
	}
	if flags&^recvFlags != 0 {
		return errBadFlags
	}
	if flags&api.CompletionUnsignalled != 0 && l.recvFlags&api.CompletionUnsignalled == 0 {
		return errUnsignalledReq
	}
	if s := g.ia.serial; s != nil {
		s.Lock()
		defer s.Unlock()
	}
	return g.p.PostRecv(iov, cookie, flags)
}

func (g *epGuard) PostRDMAWrite(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEPPostWrite, &g.hdr, h.start(opEPPostWrite), &err)
	}
	if g.freed.Load() {
		return errFreedEP
	}
	if err := g.checkRequest(flags, len(iov), rdmaFlags, g.lim.Load().writeIOV); err != nil {
		return err
	}
	if iovLen(iov) > uint64(remote.Length) {
		return errWriteTooLong
	}
	if s := g.ia.serial; s != nil {
		s.Lock()
		defer s.Unlock()
	}
	return g.p.PostRDMAWrite(iov, cookie, remote, flags)
}

func (g *epGuard) PostRDMARead(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEPPostRead, &g.hdr, h.start(opEPPostRead), &err)
	}
	if g.freed.Load() {
		return errFreedEP
	}
	if err := g.checkRequest(flags, len(iov), rdmaFlags, g.lim.Load().readIOV); err != nil {
		return err
	}
	if iovLen(iov) < uint64(remote.Length) {
		return errReadTooLong
	}
	if s := g.ia.serial; s != nil {
		s.Lock()
		defer s.Unlock()
	}
	return g.p.PostRDMARead(iov, cookie, remote, flags)
}

func (g *epGuard) PostRDMAReadToRMR(local api.RMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEPPostReadToRMR, &g.hdr, h.start(opEPPostReadToRMR), &err)
	}
	if g.freed.Load() {
		return errFreedEP
	}
	if err := g.checkRequest(flags, 1, rdmaFlags, -1); err != nil {
		return err
	}
	if local.Length < remote.Length {
		return errReadTooLong
	}
	if s := g.ia.serial; s != nil {
		s.Lock()
		defer s.Unlock()
	}
	return g.p.PostRDMAReadToRMR(local, cookie, remote, flags)
}

func (g *epGuard) RecvQuery() (_ int, _ int, err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEPRecvQuery, &g.hdr, h.start(opEPRecvQuery), &err)
	}
	if err := g.live(); err != nil {
		return 0, 0, err
	}
	g.ia.enter()
	defer g.ia.leave()
	return g.p.RecvQuery()
}

func (g *epGuard) SetWatermark(soft, hard int) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opEPSetWatermark, &g.hdr, h.start(opEPSetWatermark), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	if (soft < 0 && soft != api.WatermarkInfinite) || (hard < 0 && hard != api.WatermarkInfinite) {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("watermarks %d/%d must be non-negative or WatermarkInfinite", soft, hard))
	}
	g.ia.enter()
	defer g.ia.leave()
	return g.p.SetWatermark(soft, hard)
}
