package tcp

import (
	"fmt"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/ring"
	"github.com/godat/godat/provider/kit/srqattr"
)

// srq is a Shared Receive Queue (dat_srq_create(3DAT)); guarded by ia.mu.
type srq struct {
	api.ContextSlot
	ia     *ia
	pz     *pz
	max    int
	maxIOV int
	lw     int
	armed  bool
	recvs  ring.Ring[recvWR]
	eps    int
}

// CreateSRQ creates a shared receive queue in pz (dat_srq_create(3DAT)).
// A non-zero attr.LowWatermark arms the low-watermark event, which fires at
// once since the queue starts empty.
func (i *ia) CreateSRQ(pzArg api.PZ, attr api.SRQAttr) (api.SRQ, error) {
	if err := srqattr.CheckCreate(attr, maxRecvPerSRQ, maxIOV); err != nil {
		return nil, err
	}
	z := pzOf(pzArg)
	if z == nil {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandlePZ, "PZ handle is nil")
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if err := i.srqs.Room(); err != nil {
		return nil, err
	}
	s := &srq{ia: i, pz: z, max: attr.MaxRecvDTOs, maxIOV: attr.MaxRecvIOV}
	i.srqs.Add(s)
	s.setLW(attr.LowWatermark)
	return s, nil
}

// HandleType reports HandleSRQ (dat_get_handle_type(3DAT)).
func (s *srq) HandleType() api.HandleType { return api.HandleSRQ }

// Query returns the SRQ's parameters (dat_srq_query(3DAT)). A receive an
// EP takes is completed before the next one is taken, so the available and
// outstanding counts are the same (plus at most one receive being filled
// per EP, counted as outstanding).
func (s *srq) Query() (api.SRQParam, error) {
	s.ia.mu.Lock()
	defer s.ia.mu.Unlock()
	n := s.recvs.Len()
	return api.SRQParam{IA: s.ia, State: api.SRQStateOperational, PZ: s.pz, MaxRecvDTOs: s.max,
		MaxRecvIOV: s.maxIOV, LowWatermark: s.lw, AvailableDTOCount: n, OutstandingDTOCount: n}, nil
}

// PostRecv adds a receive buffer (dat_srq_post_recv(3DAT)); a full SRQ is
// ErrInsufficientResources. A message waiting at an EP on the SRQ is
// placed in it now.
func (s *srq) PostRecv(iov []api.LMRTriplet, cookie api.Cookie) error {
	if len(iov) > s.maxIOV {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("%d segments exceed %d", len(iov), s.maxIOV))
	}
	s.ia.mu.Lock()
	defer s.ia.mu.Unlock()
	if s.recvs.Len() >= s.max {
		return api.Errorf(api.InsufficientResources, api.SubResourceSRQ, fmt.Sprintf("the SRQ holds its maximum of %d receives", s.max))
	}
	w := s.recvs.PushBack()
	w.cookie, w.flags = cookie, 0
	w.iov = append(w.iov[:0], iov...)
	s.ia.srqCond.Broadcast()
	return nil
}

// take removes the next receive and fires the low-watermark event when
// the count drops below it. The result is valid until the next PostRecv.
func (s *srq) take() *recvWR {
	w := s.recvs.Front()
	s.recvs.PopFront()
	s.checkLW()
	return w
}

func (s *srq) checkLW() {
	if s.armed && s.recvs.Len() < s.lw {
		s.armed = false
		s.ia.postAsync(srqattr.LowWatermarkEvent, s, api.ReasonSRQLowWatermark)
	}
}

func (s *srq) setLW(lw int) {
	s.lw, s.armed = lw, lw > 0
	s.checkLW()
}

// Resize changes the maximum number of receives (dat_srq_resize(3DAT)).
func (s *srq) Resize(n int) error {
	if err := srqattr.CheckSize(n, maxRecvPerSRQ); err != nil {
		return err
	}
	s.ia.mu.Lock()
	defer s.ia.mu.Unlock()
	if err := srqattr.CheckResize(n, s.recvs.Len(), s.lw); err != nil {
		return err
	}
	s.max = n
	return nil
}

// SetLW sets the low watermark and arms its one-shot event
// (dat_srq_set_lw(3DAT)); it goes to the async EVD as
// AsyncErrorData{Object: the SRQ, Reason: api.ReasonSRQLowWatermark}.
func (s *srq) SetLW(lw int) error {
	s.ia.mu.Lock()
	defer s.ia.mu.Unlock()
	if err := srqattr.CheckLW(lw, s.max); err != nil {
		return err
	}
	s.setLW(lw)
	return nil
}

// Free destroys the SRQ and its receives (dat_srq_free(3DAT)):
// ErrInvalidState (SubStateSRQInUse) while an EP uses it.
func (s *srq) Free() error {
	s.ia.mu.Lock()
	defer s.ia.mu.Unlock()
	if s.eps > 0 {
		return api.Errorf(api.InvalidState, api.SubStateSRQInUse, fmt.Sprintf("%d EP(s) use the SRQ", s.eps))
	}
	s.recvs.Clear()
	s.ia.srqs.Remove(s)
	return nil
}
