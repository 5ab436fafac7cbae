package minimal

import (
	"bytes"
	"net"
	"strconv"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/connreq"
)

// Connection management. Connection qualifiers are process-wide, as ports
// are on a host: the remote address of Connect must be an open IA's, and
// any service point on the qualifier answers.

// Connect starts a connection to the service point on q
// (dat_ep_connect(3DAT)); the outcome arrives on the connect EVD.
func (p *ep) Connect(remote net.Addr, q api.ConnQual, timeout api.Timeout, pd []byte, _ api.QOS, flags api.ConnectFlags) error {
	a, ok := remote.(Addr)
	if !ok {
		return api.Errorf(api.InvalidAddress, api.SubAddressUnsupported, remote.String()+" is not a minimal address")
	}
	if err := connreq.CheckConnectFlags(flags, "minimal"); err != nil {
		return err
	}
	defer lock()()
	return p.connect(a, q, timeout, pd)
}

// DupConnect connects to where the connected EP dup is connected
// (dat_ep_dup_connect(3DAT)).
func (p *ep) DupConnect(dup api.EP, timeout api.Timeout, pd []byte, _ api.QOS) error {
	defer lock()()
	remote, q, err := p.DupTarget(&dup.(*ep).Endpoint)
	if err != nil {
		return err
	}
	return p.connect(remote.(Addr), q, timeout, pd)
}

// connect moves an UNCONNECTED p to ACTIVE_CONNECTION_PENDING and
// delivers its request; failures come as events.
func (p *ep) connect(a Addr, q api.ConnQual, timeout api.Timeout, pd []byte) error {
	if p.State != api.EPUnconnected {
		return p.StateErr("connecting")
	}
	fabric.next++
	p.State, p.LocalPort, p.RemoteAddr, p.RemotePort = api.EPActiveConnectionPending, api.ConnQual(fabric.next), a, q
	c := &cr{active: p, pd: bytes.Clone(pd), from: p.ia.addr, port: p.LocalPort}
	switch pt := fabric.quals.At(q); {
	case fabric.ias[a] == nil:
		p.toDisconnected(api.ConnectionUnreachableEvent, nil)
	case pt == nil || !pt.arrive(c):
		p.toDisconnected(api.ConnectionNonPeerRejectedEvent, nil)
	case timeout != api.TimeoutInfinite:
		p.cr = c
		p.timeout.Start(timeout, &fabric.Mutex, func() {
			if p.State == api.EPActiveConnectionPending {
				p.abandon()
				p.toDisconnected(api.ConnectionTimedOutEvent, nil)
			}
		})
	default:
		p.cr = c
	}
	return nil
}

// abandon detaches the active EP from its request: accepting it later
// gives the acceptor ACCEPT_COMPLETION_ERROR.
func (p *ep) abandon() {
	if p.cr != nil {
		p.cr.active, p.cr = nil, nil
	}
	p.timeout.Stop()
}

// point is what PSPs and RSPs share: a listener on a connection qualifier.
type point struct {
	api.ContextSlot
	ia   *ia
	self api.Object // the *psp or *rsp
	qual api.ConnQual
	evd  *evd
	ep   *ep  // an RSP's EP
	used bool // an RSP's request arrived
}

type psp struct{ point }
type rsp struct{ point }

// arrive delivers request c; false when the EVD is full (the backlog).
func (pt *point) arrive(c *cr) bool {
	c.pt, c.local = pt, pt.ep
	ev := api.Event{Number: api.ConnectionRequestEvent,
		CR: api.CRArrivalData{LocalAddr: pt.ia.addr, ConnQual: pt.qual, CR: c}}
	ev.CR.PSP, _ = pt.self.(api.PSP)
	ev.CR.RSP, _ = pt.self.(api.RSP)
	if !pt.evd.Q.TryPost(&ev, true) {
		return false
	}
	if pt.ep != nil {
		pt.unlist()
		pt.used, pt.ep.State = true, api.EPPassiveConnectionPending
	}
	pt.ia.crs.Add(c) // (without a limit)
	return true
}

func (pt *point) unlist() { fabric.quals.Unlisten(pt.qual, pt) }

// CreatePSP listens on q (dat_psp_create(3DAT)). PSPs that create EPs
// are not supported; the guard refuses them, as ProviderAttr says.
func (i *ia) CreatePSP(q api.ConnQual, e api.EVD, _ api.PSPFlags) (api.PSP, error) {
	defer lock()()
	return i.newPSP(q, e)
}

// CreatePSPAny listens on a free qualifier from 0xC000 up
// (dat_psp_create_any(3DAT)).
func (i *ia) CreatePSPAny(e api.EVD, _ api.PSPFlags) (api.PSP, api.ConnQual, error) {
	defer lock()()
	q, err := fabric.quals.Free(limits.MaxObjects)
	if err != nil {
		return nil, 0, err
	}
	s, err := i.newPSP(q, e)
	return s, q, err
}

func (i *ia) newPSP(q api.ConnQual, e api.EVD) (api.PSP, error) {
	if err := fabric.quals.Check(q); err != nil {
		return nil, err
	}
	s := &psp{point{ia: i, evd: e.(*evd), qual: q}}
	v, err := kit.Put[api.PSP](&i.psps, s)
	if err == nil {
		s.self = s
		fabric.quals.Listen(q, &s.point)
	}
	return v, err
}

func (s *psp) HandleType() api.HandleType { return api.HandlePSP }

func (s *psp) Query() (api.PSPParam, error) {
	return api.PSPParam{IA: s.ia, ConnQual: s.qual, EVD: s.evd, Flags: api.PSPConsumer}, nil
}

// Free stops listening; requests already delivered stay.
func (s *psp) Free() error { return kit.Free(&fabric.Mutex, &s.ia.psps, s, nil, s.unlist) }

// CreateRSP listens on q for one request for ep, which becomes RESERVED
// (dat_rsp_create(3DAT)).
func (i *ia) CreateRSP(q api.ConnQual, e api.EP, ev api.EVD) (api.RSP, error) {
	defer lock()()
	p := e.(*ep)
	if p.State != api.EPUnconnected {
		return nil, p.StateErr("CreateRSP")
	}
	if err := fabric.quals.Check(q); err != nil {
		return nil, err
	}
	r := &rsp{point{ia: i, evd: ev.(*evd), ep: p, qual: q}}
	v, err := kit.Put[api.RSP](&i.rsps, r)
	if err == nil {
		r.self, p.State = r, api.EPReserved
		fabric.quals.Listen(q, &r.point)
	}
	return v, err
}

func (r *rsp) HandleType() api.HandleType { return api.HandleRSP }

func (r *rsp) Query() (api.RSPParam, error) {
	defer lock()()
	prm := api.RSPParam{IA: r.ia, ConnQual: r.qual, EVD: r.evd}
	if !r.ep.Freed {
		prm.EP = r.ep
	}
	return prm, nil
}

// Free destroys the RSP; an EP still RESERVED returns to UNCONNECTED.
func (r *rsp) Free() error {
	return kit.Free(&fabric.Mutex, &r.ia.rsps, r, nil, func() {
		r.unlist()
		if !r.used { // a request took the EP, which may be reserved again since
			r.ep.Unreserve()
		}
	})
}

// cr is a pending connection request. Its fields do not change.
type cr struct {
	api.ContextSlot
	pt     *point // where it arrived
	active *ep    // the requester; nil once it gave up
	local  *ep    // an RSP's EP
	pd     []byte
	from   Addr
	port   api.ConnQual
}

func (c *cr) HandleType() api.HandleType { return api.HandleCR }

func (c *cr) Query() (api.CRParam, error) {
	prm := api.CRParam{RemoteAddr: c.from, RemotePortQual: c.port, PrivateData: c.pd}
	if c.local != nil {
		prm.LocalEP = c.local
	}
	return prm, nil
}

// pending reports whether the requester still waits for c.
func (c *cr) pending() bool {
	return c.active != nil && c.active.cr == c && c.active.State == api.EPActiveConnectionPending
}

// done destroys the CR; an RSP's EP still waiting returns to UNCONNECTED
// (unless Accept connects it).
func (c *cr) done() {
	c.pt.ia.crs.Remove(c)
	if p := c.local; p != nil && p.State == api.EPPassiveConnectionPending {
		p.State = api.EPUnconnected
	}
}

// Accept connects the request to e, or to the RSP's EP (dat_cr_accept(3DAT)).
// A requester that gave up gives the acceptor ACCEPT_COMPLETION_ERROR.
func (c *cr) Accept(e api.EP, pd []byte) error {
	defer lock()()
	given, _ := e.(*ep)
	p, want, err := connreq.AcceptEP(c.local, given, c.local != nil)
	if err != nil {
		return err
	}
	if p.State != want {
		return p.StateErr("accepting a connection request")
	}
	c.done()
	p.LocalPort, p.RemoteAddr, p.RemotePort = c.pt.qual, c.from, c.port
	a := c.active
	if !c.pending() {
		p.toDisconnected(api.ConnectionAcceptCompletionErrorEvent, nil)
		return nil
	}
	a.cr, a.RemoteAddr = nil, c.pt.ia.addr
	a.timeout.Stop()
	a.peer, p.peer = p, a
	a.State, p.State = api.EPConnected, api.EPConnected
	p.connEvent(api.ConnectionEstablishedEvent, nil)
	a.connEvent(api.ConnectionEstablishedEvent, bytes.Clone(pd))
	p.watermarks() // the hard watermark is watched from now on
	if p.State == api.EPConnected {
		a.watermarks()
	}
	return nil
}

// Reject refuses the request: the requester gets PEER_REJECTED with pd
// (dat_cr_reject(3DAT)).
func (c *cr) Reject(pd []byte) error {
	defer lock()()
	c.end(api.ConnectionPeerRejectedEvent, bytes.Clone(pd))
	return nil
}

// Refuse refuses the request as the provider would (provider.CRRefuser):
// the requester gets NON_PEER_REJECTED. The plugin host calls it for a
// request that finds the host's queue full.
func (c *cr) Refuse() error {
	defer lock()()
	c.abort()
	return nil
}

var _ provider.CRRefuser = (*cr)(nil)

// abort ends a request whose IA closes: the requester gets NON_PEER_REJECTED.
func (c *cr) abort() { c.end(api.ConnectionNonPeerRejectedEvent, nil) }

// end destroys the CR, ending a requester that still waits with event n.
func (c *cr) end(n api.EventNumber, pd []byte) {
	if a := c.active; c.pending() {
		a.abandon()
		a.toDisconnected(n, pd)
	}
	c.done()
}

// Handoff passes the request to the IA's service point on q as a new
// request (dat_cr_handoff(3DAT)); a full backlog there is
// ErrInsufficientResources.
func (c *cr) Handoff(q api.ConnQual) error {
	defer lock()()
	pt := fabric.quals.At(q)
	if pt == nil || pt.ia != c.pt.ia {
		return api.Errorf(api.InvalidParameter, api.SubArg2, "no service point of this IA listens on "+strconv.FormatUint(uint64(q), 10))
	}
	if c.pending() {
		n := &cr{active: c.active, pd: c.pd, from: c.from, port: c.port}
		if !pt.arrive(n) {
			return api.Errorf(api.InsufficientResources, api.NoSubtype, "the backlog of the target service point is full")
		}
		c.active.cr = n
	}
	c.done()
	return nil
}
