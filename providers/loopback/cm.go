package loopback

import (
	"bytes"
	"fmt"
	"net"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/connreq"
)

// Connection management: service points, connection requests, and the
// active side of the EP state machine.

// servicePoint is a PSP or an RSP that listens on a qualifier (fabric.quals).
type servicePoint interface {
	owner() *ia
	// arrive delivers a new connection request; false means the service
	// point cannot take it (its EVD is full: the backlog is exhausted).
	arrive(c *cr) bool
}

// Connect starts an active connection to the service point listening on q
// (dat_ep_connect(3DAT)). remote must be the Addr of a loopback IA
// (ErrInvalidAddress otherwise). Connection qualifiers are process-wide, as
// ports are on one host: remote names the host, any open loopback IA will
// do. The EP moves to ACTIVE_CONNECTION_PENDING and the outcome arrives on
// its connect EVD: ESTABLISHED (with the acceptor's private data),
// PEER_REJECTED (with the rejector's), NON_PEER_REJECTED (nobody listens
// on q, or the listener's backlog is full, or its IA closed),
// UNREACHABLE (remote is not an open IA) or TIMED_OUT (nobody answered
// within timeout). An EP not in UNCONNECTED gets ErrInvalidState.
func (p *ep) Connect(remote net.Addr, q api.ConnQual, timeout api.Timeout, privateData []byte, qos api.QOS, flags api.ConnectFlags) error {
	addr, err := addrOf(remote)
	if err != nil {
		return err
	}
	if err := connreq.CheckConnectFlags(flags, "loopback"); err != nil {
		return err
	}
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if p.State != api.EPUnconnected {
		return p.StateErr("Connect")
	}
	p.startConnect(addr, q, timeout, privateData)
	return nil
}

// DupConnect connects to the remote end of the connected EP dup
// (dat_ep_dup_connect(3DAT)): the same address and connection qualifier.
// dup must be CONNECTED (ErrInvalidState with its state otherwise).
func (p *ep) DupConnect(dupArg api.EP, timeout api.Timeout, privateData []byte, qos api.QOS) error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	remote, q, err := p.DupTarget(&dupArg.(*ep).Endpoint)
	if err == nil {
		addr, _ := addrOf(remote)
		p.startConnect(addr, q, timeout, privateData)
	}
	return err
}

// startConnect moves p to ACTIVE_CONNECTION_PENDING and delivers the
// request; failures are reported as events. fabric.mu is held.
func (p *ep) startConnect(addr Addr, q api.ConnQual, timeout api.Timeout, pd []byte) {
	fabric.nextPort++
	p.State = api.EPActiveConnectionPending
	p.LocalPort, p.RemoteAddr, p.RemotePort, p.PeerPD = fabric.nextPort, addr, q, nil
	if t := fabric.ias[addr]; t == nil {
		p.toDisconnected(api.ConnectionUnreachableEvent, nil)
		return
	}
	sp := fabric.quals.At(q)
	c := &cr{active: p, pd: bytes.Clone(pd), remoteAddr: p.ia.addr, remotePort: p.LocalPort}
	if sp == nil || !sp.arrive(c) {
		p.toDisconnected(api.ConnectionNonPeerRejectedEvent, nil)
		return
	}
	p.cr = c
	if timeout != api.TimeoutInfinite {
		p.armTimer(timeout)
	}
}

// armTimer starts the connection timeout. fabric.mu is held.
func (p *ep) armTimer(d time.Duration) {
	p.timeout.Start(d, &fabric.mu, func() {
		if p.State == api.EPActiveConnectionPending {
			p.abandonRequest()
			p.toDisconnected(api.ConnectionTimedOutEvent, nil)
		}
	})
}

// abandonRequest detaches p from its pending request: the passive side can
// still accept it, and then gets ACCEPT_COMPLETION_ERROR. fabric.mu is held.
func (p *ep) abandonRequest() {
	if p.cr != nil {
		p.cr.active = nil
		p.cr = nil
	}
	p.timeout.Stop()
}

// psp is a Public Service Point (dat_psp_create(3DAT)).
type psp struct {
	api.ContextSlot
	ia    *ia
	qual  api.ConnQual
	evd   *evd
	flags api.PSPFlags
}

// CreatePSP listens for connection requests on q, delivering them to evd
// (dat_psp_create(3DAT)). Connection qualifiers are process-wide:
// ErrConnQualInUse if any loopback service point has q. The backlog is the
// EVD's free space: a request arriving when it is full is refused with
// NON_PEER_REJECTED. With PSPProvider, each request comes with an EP the
// provider created (see CRParam.LocalEP).
func (i *ia) CreatePSP(q api.ConnQual, evdArg api.EVD, flags api.PSPFlags) (api.PSP, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	s, err := i.newPSP(evdArg, flags)
	if err != nil {
		return nil, err
	}
	if err := fabric.quals.Check(q); err != nil {
		return nil, err
	}
	s.list(q)
	return s, nil
}

// CreatePSPAny is CreatePSP on a free connection qualifier of the
// provider's choice, which it returns (dat_psp_create_any(3DAT)).
func (i *ia) CreatePSPAny(evdArg api.EVD, flags api.PSPFlags) (api.PSP, api.ConnQual, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	s, err := i.newPSP(evdArg, flags)
	if err != nil {
		return nil, 0, err
	}
	q, err := fabric.quals.Free(4 * providerLimits.MaxObjects)
	if err != nil {
		return nil, 0, err
	}
	s.list(q)
	return s, q, nil
}

// newPSP checks the arguments of a PSP. fabric.mu is held.
func (i *ia) newPSP(evdArg api.EVD, flags api.PSPFlags) (*psp, error) {
	if err := i.psps.Room(); err != nil {
		return nil, err
	}
	return &psp{ia: i, evd: evdArg.(*evd), flags: flags}, nil
}

func (s *psp) list(q api.ConnQual) {
	s.qual = q
	fabric.quals.Listen(q, s)
	s.ia.psps.Add(s)
}

func (s *psp) unlist() {
	fabric.quals.Unlisten(s.qual, s)
}

func (s *psp) owner() *ia { return s.ia }

func (s *psp) arrive(c *cr) bool {
	c.ia, c.psp, c.qual = s.ia, s, s.qual
	if s.flags == api.PSPProvider {
		c.Local = s.ia.newProviderEP(c.active)
	}
	ev := api.Event{Number: api.ConnectionRequestEvent,
		CR: api.CRArrivalData{PSP: s, LocalAddr: s.ia.addr, ConnQual: s.qual, CR: c}}
	if !s.evd.Q.TryPost(&ev, true) {
		if c.Local != nil {
			c.Local.destroy()
			c.Local = nil
		}
		return false
	}
	s.ia.crs.Add(c)
	return true
}

// HandleType reports HandlePSP (dat_get_handle_type(3DAT)).
func (s *psp) HandleType() api.HandleType { return api.HandlePSP }

// Query returns the PSP's parameters (dat_psp_query(3DAT)).
func (s *psp) Query() (api.PSPParam, error) {
	return api.PSPParam{IA: s.ia, ConnQual: s.qual, EVD: s.evd, Flags: s.flags}, nil
}

// Free stops listening (dat_psp_free(3DAT)); later requests on its
// qualifier get NON_PEER_REJECTED. Requests already delivered are not
// affected.
func (s *psp) Free() error { return kit.Free(&fabric.mu, &s.ia.psps, s, nil, s.unlist) }

// rsp is a Reserved Service Point (dat_rsp_create(3DAT)).
type rsp struct {
	connreq.RSP[*ep] // the reserved EP, until a request takes it
	ia               *ia
	qual             api.ConnQual
	evd              *evd
}

// CreateRSP listens on q for one connection request for ep, which moves
// from UNCONNECTED to RESERVED (dat_rsp_create(3DAT)); ErrInvalidState if
// ep is not UNCONNECTED, ErrConnQualInUse if q is taken. When the request
// arrives the EP moves to PASSIVE_CONNECTION_PENDING and the RSP stops
// listening.
func (i *ia) CreateRSP(q api.ConnQual, epArg api.EP, evdArg api.EVD) (api.RSP, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	p, e := epArg.(*ep), evdArg.(*evd)
	if p.State != api.EPUnconnected {
		return nil, p.StateErr("CreateRSP")
	}
	if err := fabric.quals.Check(q); err != nil {
		return nil, err
	}
	if err := i.rsps.Room(); err != nil {
		return nil, err
	}
	r := &rsp{RSP: connreq.RSP[*ep]{EP: p}, ia: i, qual: q, evd: e}
	fabric.quals.Listen(q, r)
	p.State = api.EPReserved
	i.rsps.Add(r)
	return r, nil
}

func (r *rsp) owner() *ia { return r.ia }

func (r *rsp) arrive(c *cr) bool {
	c.ia, c.rsp, c.qual, c.Local = r.ia, r, r.qual, r.EP
	ev := api.Event{Number: api.ConnectionRequestEvent,
		CR: api.CRArrivalData{RSP: r, LocalAddr: r.ia.addr, ConnQual: r.qual, CR: c}}
	if !r.evd.Q.TryPost(&ev, true) {
		return false
	}
	r.unlist()
	r.Taken = true
	r.EP.State = api.EPPassiveConnectionPending
	r.ia.crs.Add(c)
	return true
}

func (r *rsp) unlist() {
	fabric.quals.Unlisten(r.qual, r)
}

// Query returns the RSP's parameters (dat_rsp_query(3DAT)).
func (r *rsp) Query() (api.RSPParam, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	return r.Param(r.ia, r.qual, r.evd), nil
}

// Free destroys the RSP (dat_rsp_free(3DAT)). If no request has arrived,
// the EP returns from RESERVED to UNCONNECTED; otherwise the request and
// its EP are not affected.
func (r *rsp) Free() error {
	return kit.Free(&fabric.mu, &r.ia.rsps, r, nil, func() { r.unlist(); r.Unreserve() })
}

// cr is a pending Connection Request (dat_cr_query(3DAT)).
type cr struct {
	connreq.CR[*ep]     // handle, the RSP's or provider-created EP, done mark
	ia              *ia // the service point's IA
	psp             *psp
	rsp             *rsp
	qual            api.ConnQual
	active          *ep // the requester; nil once it has given up
	pd              []byte
	remoteAddr      Addr
	remotePort      api.ConnQual
}

// Query returns the requester's address, port qualifier and private data,
// and the EP reserved for the request (dat_cr_query(3DAT)).
func (c *cr) Query() (api.CRParam, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	return c.Param(c.remoteAddr, c.remotePort, c.pd)
}

// pending reports whether the requester still waits for this request.
func (c *cr) pending() bool {
	a := c.active
	return a != nil && a.cr == c && a.State == api.EPActiveConnectionPending
}

// Accept accepts the request on ep, or on the CR's own EP when ep is nil
// (dat_cr_accept(3DAT)). A consumer EP must be UNCONNECTED; an EP that the
// CR names must be nil or that EP. On success both sides move to CONNECTED
// and get ESTABLISHED; the requester's event carries privateData. If the
// requester has meanwhile given up (timeout, disconnect, freed), the
// accepting EP gets ACCEPT_COMPLETION_ERROR and moves to DISCONNECTED. On
// an error return nothing changes.
func (c *cr) Accept(epArg api.EP, privateData []byte) error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	given, _ := epArg.(*ep)
	p, err := c.Accepting(given, c.rsp != nil)
	if err != nil {
		return err
	}
	c.ia.crs.Remove(c)
	p.LocalPort, p.RemoteAddr, p.RemotePort = c.qual, c.remoteAddr, c.remotePort
	if !c.pending() {
		p.toDisconnected(api.ConnectionAcceptCompletionErrorEvent, nil)
		return nil
	}
	a := c.active
	a.cr = nil
	a.timeout.Stop()
	a.PeerPD = bytes.Clone(privateData)
	a.RemoteAddr = c.ia.addr // the acceptor's IA, whichever address was dialled
	a.peer, p.peer = p, a
	a.State, p.State = api.EPConnected, api.EPConnected
	p.connEvent(api.ConnectionEstablishedEvent, nil)
	a.connEvent(api.ConnectionEstablishedEvent, a.PeerPD)
	// The hard watermarks are watched from now on
	// (dat_ep_set_watermark(3DAT)).
	ph, ah := p.watermarks(p.recvs.Len()), a.watermarks(a.recvs.Len())
	if ph || ah {
		p.breakConnection()
	}
	return nil
}

// Reject rejects the request (dat_cr_reject(3DAT)); the requester gets
// PEER_REJECTED carrying privateData and moves to DISCONNECTED. An RSP's
// EP returns to UNCONNECTED; a provider-created EP is destroyed.
func (c *cr) Reject(privateData []byte) error {
	return c.decline(api.ConnectionPeerRejectedEvent, bytes.Clone(privateData))
}

// Refuse refuses the request as the provider does (provider.CRRefuser):
// the requester gets NON_PEER_REJECTED; otherwise as Reject.
func (c *cr) Refuse() error { return c.decline(api.ConnectionNonPeerRejectedEvent, nil) }

var _ provider.CRRefuser = (*cr)(nil)

// decline ends the request, the requester seeing event n with private
// data pd, for Reject and Refuse.
func (c *cr) decline(n api.EventNumber, pd []byte) error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if c.Done {
		return connreq.ErrCRDone
	}
	if c.pending() {
		a := c.active
		a.abandonRequest()
		a.PeerPD = pd
		a.toDisconnected(n, pd)
	}
	c.end()
	return nil
}

// Handoff passes the request to the service point listening on q, which
// must belong to the same IA (ErrInvalidParameter otherwise); it arrives
// there as a new CONNECTION_REQUEST with a new CR (dat_cr_handoff(3DAT)).
// This CR's local EP is released as by Reject. If the target's backlog is
// full, Handoff fails with ErrInsufficientResources and nothing changes.
// A request whose requester has already given up is simply destroyed.
func (c *cr) Handoff(q api.ConnQual) error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if c.Done {
		return connreq.ErrCRDone
	}
	sp := fabric.quals.At(q)
	if sp == nil || sp.owner() != c.ia {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("no service point of this IA listens on %d", q))
	}
	if !c.pending() {
		c.end()
		return nil
	}
	n := &cr{active: c.active, pd: c.pd, remoteAddr: c.remoteAddr, remotePort: c.remotePort}
	if !sp.arrive(n) {
		return api.Errorf(api.InsufficientResources, api.NoSubtype, "the backlog of the target service point is full")
	}
	c.active.cr = n
	c.end()
	return nil
}

// end finishes a request that was rejected or handed off, or whose
// requester gave up: it leaves the IA's table, and its local EP returns
// to the provider (connreq.CR.Finish), which destroys an EP it made for
// the request. fabric.mu is held.
func (c *cr) end() {
	c.ia.crs.Remove(c)
	if p := c.Finish(); p != nil {
		p.destroy()
	}
}

// abort ends a pending request because its IA is closing: the requester
// gets NON_PEER_REJECTED. fabric.mu is held.
func (c *cr) abort() {
	if c.pending() {
		a := c.active
		a.abandonRequest()
		a.toDisconnected(api.ConnectionNonPeerRejectedEvent, nil)
	}
	c.Done = true
}
