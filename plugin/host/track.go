package host

// Outstanding work. The host records every DTO and RMR bind it posts until
// the plugin reports its completion, and whether each EP is connected or
// connecting, so that when the plugin process dies it can complete that
// work itself (DTOErrFlushed) and break the connections, as DESIGN §7
// requires of a crashed plugin.
//
// Requests and receives of an EP complete in post order (DESIGN §4), and a
// successful request posted with CompletionSuppress completes without an
// event; so a completion also retires the requests posted before it.
// Receives taken from an SRQ complete in any order and are matched by
// cookie.

import (
	"sync"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/ring"
)

// work is one posted DTO or bind.
type work struct {
	tok    uint64 // tells apart the entries of one queue
	cookie api.Cookie
	op     api.DTOOp
	rmr    *proxyRMR // the RMR of a bind
	dead   bool      // the post failed: not outstanding
	quiet  bool      // posted with CompletionSuppress: success brings no event
}

// workQueue is the outstanding work of one queue, oldest first.
type workQueue struct {
	r    ring.Ring[work]
	next uint64
}

// add records a post and returns its token. A queue longer than limit
// (the EP's MaxRequestDTOs or MaxRecvDTOs) first forgets its oldest
// failed entries and then its oldest suppressed ones, so that it never
// holds more than limit. Forgetting a suppressed entry is a guess: its
// success would bring no event, but it may still be in progress in the
// provider. sure is false when add had to guess; the provider may then
// have no room, and only it can say (DESIGN §4: requests complete in
// order, so if it has room the oldest entry has completed).
func (q *workQueue) add(cookie api.Cookie, op api.DTOOp, rmr *proxyRMR, quiet bool, limit int) (tok uint64, sure bool) {
	sure = true
	for limit > 0 && q.r.Len() >= limit && (q.r.Front().quiet || q.r.Front().dead) {
		if !q.r.Front().dead {
			sure = false
		}
		*q.r.Front() = work{}
		q.r.PopFront()
	}
	q.next++
	w := q.r.PushBack()
	*w = work{tok: q.next, cookie: cookie, op: op, rmr: rmr, quiet: quiet}
	return q.next, sure
}

// failed marks the post with token tok as not outstanding.
func (q *workQueue) failed(tok uint64) {
	for i := q.r.Len() - 1; i >= 0; i-- {
		if w := q.r.At(i); w.tok == tok {
			w.dead = true
			return
		}
	}
}

// completeInOrder retires the oldest entry of op with cookie and every
// entry before it; a completion that matches nothing changes nothing.
func (q *workQueue) completeInOrder(cookie api.Cookie, op api.DTOOp) {
	for i := 0; i < q.r.Len(); i++ {
		if w := q.r.At(i); !w.dead && w.cookie == cookie && w.op == op {
			for range i + 1 {
				*q.r.Front() = work{}
				q.r.PopFront()
			}
			return
		}
	}
}

// completeAny retires the oldest entry with cookie, wherever it is.
func (q *workQueue) completeAny(cookie api.Cookie) {
	for i := 0; i < q.r.Len(); i++ {
		if w := q.r.At(i); !w.dead && w.cookie == cookie {
			w.dead = true
			break
		}
	}
	for q.r.Len() > 0 && q.r.Front().dead {
		*q.r.Front() = work{}
		q.r.PopFront()
	}
}

// drain returns the outstanding entries and empties the queue.
func (q *workQueue) drain() []work {
	var out []work
	for q.r.Len() > 0 {
		if w := q.r.Front(); !w.dead {
			out = append(out, *w)
		}
		*q.r.Front() = work{}
		q.r.PopFront()
	}
	return out
}

// epTrack is what the host knows of an EP's queues and connection.
type epTrack struct {
	mu                     sync.Mutex
	recvEVD, reqEVD, cnEVD *proxyEVD
	srq                    *proxySRQ
	reqs, recvs            workQueue
	inConn                 bool // connected, or a connection is being made
	established            bool // connected: posts may take the submission ring
	maxReq, maxRecv        int  // the EP's queue limits (from its last Query)
}

// isRecv reports the operations of the receive queue.
func isRecv(op api.DTOOp) bool { return op == api.OpReceive || op == api.OpReceiveWithInvalidate }

// completed retires the work a DTO completion of the EP reports.
func (e *proxyEP) completed(d *api.DTOCompletionData) {
	t := &e.t
	if isRecv(d.Op) {
		t.mu.Lock()
		srq := t.srq
		if srq == nil {
			t.recvs.completeInOrder(d.Cookie, api.OpReceive)
		}
		t.mu.Unlock()
		if srq != nil {
			srq.mu.Lock()
			srq.recvs.completeAny(d.Cookie)
			srq.mu.Unlock()
		}
		return
	}
	t.mu.Lock()
	t.reqs.completeInOrder(d.Cookie, d.Op)
	t.mu.Unlock()
}

// connEvent follows the EP's connection state from its events.
func (e *proxyEP) connEvent(n api.EventNumber) {
	e.t.mu.Lock()
	e.t.inConn = n == api.ConnectionEstablishedEvent
	e.t.established = e.t.inConn
	e.t.mu.Unlock()
}

// setConnecting records that a connection is being made.
func (e *proxyEP) setConnecting() {
	e.t.mu.Lock()
	e.t.inConn = true
	e.t.mu.Unlock()
}

// bindDone retires the oldest outstanding bind of the RMR.
func (m *proxyRMR) bindDone(cookie api.Cookie) {
	m.mu.Lock()
	var ep *proxyEP
	if len(m.binds) > 0 {
		ep = m.binds[0]
		m.binds = m.binds[1:]
	}
	m.mu.Unlock()
	if ep != nil {
		ep.t.mu.Lock()
		ep.t.reqs.completeInOrder(cookie, api.OpBindMW)
		ep.t.mu.Unlock()
	}
}

// flush completes everything outstanding on the EP with DTOErrFlushed,
// requests first, and breaks its connection: what the plugin would have
// reported had it not died.
func (e *proxyEP) flush() {
	t := &e.t
	t.mu.Lock()
	reqs, recvs := t.reqs.drain(), t.recvs.drain()
	req, recv, cn, inConn := t.reqEVD, t.recvEVD, t.cnEVD, t.inConn
	t.inConn, t.established = false, false
	t.mu.Unlock()
	for _, w := range reqs {
		var ev api.Event
		if w.op == api.OpBindMW {
			ev = api.Event{Number: api.RMRBindCompletionEvent,
				RMRBind: api.RMRBindCompletionData{RMR: w.rmr, Cookie: w.cookie, Status: api.DTOErrFlushed}}
		} else {
			ev = api.Event{Number: api.DTOCompletionEvent,
				DTO: api.DTOCompletionData{EP: e, Cookie: w.cookie, Status: api.DTOErrFlushed, Op: w.op}}
		}
		if req != nil {
			req.post(&ev, true)
		}
	}
	for _, w := range recvs {
		ev := api.Event{Number: api.DTOCompletionEvent,
			DTO: api.DTOCompletionData{EP: e, Cookie: w.cookie, Status: api.DTOErrFlushed, Op: api.OpReceive}}
		if recv != nil {
			recv.post(&ev, true)
		}
	}
	if inConn && cn != nil {
		ev := api.Event{Number: api.ConnectionBrokenEvent, Conn: api.ConnectionData{EP: e}}
		cn.post(&ev, true)
	}
}
