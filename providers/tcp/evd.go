package tcp

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/dispatch"
	"github.com/godat/godat/provider/kit/eventq"
)

// evd is an Event Dispatcher: the kit's EVD, with a Dequeue and a Wait of
// its own that drive the connections whose completions come here.
// Dequeue, Wait and PostSE go to the queue without the IA's lock.
type evd struct {
	dispatch.EVD

	ia *ia

	// feeds lists the pollable connections whose completions come here,
	// for Dequeue to drive; replaced (under ia.mu) when one starts or
	// ends, read without a lock.
	feeds atomic.Pointer[[]*conn]

	// The waiter's driver (drive.go), made by the first Wait that can use
	// it; set under drvMu, read without a lock (kickWaiters).
	drvMu     sync.Mutex
	drv       atomic.Pointer[driver]
	drvFailed bool
	drvClosed bool
}

// addFeed records that c's completions come to e. ia.mu is held.
func (e *evd) addFeed(c *conn) {
	if e == nil {
		return
	}
	var l []*conn
	if old := e.feeds.Load(); old != nil {
		l = slices.Clone(*old)
	}
	l = append(l, c)
	e.feeds.Store(&l)
}

// dropFeed forgets c. ia.mu is held.
func (e *evd) dropFeed(c *conn) {
	if e == nil {
		return
	}
	old := e.feeds.Load()
	if old == nil || !slices.Contains(*old, c) {
		return
	}
	l := slices.DeleteFunc(slices.Clone(*old), func(x *conn) bool { return x == c })
	if len(l) == 0 {
		e.feeds.Store(nil)
		return
	}
	e.feeds.Store(&l)
}

// newEVD makes an EVD of i; async is the IA's async EVD, nil when this is
// it.
func newEVD(i *ia, qlen int, flags api.EVDFlags, async *dispatch.EVD) *evd {
	e := &evd{ia: i}
	e.Init(e, i, &i.mu, qlen, providerLimits.MaxEVDQLen, flags, async)
	return e
}

// CreateEVD creates an EVD of qlen events accepting the streams in flags,
// feeding cno if it is not nil (dat_evd_create in libdat(3LIB)).
func (i *ia) CreateEVD(qlen int, cnoArg api.CNO, flags api.EVDFlags) (api.EVD, error) {
	return dispatch.Create(i, &i.IA, &i.evds, qlen, providerLimits.MaxEVDQLen, flags, cnoArg, func() *evd { return newEVD(i, qlen, flags, &i.async.EVD) })
}

// post delivers a provider event; a nil EVD discards it. An overflow is
// reported once per episode on the async EVD (package eventq).
func (e *evd) post(ev *api.Event, notify bool) {
	if e != nil {
		e.Post(ev, notify)
	}
}

// Dequeue removes the first event without blocking (dat_evd_dequeue(3DAT)).
func (e *evd) Dequeue(ev *api.Event) error {
	err := e.EVD.Dequeue(ev)
	if err == nil || !eventq.IsEmpty(err) {
		return err
	}
	// Nothing queued: drive the connections that feed the EVD, so that a
	// consumer spinning on Dequeue needs no other goroutine to run.
	l := e.feeds.Load()
	if l == nil {
		return err
	}
	for _, c := range *l {
		c.poll()
		c.pollTx()
	}
	return e.Q.Dequeue(ev)
}

// Wait blocks until threshold events are queued and removes the first
// (dat_evd_wait(3DAT)); a blocked Wait uses no CPU.
func (e *evd) Wait(ctx context.Context, threshold int, ev *api.Event) (int, error) {
	if d := e.driverFor(); d != nil {
		return e.driveWait(d, ctx, threshold, ev)
	}
	// A waiter needs the reader goroutines: connections that pollers left
	// unwatched are watched again (see "Polling" in the package
	// documentation).
	if l := e.feeds.Load(); l != nil {
		for _, c := range *l {
			c.handBack()
			c.lateAck(true)
		}
	}
	return e.Q.Wait(ctx, threshold, ev)
}

// Free destroys the EVD (dat_evd_free(3DAT)); the guard refuses it while
// in use. The async EVD cannot be freed (ErrInvalidState).
func (e *evd) Free() error {
	e.ia.mu.Lock()
	defer e.ia.mu.Unlock()
	if err := e.ReleaseUnlessAsync(); err != nil {
		return err
	}
	e.closeDriver()
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

// handBackFeeds gives the connections feeding the EVDs attached to cno
// back to their reader goroutines, as a Wait on one of those EVDs does:
// a consumer that waits in a CNO calls nothing that would drive them, so
// quiet mode would leave its completions to the reader's next look, up
// to quietMax late.
func (i *ia) handBackFeeds(cno *dispatch.CNO) {
	var feeds []*conn
	i.mu.Lock()
	for e := range i.evds.All() {
		if e.CNO() != cno {
			continue
		}
		if l := e.feeds.Load(); l != nil {
			feeds = append(feeds, *l...)
		}
	}
	i.mu.Unlock()
	for _, c := range feeds {
		c.handBack()
		c.lateAck(true)
	}
	if testHookCNOHandBack != nil {
		testHookCNOHandBack(len(feeds))
	}
}

// testHookCNOHandBack, set by tests only, sees how many connections a CNO
// wait handed back.
var testHookCNOHandBack func(n int)
