package completion

import (
	"fmt"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/ring"
)

// Recvs is the queue of receives posted to an EP that takes none from an
// SRQ, in the order messages use them. The EP's lock guards it.
type Recvs struct{ ring.Ring[Recv] }

// Post is what dat_ep_post_recv(3DAT) does with r on an EP in state s
// that may hold max receives, alike in every software provider: an EP on
// an SRQ takes none of its own (ErrInvalidState); on a DISCONNECTED EP
// the receive is flushed at once, handed to flush and not kept; with max
// posted it is refused with ErrInsufficientResources. Otherwise it joins
// the queue, its IOV copied into a slot's reused storage, and Post
// reports queued.
func (q *Recvs) Post(s api.EPState, onSRQ bool, max int, r Recv, flush func(*Recv)) (queued bool, err error) {
	switch {
	case onSRQ:
		return false, api.Errorf(api.InvalidState, api.NoSubtype, "the EP takes its receives from an SRQ; post them there")
	case s == api.EPDisconnected:
		flushed := r // only this branch's copy escapes to flush
		flush(&flushed)
		return false, nil
	case q.Len() >= max:
		return false, api.Errorf(api.InsufficientResources, api.NoSubtype, fmt.Sprintf("the EP already has %d receives posted", q.Len()))
	}
	slot := q.PushBack()
	slot.Cookie, slot.Flags = r.Cookie, r.Flags
	slot.IOV = append(slot.IOV[:0], r.IOV...)
	return true, nil
}

// Take removes and returns the first receive, which must exist; the
// result stays valid until the next Post.
func (q *Recvs) Take() *Recv {
	r := q.Front()
	q.PopFront()
	return r
}

// Flush hands every queued receive to flush, first to last, and empties
// the queue: the receives of an EP whose connection ended.
func (q *Recvs) Flush(flush func(*Recv)) {
	for q.Len() > 0 {
		flush(q.Take())
	}
}
