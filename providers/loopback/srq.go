package loopback

import (
	"fmt"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/ring"
	"github.com/godat/godat/provider/kit/srqattr"
)

// srq is a Shared Receive Queue (dat_srq_create(3DAT)). All fields are
// guarded by fabric.mu.
type srq struct {
	api.ContextSlot
	ia     *ia
	pz     *pz
	max    int
	maxIOV int
	lw     int
	armed  bool // the low-watermark event has not fired since SetLW
	recvs  ring.Ring[recvWR]
	eps    []*ep // EPs taking receives from it, in creation order
	freed  bool
}

var errSRQFreed = api.Errorf(api.InvalidHandle, api.SubHandleSRQ, "SRQ was freed")

// CreateSRQ creates a shared receive queue in pz holding up to
// attr.MaxRecvDTOs receives (dat_srq_create(3DAT)). A non-zero
// attr.LowWatermark arms the low-watermark event, which then fires at once
// since the queue starts empty.
func (i *ia) CreateSRQ(pzArg api.PZ, attr api.SRQAttr) (api.SRQ, error) {
	if err := srqattr.CheckCreate(attr, maxRecvPerSRQ, maxIOV); err != nil {
		return nil, err
	}
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if i.closed {
		return nil, errIAClosed
	}
	z, err := asPZ(pzArg, i)
	if err != nil {
		return nil, err
	}
	if z == nil {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandlePZ, "PZ handle is nil")
	}
	if err := i.srqs.Room(); err != nil {
		return nil, err
	}
	s := &srq{ia: i, pz: z, max: attr.MaxRecvDTOs, maxIOV: attr.MaxRecvIOV}
	i.srqs.Add(s)
	z.users++
	s.setLW(attr.LowWatermark)
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
	if s.freed {
		return api.SRQParam{}, errSRQFreed
	}
	n := s.recvs.Len()
	return api.SRQParam{IA: s.ia, State: api.SRQStateOperational, PZ: s.pz, MaxRecvDTOs: s.max,
		MaxRecvIOV: s.maxIOV, LowWatermark: s.lw, AvailableDTOCount: n, OutstandingDTOCount: n}, nil
}

// PostRecv adds a receive buffer (dat_srq_post_recv(3DAT)); it completes
// on the receive EVD of the EP that uses it, signalled unless that EP is
// configured for solicited wait and the send was not solicited. A full SRQ
// is ErrInsufficientResources. Sends waiting for a receive at EPs on the
// SRQ are delivered now.
func (s *srq) PostRecv(iov []api.LMRTriplet, cookie api.Cookie) error {
	if len(iov) > maxIOV {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("%d segments exceed %d", len(iov), maxIOV))
	}
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if s.freed {
		return errSRQFreed
	}
	if s.recvs.Len() >= s.max {
		return api.Errorf(api.InsufficientResources, api.SubResourceSRQ, fmt.Sprintf("the SRQ holds its maximum of %d receives", s.max))
	}
	w := s.recvs.PushBack()
	w.cookie, w.flags = cookie, 0
	w.iov = append(w.iov[:0], iov...)
	for _, p := range s.eps {
		if q := p.peer; q != nil && q.reqs.Len() > 0 {
			q.pump()
			if s.recvs.Len() == 0 {
				break
			}
		}
	}
	return nil
}

// take removes the next receive for an EP's incoming message and fires
// the low-watermark event if the count dropped below it. The result stays
// valid until the next PostRecv. fabric.mu is held.
func (s *srq) take() *recvWR {
	w := s.recvs.Front()
	s.recvs.PopFront()
	s.checkLW()
	return w
}

// checkLW fires the armed low-watermark event when fewer receives than
// the watermark are available.
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

// Resize changes the maximum number of receives (dat_srq_resize(3DAT)):
// ErrInvalidState if more receives are posted, or the new size is below
// the low watermark.
func (s *srq) Resize(n int) error {
	if err := srqattr.CheckSize(n, maxRecvPerSRQ); err != nil {
		return err
	}
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if s.freed {
		return errSRQFreed
	}
	if err := srqattr.CheckResize(n, s.recvs.Len(), s.lw); err != nil {
		return err
	}
	s.max = n
	return nil
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
	if s.freed {
		return errSRQFreed
	}
	if err := srqattr.CheckLW(lw, s.max); err != nil {
		return err
	}
	s.setLW(lw)
	return nil
}

// Free destroys the SRQ and the receives on it (dat_srq_free(3DAT)):
// ErrInvalidState (SubStateSRQInUse) while an EP uses it.
func (s *srq) Free() error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if s.freed {
		return errSRQFreed
	}
	if len(s.eps) > 0 {
		return api.Errorf(api.InvalidState, api.SubStateSRQInUse, fmt.Sprintf("%d EP(s) use the SRQ", len(s.eps)))
	}
	s.freed = true
	s.recvs.Clear()
	s.pz.users--
	s.ia.srqs.Remove(s)
	return nil
}
