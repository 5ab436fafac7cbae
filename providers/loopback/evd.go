package loopback

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/dispatch"
)

// evd is an Event Dispatcher: the kit's EVD (queue, CNO link, freed mark
// and the calls on them) and the EPs and service points that report to
// it. The hot calls (Dequeue, Wait, PostSE) go to the queue
// without taking fabric.mu; the fields here are guarded by fabric.mu.
type evd struct {
	api.ContextSlot
	dispatch.EVD

	ia    *ia
	users int // EPs, PSPs and RSPs that report to it
}

// newEVD makes an EVD of i; async is the IA's async EVD, nil when this is
// it. fabric.mu is held (or i is not yet visible).
func newEVD(i *ia, qlen int, flags api.EVDFlags, async *dispatch.EVD) *evd {
	e := &evd{ia: i}
	e.Init(e, i, &fabric.mu, qlen, providerLimits.MaxEVDQLen, flags, async)
	return e
}

// CreateEVD creates an EVD of qlen events accepting the streams in flags,
// feeding cno if it is not nil (dat_evd_create in libdat(3LIB)).
func (i *ia) CreateEVD(qlen int, cnoArg api.CNO, flags api.EVDFlags) (api.EVD, error) {
	return dispatch.Create(i, &i.IA, &i.evds, qlen, providerLimits.MaxEVDQLen, flags, cnoArg, func() *evd { return newEVD(i, qlen, flags, &i.async.EVD) })
}

// post delivers an event from a provider stream. A nil EVD (an EP created
// without one) discards it. An overflow discards the event and, the first
// time in an episode, posts ASYNC_ERROR_EVD_OVERFLOW naming this EVD to
// the IA's async EVD (see package eventq). fabric.mu is held.
func (e *evd) post(ev *api.Event, notify bool) {
	if e != nil {
		e.Post(ev, notify)
	}
}

// Free destroys the EVD and its queued events (dat_evd_free(3DAT)):
// ErrInvalidState (SubStateEVDInUse) while an EP, PSP or RSP reports to it,
// and always for the async EVD. A blocked waiter returns ErrAbort.
func (e *evd) Free() error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if !e.Released() && (e.users > 0 || e == e.ia.async) {
		return api.Errorf(api.InvalidState, api.SubStateEVDInUse, "the EVD is in use")
	}
	if err := e.Release(); err != nil {
		return err
	}
	e.ia.evds.Remove(e)
	return nil
}

// asEVD converts an EVD argument; nil stays nil.
func asEVD(x api.EVD, i *ia) (*evd, error) {
	if x == nil {
		return nil, nil
	}
	e, ok := x.(*evd)
	if !ok || e == nil || e.Released() || e.ia != i {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandleEVDRequest, "not a live EVD of this IA")
	}
	return e, nil
}

// use adjusts the user count of a possibly nil EVD. fabric.mu is held.
func (e *evd) use(d int) {
	if e != nil {
		e.users += d
	}
}

// CreateCNO creates a CNO with wait agent agent, nil for none
// (dat_cno_create(3DAT)); see dispatch.CNOObject.
func (i *ia) CreateCNO(agent api.WaitAgent) (api.CNO, error) { return i.cnos.Create(agent) }

// CreateCNOFD creates a CNO that owns a file descriptor, readable while
// it holds a trigger (dat_cno_fd_create, DAT 2.0); see
// dispatch.NewCNOObject.
func (i *ia) CreateCNOFD() (api.CNO, int, error) { return i.cnos.CreateFD() }
