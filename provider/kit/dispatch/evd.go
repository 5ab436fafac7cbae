package dispatch

import (
	"context"
	"sync"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/eventq"
)

// EVD is the half of an Event Dispatcher that every software provider
// writes alike: its consumer context, queue, stream flags and CNO link, and
// the calls that only touch those (dat_evd_query(3DAT),
// dat_evd_resize(3DAT), dat_evd_post_se(3DAT), dat_evd_dequeue(3DAT),
// dat_evd_wait(3DAT), dat_evd_modify_cno(3DAT), and QueueControl's). A
// provider's EVD type embeds it, calls Init when it makes the EVD, and adds
// Free and what its completions need: a provider whose completions arrive
// only when the consumer calls in (a CQ to drain, sockets to read) defines
// its own Dequeue or Wait and calls the base's from it.
//
// The CNO link and the freed mark are guarded by the provider lock given
// to Init; Query and ModifyCNO take it, SetCNO and Release expect it held.
// Dequeue, Wait, PostSE and Post take only the queue's lock. Calls on a
// released EVD fail with ErrInvalidHandle (or, on the queue, ErrAbort), so
// a provider stays safe when called without the registry's guard.
type EVD struct {
	api.ContextSlot
	QueueControl // Q, the event queue
	flags        api.EVDFlags
	maxQLen      int
	mu           sync.Locker
	ia           api.IA
	self         api.EVD       // the provider's object, named in overflow reports
	async        *eventq.Queue // the queue of the IA's async EVD
	cno          *CNO
	freed        bool
}

var errEVDFreed = api.Errorf(api.InvalidHandle, api.SubHandleEVDRequest, "EVD was freed")

// Init makes the EVD's queue of qlen events (at most maxQLen after a
// Resize) for the streams in flags. self is the provider's EVD object,
// ia its IA, mu the lock that guards the IA's objects, and async the
// IA's async EVD, where overflows are reported (nil: this is the async
// EVD).
func (e *EVD) Init(self api.EVD, ia api.IA, mu sync.Locker, qlen, maxQLen int, flags api.EVDFlags, async *EVD) {
	e.Q = eventq.New(qlen, self)
	e.flags, e.maxQLen, e.mu, e.ia, e.self = flags, maxQLen, mu, ia, self
	e.async = e.Q
	if async != nil {
		e.async = async.Q
	}
}

// Flags returns the event streams the EVD accepts.
func (e *EVD) Flags() api.EVDFlags { return e.flags }

// HandleType reports HandleEVD (dat_get_handle_type(3DAT)).
func (e *EVD) HandleType() api.HandleType { return api.HandleEVD }

// Query returns the EVD's queue length, state, CNO, stream flags and IA
// (dat_evd_query(3DAT)).
func (e *EVD) Query() (api.EVDParam, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.freed {
		return api.EVDParam{}, errEVDFreed
	}
	p := Param(e.Q, e.flags, e.cno)
	p.IA = e.ia
	return p, nil
}

// Resize changes the queue length without losing events
// (dat_evd_resize(3DAT)); see the package function Resize.
func (e *EVD) Resize(qlen int) error { return Resize(e.Q, qlen, e.maxQLen) }

// PostSE queues a software event (dat_evd_post_se(3DAT)); see the
// package function PostSE.
func (e *EVD) PostSE(ev *api.Event) error { return PostSE(e.Q, e.flags, ev) }

// Dequeue removes the first event without blocking
// (dat_evd_dequeue(3DAT)).
func (e *EVD) Dequeue(ev *api.Event) error {
	return e.Q.Dequeue(ev)
}

// Wait blocks until threshold events are queued and removes the first
// (dat_evd_wait(3DAT)); see eventq.Queue.Wait.
func (e *EVD) Wait(ctx context.Context, threshold int, ev *api.Event) (int, error) {
	return e.Q.Wait(ctx, threshold, ev)
}

// ModifyCNO makes the EVD feed the CNO x, or none for nil
// (dat_evd_modify_cno(3DAT)); x must be a live CNOObject of the IA.
func (e *EVD) ModifyCNO(x api.CNO) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.freed {
		return errEVDFreed
	}
	c, err := AsCNO(x, e.ia)
	if err != nil {
		return err
	}
	e.SetCNO(c)
	return nil
}

// SetCNO makes the EVD feed c (nil: none); the provider lock is held.
// Create calls it with the CNO argument (see AsCNO), Free with nil.
func (e *EVD) SetCNO(c *CNO) { e.cno = Attach(e.Q, e.cno, c) }

// Release is the end of the EVD, for the provider's Free and IA Close:
// it stops feeding its CNO, closes the queue (waiters return ErrAbort,
// queued events are dropped) and marks the EVD freed. It fails with
// ErrInvalidHandle when the EVD is released already. The provider lock
// is held.
func (e *EVD) Release() error {
	if e.freed {
		return errEVDFreed
	}
	e.SetCNO(nil)
	e.freed = true
	e.Q.Close()
	return nil
}

// ReleaseUnlessAsync is the common part of the provider's Free
// (dat_evd_free(3DAT)): the IA's async EVD belongs to the IA and is
// refused with ErrInvalidState, unchanged; any other EVD is released
// (Release). The provider lock is held.
func (e *EVD) ReleaseUnlessAsync() error {
	if e.async == e.Q && !e.freed {
		return api.Errorf(api.InvalidState, api.SubStateEVDInUse, "the async EVD belongs to the IA")
	}
	return e.Release()
}

// Released reports whether Release has run; the provider lock is held.
func (e *EVD) Released() bool { return e.freed }

// CNO returns the CNO the EVD feeds, nil for none; the provider lock is
// held.
func (e *EVD) CNO() *CNO { return e.cno }

// Post delivers an event from a provider stream (see the package function
// Post: an overflow is reported on the IA's async EVD).
func (e *EVD) Post(ev *api.Event, notify bool) { Post(e.Q, ev, notify, e.self, e.async) }

// Created is what Create asks of a provider's EVD type: a pointer to a
// type that embeds EVD.
type Created interface {
	comparable
	api.EVD
	SetCNO(*CNO)
}

// Create is an IA's CreateEVD (dat_evd_create(3DAT)) for a provider whose
// EVD is the base and what make adds to it. It checks qlen against
// maxQLen (CheckCreate) and then, under the IA's lock and only
// while it is open (ErrIAClosed otherwise): the CNO cnoArg names, a live
// one of self or nil (AsCNO); room in evds; then it adds the EVD make
// returns, which runs with the lock held, to evds and links it to the
// CNO. base is self's kit.IA. On an error nothing is made or added.
func Create[E Created](self api.IA, base *kit.IA, evds *kit.Set[E], qlen, maxQLen int, flags api.EVDFlags, cnoArg api.CNO, make func() E) (api.EVD, error) {
	if err := CheckCreate(qlen, maxQLen); err != nil {
		return nil, err
	}
	var e E
	err := base.WhileOpen(func() error {
		c, err := AsCNO(cnoArg, self)
		if err != nil {
			return err
		}
		if err := evds.Room(); err != nil {
			return err
		}
		e = make()
		evds.Add(e)
		e.SetCNO(c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// PostAsync posts the asynchronous event n about obj, with reason, to e,
// which is an IA's async EVD, and notifies its waiters; an overflow is
// counted as Post counts it.
func (e *EVD) PostAsync(n api.EventNumber, obj api.Object, reason int) {
	ev := api.Event{Number: n, Async: api.AsyncErrorData{Object: obj, Reason: reason}}
	e.Post(&ev, true)
}
