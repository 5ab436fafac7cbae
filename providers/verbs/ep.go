//go:build verbs && cgo

package verbs

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"strconv"
	"time"
	"unsafe"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/epattr"
	"github.com/godat/godat/provider/kit/ring"
)

// ep is an Endpoint: an RC queue pair of its own, created at EP creation
// outside rdma_cm and moved to INIT so that receives may be posted before
// any connection, and driven to RTR/RTS with the attributes rdma_cm
// computes for the cm id of its connection. Its fields are guarded by
// ia.mu.
type ep struct {
	epattr.Endpoint               // attributes, state, connection ends, watermarks
	ia                            *ia
	epattr.Links[*pz, *evd, *srq] // PZ, EVDs and SRQ

	qp   *C.struct_ibv_qp // nil once destroyed
	qpn  uint32
	sgeC *C.struct_ibv_sge // C array of the most SGEs a post may name
	sges []C.struct_ibv_sge
	// inline is the most bytes a send or RDMA write may carry inside its
	// work request (IBV_SEND_INLINE): what the device granted the QP when
	// asked for inlineWant.
	inline uint32

	id        *C.struct_rdma_cm_id // of the connection or attempt, or nil
	pdata     []byte               // the private data Connect sends, with its header
	reqs      ring.Ring[reqWR]
	recvs     ring.Ring[recvWR]
	reqSeq    uint64
	recvSeq   uint64
	iov1      [1]api.LMRTriplet // PostRDMAReadToRMR's translated segment
	rsp       *rsp              // the RSP that reserves the EP, while it does
	fenceNext bool              // an RMR bind was posted: fence the next request
	// unsignalled counts the requests posted in a row without a device
	// completion (CompletionSuppress); see signal.
	unsignalled int
	// discWait: a graceful Disconnect waits for the request queue to
	// empty before it ends the connection (see Disconnect).
	discWait bool
	attempt  uint64      // counts Connect calls, so a stale timeout does nothing
	timer    *time.Timer // the connect timeout of the pending attempt, or a graceful Disconnect's wait
}

// inlineWant is the inline data capacity asked of each QP: sends and
// RDMA writes of at most this many bytes travel inside the work request
// ("Inline data" in the package documentation).
const inlineWant = 256

var errEPGone = api.Errorf(api.InvalidHandle, api.SubHandleEP, "EP was freed")

// epLimits are the EP attribute limits on device d.
func epLimits(d *device) epattr.Limits {
	return epattr.Limits{
		MaxDTOs: d.attr.MaxQPWR, MaxIOV: d.attr.MaxSGE, MaxRDMAReads: min(d.attr.MaxQPRdAtom, d.attr.MaxQPInitRdAtom),
		MaxMessageSize: int(d.port.MaxMsgSize), MaxRDMASize: int(d.port.MaxMsgSize),
		QOS: api.QOSBestEffort, Flags: api.CompletionSuppress | api.CompletionSolicitedWait | api.CompletionUnsignalled | api.CompletionBarrierFence,
	}
}

// defaultEPAttr is what an EP on device d gets for unset attributes.
func defaultEPAttr(d *device) api.EPAttr {
	reads := min(d.attr.MaxQPRdAtom, d.attr.MaxQPInitRdAtom, 16)
	iov := min(d.attr.MaxSGE, 16)
	return api.EPAttr{
		ServiceType: api.ServiceRC, MaxMessageSize: d.port.MaxMsgSize, MaxRDMASize: d.port.MaxMsgSize,
		MaxRecvDTOs: min(d.attr.MaxQPWR, 256), MaxRequestDTOs: min(d.attr.MaxQPWR, 256),
		MaxRecvIOV: iov, MaxRequestIOV: iov, MaxRDMAReadIn: reads, MaxRDMAReadOut: reads,
		MaxRDMAReadIOV: min(d.attr.MaxSGERead, iov), MaxRDMAWriteIOV: iov,
	}
}

// createEP creates an Endpoint in the UNCONNECTED state with its QP, for
// both create calls (epattr.CreateEPs, which has resolved a against the
// device's defaults and limits; dat_ep_create(3DAT),
// dat_ep_create_with_srq(3DAT)). The request and receive EVDs must have
// been created for DTO completions: their CQs are the QP's. srqArg is
// the SRQ the EP's receives come from, nil for none; it is checked again
// under ia.mu because it may have been freed since the guard saw it.
func (i *ia) createEP(pzArg api.PZ, recvEVD, requestEVD, connectEVD api.EVD, srqArg api.SRQ, a api.EPAttr) (api.EP, error) {
	z, err := kit.PZArg[*pz](pzArg)
	if err != nil {
		return nil, err
	}
	s, _ := srqArg.(*srq)
	if srqArg != nil && (s == nil || s.ia != i) {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandleSRQ, "not a live SRQ of this IA")
	}
	var made *ep
	defer func() { made.armCQs() }() // after the unlock
	i.mu.Lock()
	defer i.mu.Unlock()
	if s != nil && s.srq == nil {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandleSRQ, "SRQ is freed")
	}
	if err := i.eps.Room(); err != nil {
		return nil, err
	}
	p := &ep{ia: i, Endpoint: epattr.Endpoint{Attr: a, State: api.EPUnconnected}}
	p.Link(z, recvEVD, requestEVD, connectEVD)
	p.SRQ = s
	if err := p.makeQP(); err != nil {
		return nil, err
	}
	if s != nil {
		s.eps++
	}
	i.eps.Add(p) // makeQP has entered the QP number in i.qps
	made = p
	return p, nil
}

// makeQP creates the EP's QP, in INIT, and its SGE array from the EP's
// PZ, EVDs and attributes. ia.mu is held.
func (p *ep) makeQP() error {
	i, a := p.ia, p.Attr
	// A QP needs a CQ for each queue; an EP without one of the EVDs gets
	// the IA's sink CQ, whose completions are discarded.
	scq, rcq := i.cqFor(p.RequestEVD), i.cqFor(p.RecvEVD)
	var err error
	if scq == nil {
		if scq, err = i.sinkCQ(); err != nil {
			return err
		}
	}
	if rcq == nil {
		if rcq, err = i.sinkCQ(); err != nil {
			return err
		}
	}
	iov := max(a.MaxRequestIOV, a.MaxRDMAReadIOV, a.MaxRDMAWriteIOV, a.MaxRecvIOV, 1)
	var cerr C.int
	inl := C.uint32_t(inlineWant)
	var sq *C.struct_ibv_srq
	if p.SRQ != nil {
		sq = p.SRQ.srq
	}
	qp := C.gd_qp_create(p.PZ.pd, scq, rcq, sq, C.uint32_t(a.MaxRequestDTOs), C.uint32_t(a.MaxRecvDTOs),
		C.uint32_t(max(a.MaxRequestIOV, a.MaxRDMAReadIOV, a.MaxRDMAWriteIOV)), C.uint32_t(a.MaxRecvIOV), C.uint8_t(i.dev.port.Num), &cerr, &inl)
	if qp == nil {
		return api.Errorf(api.InsufficientResources, api.SubResourceTEP, "ibv_create_qp: "+errnoText(syscallErrno(cerr)))
	}
	p.qp, p.qpn, p.inline = qp, uint32(qp.qp_num), uint32(inl)
	p.sgeC = (*C.struct_ibv_sge)(C.calloc(C.size_t(iov), C.size_t(unsafe.Sizeof(C.struct_ibv_sge{}))))
	p.sges = unsafe.Slice(p.sgeC, iov)
	i.qps[p.qpn] = p
	useCQs(p.RecvEVD, p.RequestEVD, &p.Attr, 1)
	if e := p.RecvEVD; p.SRQ != nil && e != nil && e.cq != nil {
		e.cq.posted.Store(true) // (the SRQ's receives may be there already)
	}
	return nil
}

// useCQs counts a QP among the users of the CQs of its receive and
// request EVDs (d = 1 when it is made, -1 when it goes), which decides
// how they are armed (evd.arm). ia.mu is held.
func useCQs(recv, req *evd, a *api.EPAttr, d int) {
	if req != nil && req.cq != nil {
		req.cq.count(&req.cq.sends, d)
	}
	if recv != nil && recv.cq != nil {
		if a.RecvCompletionFlags&api.CompletionSolicitedWait != 0 {
			recv.cq.count(&recv.cq.solRecv, d)
		} else {
			recv.cq.count(&recv.cq.plainRecv, d)
		}
	}
}

// armCQs arms the CQs of the EP's EVDs as their users now need, once a
// QP was made or changed: a CQ that serves a send queue from now on, or
// one armed for solicited completions whose users need every one now
// (evd.arm). ia.mu is not held. A nil EP does nothing.
func (p *ep) armCQs() {
	if p == nil {
		return
	}
	p.ia.mu.Lock()
	recv, req := p.RecvEVD, p.RequestEVD
	p.ia.mu.Unlock()
	for _, e := range [2]*evd{recv, req} {
		if e != nil && e.cq != nil {
			e.arm()
		}
	}
}

// dropQP destroys the EP's QP and SGE array. ia.mu is held.
func (p *ep) dropQP() {
	if p.qp == nil {
		return
	}
	delete(p.ia.qps, p.qpn)
	useCQs(p.RecvEVD, p.RequestEVD, &p.Attr, -1)
	C.ibv_destroy_qp(p.qp)
	p.qp = nil
	C.free(unsafe.Pointer(p.sgeC))
	p.sgeC, p.sges = nil, nil
}

// cqFor returns the CQ of EVD e, or nil when e is nil or has none.
func (i *ia) cqFor(e *evd) *C.struct_ibv_cq {
	if e == nil || e.cq == nil {
		return nil
	}
	return e.cq.cq
}

// sinkCQ returns the IA's CQ for queues whose completions nobody wants,
// creating it on first use. ia.mu is held.
func (i *ia) sinkCQ() (*C.struct_ibv_cq, error) {
	if i.sink == nil {
		c, err := newCQ(i.sinkEVD, 64)
		if err != nil {
			return nil, err
		}
		// Its watcher discards what comes, armed for every completion
		// from the start (no QP counts as its user).
		c.posted.Store(true)
		if rc := C.gd_cq_arm(c.cq, 0); rc != 0 {
			c.destroy()
			return nil, api.Errorf(api.InsufficientResources, api.SubResourceTEVD, "ibv_req_notify_cq: "+errnoText(syscallErrno(rc)))
		}
		c.armed.Store(true)
		i.sink = c
		i.sinkEVD.cq = c
	}
	return i.sink.cq, nil
}

func evdOf(x api.EVD) *evd {
	e, _ := x.(*evd)
	return e
}

// HandleType reports HandleEP (dat_get_handle_type(3DAT)).
func (p *ep) HandleType() api.HandleType { return api.HandleEP }

// Query returns the EP's parameters (dat_ep_query(3DAT)).
func (p *ep) Query() (api.EPParam, error) {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	prm := p.Param(p.ia, p.ia.addr)
	p.Fill(&prm)
	if p.qp != nil {
		prm.Attr.TransportSpecific = append(prm.Attr.TransportSpecific,
			api.NamedAttr{Name: "max_inline_data", Value: strconv.FormatUint(uint64(p.inline), 10)})
	}
	return prm, nil
}

// Modify changes the fields mask selects in the states the page allows
// (dat_ep_modify(3DAT)). A change of the PZ, the request or receive EVD,
// or a queue limit needs a new QP: it is allowed only while no receive
// is posted (ErrInvalidState otherwise), since the old QP's receives
// would be lost.
func (p *ep) Modify(mask api.EPParamMask, prm *api.EPParam) error {
	if err := epattr.CheckModify(mask, prm); err != nil {
		return err
	}
	defer p.armCQs() // after the unlock: the QP's CQs, or their users, may have changed
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	a, err := p.Modified(mask, prm, epLimits(p.ia.dev), p.recvs.Len())
	if err != nil {
		return err
	}
	links := p.Links
	links.Apply(mask, prm)
	rebuild := links.PZ != p.PZ || links.RecvEVD != p.RecvEVD || links.RequestEVD != p.RequestEVD ||
		a.MaxRecvDTOs != p.Attr.MaxRecvDTOs || a.MaxRequestDTOs != p.Attr.MaxRequestDTOs ||
		a.MaxRecvIOV != p.Attr.MaxRecvIOV || a.MaxRequestIOV != p.Attr.MaxRequestIOV ||
		a.MaxRDMAReadIOV != p.Attr.MaxRDMAReadIOV || a.MaxRDMAWriteIOV != p.Attr.MaxRDMAWriteIOV
	if rebuild {
		if p.recvs.Len() > 0 || p.reqs.Len() > 0 || p.State != api.EPUnconnected {
			return api.Errorf(api.InvalidState, p.State.StateSubtype(), "this change needs a new QP, which would lose the posted receives")
		}
		old, oa, oqp, oqpn, osge, osges := p.Links, p.Attr, p.qp, p.qpn, p.sgeC, p.sges
		p.Links, p.Attr = links, a
		if err := p.makeQP(); err != nil {
			p.Links, p.Attr, p.qp, p.qpn, p.sgeC, p.sges = old, oa, oqp, oqpn, osge, osges
			p.ia.qps[p.qpn] = p
			return err
		}
		delete(p.ia.qps, oqpn)
		useCQs(old.RecvEVD, old.RequestEVD, &oa, -1)
		C.ibv_destroy_qp(oqp)
		C.free(unsafe.Pointer(osge))
		p.ia.qps[p.qpn] = p
	}
	p.ConnectEVD = links.ConnectEVD
	if !rebuild && p.qp != nil && (a.RecvCompletionFlags^p.Attr.RecvCompletionFlags)&api.CompletionSolicitedWait != 0 {
		useCQs(p.RecvEVD, p.RequestEVD, &p.Attr, -1)
		useCQs(p.RecvEVD, p.RequestEVD, &a, 1)
	}
	p.Attr = a
	return nil
}

// GetStatus returns the state and whether each queue is idle
// (dat_ep_get_status(3DAT)).
func (p *ep) GetStatus() (api.EPState, bool, bool, error) {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	return p.State, p.recvs.Len() == 0, p.reqs.Len() == 0, nil
}

// Reset returns a DISCONNECTED EP to UNCONNECTED (dat_ep_reset(3DAT)): its
// QP goes back to RESET and INIT with empty queues.
func (p *ep) Reset() error {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	switch p.State {
	case api.EPUnconnected:
		return nil // a no-op that keeps the posted receives
	case api.EPDisconnected:
	default:
		return p.StateErr("Reset")
	}
	p.dropID()
	if rc := C.gd_qp_reset(p.qp, C.uint8_t(p.ia.dev.port.Num)); rc != 0 {
		return api.Errorf(api.InternalError, api.NoSubtype, "resetting the QP: "+errnoText(syscallErrno(rc)))
	}
	p.reqs.Clear()
	p.recvs.Clear()
	p.State, p.RemoteAddr, p.RemotePort, p.LocalPort, p.PeerPD = api.EPUnconnected, nil, 0, 0, nil
	return nil
}

// Free destroys the EP, its connection and its QP (dat_ep_free(3DAT)).
func (p *ep) Free() error {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	switch p.State {
	case api.EPReserved, api.EPPassiveConnectionPending:
		return p.StateErr("Free")
	}
	p.destroy()
	if p.SRQ != nil {
		p.SRQ.eps--
	}
	p.ia.eps.Remove(p)
	return nil
}

// destroy releases the cm id and the QP. ia.mu is held.
func (p *ep) destroy() {
	if p.qp == nil {
		return
	}
	p.stopTimer()
	p.dropID()
	p.ia.releaseEP(p)
	p.dropQP()
	if p.rsp != nil {
		p.rsp.stop()
	}
	p.State = api.EPDisconnected
}

// dropID destroys the EP's cm id, if it has one. ia.mu is held.
func (p *ep) dropID() { p.ia.destroyID(&p.id) }

// destroyID destroys the cm id *id, if there is one, after taking it out
// of the table that routes its events, and clears *id. ia.mu is held.
func (i *ia) destroyID(id **C.struct_rdma_cm_id) {
	if *id == nil {
		return
	}
	delete(i.owners, *id)
	C.rdma_destroy_id(*id)
	*id = nil
}

// watermarks checks the EP's high watermarks against held receive
// buffers (posted and not completed; for an EP on an SRQ, the one whose
// completion is being delivered: the device tells of a taken buffer only
// then): it posts the soft watermark's event if it is due and reports
// whether the hard one is exceeded while connected, for the caller to
// break the connection (broken). ia.mu is held.
func (p *ep) watermarks(held int) bool {
	return p.Watch(held, p, &p.ia.async.EVD)
}

// watchHard checks the watermarks once the connection is up: the hard
// one is watched from then on (dat_ep_set_watermark(3DAT)). ia.mu is
// held.
func (p *ep) watchHard() {
	if p.watermarks(p.recvs.Len()) {
		p.broken()
	}
}

// broken ends a connection whose QP failed: the peer is told, the
// outstanding DTOs are flushed, and the connect EVD gets BROKEN.
func (p *ep) broken() {
	if p.State != api.EPConnected {
		return
	}
	p.shutdown()
	p.State = api.EPDisconnected
	p.connEvent(api.ConnectionBrokenEvent, nil)
}

// connEvent posts a connection event of the EP. ia.mu is held.
func (p *ep) connEvent(n api.EventNumber, pd []byte) {
	ev := api.Event{Number: n, Conn: api.ConnectionData{EP: p, PrivateData: pd}}
	p.ConnectEVD.post(&ev, true)
}

// DupConnect connects to the service point the connected EP dup is
// connected to (dat_ep_dup_connect(3DAT)).
func (p *ep) DupConnect(dupArg api.EP, timeout api.Timeout, privateData []byte, qos api.QOS) error {
	dup, _ := dupArg.(*ep)
	if dup == nil || dup.ia != p.ia {
		return api.Errorf(api.InvalidHandle, api.SubHandle2, "duplicate EP is not a live EP of this IA")
	}
	p.ia.mu.Lock()
	st, remote, q := dup.State, dup.RemoteAddr, dup.RemotePort
	p.ia.mu.Unlock()
	if st != api.EPConnected {
		return api.Errorf(api.InvalidState, st.StateSubtype(), "the EP to duplicate is not connected")
	}
	return p.Connect(remote, q, timeout, privateData, qos, 0)
}

// RecvQuery reports the receives posted on the EP and not yet completed
// (dat_ep_recv_query(3DAT)).
func (p *ep) RecvQuery() (int, int, error) {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	n := p.recvs.Len()
	return n, n, nil
}
