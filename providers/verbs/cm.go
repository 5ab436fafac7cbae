//go:build verbs && cgo

package verbs

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

	"github.com/godat/godat/api"
)

// Private data on the wire. The InfiniBand CM (which RoCE uses too) pads
// private data to the size of its field, so the receiver cannot tell how
// much the sender gave. godat puts a two-byte header in front: a marker
// and the length. Private data without the marker (from a peer that is
// not godat, such as rping) is passed on whole, padding included.
const (
	pdMarker = 0xD7
	pdHeader = 2
)

// pdRefused, alone as a reject's private data, marks the provider refusing
// a request (a full backlog, a closing IA, a service point gone) rather
// than the consumer rejecting it. The IB CM gives both the reason
// "consumer defined", and destroying the cm id of an unanswered request
// sends the same, so without the mark every such requester would see
// PEER_REJECTED; with it, it sees NON_PEER_REJECTED.
const pdRefused = 0xD8

// refuse rejects the request of cm id as the provider (pdRefused).
func refuse(id *C.struct_rdma_cm_id) {
	mark := C.CBytes([]byte{pdRefused})
	C.rdma_reject(id, mark, 1)
	C.free(mark)
}

// refused reports whether a REJECTED event is a godat provider's refusal.
func refused(ev *C.struct_gd_cm_event) bool {
	return ev.pdata_len >= 1 && byte(ev.pdata[0]) == pdRefused
}

func encodePD(pd []byte) []byte {
	out := make([]byte, pdHeader+len(pd))
	out[0], out[1] = pdMarker, byte(len(pd))
	copy(out[pdHeader:], pd)
	return out
}

func decodePD(raw []byte) []byte {
	if len(raw) >= pdHeader && raw[0] == pdMarker && int(raw[1]) <= len(raw)-pdHeader {
		return raw[pdHeader : pdHeader+int(raw[1])]
	}
	return raw
}

// cmOwner is what a cm id belongs to: an EP, a PSP, or a CR.
type cmOwner interface {
	cmEvent(ev *C.struct_gd_cm_event)
}

// cmChannel is the IA's rdma_cm event channel, watched by a goroutine
// parked in Go's network poller on its non-blocking descriptor.
type cmChannel struct {
	ch   *C.struct_rdma_event_channel
	file *os.File // a duplicate of the channel's descriptor
	ev   *C.struct_gd_cm_event
	done chan struct{}
}

func newCMChannel(i *ia) (*cmChannel, error) {
	ch, err := C.rdma_create_event_channel()
	if ch == nil {
		return nil, notFound("rdma_create_event_channel: " + errnoText(err))
	}
	c := &cmChannel{ch: ch, done: make(chan struct{})}
	if rc := C.gd_nonblock(ch.fd); rc != 0 {
		C.rdma_destroy_event_channel(ch)
		return nil, notFound("rdma_cm event channel: " + errnoText(syscallErrno(rc)))
	}
	file, rc, perr := pollable(ch.fd, "rdma-cm-channel")
	if perr != nil {
		C.rdma_destroy_event_channel(ch)
		return nil, notFound("rdma_cm event channel: " + perr.Error())
	}
	c.file = file
	c.ev = (*C.struct_gd_cm_event)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_gd_cm_event{}))))
	go c.watch(i, rc)
	return c, nil
}

// watch delivers each rdma_cm event to the owner of its id.
func (c *cmChannel) watch(i *ia, rc syscall.RawConn) {
	defer close(c.done)
	for {
		var got C.int
		err := rc.Read(func(uintptr) bool {
			got = C.gd_cm_get(c.ch, c.ev)
			return got != 0
		})
		if err != nil || got < 0 {
			return
		}
		if e := c.ev.event; e == C.RDMA_CM_EVENT_DISCONNECTED || e == C.RDMA_CM_EVENT_DEVICE_REMOVAL {
			i.drainBefore(c.ev.id)
		}
		i.mu.Lock()
		if !i.Closed() {
			owner := i.owners[c.ev.id]
			if c.ev.event == C.RDMA_CM_EVENT_CONNECT_REQUEST {
				owner = i.owners[c.ev.listen_id]
			}
			if owner != nil {
				owner.cmEvent(c.ev)
			} else if c.ev.event == C.RDMA_CM_EVENT_CONNECT_REQUEST {
				refuse(c.ev.id)
				C.rdma_destroy_id(c.ev.id)
			}
		}
		i.mu.Unlock()
	}
}

// drainBefore drains the CQs of the EP of cm id before its disconnect is
// handled, so that completions already there come first: a DTO that
// failed here before the peer left (and made it leave) breaks the
// connection (BROKEN), as when a waiter or the watcher had drained them
// at once. Without ia.mu, so that a drain under way (which polled
// completions and waits for ia.mu to deliver them) finishes first.
func (i *ia) drainBefore(id *C.struct_rdma_cm_id) {
	var evds [2]*evd
	i.mu.Lock()
	if p, ok := i.owners[id].(*ep); ok && !i.Closed() {
		evds = [2]*evd{p.RecvEVD, p.RequestEVD}
	}
	i.mu.Unlock()
	for _, e := range evds {
		if e != nil {
			e.drain(false) // (an EVD freed meanwhile has no CQ memory left: nothing is polled)
		}
	}
}

// close stops the watcher and destroys the channel; every id on it is
// destroyed already.
func (c *cmChannel) close() {
	c.file.Close()
	<-c.done
	C.rdma_destroy_event_channel(c.ch)
	C.free(unsafe.Pointer(c.ev))
}

// newID creates a cm id on the IA's channel. ia.mu is held.
func (i *ia) newID() (*C.struct_rdma_cm_id, error) {
	var id *C.struct_rdma_cm_id
	if rc, err := C.rdma_create_id(i.cm.ch, &id, nil, C.RDMA_PS_TCP); rc != 0 {
		return nil, api.Errorf(api.InsufficientResources, api.SubResourceTEP, "rdma_create_id: "+errnoText(err))
	}
	return id, nil
}

// ipBytes returns ip in the form the C helpers take (4 or 16 bytes) in C
// memory, which the caller frees.
func ipBytes(ip net.IP) (*C.uint8_t, int) {
	b := []byte(ip.To4())
	if b == nil {
		b = []byte(ip.To16())
	}
	return (*C.uint8_t)(C.CBytes(b)), len(b)
}

func peerAddr(ev *C.struct_gd_cm_event) net.Addr {
	n := int(ev.peer_ip_len)
	if n == 0 {
		return nil
	}
	return &net.IPAddr{IP: net.IP(C.GoBytes(unsafe.Pointer(&ev.peer_ip[0]), C.int(n)))}
}

func eventPD(ev *C.struct_gd_cm_event) []byte {
	if ev.pdata_len == 0 {
		return nil
	}
	return decodePD(C.GoBytes(unsafe.Pointer(&ev.pdata[0]), ev.pdata_len))
}

// resolveTimeout is how long address and route resolution may take.
func resolveTimeout(t api.Timeout) C.int {
	const def = 2000
	if t <= 0 || t > def*time.Millisecond {
		return def
	}
	return C.int(t / time.Millisecond)
}
