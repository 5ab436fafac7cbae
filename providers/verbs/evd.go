//go:build verbs && cgo

package verbs

import (
	"context"
	"sync/atomic"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/dispatch"
	"github.com/godat/godat/provider/kit/eventq"
)

// evd is an Event Dispatcher (dat_evd_create(3DAT)): the kit's EVD, whose
// queue takes software, async and connection events directly, with a CQ
// for completions that its own Dequeue, Wait and ModifyCNO look after.
type evd struct {
	dispatch.EVD

	ia *ia
	cq *cq // for DTO and RMR bind completions; nil without those streams
	// cnoFed is cno != nil, for the CQ's watcher (it keeps such a CQ armed).
	cnoFed atomic.Bool
	// waiting counts the Waits in progress (the watcher keeps the CQ armed
	// for them).
	waiting atomic.Int32
}

// newEVD makes an EVD of i; async is the IA's async EVD, nil when this is
// it.
func newEVD(i *ia, qlen int, flags api.EVDFlags, async *dispatch.EVD) *evd {
	e := &evd{ia: i}
	e.Init(e, i, &i.mu, qlen, i.dev.attr.MaxCQE, flags, async)
	return e
}

// CreateEVD creates an EVD of qlen events for the streams in flags,
// feeding cno if it is not nil (dat_evd_create(3DAT)). qlen is bounded by
// the device's completion queue depth.
func (i *ia) CreateEVD(qlen int, cnoArg api.CNO, flags api.EVDFlags) (api.EVD, error) {
	if err := dispatch.CheckCreate(qlen, i.dev.attr.MaxCQE); err != nil {
		return nil, err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	cn, err := dispatch.AsCNO(cnoArg, i)
	if err != nil {
		return nil, err
	}
	if err := i.evds.Room(); err != nil {
		return nil, err
	}
	e := newEVD(i, qlen, flags, &i.async.EVD)
	if flags&(api.EVDDTO|api.EVDRMRBind) != 0 {
		c, err := newCQ(e, qlen)
		if err != nil {
			return nil, err
		}
		e.cq = c
	}
	i.evds.Add(e)
	e.attachCNO(cn)
	return e, nil
}

// attachCNO makes the EVD feed c (nil: no CNO), keeping cnoFed in step.
// ia.mu is held.
func (e *evd) attachCNO(c *dispatch.CNO) {
	e.SetCNO(c)
	e.cnoFed.Store(c != nil)
}

// post delivers an event the provider raises itself, not a completion
// polled from the EVD's CQ: an unarmed CQ is drained first (catchUp), so
// that the event comes after the completions before it.
func (e *evd) post(ev *api.Event, notify bool) {
	if e != nil && e.Q != nil {
		e.catchUp()
	}
	e.deliver(ev, notify)
}

// tryPost queues an event, after the completions before it (catchUp), if
// the queue has room, and reports whether it did; a full queue is not
// marked overflowed. It serves producers that refuse instead: a
// connection request that finds its service point's backlog full. ia.mu
// is held.
func (e *evd) tryPost(ev *api.Event, notify bool) bool {
	if e == nil || e.Q == nil {
		return false
	}
	e.catchUp()
	return e.Q.TryPost(ev, notify)
}

// deliver queues an event; a nil EVD, or one without a queue (the sink),
// discards it. An overflow is reported once per episode on the async
// EVD. The completions a drain polls from the EVD's CQ come here
// directly.
func (e *evd) deliver(ev *api.Event, notify bool) {
	if e == nil || e.Q == nil {
		return
	}
	e.Post(ev, notify)
}

// Dequeue removes the first event without blocking (dat_evd_dequeue(3DAT)).
func (e *evd) Dequeue(ev *api.Event) error {
	err := e.EVD.Dequeue(ev)
	if err == nil || e.cq == nil || !eventq.IsEmpty(err) {
		return err
	}
	// Nothing queued: look in the CQ, so that a consumer that polls needs
	// no wake-up from the watcher (which leaves the CQ unarmed meanwhile).
	e.cq.markActive()
	e.drain(true)
	return e.Q.Dequeue(ev)
}

// Wait blocks until threshold events are queued and removes the first
// (dat_evd_wait(3DAT)); a blocked Wait uses no CPU. On an EVD with a CQ
// the waiting goroutine reads the CQ's completion channel itself
// (driveWait).
func (e *evd) Wait(ctx context.Context, threshold int, ev *api.Event) (int, error) {
	if c := e.cq; c != nil && !c.dead.Load() {
		e.waiting.Add(1)
		return e.driveWait(ctx, threshold, ev)
	}
	return e.Q.Wait(ctx, threshold, ev)
}

// ModifyCNO changes the CNO the EVD feeds; nil detaches it
// (dat_evd_modify_cno(3DAT)).
func (e *evd) ModifyCNO(cnoArg api.CNO) error {
	if err := e.EVD.ModifyCNO(cnoArg); err != nil {
		return err
	}
	e.ia.mu.Lock()
	fed := e.CNO() != nil
	e.cnoFed.Store(fed)
	e.ia.mu.Unlock()
	if fed && e.cq != nil {
		e.cq.cnoAttached(e)
		e.arm() // a CNO must hear of the next completion
	}
	return nil
}

// Free destroys the EVD (dat_evd_free(3DAT)); the guard refuses it while
// in use. The async EVD belongs to the IA (ErrInvalidState).
func (e *evd) Free() error {
	e.ia.mu.Lock()
	defer e.ia.mu.Unlock()
	if err := e.ReleaseUnlessAsync(); err != nil {
		return err
	}
	e.cnoFed.Store(false)
	e.ia.evds.Remove(e)
	if c := e.cq; c != nil {
		// The watcher takes ia.mu to deliver: stop it without the lock.
		e.ia.mu.Unlock()
		c.destroy()
		e.ia.mu.Lock()
	}
	return nil
}

// CreateCNO creates a CNO with wait agent agent, nil for none
// (dat_cno_create(3DAT)); see dispatch.CNOObject.
func (i *ia) CreateCNO(agent api.WaitAgent) (api.CNO, error) { return i.cnos.Create(agent) }

// CreateCNOFD creates a CNO that owns a file descriptor, readable while
// it holds a trigger (dat_cno_fd_create, DAT 2.0); see
// dispatch.NewCNOObject.
func (i *ia) CreateCNOFD() (api.CNO, int, error) { return i.cnos.CreateFD() }
