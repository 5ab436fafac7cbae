package srqattr

import (
	"fmt"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/completion"
	"github.com/godat/godat/provider/kit/ring"
)

// Queue is the receive side of an SRQ that software moves: the posted
// receives in order, the size, and the one-shot low-watermark event
// (dat_srq_post_recv(3DAT), dat_srq_resize(3DAT), dat_srq_set_lw(3DAT)).
// A provider's SRQ embeds it, calls Init when it makes the SRQ, and hands
// receives to its EPs with Take. It is not safe for concurrent use: the
// provider's lock guards it.
type Queue struct {
	recvs    ring.Ring[completion.Recv]
	max      int
	maxIOV   int
	maxRecv  int // the provider's limit, for Resize
	lw       int
	armed    bool // the low-watermark event has not fired since SetLW
	lowWater func()
}

// Init sets the queue up for attr, checked by CheckCreate; maxRecv is the
// provider's largest SRQ. lowWater posts the low-watermark event (see
// LowWatermarkEvent) when it is due; a non-zero attr.LowWatermark arms it,
// and it fires at once, the queue being empty.
func (q *Queue) Init(attr api.SRQAttr, maxRecv int, lowWater func()) {
	q.max, q.maxIOV, q.maxRecv, q.lowWater = attr.MaxRecvDTOs, attr.MaxRecvIOV, maxRecv, lowWater
	q.setLW(attr.LowWatermark)
}

// Post adds a receive (dat_srq_post_recv(3DAT)); a full SRQ is
// ErrInsufficientResources. More segments than the SRQ's MaxRecvIOV are
// the registry's guard's to refuse, as every argument check (api/doc.go):
// it never passes them on.
func (q *Queue) Post(iov []api.LMRTriplet, cookie api.Cookie) error {
	if q.recvs.Len() >= q.max {
		return api.Errorf(api.InsufficientResources, api.SubResourceSRQ, fmt.Sprintf("the SRQ holds its maximum of %d receives", q.max))
	}
	w := q.recvs.PushBack()
	w.Cookie, w.Flags = cookie, 0
	w.IOV = append(w.IOV[:0], iov...)
	return nil
}

// Len returns how many receives wait in the SRQ.
func (q *Queue) Len() int { return q.recvs.Len() }

// Front returns the receive the next message will use, or nil.
func (q *Queue) Front() *completion.Recv { return q.recvs.Front() }

// Take removes the first receive, for an EP's incoming message, and fires
// the low-watermark event if fewer receives than the watermark are left.
// The queue must not be empty. The receive stays valid until the next
// Post.
func (q *Queue) Take() *completion.Recv {
	w := q.recvs.Front()
	q.recvs.PopFront()
	q.checkLW()
	return w
}

func (q *Queue) checkLW() {
	if q.armed && q.recvs.Len() < q.lw {
		q.armed = false
		q.lowWater()
	}
}

func (q *Queue) setLW(lw int) {
	q.lw, q.armed = lw, lw > 0
	q.checkLW()
}

// Resize changes the SRQ's size (dat_srq_resize(3DAT)); see CheckSize and
// CheckResize.
func (q *Queue) Resize(n int) error {
	if err := CheckSize(n, q.maxRecv); err != nil {
		return err
	}
	if err := CheckResize(n, q.recvs.Len(), q.lw); err != nil {
		return err
	}
	q.max = n
	return nil
}

// SetLW sets the low watermark and arms its event, which fires at once if
// fewer receives are available, else when a Take leaves fewer
// (dat_srq_set_lw(3DAT)); 0 disarms it. See CheckLW.
func (q *Queue) SetLW(lw int) error {
	if err := CheckLW(lw, q.max); err != nil {
		return err
	}
	q.setLW(lw)
	return nil
}

// Param returns the SRQ's parameters (dat_srq_query(3DAT)) but for its IA
// and PZ. A receive that leaves the queue completes before the next
// leaves, so the receives posted and not yet used are also those posted
// and not yet completed: both counts are Len.
func (q *Queue) Param() api.SRQParam {
	n := q.recvs.Len()
	return api.SRQParam{State: api.SRQStateOperational, MaxRecvDTOs: q.max, MaxRecvIOV: q.maxIOV,
		LowWatermark: q.lw, AvailableDTOCount: n, OutstandingDTOCount: n}
}

// Clear drops every receive, for the SRQ's Free.
func (q *Queue) Clear() { q.recvs.Clear() }
