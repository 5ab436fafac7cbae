package loopback

import (
	"slices"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/completion"
	"github.com/godat/godat/provider/kit/connreq"
	"github.com/godat/godat/provider/kit/epattr"
	"github.com/godat/godat/provider/kit/ring"
)

// ep is an Endpoint (dat_ep_create(3DAT)). All fields are guarded by
// fabric.mu. The state field follows the DAT state machine; see the package
// documentation for the transitions.
type ep struct {
	epattr.Endpoint               // attributes, state, connection ends, watermarks
	ia                            *ia
	epattr.Links[*pz, *evd, *srq]                  // PZ, EVDs and SRQ
	recvs                         completion.Recvs // posted receives (not with an SRQ)
	reqs                          ring.Ring[reqWR] // requests waiting behind a send with no receive at the peer
	peer                          *ep              // the other end while CONNECTED or DISCONNECT_PENDING
	cr                            *cr              // active side: the pending request
	timeout                       connreq.Timeout  // active side: the connection timeout
}

// recvWR is a posted receive.
type recvWR = completion.Recv

var errEPFreed = api.Errorf(api.InvalidHandle, api.SubHandleEP, "EP was freed")

// createEP makes an Endpoint in the UNCONNECTED state, the IA's CreateEP
// and CreateEPWithSRQ (epattr.CreateEPs; dat_ep_create(3DAT),
// dat_ep_create_with_srq(3DAT)). Any EVD may be nil (its events are then
// discarded); pz may be nil, but the EP cannot move data until it has
// one. a is the attributes CreateEPs resolved: the provider defaults for
// a nil attr, and in a given one for its zero limits. srq, when not nil, may
// be in another PZ than the EP: receive buffers are checked against the
// SRQ's PZ, RDMA against the EP's.
func (i *ia) createEP(pzArg api.PZ, recvEVD, requestEVD, connectEVD api.EVD, srqArg api.SRQ, a api.EPAttr) (api.EP, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	s, _ := srqArg.(*srq)
	if s != nil && len(s.eps) >= providerLimits.MaxEPPerSRQ {
		return nil, api.Errorf(api.InsufficientResources, api.SubResourceSRQ, "the SRQ serves the maximum number of EPs")
	}
	if err := i.eps.Room(); err != nil {
		return nil, err
	}
	p := &ep{ia: i, Endpoint: epattr.Endpoint{Attr: a, State: api.EPUnconnected}}
	p.Link(pzArg, recvEVD, requestEVD, connectEVD)
	if s != nil {
		p.SRQ = s
		s.eps = append(s.eps, p)
	}
	i.eps.Add(p)
	return p, nil
}

// newProviderEP creates the EP a PSPProvider service point hands out with
// a connection request from active: no PZ, no EVDs, in the
// TENTATIVE_CONNECTION_PENDING state, with attributes matching the
// requester's (its outstanding RDMA reads in and out swapped)
// (dat_psp_create(3DAT)). fabric.mu is held.
func (i *ia) newProviderEP(active *ep) *ep {
	a := withDefaults(active.Attr)
	a.MaxRDMAReadIn, a.MaxRDMAReadOut = a.MaxRDMAReadOut, a.MaxRDMAReadIn
	p := &ep{ia: i, Endpoint: epattr.Endpoint{Attr: a, State: api.EPTentativeConnectionPending, ProviderOwned: true}}
	i.eps.Add(p)
	return p
}

// withDefaults replaces zero limits by the provider defaults.
func withDefaults(a api.EPAttr) api.EPAttr { return epattr.WithDefaults(a, defaultEPAttr) }

// epLimits are the EP attribute limits the provider enforces.
var epLimits = providerLimits.EP()

// HandleType reports HandleEP (dat_get_handle_type(3DAT)).
func (p *ep) HandleType() api.HandleType { return api.HandleEP }

// Query returns the EP's parameters (dat_ep_query(3DAT)). A freed EP,
// including a provider-created one whose request was rejected, reports
// ErrInvalidHandle.
func (p *ep) Query() (api.EPParam, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if p.Freed {
		return api.EPParam{}, errEPFreed
	}
	prm := p.Param(p.ia, p.ia.addr)
	p.Fill(&prm)
	return prm, nil
}

// GetStatus returns the state and whether the receive and request queues
// are idle (dat_ep_get_status(3DAT)). Receives taken from an SRQ never
// stay at the EP, so such an EP's receive side is always idle.
func (p *ep) GetStatus() (api.EPState, bool, bool, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if p.Freed {
		return 0, false, false, errEPFreed
	}
	return p.State, p.recvs.Len() == 0, p.reqs.Len() == 0, nil
}

// Modify changes the parameters mask selects (dat_ep_modify(3DAT)). The
// IA, state, addresses, port qualifiers and SRQ cannot be changed
// (ErrInvalidParameter). The PZ may change only in UNCONNECTED and
// TENTATIVE_CONNECTION_PENDING; the EVDs and attributes also in RESERVED
// and PASSIVE_CONNECTION_PENDING. Otherwise ErrInvalidState with the
// state's subtype, and nothing changes.
func (p *ep) Modify(mask api.EPParamMask, prm *api.EPParam) error {
	if err := epattr.CheckModify(mask, prm); err != nil {
		return err
	}
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	return p.Change(mask, prm, epLimits, p.recvs.Len(), p.Apply)
}

// Reset returns a DISCONNECTED EP to UNCONNECTED, forgetting its last
// connection and the private data it received (dat_ep_reset(3DAT)); it is
// a no-op on an UNCONNECTED EP and ErrInvalidState in any other state.
func (p *ep) Reset() error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	switch p.State {
	case api.EPUnconnected:
	case api.EPDisconnected:
		p.State = api.EPUnconnected
		p.LocalPort, p.RemotePort, p.RemoteAddr, p.PeerPD = 0, 0, nil, nil
	default:
		return p.StateErr("Reset")
	}
	return nil
}

// Free destroys the EP (dat_ep_free(3DAT)): ErrInvalidState in RESERVED,
// PASSIVE_CONNECTION_PENDING and TENTATIVE_CONNECTION_PENDING. A connected
// peer sees DISCONNECTED; a pending connection attempt is abandoned.
// Completions of the EP not yet dequeued stay on their EVDs; outstanding
// work is dropped without completions. Free returns once the EP's
// connection timer, if any, has stopped.
func (p *ep) Free() error {
	fabric.mu.Lock()
	switch p.State {
	case api.EPReserved, api.EPPassiveConnectionPending, api.EPTentativeConnectionPending:
		err := p.StateErr("Free")
		fabric.mu.Unlock()
		return err
	}
	wait := p.destroy()
	fabric.mu.Unlock()
	wait()
	return nil
}

// destroy tears the EP down and returns what to wait for once fabric.mu is
// released. fabric.mu is held.
func (p *ep) destroy() func() {
	switch p.State {
	case api.EPConnected, api.EPDisconnectPending:
		if q := p.peer; q != nil {
			p.peer = nil
			q.toDisconnected(api.ConnectionDisconnectedEvent, nil)
		}
	case api.EPActiveConnectionPending:
		p.abandonRequest()
	}
	p.timeout.Stop()
	p.State = api.EPDisconnected
	p.Freed = true
	p.recvs.Clear()
	p.reqs.Clear()
	if s := p.SRQ; s != nil {
		s.eps = slices.DeleteFunc(s.eps, func(x *ep) bool { return x == p })
	}
	p.ia.eps.Remove(p)
	return p.timeout.Wait
}

// connEvent posts a connection event to the connect EVD.
func (p *ep) connEvent(n api.EventNumber, pd []byte) {
	ev := api.Event{Number: n, Conn: api.ConnectionData{EP: p, PrivateData: pd}}
	p.ConnectEVD.Deliver(&ev, true)
}

// toDisconnected moves the EP to DISCONNECTED: its outstanding DTOs are
// flushed (in post order, requests then receives) and event n, carrying
// pd, is posted to its connect EVD. fabric.mu is held.
func (p *ep) toDisconnected(n api.EventNumber, pd []byte) {
	p.State = api.EPDisconnected
	p.peer = nil
	p.timeout.Stop()
	p.flush()
	p.connEvent(n, pd)
}

// breakConnection ends the connection with BROKEN on both sides, after a
// DTO error (dat_ep_post_send(3DAT) and friends). fabric.mu is held.
func (p *ep) breakConnection() {
	q := p.peer
	p.toDisconnected(api.ConnectionBrokenEvent, nil)
	if q != nil {
		q.toDisconnected(api.ConnectionBrokenEvent, nil)
	}
}

// disconnectPair ends the connection with DISCONNECTED on both sides.
// fabric.mu is held.
func (p *ep) disconnectPair() {
	q := p.peer
	p.toDisconnected(api.ConnectionDisconnectedEvent, nil)
	if q != nil {
		q.toDisconnected(api.ConnectionDisconnectedEvent, nil)
	}
}

// Disconnect ends the connection or the connection attempt
// (dat_ep_disconnect(3DAT)). From CONNECTED both sides go to DISCONNECTED
// with a DISCONNECTED event, after flushing outstanding DTOs; a graceful
// disconnect with requests still waiting for receives at the peer first
// moves to DISCONNECT_PENDING and completes when they have completed, or
// when an abrupt disconnect follows. From ACTIVE_CONNECTION_PENDING the
// attempt is abandoned (DISCONNECTED event). On a DISCONNECTED EP it does
// nothing; in UNCONNECTED, RESERVED and the passive pending states it is
// ErrInvalidState.
func (p *ep) Disconnect(flags api.CloseFlags) error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	step, err := p.DisconnectStep(flags, p.reqs.Len() > 0)
	switch step {
	case epattr.DisconnectNow:
		p.disconnectPair()
	case epattr.DisconnectAbandon:
		p.abandonRequest()
		p.toDisconnected(api.ConnectionDisconnectedEvent, nil)
	}
	return err
}

// RecvQuery reports the receive buffers held by the EP
// (dat_ep_recv_query(3DAT)): the posted receives for an EP without SRQ
// (its span equals the count), and 0 for an EP on an SRQ, which never
// holds a buffer beyond the post that consumes it.
func (p *ep) RecvQuery() (int, int, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	n := p.recvs.Len()
	return n, n, nil
}

// SetWatermark sets the soft and hard high watermarks of receive buffers
// held by the EP (dat_ep_set_watermark(3DAT)); EP.Query reports the soft
// one. Above the soft watermark the async EVD gets
// epattr.SoftHighWatermarkEvent once per call; above the hard one the
// connection breaks. Either may happen in this call.
func (p *ep) SetWatermark(soft, hard int) error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	p.SetWatermarks(soft, hard)
	if p.watermarks(p.recvs.Len()) {
		p.breakConnection()
	}
	return nil
}

// watermarks checks the EP's high watermarks against held receive
// buffers (posted and not completed; for an EP on an SRQ, the one taken
// for a message, which completes at once): it posts the soft
// watermark's event if it is due and reports whether the hard one is
// exceeded while connected, for the caller to break the connection.
// fabric.mu is held.
func (p *ep) watermarks(held int) bool {
	return p.Watch(held, p, &p.ia.async.EVD)
}
