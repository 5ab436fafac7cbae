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
	"syscall"
	"unsafe"

	"github.com/godat/godat/api"
)

// wcBatch is how many work completions one cgo call polls at most.
const wcBatch = 32

// cq is the completion queue of an EVD that receives DTO or RMR bind
// completions, with its completion channel. A goroutine parked in Go's
// network poller on the channel's (non-blocking) descriptor drains the CQ
// into the EVD's queue when the device signals a completion; Dequeue
// drains it too, so that a consumer that only polls needs no wake-up.
type cq struct {
	ch   *C.struct_ibv_comp_channel
	cq   *C.struct_ibv_cq
	wc   *C.struct_ibv_wc // wcBatch entries in C memory
	wcs  []C.struct_ibv_wc
	file *os.File // a duplicate of the channel's descriptor, for the poller
	done chan struct{}

	pollMu sync.Mutex // one drain at a time, so events keep the CQ's order
}

// newCQ creates the CQ of e with room for depth completions and starts
// its watcher.
func newCQ(e *evd, depth int) (*cq, error) {
	c := &cq{done: make(chan struct{})}
	if rc := C.gd_cq_create(e.ia.dev.ctx, C.int(depth), &c.ch, &c.cq); rc != 0 {
		return nil, api.Errorf(api.InsufficientResources, api.SubResourceTEVD, "ibv_create_cq: "+errnoText(syscallErrno(rc)))
	}
	fd, err := syscall.Dup(int(c.ch.fd))
	if err != nil {
		C.gd_cq_destroy(c.ch, c.cq)
		return nil, api.Errorf(api.InsufficientResources, api.SubResourceTEVD, "dup of the completion channel: "+err.Error())
	}
	syscall.CloseOnExec(fd)
	c.file = os.NewFile(uintptr(fd), "verbs-comp-channel")
	rc, err := c.file.SyscallConn()
	if err != nil {
		c.file.Close()
		C.gd_cq_destroy(c.ch, c.cq)
		return nil, api.Errorf(api.InternalError, api.NoSubtype, "completion channel: "+err.Error())
	}
	c.wc = (*C.struct_ibv_wc)(C.calloc(wcBatch, C.size_t(unsafe.Sizeof(C.struct_ibv_wc{}))))
	c.wcs = unsafe.Slice(c.wc, wcBatch)
	go c.watch(e, rc)
	return c, nil
}

// watch waits in the network poller for completion notifications and
// drains the CQ after each, until the descriptor is closed.
func (c *cq) watch(e *evd, rc syscall.RawConn) {
	defer close(c.done)
	for {
		var failed C.int
		err := rc.Read(func(uintptr) bool {
			r := C.gd_cq_event(c.ch, c.cq)
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
		e.drain()
	}
}

// destroy stops the watcher and releases the CQ and its channel. The
// QPs that used the CQ are destroyed already.
func (c *cq) destroy() {
	c.file.Close()
	<-c.done
	c.pollMu.Lock()
	C.gd_cq_destroy(c.ch, c.cq)
	C.free(unsafe.Pointer(c.wc))
	c.wc, c.wcs = nil, nil
	c.pollMu.Unlock()
}

// drain moves every completion in the CQ into the EVD's queue, a batch
// per cgo call. It allocates nothing.
func (e *evd) drain() {
	c := e.cq
	if c == nil {
		return
	}
	c.pollMu.Lock()
	defer c.pollMu.Unlock()
	if c.wc == nil {
		return
	}
	for {
		n := int(C.gd_poll_cq(c.cq, wcBatch, c.wc))
		if n <= 0 {
			return
		}
		e.ia.mu.Lock()
		for k := range n {
			e.ia.complete(&c.wcs[k])
		}
		e.ia.mu.Unlock()
		if n < wcBatch {
			return
		}
	}
}
