package tcp

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/srqattr"
)

// srq is a Shared Receive Queue (dat_srq_create(3DAT)); guarded by ia.mu.
// The kit's base gives it HandleType, Query, Resize and SetLW.
type srq struct {
	srqattr.SRQ[*ia, *pz]
	eps int // EPs on the SRQ
}

// CreateSRQ creates a shared receive queue in pz (dat_srq_create(3DAT)).
// A non-zero attr.LowWatermark arms the low-watermark event, which fires at
// once since the queue starts empty.
func (i *ia) CreateSRQ(pzArg api.PZ, attr api.SRQAttr) (api.SRQ, error) {
	return i.srqs.Create(pzArg, attr, &srq{})
}

// PostRecv adds a receive buffer (dat_srq_post_recv(3DAT)); a full SRQ is
// ErrInsufficientResources. A message waiting at an EP on the SRQ is
// placed in it now.
func (s *srq) PostRecv(iov []api.LMRTriplet, cookie api.Cookie) error {
	s.IA.mu.Lock()
	defer s.IA.mu.Unlock()
	if err := s.Post(iov, cookie); err != nil {
		return err
	}
	s.IA.srqCond.Broadcast()
	return nil
}

// Free destroys the SRQ and its receives (dat_srq_free(3DAT)):
// ErrInvalidState (SubStateSRQInUse) while an EP uses it.
func (s *srq) Free() error {
	return kit.Free(&s.IA.mu, &s.IA.srqs, s, func() error { return srqattr.CheckFree(s.eps) }, s.Clear)
}
