package loopback

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/srqattr"
)

// srq is a Shared Receive Queue (dat_srq_create(3DAT)); its fields are
// guarded by fabric.mu. The kit's base gives it HandleType, Query, Resize
// and SetLW.
type srq struct {
	srqattr.SRQ[*ia, *pz]
	eps []*ep // EPs taking receives from it, in creation order
}

// CreateSRQ creates a shared receive queue in pz holding up to
// attr.MaxRecvDTOs receives (dat_srq_create(3DAT)). A non-zero
// attr.LowWatermark arms the low-watermark event, which then fires at once
// since the queue starts empty.
func (i *ia) CreateSRQ(pzArg api.PZ, attr api.SRQAttr) (api.SRQ, error) {
	return i.srqs.Create(pzArg, attr, &srq{})
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

// Free destroys the SRQ and the receives on it (dat_srq_free(3DAT)):
// ErrInvalidState (SubStateSRQInUse) while an EP uses it.
func (s *srq) Free() error {
	return kit.Free(&fabric.mu, &s.IA.srqs, s, func() error { return srqattr.CheckFree(len(s.eps)) }, s.Clear)
}
