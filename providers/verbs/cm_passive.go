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
	"syscall"
	"unsafe"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/connreq"
)

// The passive side: PSPs and RSPs, which listen, and the connection
// requests they deliver.

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

// cmEvent turns a connection request into a CR on the PSP's EVD. The
// backlog is the EVD's free space: a request that finds it full is
// refused (NON_PEER_REJECTED). ia.mu is held.
func (s *psp) cmEvent(ev *C.struct_gd_cm_event) {
	if ev.event != C.RDMA_CM_EVENT_CONNECT_REQUEST {
		return
	}
	c := &cr{ia: s.ia, id: ev.id, psp: s, q: s.q, pd: eventPD(ev), remote: peerAddr(ev), rport: api.ConnQual(ev.peer_port)}
	out := api.Event{Number: api.ConnectionRequestEvent, CR: api.CRArrivalData{PSP: s, LocalAddr: s.ia.addr, ConnQual: s.q, CR: c}}
	if !s.evd.tryPost(&out, true) {
		refuse(ev.id)
		C.rdma_destroy_id(ev.id)
		return
	}
	s.ia.owners[ev.id] = c
	s.ia.crs.Add(c)
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
// brought up with the request's attributes and takes over its cm id. A
// request on an RSP carries the RSP's EP, and ep must then be nil or that
// EP (connreq.AcceptEP).
func (c *cr) Accept(epArg api.EP, privateData []byte) error {
	given, _ := epArg.(*ep)
	i := c.ia
	i.mu.Lock()
	defer i.mu.Unlock()
	if c.id == nil {
		return api.Errorf(api.InvalidHandle, api.SubHandleCR, "the connection request is gone")
	}
	p, want, err := connreq.AcceptEP(c.local, given, c.local != nil)
	if err != nil {
		return err
	}
	if p.State != want {
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
	return c.decline(func(id *C.struct_rdma_cm_id) {
		wire := encodePD(privateData)
		pd := C.CBytes(wire)
		C.rdma_reject(id, pd, C.uint8_t(len(wire)))
		C.free(pd)
	})
}

// Refuse refuses the request as the provider does (provider.CRRefuser,
// refuse): the requester sees NON_PEER_REJECTED; otherwise as Reject.
func (c *cr) Refuse() error { return c.decline(refuse) }

var _ provider.CRRefuser = (*cr)(nil)

// decline answers the request's cm id by answer, a reject, and ends the
// request, for Reject and Refuse.
func (c *cr) decline(answer func(*C.struct_rdma_cm_id)) error {
	i := c.ia
	i.mu.Lock()
	defer i.mu.Unlock()
	if c.id == nil {
		return api.Errorf(api.InvalidHandle, api.SubHandleCR, "the connection request is gone")
	}
	answer(c.id)
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
// a q without one is ErrInvalidParameter, and one whose EVD is full
// ErrInsufficientResources; the request then stays.
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
	out := api.Event{Number: api.ConnectionRequestEvent, CR: api.CRArrivalData{PSP: to, LocalAddr: i.addr, ConnQual: q, CR: n}}
	if !to.evd.tryPost(&out, true) {
		return api.Errorf(api.InsufficientResources, api.NoSubtype, "the backlog of the target service point is full")
	}
	i.owners[c.id] = n
	i.crs.Add(n)
	c.id = nil
	i.crs.Remove(c)
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
	c := &cr{ia: r.ia, id: ev.id, rsp: r, local: p, q: r.q, pd: eventPD(ev), remote: peerAddr(ev), rport: api.ConnQual(ev.peer_port)}
	out := api.Event{Number: api.ConnectionRequestEvent, CR: api.CRArrivalData{RSP: r, LocalAddr: r.ia.addr, ConnQual: r.q, CR: c}}
	if p == nil || p.State != api.EPReserved || !r.evd.tryPost(&out, true) {
		refuse(ev.id)
		C.rdma_destroy_id(ev.id)
		return
	}
	r.ia.owners[ev.id] = c
	r.ia.crs.Add(c)
	p.State = api.EPPassiveConnectionPending
	r.unlisten()
}
