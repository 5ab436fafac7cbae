package loopback

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/dispatch"
)

// evd is an Event Dispatcher: the kit's EVD (queue, CNO link, freed mark
// and the calls on them). The hot calls (Dequeue, Wait, PostSE) go to the
// queue without taking fabric.mu.
type evd struct {
	api.ContextSlot
	dispatch.EVD

	ia *ia
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

// Free destroys the EVD and its queued events (dat_evd_free(3DAT)); the
// guard has refused it while an EP, PSP or RSP reports to it. The async
// EVD cannot be freed (ErrInvalidState). A blocked waiter returns
// ErrAbort.
func (e *evd) Free() error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if e == e.ia.async && !e.Released() {
		return api.Errorf(api.InvalidState, api.SubStateEVDInUse, "the async EVD belongs to the IA")
	}
	if err := e.Release(); err != nil {
		return err
	}
	e.ia.evds.Remove(e)
	return nil
}

// CreateCNO creates a CNO with wait agent agent, nil for none
// (dat_cno_create(3DAT)); see dispatch.CNOObject.
func (i *ia) CreateCNO(agent api.WaitAgent) (api.CNO, error) { return i.cnos.Create(agent) }

// CreateCNOFD creates a CNO that owns a file descriptor, readable while
// it holds a trigger (dat_cno_fd_create, DAT 2.0); see
// dispatch.NewCNOObject.
func (i *ia) CreateCNOFD() (api.CNO, int, error) { return i.cnos.CreateFD() }
