//go:build verbs && cgo

package verbs

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"net"
	"time"
	"unsafe"

	"github.com/godat/godat/api"
)

// The active side of a connection, and its end: Connect, the events
// rdma_cm delivers to a connecting or connected EP, and Disconnect.

// Connect starts an active connection to the PSP on port q at remote
// (dat_ep_connect(3DAT)): rdma_cm resolves the address and the route,
// then sends the request with the private data.
func (p *ep) Connect(remote net.Addr, q api.ConnQual, timeout api.Timeout, privateData []byte, qos api.QOS, flags api.ConnectFlags) error {
	var ip net.IP
	switch a := remote.(type) {
	case *net.IPAddr:
		ip = a.IP
	case *net.TCPAddr:
		ip = a.IP
	case *net.UDPAddr:
		ip = a.IP
	default:
		return api.Errorf(api.InvalidAddress, api.SubAddressUnsupported, fmt.Sprintf("%s address %q is not an IP address", remote.Network(), remote))
	}
	if q > 0xffff {
		return api.Errorf(api.InvalidParameter, api.SubArg3, fmt.Sprintf("connection qualifier %d is not an rdma_cm port (0..65535)", q))
	}
	i := p.ia
	i.mu.Lock()
	defer i.mu.Unlock()
	if p.State != api.EPUnconnected {
		return p.StateErr("Connect")
	}
	if (ip.To4() == nil) != (i.dev.ip.To4() == nil) {
		return api.Errorf(api.InvalidAddress, api.SubAddressUnsupported, fmt.Sprintf("%s and the IA's address %s are of different families", ip, i.dev.ip))
	}
	id, err := i.newID()
	if err != nil {
		return err
	}
	// Bound first, so that the local port is known (Query) before the
	// request leaves.
	src, n := ipBytes(i.dev.ip)
	dst, _ := ipBytes(ip)
	rc := C.gd_cm_bind(id, src, C.int(n), 0)
	if rc == 0 {
		rc = C.gd_cm_resolve_addr(id, nil, dst, C.int(n), C.uint16_t(q), resolveTimeout(timeout))
	}
	C.free(unsafe.Pointer(src))
	C.free(unsafe.Pointer(dst))
	if rc != 0 {
		C.rdma_destroy_id(id)
		return api.Errorf(api.InvalidAddress, api.SubAddressUnreachable, fmt.Sprintf("rdma_resolve_addr(%s): %s", ip, errnoText(syscallErrno(rc))))
	}
	p.id, p.pdata = id, encodePD(privateData)
	i.owners[id] = p
	p.RemoteAddr, p.RemotePort, p.LocalPort = &net.IPAddr{IP: ip}, q, api.ConnQual(C.gd_cm_local_port(id))
	p.State = api.EPActiveConnectionPending
	p.attempt++
	if timeout > 0 {
		attempt := p.attempt
		p.timer = time.AfterFunc(timeout, func() { p.timedOut(attempt) })
	}
	return nil
}

// timedOut ends connection attempt number attempt if it is still
// pending: the DAT timeout is the consumer's, shorter than the CM's own
// retries.
func (p *ep) timedOut(attempt uint64) {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	if p.attempt != attempt || p.State != api.EPActiveConnectionPending || p.qp == nil {
		return
	}
	p.dropID()
	p.shutdown()
	p.State = api.EPDisconnected
	p.connEvent(api.ConnectionTimedOutEvent, nil)
}

// stopTimer cancels the connect timeout or the graceful wait. ia.mu is held.
func (p *ep) stopTimer() {
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
}

// cmEvent moves the EP's connection along. ia.mu is held.
func (p *ep) cmEvent(ev *C.struct_gd_cm_event) {
	switch ev.event {
	case C.RDMA_CM_EVENT_ADDR_RESOLVED:
		if C.rdma_resolve_route(p.id, 2000) != 0 {
			p.failConnect(api.ConnectionUnreachableEvent, nil)
		}
	case C.RDMA_CM_EVENT_ROUTE_RESOLVED:
		pd := (*C.uint8_t)(C.CBytes(p.pdata))
		rc := C.gd_cm_connect(p.id, C.uint32_t(p.qpn), pd, C.int(len(p.pdata)), C.int(p.Attr.MaxRDMAReadOut), C.int(p.Attr.MaxRDMAReadIn))
		C.free(unsafe.Pointer(pd))
		if rc != 0 {
			p.failConnect(api.ConnectionUnreachableEvent, nil)
		}
	case C.RDMA_CM_EVENT_CONNECT_RESPONSE:
		p.stopTimer()
		// The QP is godat's, not rdma_cm's: bring it up, then confirm.
		if C.gd_qp_connect(p.id, p.qp) != 0 || C.rdma_establish(p.id) != 0 {
			C.rdma_reject(p.id, nil, 0)
			p.failConnect(api.ConnectionNonPeerRejectedEvent, nil)
			return
		}
		p.PeerPD = eventPD(ev)
		p.State = api.EPConnected
		p.connEvent(api.ConnectionEstablishedEvent, p.PeerPD)
		p.watchHard()
	case C.RDMA_CM_EVENT_ESTABLISHED:
		if p.State == api.EPCompletionPending || p.State == api.EPActiveConnectionPending {
			p.State = api.EPConnected
			p.connEvent(api.ConnectionEstablishedEvent, p.PeerPD)
			p.watchHard()
		}
	case C.RDMA_CM_EVENT_REJECTED:
		// A reject the peer's consumer chose carries reason 28 (consumer
		// defined) on the IB CM and not godat's refusal mark (pdRefused);
		// anything else is the peer's provider or CM refusing.
		// On the passive side, after Accept, either means the accept did
		// not complete: the requester's CM answers the reply with a
		// reject when the request has timed out there meanwhile, where
		// other times it sends nothing and the reply's retries end in
		// CONNECT_ERROR (dat_cr_accept(3DAT)).
		if p.State == api.EPCompletionPending {
			p.failConnect(api.ConnectionAcceptCompletionErrorEvent, nil)
		} else if ev.status == 28 && !refused(ev) {
			p.failConnect(api.ConnectionPeerRejectedEvent, eventPD(ev))
		} else {
			p.failConnect(api.ConnectionNonPeerRejectedEvent, nil)
		}
	case C.RDMA_CM_EVENT_ADDR_ERROR, C.RDMA_CM_EVENT_ROUTE_ERROR, C.RDMA_CM_EVENT_UNREACHABLE:
		if ev.status == -C.ETIMEDOUT {
			p.failConnect(api.ConnectionTimedOutEvent, nil)
		} else {
			p.failConnect(api.ConnectionUnreachableEvent, nil)
		}
	case C.RDMA_CM_EVENT_CONNECT_ERROR:
		if p.State == api.EPCompletionPending {
			p.failConnect(api.ConnectionAcceptCompletionErrorEvent, nil)
		} else {
			p.failConnect(api.ConnectionUnreachableEvent, nil)
		}
	case C.RDMA_CM_EVENT_DISCONNECTED, C.RDMA_CM_EVENT_DEVICE_REMOVAL:
		switch p.State {
		case api.EPConnected, api.EPDisconnectPending:
			p.endDiscWait()
			p.shutdown()
			p.State = api.EPDisconnected
			if ev.event == C.RDMA_CM_EVENT_DEVICE_REMOVAL {
				p.connEvent(api.ConnectionBrokenEvent, nil)
			} else {
				p.connEvent(api.ConnectionDisconnectedEvent, nil)
			}
		}
	}
}

// failConnect ends a connection attempt with event n. ia.mu is held.
func (p *ep) failConnect(n api.EventNumber, pd []byte) {
	if p.State != api.EPActiveConnectionPending && p.State != api.EPCompletionPending {
		return
	}
	p.stopTimer()
	C.gd_qp_error(p.qp)
	p.State = api.EPDisconnected
	p.connEvent(n, pd)
}

// gracefulWait bounds how long a graceful Disconnect waits for the
// requests in progress before it flushes them.
const gracefulWait = 5 * time.Second

// Disconnect ends the connection or the attempt (dat_ep_disconnect(3DAT)),
// and DISCONNECTED follows once rdma_cm reports the end (at once for an
// attempt). An abrupt one flushes the DTOs in progress. A graceful one
// lets the requests in progress complete first, for gracefulWait at most:
// the QP keeps working until the request queue is empty (complete), and
// only then goes to the error state, which flushes the receives. Requests
// posted without a device completion (CompletionSuppress) at the end of
// the queue leave nothing to wait for: they are flushed.
func (p *ep) Disconnect(flags api.CloseFlags) error {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	switch p.State {
	case api.EPConnected:
		p.State = api.EPDisconnectPending
		if flags == api.CloseGraceful && p.reqs.Len() > 0 && p.unsignalled == 0 {
			p.discWait = true
			p.timer = time.AfterFunc(gracefulWait, p.gracefulTimedOut)
			return nil
		}
		p.shutdown()
	case api.EPDisconnectPending:
		if flags == api.CloseAbrupt && p.discWait {
			p.endDiscWait()
			p.shutdown()
		}
		return nil
	case api.EPActiveConnectionPending, api.EPCompletionPending:
		p.stopTimer()
		p.dropID()
		p.shutdown()
		p.State = api.EPDisconnected
		p.connEvent(api.ConnectionDisconnectedEvent, nil)
	case api.EPDisconnected:
		return nil
	default:
		return p.StateErr("Disconnect")
	}
	return nil
}

// shutdown ends the connection: the QP goes to the error state (its
// outstanding DTOs are flushed) and rdma_cm tells the peer, if the EP
// still has its cm id. ia.mu is held.
func (p *ep) shutdown() {
	C.gd_qp_error(p.qp)
	if p.id != nil {
		C.rdma_disconnect(p.id)
	}
}

// endDiscWait stops a graceful Disconnect's wait. ia.mu is held.
func (p *ep) endDiscWait() {
	if p.discWait {
		p.discWait = false
		p.stopTimer()
	}
}

// gracefulTimedOut ends a graceful Disconnect whose requests did not all
// complete within gracefulWait.
func (p *ep) gracefulTimedOut() {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	if p.discWait && p.qp != nil {
		p.endDiscWait()
		p.shutdown()
	}
}
