package tcp

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/srqattr"
)

// srq is a Shared Receive Queue (dat_srq_create(3DAT)); guarded by ia.mu.
type srq struct {
	api.ContextSlot
	srqattr.Queue // the posted receives, size and low watermark

	ia  *ia
	pz  *pz
	eps int
}

// CreateSRQ creates a shared receive queue in pz (dat_srq_create(3DAT)).
// A non-zero attr.LowWatermark arms the low-watermark event, which fires at
// once since the queue starts empty.
func (i *ia) CreateSRQ(pzArg api.PZ, attr api.SRQAttr) (api.SRQ, error) {
	if err := srqattr.CheckCreate(attr, providerLimits.MaxRecvPerSRQ, providerLimits.MaxIOV); err != nil {
		return nil, err
	}
	z, err := kit.PZArg[*pz](pzArg)
	if err != nil {
		return nil, err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if err := i.srqs.Room(); err != nil {
		return nil, err
	}
	s := &srq{ia: i, pz: z}
	i.srqs.Add(s)
	s.Init(attr, providerLimits.MaxRecvPerSRQ, func() { i.async.PostAsync(srqattr.LowWatermarkEvent, s, api.ReasonSRQLowWatermark) })
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
	prm := s.Param()
	prm.IA, prm.PZ = s.ia, s.pz
	return prm, nil
}

// PostRecv adds a receive buffer (dat_srq_post_recv(3DAT)); a full SRQ is
// ErrInsufficientResources. A message waiting at an EP on the SRQ is
// placed in it now.
func (s *srq) PostRecv(iov []api.LMRTriplet, cookie api.Cookie) error {
	s.ia.mu.Lock()
	defer s.ia.mu.Unlock()
	if err := s.Post(iov, cookie); err != nil {
		return err
	}
	s.ia.srqCond.Broadcast()
	return nil
}

// Resize changes the maximum number of receives (dat_srq_resize(3DAT)).
func (s *srq) Resize(n int) error {
	s.ia.mu.Lock()
	defer s.ia.mu.Unlock()
	return s.Queue.Resize(n)
}

// SetLW sets the low watermark and arms its one-shot event
// (dat_srq_set_lw(3DAT)); it goes to the async EVD as
// AsyncErrorData{Object: the SRQ, Reason: api.ReasonSRQLowWatermark}.
func (s *srq) SetLW(lw int) error {
	s.ia.mu.Lock()
	defer s.ia.mu.Unlock()
	return s.Queue.SetLW(lw)
}

// Free destroys the SRQ and its receives (dat_srq_free(3DAT)):
// ErrInvalidState (SubStateSRQInUse) while an EP uses it.
func (s *srq) Free() error {
	s.ia.mu.Lock()
	defer s.ia.mu.Unlock()
	if err := srqattr.CheckFree(s.eps); err != nil {
		return err
	}
	s.Clear()
	s.ia.srqs.Remove(s)
	return nil
}
