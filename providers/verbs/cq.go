//go:build verbs && cgo

package verbs

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/godat/godat/api"
)

// wcBatch is how many work completions one cgo call polls at most.
const wcBatch = 32

// pollCheck is how long a CQ stays unarmed after the last Dequeue that
// found its EVD empty: while a consumer polls, it drains the CQ itself,
// and arming the CQ would only cost a notification (a wake-up, a read and
// a re-arm) per completion.
const pollCheck = time.Millisecond

// cq is the completion queue of an EVD that receives DTO or RMR bind
// completions, with its completion channel. A goroutine parked in Go's
// network poller on the channel's (non-blocking) descriptor drains the CQ
// into the EVD's queue when the device signals a completion; Dequeue
// drains it too, so that a consumer that only polls needs no wake-up.
//
// The CQ is armed (a notification asked for) except while a consumer
// polls: a Dequeue that finds the EVD empty marks the CQ polled, and the
// watcher, woken by a notification, then leaves it unarmed and a timer
// looks again every pollCheck; once a whole period passes without such a
// Dequeue, or as soon as a Wait starts, the CQ is armed again. An EVD
// that feeds a CNO, or has a Wait in progress, stays armed. Events godat
// posts directly to an EVD whose CQ is unarmed (connection events,
// flushes) drain the CQ first, so that they keep their place after the
// completions before them.
type cq struct {
	ch   *C.struct_ibv_comp_channel
	cq   *C.struct_ibv_cq
	wc   *C.struct_ibv_wc // wcBatch entries in C memory
	wcs  []C.struct_ibv_wc
	file *os.File // a duplicate of the channel's descriptor, for the poller
	done chan struct{}

	pollMu sync.Mutex  // one drain at a time, so events keep the CQ's order
	armed  atomic.Bool // a notification is asked for; written under pollMu
	polled atomic.Bool // a Dequeue found the EVD empty since the last look
	timer  *time.Timer // the look while the CQ is unarmed
}

// newCQ creates the CQ of e with room for depth completions and starts
// its watcher.
func newCQ(e *evd, depth int) (*cq, error) {
	c := &cq{done: make(chan struct{})}
	if rc := C.gd_cq_create(e.ia.dev.ctx, C.int(depth), &c.ch, &c.cq); rc != 0 {
		return nil, api.Errorf(api.InsufficientResources, api.SubResourceTEVD, "ibv_create_cq: "+errnoText(syscallErrno(rc)))
	}
	file, rc, err := pollable(c.ch.fd, "verbs-comp-channel")
	if err != nil {
		C.gd_cq_destroy(c.ch, c.cq)
		return nil, api.Errorf(api.InsufficientResources, api.SubResourceTEVD, "completion channel: "+err.Error())
	}
	c.file = file
	c.wc = (*C.struct_ibv_wc)(C.calloc(wcBatch, C.size_t(unsafe.Sizeof(C.struct_ibv_wc{}))))
	c.wcs = unsafe.Slice(c.wc, wcBatch)
	c.armed.Store(true) // gd_cq_create armed it
	c.timer = time.AfterFunc(time.Hour, e.settle)
	c.timer.Stop()
	go c.watch(e, rc)
	return c, nil
}

// watch waits in the network poller for completion notifications until
// the descriptor is closed. After each it drains the CQ and arms it again
// (settle), or leaves it unarmed while a consumer polls.
func (c *cq) watch(e *evd, rc syscall.RawConn) {
	defer close(c.done)
	for {
		var failed C.int
		err := rc.Read(func(uintptr) bool {
			r := C.gd_cq_event(c.ch)
			if r < 0 {
				failed = -r
			}
			return r != 0
		})
		if err != nil {
			return // closed by destroy
		}
		if failed != 0 {
			e.ia.postAsync(api.AsyncProviderInternalErrorEvent, e, api.ReasonEVDOther)
			return
		}
		c.pollMu.Lock()
		c.armed.Store(false) // a notification disarms the CQ
		c.pollMu.Unlock()
		e.settle()
	}
}

// settle drains the CQ and arms it again, unless a consumer has polled
// since the last look: then it leaves it unarmed, and to that consumer,
// and looks again after pollCheck. The look touches neither the CQ nor a
// lock while the consumer polls: its goroutine may run on another thread
// beside the consumer, and a drain here would contend with the consumer
// for pollMu, and for ia.mu, which the consumer's post holds through its
// cgo call. Completions the consumer leaves behind when it stops polling
// are delivered by the next look's arm, at most two periods late (a Wait,
// a Dequeue or a CNO attached meanwhile takes them at once).
func (e *evd) settle() {
	c := e.cq
	if c.polled.Swap(false) && !e.cnoFed.Load() && e.waiting.Load() == 0 {
		c.timer.Reset(pollCheck)
		return
	}
	e.arm()
}

// arm asks for a notification of the next completion, if none is asked
// for, and then drains the CQ (always: a completion that came before the
// arming raises none).
func (e *evd) arm() {
	c := e.cq
	c.pollMu.Lock()
	if c.wc == nil {
		c.pollMu.Unlock()
		return
	}
	if !c.armed.Load() {
		if rc := C.gd_cq_arm(c.cq); rc != 0 {
			c.pollMu.Unlock()
			e.ia.postAsync(api.AsyncProviderInternalErrorEvent, e, api.ReasonEVDOther)
			return
		}
		c.armed.Store(true)
	}
	c.pollMu.Unlock()
	e.drain(false)
}

// destroy stops the watcher and releases the CQ and its channel. The
// QPs that used the CQ are destroyed already.
func (c *cq) destroy() {
	c.timer.Stop()
	c.file.Close()
	<-c.done
	c.pollMu.Lock()
	C.gd_cq_destroy(c.ch, c.cq)
	C.free(unsafe.Pointer(c.wc))
	c.wc, c.wcs = nil, nil
	c.pollMu.Unlock()
}

// drain moves every completion in the CQ into the EVD's queue, a batch
// per cgo call. It allocates nothing. With try, it returns at once if
// another drain runs (that one delivers what is there): a polling
// consumer never waits for a drainer the scheduler has preempted.
func (e *evd) drain(try bool) {
	c := e.cq
	if c == nil {
		return
	}
	if try {
		if !c.pollMu.TryLock() {
			return
		}
	} else {
		c.pollMu.Lock()
	}
	defer c.pollMu.Unlock()
	e.pollBatches(false)
}

// pollBatches moves the CQ's completions into the EVD's queue, a batch
// per cgo call, for a caller that holds pollMu and, if locked is set,
// ia.mu (else ia.mu is taken for each batch).
func (e *evd) pollBatches(locked bool) {
	c := e.cq
	if c.wc == nil {
		return
	}
	for {
		n := int(pollCQ(c.cq, wcBatch, c.wc))
		if n <= 0 {
			return
		}
		if !locked {
			e.ia.mu.Lock()
		}
		for k := range n {
			e.ia.complete(&c.wcs[k])
		}
		if !locked {
			e.ia.mu.Unlock()
		}
		if n < wcBatch {
			return
		}
	}
}

// catchUp drains an unarmed CQ before an event is posted to its EVD
// directly, so that the event comes after the completions before it.
// ia.mu is held. A drain already running (the one that completes, or a
// concurrent one) is left to deliver its batch.
func (e *evd) catchUp() {
	c := e.cq
	if c == nil || c.armed.Load() || !c.pollMu.TryLock() {
		return
	}
	defer c.pollMu.Unlock()
	e.pollBatches(true)
}
