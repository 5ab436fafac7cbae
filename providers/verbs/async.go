//go:build verbs && cgo

package verbs

/*
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

// asyncReader reads the asynchronous events of one RDMA device for every
// IA of the process on that device. The device context is librdmacm's,
// shared by all of them, and each event is delivered once to whoever
// reads the context's descriptor, so there is one reader per device: it
// starts with the first IA on the device and stops with the last.
//
// The reader takes each event, notes which QP, CQ, SRQ or port it
// concerns and acknowledges it before it delivers anything, so that a
// destroy call, which waits for the acknowledgements of its object's
// events, never waits for godat.
type asyncReader struct {
	ctx   *C.struct_ibv_context
	flags C.int    // the descriptor's flags before the reader made it non-blocking
	file  *os.File // a duplicate of the descriptor, for the network poller
	done  chan struct{}

	mu  sync.Mutex // guards ias
	ias map[*ia]struct{}
}

// asyncReaders holds the running readers by device context. Its mutex
// serialises starting and stopping them; a reader never takes it.
var asyncReaders struct {
	mu sync.Mutex
	m  map[*C.struct_ibv_context]*asyncReader
}

// joinAsync makes the reader of the IA's device deliver to it, starting
// the reader if the IA is the device's first.
func (i *ia) joinAsync() error {
	asyncReaders.mu.Lock()
	defer asyncReaders.mu.Unlock()
	r := asyncReaders.m[i.dev.ctx]
	if r == nil {
		var err error
		if r, err = startAsyncReader(i.dev.ctx); err != nil {
			return err
		}
		if asyncReaders.m == nil {
			asyncReaders.m = map[*C.struct_ibv_context]*asyncReader{}
		}
		asyncReaders.m[i.dev.ctx] = r
	}
	r.mu.Lock()
	r.ias[i] = struct{}{}
	r.mu.Unlock()
	return nil
}

// leaveAsync stops the delivery to the IA, and stops the reader if the IA
// was the device's last. ia.mu is not held: the reader may be delivering
// to the IA and need it.
func (i *ia) leaveAsync() {
	asyncReaders.mu.Lock()
	defer asyncReaders.mu.Unlock()
	r := asyncReaders.m[i.dev.ctx]
	if r == nil {
		return
	}
	r.mu.Lock()
	delete(r.ias, i)
	last := len(r.ias) == 0
	r.mu.Unlock()
	if last {
		delete(asyncReaders.m, i.dev.ctx)
		r.stop()
	}
}

func startAsyncReader(ctx *C.struct_ibv_context) (*asyncReader, error) {
	flags := C.gd_async_begin(ctx)
	if flags < 0 {
		return nil, api.Errorf(api.InternalError, api.NoSubtype, "the device's async event descriptor: "+errnoText(syscallErrno(-flags)))
	}
	file, rc, err := pollable(ctx.async_fd, "verbs-async")
	if err != nil {
		C.gd_async_end(ctx, flags)
		return nil, api.Errorf(api.InsufficientResources, api.NoSubtype, "the device's async event descriptor: "+err.Error())
	}
	r := &asyncReader{ctx: ctx, flags: flags, file: file, done: make(chan struct{}), ias: map[*ia]struct{}{}}
	go r.run(rc)
	return r, nil
}

// stop ends the reader and gives the descriptor its flags back.
func (r *asyncReader) stop() {
	r.file.Close()
	<-r.done
	C.gd_async_end(r.ctx, r.flags)
}

// run reads events until the descriptor is closed or fails.
func (r *asyncReader) run(rc syscall.RawConn) {
	defer close(r.done)
	var ev C.struct_gd_async_event
	var to []*ia
	for {
		var got C.int
		err := rc.Read(func(uintptr) bool {
			got = C.gd_async_get(r.ctx, &ev)
			return got != 0
		})
		if err != nil {
			return // closed by stop
		}
		to = to[:0]
		r.mu.Lock()
		for i := range r.ias {
			to = append(to, i)
		}
		r.mu.Unlock()
		if got < 0 {
			// The descriptor failed: the device is gone for this process.
			for _, i := range to {
				i.deviceEvent(&C.struct_gd_async_event{_type: C.IBV_EVENT_DEVICE_FATAL})
			}
			return
		}
		for _, i := range to {
			i.deviceEvent(&ev)
		}
	}
}

// deviceEvent turns one device async event into the DAT event of the
// object it concerns, if that object is the IA's:
//
//   - device fatal: ASYNC_ERROR_IA_CATASTROPHIC, reason IA_CATASTROPHIC_ERROR;
//   - port error (the link of the IA's port went down):
//     ASYNC_ERROR_IA_CATASTROPHIC, reason IA_OTHER_ERROR;
//   - QP fatal, request or access error: ASYNC_ERROR_EP_BROKEN naming the
//     EP, reason EP_TRANSFER_TO_ERROR;
//   - CQ error (an overrun): ASYNC_ERROR_EVD_OVERFLOW naming the EVD;
//   - SRQ error: ASYNC_ERROR_PROVIDER_INTERNAL_ERROR naming the SRQ, reason
//     SRQ_TRANSFER_TO_ERROR, the event number the low watermark uses.
//
// The rest (port active, address, key and subnet manager changes,
// connection establishment, path migration, SQ drained, last WQE, SRQ
// limit) have no DAT event or are handled elsewhere.
func (i *ia) deviceEvent(ev *C.struct_gd_async_event) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.Closed() {
		return
	}
	switch ev._type {
	case C.IBV_EVENT_DEVICE_FATAL:
		i.async.PostAsync(api.AsyncIACatastrophicEvent, i, api.ReasonIACatastrophic)
	case C.IBV_EVENT_PORT_ERR:
		if uint8(ev.port) == i.dev.port.Num {
			i.async.PostAsync(api.AsyncIACatastrophicEvent, i, api.ReasonIAOther)
		}
	case C.IBV_EVENT_QP_FATAL, C.IBV_EVENT_QP_REQ_ERR, C.IBV_EVENT_QP_ACCESS_ERR:
		if p := i.qps[uint32(ev.qp_num)]; p != nil {
			i.async.PostAsync(api.AsyncEPBrokenEvent, p, api.ReasonEPTransferToError)
		}
	case C.IBV_EVENT_CQ_ERR:
		for e := range i.evds.All() {
			if e.cq != nil && ev.obj == unsafe.Pointer(e.cq.cq) {
				i.async.PostAsync(api.AsyncEVDOverflowEvent, e, api.ReasonEVDOverflow)
			}
		}
	case C.IBV_EVENT_SRQ_ERR:
		for s := range i.srqs.All() {
			if s.srq != nil && ev.obj == unsafe.Pointer(s.srq) {
				i.async.PostAsync(api.AsyncProviderInternalErrorEvent, s, api.ReasonSRQTransferToError)
			}
		}
	}
}
