package loopback

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/srqattr"
)

// srq is a Shared Receive Queue (dat_srq_create(3DAT)). All fields are
// guarded by fabric.mu.
type srq struct {
	api.ContextSlot
	srqattr.Queue // the posted receives, size and low watermark

	ia  *ia
	pz  *pz
	eps []*ep // EPs taking receives from it, in creation order
}

// CreateSRQ creates a shared receive queue in pz holding up to
// attr.MaxRecvDTOs receives (dat_srq_create(3DAT)). A non-zero
// attr.LowWatermark arms the low-watermark event, which then fires at once
// since the queue starts empty.
func (i *ia) CreateSRQ(pzArg api.PZ, attr api.SRQAttr) (api.SRQ, error) {
	if err := srqattr.CheckCreate(attr, providerLimits.MaxRecvPerSRQ, providerLimits.MaxIOV); err != nil {
		return nil, err
	}
	z, err := kit.PZArg[*pz](pzArg)
	if err != nil {
		return nil, err
	}
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
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

// Query returns the SRQ's parameters (dat_srq_query(3DAT)). A receive
// leaves the SRQ and completes in the same instant, so
// AvailableDTOCount, the receives posted and not yet used, is also the
// number posted and not yet completed, which OutstandingDTOCount reports.
func (s *srq) Query() (api.SRQParam, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	prm := s.Param()
	prm.IA, prm.PZ = s.ia, s.pz
	return prm, nil
}

// PostRecv adds a receive buffer (dat_srq_post_recv(3DAT)); it completes
// on the receive EVD of the EP that uses it, signalled unless that EP is
// configured for solicited wait and the send was not solicited. A full SRQ
// is ErrInsufficientResources. Sends waiting for a receive at EPs on the
// SRQ are delivered now.
func (s *srq) PostRecv(iov []api.LMRTriplet, cookie api.Cookie) error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if err := s.Post(iov, cookie); err != nil {
		return err
	}
	for _, p := range s.eps {
		if q := p.peer; q != nil && q.reqs.Len() > 0 {
			q.pump()
			if s.Len() == 0 {
				break
			}
		}
	}
	return nil
}

// Resize changes the maximum number of receives (dat_srq_resize(3DAT)):
// ErrInvalidState if more receives are posted, or the new size is below
// the low watermark.
func (s *srq) Resize(n int) error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	return s.Queue.Resize(n)
}

// SetLW sets the low watermark and arms its one-shot event, which fires at
// once if fewer receives are available, else when an EP takes one leaving
// fewer (dat_srq_set_lw(3DAT)). It goes to the IA's async EVD as an
// asynchronous event with AsyncErrorData{Object: the SRQ, Reason:
// api.ReasonSRQLowWatermark}. 0 disarms it; above MaxRecvDTOs is
// ErrInvalidParameter.
func (s *srq) SetLW(lw int) error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	return s.Queue.SetLW(lw)
}

// Free destroys the SRQ and the receives on it (dat_srq_free(3DAT)):
// ErrInvalidState (SubStateSRQInUse) while an EP uses it.
func (s *srq) Free() error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if err := srqattr.CheckFree(len(s.eps)); err != nil {
		return err
	}
	s.Clear()
	s.ia.srqs.Remove(s)
	return nil
}
