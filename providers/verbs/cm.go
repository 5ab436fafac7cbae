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
	"os"
	"syscall"
	"time"
	"unsafe"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
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
				C.rdma_reject(c.ev.id, nil, 0)
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
		// defined) on the IB CM; anything else is the peer's CM refusing.
		// On the passive side, after Accept, either means the accept did
		// not complete: the requester's CM answers the reply with a
		// reject when the request has timed out there meanwhile, where
		// other times it sends nothing and the reply's retries end in
		// CONNECT_ERROR (dat_cr_accept(3DAT)).
		if p.State == api.EPCompletionPending {
			p.failConnect(api.ConnectionAcceptCompletionErrorEvent, nil)
		} else if ev.status == 28 {
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

// psp is a Public Service Point: a listening cm id on the IA's address
// with the connection qualifier as port (dat_psp_create(3DAT)).
type psp struct {
	api.ContextSlot
	ia    *ia
	id    *C.struct_rdma_cm_id
	q     api.ConnQual
	evd   *evd
	flags api.PSPFlags
}

// CreatePSP listens on port q (dat_psp_create(3DAT)).
func (i *ia) CreatePSP(q api.ConnQual, evdArg api.EVD, flags api.PSPFlags) (api.PSP, error) {
	if q > 0xffff {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("connection qualifier %d is not an rdma_cm port (1..65535)", q))
	}
	if flags != api.PSPConsumer {
		return nil, api.Errorf(api.ModelNotSupported, api.NoSubtype, "the verbs provider does not create EPs for PSPs")
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	s, err := i.listen(q, evdOf(evdArg))
	if err != nil {
		return nil, err
	}
	return s, nil
}

// CreatePSPAny listens on a port rdma_cm chooses (dat_psp_create_any(3DAT)).
func (i *ia) CreatePSPAny(evdArg api.EVD, flags api.PSPFlags) (api.PSP, api.ConnQual, error) {
	if flags != api.PSPConsumer {
		return nil, 0, api.Errorf(api.ModelNotSupported, api.NoSubtype, "the verbs provider does not create EPs for PSPs")
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	s, err := i.listen(0, evdOf(evdArg))
	if err != nil {
		return nil, 0, err
	}
	return s, s.q, nil
}

// listen creates the listening id. ia.mu is held.
func (i *ia) listen(q api.ConnQual, e *evd) (*psp, error) {
	if i.Closed() {
		return nil, kit.ErrIAClosed // (the guard refuses it first; this is for callers without the guard: no cm id may outlive the IA)
	}
	id, err := i.newID()
	if err != nil {
		return nil, err
	}
	ip, n := ipBytes(i.dev.ip)
	rc := C.gd_cm_bind(id, ip, C.int(n), C.uint16_t(q))
	C.free(unsafe.Pointer(ip))
	if rc == 0 {
		if r, lerr := C.rdma_listen(id, 128); r != 0 {
			rc = C.int(lerr.(syscall.Errno))
		}
	}
	if rc != 0 {
		C.rdma_destroy_id(id)
		if rc == C.EADDRINUSE {
			return nil, api.Errorf(api.ConnQualInUse, api.NoSubtype, fmt.Sprintf("port %d of %s is in use", q, i.dev.ip))
		}
		return nil, api.Errorf(api.InsufficientResources, api.SubResourceTEP, fmt.Sprintf("listening on port %d: %s", q, errnoText(syscallErrno(rc))))
	}
	s := &psp{ia: i, id: id, q: api.ConnQual(C.gd_cm_local_port(id)), evd: e}
	i.owners[id] = s
	i.psps.Add(s)
	return s, nil
}

// HandleType reports HandlePSP (dat_get_handle_type(3DAT)).
func (s *psp) HandleType() api.HandleType { return api.HandlePSP }

// Query returns the PSP's parameters (dat_psp_query(3DAT)).
func (s *psp) Query() (api.PSPParam, error) {
	return api.PSPParam{IA: s.ia, ConnQual: s.q, EVD: s.evd, Flags: s.flags}, nil
}

// Free stops listening (dat_psp_free(3DAT)).
func (s *psp) Free() error {
	s.ia.mu.Lock()
	defer s.ia.mu.Unlock()
	s.stop()
	s.ia.psps.Remove(s)
	return nil
}

// stop destroys the listening id. ia.mu is held.
func (s *psp) stop() {
	s.ia.destroyID(&s.id)
}

// cmEvent turns a connection request into a CR on the PSP's EVD. ia.mu
// is held.
func (s *psp) cmEvent(ev *C.struct_gd_cm_event) {
	if ev.event != C.RDMA_CM_EVENT_CONNECT_REQUEST {
		return
	}
	c := &cr{ia: s.ia, id: ev.id, psp: s, q: s.q, pd: eventPD(ev), remote: peerAddr(ev), rport: api.ConnQual(ev.peer_port)}
	s.ia.owners[ev.id] = c
	s.ia.crs.Add(c)
	out := api.Event{Number: api.ConnectionRequestEvent, CR: api.CRArrivalData{PSP: s, LocalAddr: s.ia.addr, ConnQual: s.q, CR: c}}
	s.evd.post(&out, true)
}

// cr is a pending connection request (dat_cr_query(3DAT)).
type cr struct {
	api.ContextSlot
	ia     *ia
	id     *C.struct_rdma_cm_id // nil once accepted, rejected or gone
	psp    *psp                 // the PSP it arrived on, or nil
	rsp    *rsp                 // the RSP it arrived on, or nil
	local  *ep                  // the reserved EP of an RSP's request
	q      api.ConnQual
	pd     []byte
	remote net.Addr
	rport  api.ConnQual
}

// HandleType reports HandleCR (dat_get_handle_type(3DAT)).
func (c *cr) HandleType() api.HandleType { return api.HandleCR }

// Query returns the request's parameters (dat_cr_query(3DAT)).
func (c *cr) Query() (api.CRParam, error) {
	c.ia.mu.Lock()
	defer c.ia.mu.Unlock()
	prm := api.CRParam{RemoteAddr: c.remote, RemotePortQual: c.rport, PrivateData: c.pd}
	if c.local != nil {
		prm.LocalEP = c.local
	}
	return prm, nil
}

// cmEvent: the requester gave up before the consumer answered.
func (c *cr) cmEvent(ev *C.struct_gd_cm_event) {}

// Accept accepts the request on ep (dat_cr_accept(3DAT)): ep's QP is
// brought up with the request's attributes and takes over its cm id.
func (c *cr) Accept(epArg api.EP, privateData []byte) error {
	p, _ := epArg.(*ep)
	i := c.ia
	i.mu.Lock()
	defer i.mu.Unlock()
	if p == nil {
		p = c.local
	}
	if p == nil {
		return api.Errorf(api.InvalidHandle, api.SubHandleEP, "accept needs an EP")
	}
	if c.id == nil {
		return api.Errorf(api.InvalidHandle, api.SubHandleCR, "the connection request is gone")
	}
	if p.State != api.EPUnconnected && !(p == c.local && p.State == api.EPPassiveConnectionPending) {
		return p.StateErr("Accept")
	}
	if rc := C.gd_qp_connect(c.id, p.qp); rc != 0 {
		return api.Errorf(api.InternalError, api.NoSubtype, "bringing up the QP: "+errnoText(syscallErrno(rc)))
	}
	wire := encodePD(privateData)
	pd := (*C.uint8_t)(C.CBytes(wire))
	rc := C.gd_cm_accept(c.id, C.uint32_t(p.qpn), pd, C.int(len(wire)), C.int(p.Attr.MaxRDMAReadOut), C.int(p.Attr.MaxRDMAReadIn))
	C.free(unsafe.Pointer(pd))
	if rc != 0 {
		C.gd_qp_reset(p.qp, C.uint8_t(i.dev.port.Num))
		return api.Errorf(api.InternalError, api.NoSubtype, "rdma_accept: "+errnoText(syscallErrno(rc)))
	}
	p.id, p.RemoteAddr, p.RemotePort, p.LocalPort = c.id, c.remote, c.rport, c.q
	if c.local != nil && c.local != p && c.local.State == api.EPPassiveConnectionPending {
		c.local.State = api.EPUnconnected
	}
	if p.rsp != nil {
		p.rsp.ep, p.rsp = nil, nil
	}
	i.owners[c.id] = p
	c.id = nil
	i.crs.Remove(c)
	p.State = api.EPCompletionPending
	return nil
}

// Reject refuses the request; the requester sees PEER_REJECTED with
// privateData (dat_cr_reject(3DAT)).
func (c *cr) Reject(privateData []byte) error {
	i := c.ia
	i.mu.Lock()
	defer i.mu.Unlock()
	if c.id == nil {
		return api.Errorf(api.InvalidHandle, api.SubHandleCR, "the connection request is gone")
	}
	wire := encodePD(privateData)
	pd := C.CBytes(wire)
	C.rdma_reject(c.id, pd, C.uint8_t(len(wire)))
	C.free(pd)
	c.drop()
	if l := c.local; l != nil && l.State == api.EPPassiveConnectionPending {
		l.State = api.EPUnconnected
		if l.rsp != nil {
			l.rsp.ep, l.rsp = nil, nil
		}
	}
	return nil
}

// drop destroys the request's id. ia.mu is held.
func (c *cr) drop() {
	c.ia.destroyID(&c.id)
	c.ia.crs.Remove(c)
}

// Handoff passes the request to the PSP on q (dat_cr_handoff(3DAT)). An
// rdma_cm request cannot travel to another listener, so q must be a PSP
// of the same IA, which gets the request (the same cm id) as a new CR;
// a q without one is ErrInvalidParameter and the request stays.
func (c *cr) Handoff(q api.ConnQual) error {
	i := c.ia
	i.mu.Lock()
	defer i.mu.Unlock()
	if c.id == nil {
		return api.Errorf(api.InvalidHandle, api.SubHandleCR, "the connection request is gone")
	}
	var to *psp
	for s := range i.psps.All() {
		if s.q == q && s.id != nil {
			to = s
		}
	}
	if to == nil {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("no PSP of the IA listens on %d", q))
	}
	n := &cr{ia: i, id: c.id, psp: to, q: q, pd: c.pd, remote: c.remote, rport: c.rport}
	i.owners[c.id] = n
	i.crs.Add(n)
	c.id = nil
	i.crs.Remove(c)
	out := api.Event{Number: api.ConnectionRequestEvent, CR: api.CRArrivalData{PSP: to, LocalAddr: i.addr, ConnQual: q, CR: n}}
	to.evd.post(&out, true)
	return nil
}

// rsp is a Reserved Service Point: a listening cm id that hands its one
// connection request to the EP it reserves (dat_rsp_create(3DAT)).
type rsp struct {
	api.ContextSlot
	ia  *ia
	id  *C.struct_rdma_cm_id // nil once it has delivered its request or is freed
	q   api.ConnQual
	evd *evd
	ep  *ep // the reserved EP, until it is accepted, rejected or released
}

// CreateRSP listens on q for one request for ep, which becomes RESERVED
// (dat_rsp_create(3DAT)).
func (i *ia) CreateRSP(q api.ConnQual, epArg api.EP, evdArg api.EVD) (api.RSP, error) {
	if q > 0xffff {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("connection qualifier %d is not an rdma_cm port (1..65535)", q))
	}
	p, _ := epArg.(*ep)
	if p == nil {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandleEP, "EP handle is nil")
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if p.State != api.EPUnconnected {
		return nil, p.StateErr("CreateRSP")
	}
	s, err := i.listen(q, nil)
	if err != nil {
		return nil, err
	}
	// The listener belongs to the RSP, not to a PSP.
	i.psps.Remove(s)
	r := &rsp{ia: i, id: s.id, q: s.q, evd: evdOf(evdArg), ep: p}
	i.owners[r.id] = r
	i.rsps.Add(r)
	p.State, p.rsp = api.EPReserved, r
	return r, nil
}

// HandleType reports HandleRSP (dat_get_handle_type(3DAT)).
func (r *rsp) HandleType() api.HandleType { return api.HandleRSP }

// Query returns the RSP's parameters (dat_rsp_query(3DAT)).
func (r *rsp) Query() (api.RSPParam, error) {
	r.ia.mu.Lock()
	defer r.ia.mu.Unlock()
	prm := api.RSPParam{IA: r.ia, ConnQual: r.q, EVD: r.evd}
	if r.ep != nil {
		prm.EP = r.ep
	}
	return prm, nil
}

// Free stops listening; a still reserved EP reverts to UNCONNECTED
// (dat_rsp_free(3DAT)).
func (r *rsp) Free() error {
	r.ia.mu.Lock()
	defer r.ia.mu.Unlock()
	r.stop()
	r.ia.rsps.Remove(r)
	return nil
}

// stop destroys the listener and releases the reserved EP. ia.mu is held.
func (r *rsp) stop() {
	r.unlisten()
	if p := r.ep; p != nil {
		p.Unreserve()
		p.rsp, r.ep = nil, nil
	}
}

func (r *rsp) unlisten() {
	r.ia.destroyID(&r.id)
}

// cmEvent turns the first connection request into a CR for the reserved
// EP, which becomes PASSIVE_CONNECTION_PENDING; the RSP then stops
// listening, so a second requester is refused. ia.mu is held.
func (r *rsp) cmEvent(ev *C.struct_gd_cm_event) {
	if ev.event != C.RDMA_CM_EVENT_CONNECT_REQUEST {
		return
	}
	p := r.ep
	if p == nil || p.State != api.EPReserved {
		C.rdma_reject(ev.id, nil, 0)
		C.rdma_destroy_id(ev.id)
		return
	}
	c := &cr{ia: r.ia, id: ev.id, rsp: r, local: p, q: r.q, pd: eventPD(ev), remote: peerAddr(ev), rport: api.ConnQual(ev.peer_port)}
	r.ia.owners[ev.id] = c
	r.ia.crs.Add(c)
	p.State = api.EPPassiveConnectionPending
	r.unlisten()
	out := api.Event{Number: api.ConnectionRequestEvent, CR: api.CRArrivalData{RSP: r, LocalAddr: r.ia.addr, ConnQual: r.q, CR: c}}
	r.evd.post(&out, true)
}
