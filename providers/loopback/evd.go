package loopback

import (
	"context"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/dispatch"
	"github.com/godat/godat/provider/kit/eventq"
)

// evd is an Event Dispatcher over an eventq.Queue. The hot calls (Dequeue,
// Wait, PostSE) go to the queue without taking fabric.mu; the fields after
// the queue are guarded by fabric.mu.
type evd struct {
	api.ContextSlot
	dispatch.QueueControl // Q, the event queue

	ia    *ia
	flags api.EVDFlags
	cno   *dispatch.CNO // the CNO it feeds, or nil
	users int           // EPs, PSPs and RSPs that report to it
	freed bool
}

func newEVD(i *ia, qlen int, flags api.EVDFlags) *evd {
	e := &evd{ia: i, flags: flags}
	e.Q = eventq.New(qlen, e)
	return e
}

var errEVDFreed = api.Errorf(api.InvalidHandle, api.SubHandleEVDRequest, "EVD was freed")

// CreateEVD creates an EVD of qlen events accepting the streams in flags,
// feeding cno if it is not nil (dat_evd_create in libdat(3LIB)).
func (i *ia) CreateEVD(qlen int, cnoArg api.CNO, flags api.EVDFlags) (api.EVD, error) {
	if err := dispatch.CheckCreate(qlen, maxEVDQLen, flags); err != nil {
		return nil, err
	}
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if i.closed {
		return nil, errIAClosed
	}
	c, err := dispatch.AsCNO(cnoArg, i)
	if err != nil {
		return nil, err
	}
	if err := i.evds.Room(); err != nil {
		return nil, err
	}
	e := newEVD(i, qlen, flags)
	i.evds.Add(e)
	e.cno = dispatch.Attach(e.Q, nil, c)
	return e, nil
}

// post delivers an event from a provider stream. A nil EVD (an EP created
// without one) discards it. An overflow discards the event and, the first
// time in an episode, posts ASYNC_ERROR_EVD_OVERFLOW naming this EVD to
// the IA's async EVD (see package eventq). fabric.mu is held.
func (e *evd) post(ev *api.Event, notify bool) {
	if e == nil {
		return
	}
	dispatch.Post(e.Q, ev, notify, e, e.ia.async.Q)
}

// postAsync posts an asynchronous error event about obj to the IA's async
// EVD. fabric.mu is held.
func (i *ia) postAsync(n api.EventNumber, obj api.Object, reason int) {
	ev := api.Event{Number: n, Async: api.AsyncErrorData{Object: obj, Reason: reason}}
	i.async.post(&ev, true)
}

// HandleType reports HandleEVD (dat_get_handle_type(3DAT)).
func (e *evd) HandleType() api.HandleType { return api.HandleEVD }

// Query returns the EVD's queue length, state, CNO and stream flags
// (dat_evd_query(3DAT)).
func (e *evd) Query() (api.EVDParam, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if e.freed {
		return api.EVDParam{}, errEVDFreed
	}
	p := dispatch.Param(e.Q, e.flags, e.cno)
	p.IA = e.ia
	return p, nil
}

// Resize changes the queue length without losing events
// (dat_evd_resize(3DAT)); ErrInvalidState if more events are queued.
func (e *evd) Resize(qlen int) error {
	return dispatch.Resize(e.Q, qlen, maxEVDQLen)
}

// PostSE queues a software event (dat_evd_post_se(3DAT)): ErrQueueFull
// when full, without an overflow event; ErrInvalidParameter if the EVD was
// not created with EVDSoftware.
func (e *evd) PostSE(ev *api.Event) error {
	return dispatch.PostSE(e.Q, e.flags, ev)
}

var errNilEvent = api.Errorf(api.InvalidParameter, api.SubArg2, "event pointer is nil")

// Dequeue removes the first event without blocking (dat_evd_dequeue(3DAT)).
func (e *evd) Dequeue(ev *api.Event) error {
	if ev == nil {
		return errNilEvent
	}
	return e.Q.Dequeue(ev)
}

// Wait blocks until threshold events are queued and removes the first
// (dat_evd_wait(3DAT)); see eventq.Queue.Wait for the error cases.
func (e *evd) Wait(ctx context.Context, threshold int, ev *api.Event) (int, error) {
	if ev == nil || ctx == nil {
		return 0, api.Errorf(api.InvalidParameter, api.NoSubtype, "nil context or event pointer")
	}
	return e.Q.Wait(ctx, threshold, ev)
}

// ModifyCNO changes the CNO the EVD feeds; nil detaches it
// (dat_evd_modify_cno(3DAT)).
func (e *evd) ModifyCNO(cnoArg api.CNO) error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if e.freed {
		return errEVDFreed
	}
	c, err := dispatch.AsCNO(cnoArg, e.ia)
	if err != nil {
		return err
	}
	e.cno = dispatch.Attach(e.Q, e.cno, c)
	return nil
}

// Free destroys the EVD and its queued events (dat_evd_free(3DAT)):
// ErrInvalidState (SubStateEVDInUse) while an EP, PSP or RSP reports to it,
// and always for the async EVD. A blocked waiter returns ErrAbort.
func (e *evd) Free() error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if e.freed {
		return errEVDFreed
	}
	if e.users > 0 || e == e.ia.async {
		return api.Errorf(api.InvalidState, api.SubStateEVDInUse, "the EVD is in use")
	}
	e.cno = dispatch.Attach(e.Q, e.cno, nil)
	e.freed = true
	e.Q.Close()
	e.ia.evds.Remove(e)
	return nil
}

// asEVD converts an EVD argument; nil stays nil.
func asEVD(x api.EVD, i *ia) (*evd, error) {
	if x == nil {
		return nil, nil
	}
	e, ok := x.(*evd)
	if !ok || e == nil || e.freed || e.ia != i {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandleEVDRequest, "not a live EVD of this IA")
	}
	return e, nil
}

// evdOrNil returns e as an api.EVD, or a nil interface for a nil e.
func evdOrNil(e *evd) api.EVD {
	if e == nil {
		return nil
	}
	return e
}

// use adjusts the user count of a possibly nil EVD. fabric.mu is held.
func (e *evd) use(d int) {
	if e != nil {
		e.users += d
	}
}

// CreateCNO creates a CNO with wait agent agent, nil for none
// (dat_cno_create(3DAT)); see dispatch.CNOObject.
func (i *ia) CreateCNO(agent api.WaitAgent) (api.CNO, error) {
	return dispatch.CNOResult(i.newCNO(agent, false))
}

// CreateCNOFD creates a CNO that owns a file descriptor, readable while
// it holds a trigger (dat_cno_fd_create, DAT 2.0); see
// dispatch.NewCNOObject.
func (i *ia) CreateCNOFD() (api.CNO, int, error) {
	return dispatch.FDCNOResult(i.newCNO(nil, true))
}

// newCNO creates a CNO of the IA, with a file descriptor if fd is set.
func (i *ia) newCNO(agent api.WaitAgent, fd bool) (*dispatch.CNOObject, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if i.closed {
		return nil, errIAClosed
	}
	if err := i.cnos.Room(); err != nil {
		return nil, err
	}
	c, err := dispatch.NewCNOObject(agent, fd, i, &fabric.mu, func(c *dispatch.CNOObject) { i.cnos.Remove(c) })
	if err != nil {
		return nil, err
	}
	i.cnos.Add(c)
	return c, nil
}
