// Package dispatch is the part of the EVD and CNO objects that godat's
// software providers share, over the queues and CNOs of package eventq:
// the argument checks of dat_evd_create(3DAT), dat_evd_resize(3DAT) and
// dat_evd_post_se(3DAT) that depend on the provider, the delivery of provider
// events with the report of an overflow, and the link from an EVD to the
// CNO it feeds with the count that dat_cno_free(3DAT) and
// dat_cno_wait(3DAT) depend on.
//
// A provider's EVD type embeds EVD, which holds the eventq.Queue, the
// stream flags and the link to the CNO the EVD feeds, and implements every
// EVD call but Free; the provider adds Free and, if its completions need
// the consumer's calls to move, its own Dequeue or Wait. Its CNO objects
// are CNOObjects, made with the lock that guards the provider's objects;
// each holds a CNO, and AsCNO turns a CNO argument into that CNO. The EVD
// link and the counts are not safe for concurrent use: the provider calls
// SetCNO and AsCNO under that lock, and CNOObject.Free takes it. Post
// takes only the queues' locks, so it allocates nothing and blocks nobody.
package dispatch

import (
	"context"
	"fmt"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/eventq"
)

var (
	errNoSoftEVD = api.Errorf(api.InvalidParameter, api.SubArg1, "the EVD was not created with the software event stream flag")
)

// CheckCreate checks the queue length of dat_evd_create against the
// provider's own bound: 1..maxQLen (ErrInvalidParameter otherwise). The
// stream flags are the guard's to check (api/doc.go).
func CheckCreate(qlen, maxQLen int) error {
	if qlen < 1 || qlen > maxQLen {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("EVD queue length %d outside 1..%d", qlen, maxQLen))
	}
	return nil
}

// Resize changes the length of q (dat_evd_resize(3DAT)): above maxQLen is
// ErrInvalidParameter; see eventq.Queue.Resize for the rest.
func Resize(q *eventq.Queue, qlen, maxQLen int) error {
	if qlen > maxQLen {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("EVD queue length %d exceeds %d", qlen, maxQLen))
	}
	return q.Resize(qlen)
}

// Post delivers an event from a provider stream to q, the queue of the EVD
// self. A post that begins an overflow episode (eventq.OverflowBegan) is
// reported as ASYNC_ERROR_EVD_OVERFLOW naming self on async, the queue of
// the IA's async EVD, unless q is that queue.
func Post(q *eventq.Queue, ev *api.Event, notify bool, self api.EVD, async *eventq.Queue) {
	if q.Post(ev, notify) == eventq.OverflowBegan && async != q {
		ov := api.Event{Number: api.AsyncEVDOverflowEvent, Async: api.AsyncErrorData{Object: self, Reason: api.ReasonEVDOverflow}}
		async.Post(&ov, true)
	}
}

// PostSE queues a software event carrying ev.Software on q, the queue of
// an EVD with stream flags flags (dat_evd_post_se(3DAT)): ErrInvalidParameter
// if the EVD does not accept software events, ErrQueueFull on a full
// queue, without an overflow report.
func PostSE(q *eventq.Queue, flags api.EVDFlags, ev *api.Event) error {
	if flags&api.EVDSoftware == 0 {
		return errNoSoftEVD
	}
	se := api.Event{Number: api.SoftwareEvent, Software: ev.Software}
	return q.PostSE(&se)
}

// Param returns the parameters of the EVD with queue q, stream flags flags
// and CNO c (dat_evd_query(3DAT)) but for the IA, which the provider fills
// in.
func Param(q *eventq.Queue, flags api.EVDFlags, c *CNO) api.EVDParam {
	p := api.EVDParam{QLen: q.Cap(), State: q.State(), Flags: flags}
	if c != nil {
		p.CNO = c.Owner
	}
	return p
}

// QueueControl gives an EVD object the calls that only switch a flag of
// its queue Q. A provider's EVD embeds it and keeps its queue there.
type QueueControl struct {
	Q *eventq.Queue
}

// Enable lets the EVD's notification events trigger its CNO
// (dat_evd_enable(3DAT)).
func (c QueueControl) Enable() error { c.Q.SetEnabled(true); return nil }

// Disable keeps the EVD's notification events from triggering its CNO
// (dat_evd_disable(3DAT)); the events are queued all the same.
func (c QueueControl) Disable() error { c.Q.SetEnabled(false); return nil }

// SetUnwaitable makes a goroutine blocked in Wait return ErrInvalidState,
// as every Wait does until ClearUnwaitable (dat_evd_set_unwaitable(3DAT)).
func (c QueueControl) SetUnwaitable() error { c.Q.SetUnwaitable(true); return nil }

// ClearUnwaitable lets Wait block on the EVD again
// (dat_evd_clear_unwaitable(3DAT)).
func (c QueueControl) ClearUnwaitable() error { c.Q.SetUnwaitable(false); return nil }

// CNO is the state of a consumer notification object: its eventq.CNO, the
// provider's object that EVD parameters name, and how many EVDs feed it.
type CNO struct {
	C     *eventq.CNO
	Owner api.CNO // the provider's object
	EVDs  int
}

// Attach makes q, the queue of an EVD that feeds from, feed to instead
// (either may be nil: no CNO) and returns to, for the EVD to keep. A CNO
// left without EVDs releases its waiters with a nil EVD, as
// dat_cno_wait(3DAT) requires.
func Attach(q *eventq.Queue, from, to *CNO) *CNO {
	if from == to {
		return to
	}
	if to != nil {
		to.EVDs++
		q.SetCNO(to.C)
	} else {
		q.SetCNO(nil)
	}
	if from != nil {
		from.EVDs--
		if from.EVDs == 0 {
			from.C.ReleaseWaiters()
		}
	}
	return to
}

// Wait is dat_cno_wait(3DAT) (see eventq.CNO.Wait).
func (c *CNO) Wait(ctx context.Context) (api.EVD, error) {
	return c.C.Wait(ctx)
}

// Free closes the CNO for dat_cno_free(3DAT): while an EVD feeds it or a
// goroutine waits on it, it is ErrInvalidState (SubStateCNOInUse) and
// nothing changes. The caller waits for the agent (C.WaitIdle) once it has
// released its locks.
func (c *CNO) Free() error {
	if c.EVDs > 0 || c.C.Waiters() > 0 {
		return api.Errorf(api.InvalidState, api.SubStateCNOInUse, "an EVD feeds the CNO or a goroutine waits on it")
	}
	c.C.Close()
	return nil
}

// CheckOpen is the start of a software provider's Open
// (dat_ia_open(3DAT)): it fails if ctx has ended, and returns the length
// of the async EVD's queue, p.AsyncEVDQLen but at least 1; more than
// maxQLen is ErrInvalidParameter.
func CheckOpen(ctx context.Context, p api.OpenParams, maxQLen int) (qlen int, err error) {
	if ctx.Err() != nil {
		return 0, api.ContextError(ctx)
	}
	qlen = max(p.AsyncEVDQLen, 1)
	if qlen > maxQLen {
		return 0, api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("async EVD queue length %d exceeds %d", qlen, maxQLen))
	}
	return qlen, nil
}
