//go:build verbs && cgo

package verbs

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/srqattr"
)

// srqBit marks the work request ids of SRQ receives; the low bits are the
// receive's slot.
const srqBit = 1 << 62

// srq is a shared receive queue: an ibv_srq (dat_srq_create(3DAT)).
// Receives leave it in whatever order the device takes them, so each
// posted receive has a slot, found again by the completion's wr_id. The
// low watermark is counted here, exactly, rather than armed on the device
// (IBV_EVENT_SRQ_LIMIT_REACHED fires once and must be re-armed after each
// event). Fields are guarded by ia.mu.
type srq struct {
	api.ContextSlot
	ia    *ia
	pz    *pz
	srq   *C.struct_ibv_srq // nil once freed
	sgeC  *C.struct_ibv_sge
	sges  []C.struct_ibv_sge
	max   int
	iov   int
	lw    int
	armed bool
	eps   int
	slots []srqSlot
	free  []int // free slot indexes
	used  int   // posted, not yet completed
}

type srqSlot struct {
	cookie api.Cookie
}

// CreateSRQ creates a shared receive queue in pz (dat_srq_create(3DAT)).
func (i *ia) CreateSRQ(pzArg api.PZ, attr api.SRQAttr) (api.SRQ, error) {
	d := i.dev.attr
	if d.MaxSRQ == 0 {
		return nil, api.Errorf(api.ModelNotSupported, api.NoSubtype, "device "+i.dev.name+" has no shared receive queues")
	}
	if err := srqattr.CheckCreate(attr, d.MaxSRQWR, d.MaxSRQSGE); err != nil {
		return nil, err
	}
	z := pzOf(pzArg)
	if z == nil || z.ia != i {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandlePZ, "PZ is not a live PZ of this IA")
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if err := i.srqs.Room(); err != nil {
		return nil, err
	}
	var cerr C.int
	q := C.gd_srq_create(z.pd, C.uint32_t(attr.MaxRecvDTOs), C.uint32_t(attr.MaxRecvIOV), &cerr)
	if q == nil {
		return nil, api.Errorf(api.InsufficientResources, api.SubResourceSRQ, "ibv_create_srq: "+errnoText(syscallErrno(cerr)))
	}
	s := &srq{ia: i, pz: z, srq: q, max: attr.MaxRecvDTOs, iov: attr.MaxRecvIOV}
	s.sgeC = (*C.struct_ibv_sge)(C.calloc(C.size_t(attr.MaxRecvIOV), C.size_t(unsafe.Sizeof(C.struct_ibv_sge{}))))
	s.sges = unsafe.Slice(s.sgeC, attr.MaxRecvIOV)
	s.setLW(attr.LowWatermark)
	i.srqs.Add(s)
	return s, nil
}

// HandleType reports HandleSRQ (dat_get_handle_type(3DAT)).
func (s *srq) HandleType() api.HandleType { return api.HandleSRQ }

// Query returns the SRQ's parameters (dat_srq_query(3DAT)).
func (s *srq) Query() (api.SRQParam, error) {
	s.ia.mu.Lock()
	defer s.ia.mu.Unlock()
	return api.SRQParam{
		IA: s.ia, State: api.SRQStateOperational, PZ: s.pz, MaxRecvDTOs: s.max, MaxRecvIOV: s.iov,
		LowWatermark: s.lw, AvailableDTOCount: s.used, OutstandingDTOCount: s.used,
	}, nil
}

// PostRecv posts a receive buffer that any EP of the SRQ may take
// (dat_srq_post_recv(3DAT)).
func (s *srq) PostRecv(iov []api.LMRTriplet, cookie api.Cookie) error {
	i := s.ia
	i.mu.Lock()
	defer i.mu.Unlock()
	if s.srq == nil {
		return api.Errorf(api.InvalidHandle, api.SubHandleSRQ, "SRQ is freed")
	}
	if len(iov) > s.iov {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("%d segments exceed the SRQ's %d", len(iov), s.iov))
	}
	if s.used >= s.max {
		return api.Errorf(api.InsufficientResources, api.SubResourceSRQ, "the SRQ is full")
	}
	if _, err := i.checkIOV(iov, s.pz, api.MemPrivLocalWrite); err != nil {
		return err
	}
	var slot int
	if n := len(s.free); n > 0 {
		slot, s.free = s.free[n-1], s.free[:n-1]
	} else {
		slot = len(s.slots)
		s.slots = append(s.slots, srqSlot{})
	}
	for k, t := range iov {
		g := &s.sges[k]
		g.addr, g.length, g.lkey = C.uint64_t(t.Addr), C.uint32_t(t.Length), C.uint32_t(t.LMRContext)
	}
	var sg *C.struct_ibv_sge
	if len(iov) > 0 {
		sg = &s.sges[0]
	}
	if rc := postRecv(nil, s.srq, C.uint64_t(recvBit|srqBit|uint64(slot)), sg, C.int(len(iov))); rc != 0 {
		s.free = append(s.free, slot)
		return api.Errorf(api.InsufficientResources, api.SubResourceSRQ, "ibv_post_srq_recv: "+errnoText(syscallErrno(rc)))
	}
	s.slots[slot] = srqSlot{cookie: cookie}
	s.used++
	return nil
}

// taken releases the slot of a completed receive and returns its cookie.
// ia.mu is held.
func (s *srq) taken(slot int) (api.Cookie, bool) {
	if slot < 0 || slot >= len(s.slots) {
		return 0, false
	}
	c := s.slots[slot].cookie
	s.free = append(s.free, slot)
	s.used--
	s.checkLW()
	return c, true
}

func (s *srq) checkLW() {
	if s.armed && s.used < s.lw {
		s.armed = false
		s.ia.async.PostAsync(srqattr.LowWatermarkEvent, s, api.ReasonSRQLowWatermark)
	}
}

func (s *srq) setLW(lw int) {
	s.lw, s.armed = lw, lw > 0
	s.checkLW()
}

// Resize changes the maximum number of receives (dat_srq_resize(3DAT)).
func (s *srq) Resize(n int) error {
	if err := srqattr.CheckSize(n, s.ia.dev.attr.MaxSRQWR); err != nil {
		return err
	}
	s.ia.mu.Lock()
	defer s.ia.mu.Unlock()
	if err := srqattr.CheckResize(n, s.used, s.lw); err != nil {
		return err
	}
	if n > s.max {
		if rc := C.gd_srq_resize(s.srq, C.uint32_t(n)); rc != 0 && s.ia.dev.attr.SRQResizeAllowed {
			return api.Errorf(api.InsufficientResources, api.SubResourceSRQ, "ibv_modify_srq: "+errnoText(syscallErrno(rc)))
		}
	}
	s.max = n
	return nil
}

// SetLW arms the low-watermark event (dat_srq_set_lw(3DAT)); one above
// the receives available fires at once.
func (s *srq) SetLW(lw int) error {
	s.ia.mu.Lock()
	defer s.ia.mu.Unlock()
	if err := srqattr.CheckLW(lw, s.max); err != nil {
		return err
	}
	s.setLW(lw)
	return nil
}

// Free destroys the SRQ (dat_srq_free(3DAT)); ErrInvalidState while an
// EP uses it.
func (s *srq) Free() error {
	s.ia.mu.Lock()
	defer s.ia.mu.Unlock()
	if err := srqattr.CheckFree(s.eps); err != nil {
		return err
	}
	s.destroy()
	s.ia.srqs.Remove(s)
	return nil
}

// destroy releases the ibv_srq. ia.mu is held; its EPs' QPs are gone.
func (s *srq) destroy() {
	if s.srq == nil {
		return
	}
	C.ibv_destroy_srq(s.srq)
	s.srq = nil
	C.free(unsafe.Pointer(s.sgeC))
	s.sgeC, s.sges = nil, nil
}

// SetWatermark sets the soft and hard high watermarks of receive buffers
// held by the EP (dat_ep_set_watermark(3DAT)); EP.Query reports the soft
// one. Above the soft watermark the async EVD gets
// epattr.SoftHighWatermarkEvent once per call; above the hard one the
// connection breaks. Either may happen in this call.
func (p *ep) SetWatermark(soft, hard int) error {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	p.SetWatermarks(soft, hard)
	if p.watermarks(p.recvs.Len()) {
		p.broken()
	}
	return nil
}
