//go:build cabi

package main

/*
#include "cabi.h"
*/
import "C"

import (
	"errors"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/godat/godat/api"
)

//export go_evd_create
func go_evd_create(h unsafe.Pointer, qlen C.DAT_COUNT, cnoH unsafe.Pointer, flags C.DAT_EVD_FLAGS, out *C.DAT_EVD_HANDLE) C.DAT_RETURN {
	var a args
	x := a.ia(h)
	a.arg(out != nil, 5)
	cno := a.optCNO(cnoH)
	if a.r != success {
		return a.r
	}
	evd, err := x.ia.CreateEVD(int(qlen), cno, api.EVDFlags(flags))
	return hand(x, api.HandleEVD, evd, err, func(o *obj) { *out = C.DAT_EVD_HANDLE(o.h) })
}

func evdOf(h unsafe.Pointer) (*obj, api.EVD) {
	o := lookup(h, api.HandleEVD)
	if o == nil {
		return nil, nil
	}
	return o, o.v.(api.EVD)
}

//export go_evd_query
func go_evd_query(h unsafe.Pointer, mask C.DAT_EVD_PARAM_MASK, p *C.DAT_EVD_PARAM) C.DAT_RETURN {
	return query[api.EVD](h, api.HandleEVD, p, func(o *obj, q api.EVDParam, p *C.DAT_EVD_PARAM) bool {
		p.ia_handle = C.DAT_IA_HANDLE(o.ia.obj.h)
		p.evd_qlen = count(q.QLen)
		p.evd_state = C.DAT_EVD_STATE(q.State)
		p.cno_handle = C.DAT_CNO_HANDLE(handleOf(q.CNO))
		p.evd_flags = C.DAT_EVD_FLAGS(q.Flags)
		return true
	})
}

//export go_evd_modify_cno
func go_evd_modify_cno(h, cnoH unsafe.Pointer) C.DAT_RETURN {
	var a args
	o, cno := a.obj(h, api.HandleEVD), a.optCNO(cnoH)
	if a.r != success {
		return a.r
	}
	return ret(o.v.(api.EVD).ModifyCNO(cno))
}

//export go_evd_switch
func go_evd_switch(h unsafe.Pointer, what C.int) C.DAT_RETURN {
	o, evd := evdOf(h)
	if o == nil {
		return badHandle(api.HandleEVD)
	}
	switch what {
	case 0:
		return ret(evd.Enable())
	case 1:
		return ret(evd.Disable())
	case 2:
		return ret(evd.SetUnwaitable())
	default:
		return ret(evd.ClearUnwaitable())
	}
}

//export go_evd_resize
func go_evd_resize(h unsafe.Pointer, qlen C.DAT_COUNT) C.DAT_RETURN {
	o, evd := evdOf(h)
	if o == nil {
		return badHandle(api.HandleEVD)
	}
	return ret(evd.Resize(int(qlen)))
}

//export go_evd_post_se
func go_evd_post_se(h unsafe.Pointer, cev *C.DAT_EVENT) C.DAT_RETURN {
	var a args
	o := a.obj(h, api.HandleEVD)
	a.arg(cev != nil && cev.event_number == C.DAT_SOFTWARE_EVENT, 2)
	if a.r != success {
		return a.r
	}
	sw := (*C.DAT_SOFTWARE_EVENT_DATA)(unsafe.Pointer(&cev.event_data))
	ev := api.Event{Number: api.SoftwareEvent, Software: uintptr(sw.pointer)}
	return ret(o.v.(api.EVD).PostSE(&ev))
}

// events recycles the api.Event a dequeue or wait fills, so that the
// polling path allocates nothing.
var events = sync.Pool{New: func() any { return new(api.Event) }}

// queueEmpty is what OFA DAPL returns from dat_evd_dequeue on an empty
// queue, and what dtest's polling loops compare against: the bare type,
// without the error class (docs/cabi.md).
const queueEmpty = C.DAT_RETURN(api.QueueEmpty)

//export go_evd_dequeue
func go_evd_dequeue(h unsafe.Pointer, cev *C.DAT_EVENT) C.DAT_RETURN {
	o, evd := evdOf(h)
	if o == nil {
		return badHandle(api.HandleEVD)
	}
	if cev == nil {
		return badArg(2)
	}
	if o.ia.async == o && o.ia.takeLastWQE(cev) {
		return success
	}
	ev, _, _ := o.held.pop()
	if ev == nil {
		ev = events.Get().(*api.Event)
		if err := evd.Dequeue(ev); err != nil {
			events.Put(ev)
			if errors.Is(err, api.ErrQueueEmpty) {
				return queueEmpty
			}
			return ret(err)
		}
	}
	if !handOut(o, ev, cev) {
		return noCMem
	}
	return success
}

//export go_evd_wait
func go_evd_wait(h unsafe.Pointer, t C.DAT_TIMEOUT, threshold C.DAT_COUNT, cev *C.DAT_EVENT, nmore *C.DAT_COUNT) C.DAT_RETURN {
	var a args
	o := a.obj(h, api.HandleEVD)
	a.arg(cev != nil, 4)
	a.arg(nmore != nil, 5)
	if a.r != success {
		return a.r
	}
	if o.ia.async == o && o.ia.takeLastWQE(cev) {
		*nmore = 0
		return success
	}
	// A held event is returned at once; nmore then counts the events
	// still held, not those in the queue behind them.
	ev, n, _ := o.held.pop()
	if ev == nil {
		ctx, cancel := waitContext(t)
		ev = events.Get().(*api.Event)
		var err error
		n, err = o.v.(api.EVD).Wait(ctx, int(threshold), ev)
		cancel()
		if err != nil {
			events.Put(ev)
			return ret(err)
		}
	}
	if !handOut(o, ev, cev) {
		return noCMem
	}
	*nmore = C.DAT_COUNT(n)
	return success
}

// handOut writes ev, taken from the EVD o, to c and recycles it. When toC
// cannot, it reports false and ev goes back to the front of o.held.
func handOut(o *obj, ev *api.Event, c *C.DAT_EVENT) bool {
	if !toC(o, ev, c) {
		o.held.pushFront(ev)
		return false
	}
	*ev = api.Event{}
	events.Put(ev)
	return true
}

// toC writes the godat event ev, dequeued from the EVD o, as a DAT_EVENT,
// and reports false when the C memory of its private data could not be
// allocated, or a handle for its CR: the event is then not handed out
// (o.held keeps it).
func toC(o *obj, ev *api.Event, c *C.DAT_EVENT) bool {
	c.event_number = C.DAT_EVENT_NUMBER(ev.Number)
	c.evd_handle = C.DAT_EVD_HANDLE(o.h)
	d := unsafe.Pointer(&c.event_data)
	switch ev.Number.Stream() {
	case api.EVDDTO:
		x := (*C.DAT_DTO_COMPLETION_EVENT_DATA)(d)
		x.ep_handle = C.DAT_EP_HANDLE(handleOf(ev.DTO.EP))
		*(*uint64)(unsafe.Pointer(&x.user_cookie)) = uint64(ev.DTO.Cookie)
		x.status = C.DAT_DTO_COMPLETION_STATUS(ev.DTO.Status)
		x.transfered_length = C.DAT_SEG_LENGTH(ev.DTO.Length)
		x.operation = C.DAT_DTOS(ev.DTO.Op)
		x.rmr_context = C.DAT_RMR_CONTEXT(ev.DTO.RMRContext)
	case api.EVDRMRBind:
		x := (*C.DAT_RMR_BIND_COMPLETION_EVENT_DATA)(d)
		x.rmr_handle = C.DAT_RMR_HANDLE(handleOf(ev.RMRBind.RMR))
		*(*uint64)(unsafe.Pointer(&x.user_cookie)) = uint64(ev.RMRBind.Cookie)
		x.status = C.DAT_DTO_COMPLETION_STATUS(ev.RMRBind.Status)
	case api.EVDCR:
		x := (*C.DAT_CR_ARRIVAL_EVENT_DATA)(d)
		sp := (*unsafe.Pointer)(unsafe.Pointer(&x.sp_handle))
		if ev.CR.PSP != nil {
			*sp = handleOf(ev.CR.PSP)
		} else {
			*sp = handleOf(ev.CR.RSP)
		}
		x.local_ia_address_ptr = C.DAT_IA_ADDRESS_PTR(o.ia.addr)
		x.conn_qual = C.DAT_CONN_QUAL(ev.CR.ConnQual)
		cr := crHandle(o.ia, ev.CR.CR)
		if cr == nil && ev.CR.CR != nil {
			return false // no handle left for the CR
		}
		x.cr_handle = C.DAT_CR_HANDLE(cr)
		x.truncate_flag = boolean(ev.CR.Truncated)
	case api.EVDConnection:
		x := (*C.DAT_CONNECTION_EVENT_DATA)(d)
		ep := objOf(ev.Conn.EP)
		n := len(ev.Conn.PrivateData)
		var pd unsafe.Pointer
		if ep != nil && n > 0 {
			// First, so that a failure leaves no trace of the event.
			if pd = ep.alloc(n); pd == nil {
				return false
			}
			copy(unsafe.Slice((*byte)(pd), n), ev.Conn.PrivateData)
		}
		x.ep_handle = nil
		x.private_data_size = 0
		x.private_data = nil
		if ep != nil {
			if ep.srq && (ev.Number == api.ConnectionDisconnectedEvent || ev.Number == api.ConnectionBrokenEvent) {
				o.ia.lastWQE.push(ep.h)
			}
			x.ep_handle = C.DAT_EP_HANDLE(ep.h)
			if pd != nil {
				x.private_data_size = C.DAT_COUNT(n)
				x.private_data = C.DAT_PVOID(pd)
			}
		}
	case api.EVDAsync:
		x := (*C.DAT_ASYNCH_ERROR_EVENT_DATA)(d)
		x.dat_handle = C.DAT_HANDLE(handleOf(ev.Async.Object))
		x.reason = C.DAT_COUNT(ev.Async.Reason)
	case api.EVDSoftware:
		x := (*C.DAT_SOFTWARE_EVENT_DATA)(d)
		p, _ := ev.Software.(uintptr)
		*(*uintptr)(unsafe.Pointer(&x.pointer)) = p // the consumer's own pointer, returned as given
	}
	if logEvents {
		logEvent(c)
	}
	return true
}

// firsts is a queue of what a dequeue or wait returns before the EVD's own
// events (events kept for want of C memory, OFA's last-WQE events). n
// lets the polling path find it empty with one atomic load.
type firsts[T any] struct {
	mu sync.Mutex
	q  []T
	n  atomic.Int32
}

func (f *firsts[T]) push(x T) {
	f.mu.Lock()
	f.q = append(f.q, x)
	f.n.Store(int32(len(f.q)))
	f.mu.Unlock()
}

// pushFront puts x before every entry: an event that could not be handed
// out goes back where it came from, ahead of those kept after it, so
// that the EVD's order holds however often C memory runs out.
func (f *firsts[T]) pushFront(x T) {
	f.mu.Lock()
	f.q = append(f.q, x)
	copy(f.q[1:], f.q)
	f.q[0] = x
	f.n.Store(int32(len(f.q)))
	f.mu.Unlock()
}

// pop returns the oldest entry and how many are left behind it; ok is
// false when there is none.
func (f *firsts[T]) pop() (x T, left int, ok bool) {
	if f.n.Load() == 0 {
		return x, 0, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.q) == 0 {
		return x, 0, false
	}
	var zero T
	x, f.q[0] = f.q[0], zero
	f.q = f.q[1:]
	f.n.Store(int32(len(f.q)))
	return x, len(f.q), true
}

// CNOs.

type cnoAgent struct {
	fn, inst unsafe.Pointer
}

func (a cnoAgent) waitAgent() api.WaitAgent {
	if a.fn == nil {
		return nil
	}
	return func(evd api.EVD) {
		C.gd_call_agent(C.DAT_AGENT_FUNC(a.fn), C.DAT_PVOID(a.inst), C.DAT_EVD_HANDLE(handleOf(evd)))
	}
}

//export go_cno_create
func go_cno_create(h, inst, fn unsafe.Pointer, out *C.DAT_CNO_HANDLE) C.DAT_RETURN {
	var a args
	x := a.ia(h)
	a.arg(out != nil, 3)
	if a.r != success {
		return a.r
	}
	cno, err := x.ia.CreateCNO(cnoAgent{fn: fn, inst: inst}.waitAgent())
	return hand(x, api.HandleCNO, cno, err, func(o *obj) { *out = C.DAT_CNO_HANDLE(o.h) })
}

//export go_cno_fd_create
func go_cno_fd_create(h unsafe.Pointer, fd *C.DAT_FD, out *C.DAT_CNO_HANDLE) C.DAT_RETURN {
	var a args
	x := a.ia(h)
	a.arg(fd != nil, 2)
	a.arg(out != nil, 3)
	if a.r != success {
		return a.r
	}
	cno, n, err := x.ia.CreateCNOFD()
	return hand(x, api.HandleCNO, cno, err, func(o *obj) { *out, *fd = C.DAT_CNO_HANDLE(o.h), C.DAT_FD(n) })
}

//export go_cno_modify_agent
func go_cno_modify_agent(h, inst, fn unsafe.Pointer) C.DAT_RETURN {
	o := lookup(h, api.HandleCNO)
	if o == nil {
		return badHandle(api.HandleCNO)
	}
	return ret(o.v.(api.CNO).ModifyAgent(cnoAgent{fn: fn, inst: inst}.waitAgent()))
}

//export go_cno_query
func go_cno_query(h unsafe.Pointer, mask C.DAT_CNO_PARAM_MASK, p *C.DAT_CNO_PARAM) C.DAT_RETURN {
	return query[api.CNO](h, api.HandleCNO, p, func(o *obj, q api.CNOParam, p *C.DAT_CNO_PARAM) bool {
		p.ia_handle = C.DAT_IA_HANDLE(o.ia.obj.h)
		p.proxy_type = C.DAT_PROXY_TYPE_NONE
		if q.Agent != nil {
			p.proxy_type = C.DAT_PROXY_TYPE_AGENT
		}
		return true
	})
}

//export go_cno_wait
func go_cno_wait(h unsafe.Pointer, t C.DAT_TIMEOUT, out *C.DAT_EVD_HANDLE) C.DAT_RETURN {
	return cnoEVD(h, out, 3, func(c api.CNO) (api.EVD, error) {
		ctx, cancel := waitContext(t)
		defer cancel()
		return c.Wait(ctx)
	})
}

//export go_cno_trigger
func go_cno_trigger(h unsafe.Pointer, out *C.DAT_EVD_HANDLE) C.DAT_RETURN {
	return cnoEVD(h, out, 2, api.CNO.Triggered)
}

// cnoEVD is the body of dat_cno_wait and dat_cno_trigger: it makes call on
// the CNO h and returns the EVD call names through out, the argument at
// position pos.
func cnoEVD(h unsafe.Pointer, out *C.DAT_EVD_HANDLE, pos int, call func(api.CNO) (api.EVD, error)) C.DAT_RETURN {
	var a args
	o := a.obj(h, api.HandleCNO)
	a.arg(out != nil, pos)
	if a.r != success {
		return a.r
	}
	evd, err := call(o.v.(api.CNO))
	if err != nil {
		return ret(err)
	}
	*out = C.DAT_EVD_HANDLE(handleOf(evd))
	return success
}

// OFA DAPL reports IB's last-WQE-reached on an EP of an SRQ, which
// follows the end of its connection, as DAT_ASYNC_ERROR_EP_BROKEN naming
// the EP, and dtestsrq waits for it after each disconnect (docs/cabi.md).
// The C layer queues that event when it hands out the end of such an EP's
// connection and returns it, before the provider's own events, from the
// next dequeue or wait on the IA's async EVD.

func (x *iaObj) takeLastWQE(c *C.DAT_EVENT) bool {
	ep, _, ok := x.lastWQE.pop()
	if !ok {
		return false
	}
	c.event_number = C.DAT_ASYNC_ERROR_EP_BROKEN
	c.evd_handle = C.DAT_EVD_HANDLE(x.async.h)
	d := (*C.DAT_ASYNCH_ERROR_EVENT_DATA)(unsafe.Pointer(&c.event_data))
	d.dat_handle = C.DAT_HANDLE(ep)
	d.reason = C.DAT_EP_OTHER_ERROR
	return true
}
