package dispatch

import (
	"sync"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/completion"
)

// EVDs is an IA's set of EVDs for a provider whose events are all posted
// by its own code as they happen, with nothing to drive when a consumer
// polls or waits (loopback, the minimal provider): the EVD base with a
// Free is then the whole EVD, and the provider writes no EVD type. A
// provider whose completions need its help to arrive (a CQ to drain,
// sockets to read) embeds EVD in a type of its own instead. Its EVDs
// point back to it: keep it in the IA and do not copy it once it has
// made one.
type EVDs struct {
	kit.Set[*EVDObject]
	ia      api.IA
	base    *kit.IA
	mu      sync.Locker
	maxQLen int
	async   *EVDObject
}

// NewEVDs returns the empty set of ia's EVDs, whose queues hold at most
// maxQLen events, limit EVDs at most (0: no limit). base is ia's kit.IA
// and mu the provider's lock, the one given to its InitIA.
func NewEVDs(ia api.IA, base *kit.IA, mu sync.Locker, maxQLen, limit int) EVDs {
	return EVDs{Set: kit.NewSet[*EVDObject](api.HandleEVD, limit), ia: ia, base: base, mu: mu, maxQLen: maxQLen}
}

// OpenAsync makes the IA's async EVD, of qlen events, when the IA opens.
// It is not in the set: it belongs to the IA, which releases it at Close.
func (s *EVDs) OpenAsync(qlen int) *EVDObject {
	s.async = s.make(qlen, api.EVDAsync)
	return s.async
}

// Create is the IA's CreateEVD (dat_evd_create(3DAT)); see the function
// Create.
func (s *EVDs) Create(qlen int, cnoArg api.CNO, flags api.EVDFlags) (api.EVD, error) {
	return Create(s.ia, s.base, &s.Set, qlen, s.maxQLen, flags, cnoArg, func() *EVDObject { return s.make(qlen, flags) })
}

func (s *EVDs) make(qlen int, flags api.EVDFlags) *EVDObject {
	e := &EVDObject{set: s}
	var async *EVD
	if s.async != nil {
		async = &s.async.EVD
	}
	e.Init(e, s.ia, s.mu, qlen, s.maxQLen, flags, async)
	return e
}

// EVDObject is an EVD of an EVDs set: the base and its Free.
type EVDObject struct {
	EVD
	set *EVDs
}

// Free destroys the EVD and its queued events (dat_evd_free(3DAT)); the
// guard has refused it while an EP, PSP or RSP reports to it. The async
// EVD cannot be freed (ErrInvalidState). A blocked waiter returns
// ErrAbort.
func (e *EVDObject) Free() error {
	e.set.mu.Lock()
	defer e.set.mu.Unlock()
	if err := e.ReleaseUnlessAsync(); err != nil {
		return err
	}
	e.set.Remove(e)
	return nil
}

// Deliver posts ev from one of the provider's event streams; a nil EVD
// (an EP created without one) discards it. An overflow discards it too
// and, the first time in an episode, reports the overflow on the IA's
// async EVD (package eventq).
func (e *EVDObject) Deliver(ev *api.Event, notify bool) {
	if e != nil {
		e.Post(ev, notify)
	}
}

// DeliverRecv completes the receive rw of ep, whose receive completion
// flags are epFlags, with status st after n bytes, and delivers the event
// as Deliver does; completion.Recv.Event says what the event reports and
// when it notifies. The event lives on the stack: nothing allocates.
func (e *EVDObject) DeliverRecv(rw *completion.Recv, ep api.EP, epFlags api.CompletionFlags, st api.DTOStatus, n uint64, op api.DTOOp, rctx api.RMRContext, solicited bool) {
	if e == nil {
		return
	}
	var ev api.Event
	notify := rw.Event(&ev, ep, epFlags, st, n, op, rctx, solicited)
	e.Post(&ev, notify)
}

// FlushRecv completes the receive rw of ep with DTOErrFlushed, as the end
// of a connection or a post to a DISCONNECTED EP leaves it.
func (e *EVDObject) FlushRecv(rw *completion.Recv, ep api.EP) {
	e.DeliverRecv(rw, ep, 0, api.DTOErrFlushed, 0, api.OpReceive, 0, false)
}
