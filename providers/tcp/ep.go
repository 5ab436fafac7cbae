package tcp

import (
	"net"
	"slices"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/completion"
	"github.com/godat/godat/provider/kit/epattr"
	"github.com/godat/godat/provider/kit/ring"
)

// ep is an Endpoint (dat_ep_create(3DAT)); its fields are guarded by
// ia.mu. See the package documentation for the state machine.
type ep struct {
	epattr.Endpoint               // attributes, state, connection ends, watermarks
	completion.Posts              // the DTO post calls, through PostRequest
	ia                            *ia
	epattr.Links[*pz, *evd, *srq] // PZ, EVDs and SRQ
	recvs                         completion.Recvs
	reqs                          ring.Ring[reqWR]
	c                             *conn   // the current connection or attempt
	conns                         []*conn // every connection whose goroutines may still run
}

// newEP makes an EP of i with attributes a in state st whose post calls
// reach PostRequest; the caller lists it.
func (i *ia) newEP(a api.EPAttr, st api.EPState) *ep {
	p := &ep{ia: i, Endpoint: epattr.Endpoint{Attr: a, State: st}}
	p.Posts.To = p
	return p
}

// createEP makes an Endpoint in the UNCONNECTED state, the IA's CreateEP
// and CreateEPWithSRQ (epattr.CreateEPs; dat_ep_create(3DAT),
// dat_ep_create_with_srq(3DAT)). Any EVD may be nil (its events are
// discarded). a is the attributes CreateEPs resolved: the provider
// defaults for a nil attr, and in a given one for its zero limits. The
// peer of an EP on an
// SRQ sends without receive credits (see the package documentation).
func (i *ia) createEP(pzArg api.PZ, recvEVD, requestEVD, connectEVD api.EVD, srqArg api.SRQ, a api.EPAttr) (api.EP, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	s, _ := srqArg.(*srq)
	if s != nil && s.eps >= providerLimits.MaxEPPerSRQ {
		return nil, api.Errorf(api.InsufficientResources, api.SubResourceSRQ, "the SRQ serves the maximum number of EPs")
	}
	if err := i.eps.Room(); err != nil {
		return nil, err
	}
	p := i.newEP(a, api.EPUnconnected)
	p.Link(pzArg, recvEVD, requestEVD, connectEVD)
	p.SRQ = s
	if s != nil {
		s.eps++
	}
	i.eps.Add(p)
	return p, nil
}

// newProviderEP creates the EP a PSPProvider service point hands out with
// a request: no PZ, no EVDs, TENTATIVE_CONNECTION_PENDING, attributes
// matching the requester's (dat_psp_create(3DAT)). ia.mu is held.
func (i *ia) newProviderEP(h *hsMsg) *ep {
	a := defaultEPAttr
	a.MaxMessageSize = min(h.MaxMsg, uint32(providerLimits.MaxMessageSize))
	a.MaxRDMASize = min(h.MaxRDMA, uint32(providerLimits.MaxRDMASize))
	a.MaxRDMAReadIn = min(int(h.ReadsOut), providerLimits.MaxRDMAReadPerEP)
	a.MaxRDMAReadOut = min(int(h.ReadsIn), providerLimits.MaxRDMAReadPerEP)
	a = withDefaults(a)
	p := i.newEP(a, api.EPTentativeConnectionPending)
	p.ProviderOwned = true
	i.eps.Add(p)
	return p
}

// withDefaults replaces zero limits by the provider defaults.
func withDefaults(a api.EPAttr) api.EPAttr { return epattr.WithDefaults(a, defaultEPAttr) }

// epLimits are the EP attribute limits the provider enforces.
var epLimits = providerLimits.EP()

// HandleType reports HandleEP (dat_get_handle_type(3DAT)).
func (p *ep) HandleType() api.HandleType { return api.HandleEP }

var errEPFreed = api.Errorf(api.InvalidHandle, api.SubHandleEP, "EP was freed")

// Query returns the EP's parameters (dat_ep_query(3DAT)). LocalAddr is the
// IA's address; the port qualifiers are the listener's TCP port on the
// passive side and a provider-assigned number on the active side.
func (p *ep) Query() (api.EPParam, error) {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	if p.Freed {
		return api.EPParam{}, errEPFreed
	}
	prm := p.Param(p.ia, &net.IPAddr{IP: p.ia.ip})
	p.Fill(&prm)
	return prm, nil
}

// GetStatus returns the state and whether the receive and request queues
// are idle (dat_ep_get_status(3DAT)).
func (p *ep) GetStatus() (api.EPState, bool, bool, error) {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	if p.Freed {
		return 0, false, false, errEPFreed
	}
	p.settleLate()
	return p.State, p.recvs.Len() == 0, p.reqs.Len() == 0, nil
}

// Modify changes the parameters mask selects (dat_ep_modify(3DAT)), with
// the rules of the loopback provider: the IA, state, addresses, port
// qualifiers and SRQ are fixed (ErrInvalidParameter); the PZ may change in
// UNCONNECTED and TENTATIVE_CONNECTION_PENDING, the EVDs and attributes
// also in RESERVED and PASSIVE_CONNECTION_PENDING; otherwise
// ErrInvalidState and nothing changes.
func (p *ep) Modify(mask api.EPParamMask, prm *api.EPParam) error {
	if err := epattr.CheckModify(mask, prm); err != nil {
		return err
	}
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	return p.Change(mask, prm, epLimits, p.recvs.Len(), p.Apply)
}

// Reset returns a DISCONNECTED EP to UNCONNECTED (dat_ep_reset(3DAT)); a
// no-op on an UNCONNECTED EP, ErrInvalidState otherwise.
func (p *ep) Reset() error {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	switch p.State {
	case api.EPUnconnected:
	case api.EPDisconnected:
		p.State = api.EPUnconnected
		p.LocalPort, p.RemotePort, p.RemoteAddr, p.PeerPD = 0, 0, nil, nil
		p.c = nil
	default:
		return p.StateErr("Reset")
	}
	return nil
}

// Free destroys the EP (dat_ep_free(3DAT)): ErrInvalidState in RESERVED
// and the passive pending states. A connected peer is sent DISCONNECT; a
// connection attempt is abandoned. Free returns once the goroutines of
// the EP's connections have ended.
func (p *ep) Free() error {
	p.ia.mu.Lock()
	switch p.State {
	case api.EPReserved, api.EPPassiveConnectionPending, api.EPTentativeConnectionPending:
		err := p.StateErr("Free")
		p.ia.mu.Unlock()
		return err
	}
	conns := p.destroy()
	p.ia.mu.Unlock()
	for _, c := range conns {
		c.wg.Wait()
	}
	return nil
}

// destroy tears the EP down and returns the connections to wait for.
// ia.mu is held.
func (p *ep) destroy() []*conn {
	switch p.State {
	case api.EPConnected, api.EPDisconnectPending:
		p.c.shutdown(true, true, true, true)
	case api.EPActiveConnectionPending, api.EPCompletionPending:
		p.c.abort()
	}
	for _, c := range p.conns {
		if c.up {
			c.shutdown(true, false, true, true)
		} else {
			c.abort()
		}
	}
	p.State = api.EPDisconnected
	p.Freed = true
	p.recvs.Clear()
	for p.reqs.Len() > 0 {
		p.reqs.Front().dropBind(p.ia)
		p.reqs.Front().release()
		p.reqs.PopFront()
	}
	if s := p.SRQ; s != nil {
		s.eps--
	}
	p.ia.eps.Remove(p)
	conns := p.conns
	p.conns = nil
	return conns
}

// adopt records c as p's current connection, forgetting connections
// whose goroutines have all ended. ia.mu is held.
func (p *ep) adopt(c *conn) {
	p.conns = slices.DeleteFunc(p.conns, func(x *conn) bool { return x.live == 0 })
	p.c = c
	p.conns = append(p.conns, c)
}

// connEvent posts a connection event to the connect EVD.
func (p *ep) connEvent(n api.EventNumber, pd []byte) {
	ev := api.Event{Number: n, Conn: api.ConnectionData{EP: p, PrivateData: pd}}
	p.ConnectEVD.post(&ev, true)
}

// toDisconnected moves the EP to DISCONNECTED, flushes its outstanding
// DTOs and posts event n. ia.mu is held.
func (p *ep) toDisconnected(n api.EventNumber, pd []byte) {
	p.State = api.EPDisconnected
	p.flush()
	p.connEvent(n, pd)
}

// live reports whether c is p's connection in the data transfer phase.
func (p *ep) live(c *conn) bool {
	return p.c == c && (p.State == api.EPConnected || p.State == api.EPDisconnectPending)
}

// breakConn ends the connection after a DTO error: BROKEN, and the peer
// sees the connection close without a DISCONNECT (after a NAK, if one is
// queued). ia.mu is held.
func (p *ep) breakConn(c *conn, _ bool) {
	if !p.live(c) {
		c.shutdown(true, false, false, true)
		return
	}
	c.shutdown(false, false, false, true)
	p.toDisconnected(api.ConnectionBrokenEvent, nil)
}

// lost ends the connection when the peer is gone or broke the protocol:
// BROKEN. ia.mu is held.
func (p *ep) lost(c *conn) {
	c.shutdown(true, false, false, true)
	if p.live(c) {
		p.toDisconnected(api.ConnectionBrokenEvent, nil)
	}
}

// peerDisconnected handles the peer's DISCONNECT. ia.mu is held.
func (p *ep) peerDisconnected(c *conn) {
	c.shutdown(true, false, false, true)
	if p.live(c) {
		p.toDisconnected(api.ConnectionDisconnectedEvent, nil)
	}
}

// disconnectNow ends the connection locally: the peer is sent DISCONNECT.
// ia.mu is held.
func (p *ep) disconnectNow() {
	p.c.shutdown(true, true, false, true)
	p.toDisconnected(api.ConnectionDisconnectedEvent, nil)
}

// Disconnect ends the connection or the attempt (dat_ep_disconnect(3DAT)).
// From CONNECTED both sides go to DISCONNECTED with a DISCONNECTED event
// after the outstanding DTOs are flushed; a graceful disconnect with
// requests outstanding waits for them in DISCONNECT_PENDING (an abrupt one
// that follows does not). A connection attempt, or an accepted request
// waiting for the requester's READY, is abandoned with DISCONNECTED. On a
// DISCONNECTED EP it does nothing; in UNCONNECTED, RESERVED and the
// passive pending states it is ErrInvalidState.
func (p *ep) Disconnect(flags api.CloseFlags) error {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	if p.State == api.EPConnected {
		p.settleLate() // requests that have completed do not hold the disconnect
	}
	step, err := p.DisconnectStep(flags, p.reqs.Len() > 0)
	switch step {
	case epattr.DisconnectNow:
		p.disconnectNow()
	case epattr.DisconnectAbandon:
		p.c.abort()
		p.toDisconnected(api.ConnectionDisconnectedEvent, nil)
	}
	return err
}

// RecvQuery reports the receive buffers held by the EP
// (dat_ep_recv_query(3DAT)).
func (p *ep) RecvQuery() (int, int, error) {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	n := p.heldRecvs()
	return n, n, nil
}

// SetWatermark sets the soft and hard high watermarks of receive buffers
// held by the EP (dat_ep_set_watermark(3DAT)); EP.Query reports the soft
// one. Above the soft watermark the async EVD gets
// epattr.SoftHighWatermarkEvent once per call; above the hard one a
// connection breaks. Either may happen in this call.
func (p *ep) SetWatermark(soft, hard int) error {
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	p.SetWatermarks(soft, hard)
	if p.watermarks(p.heldRecvs()) {
		p.breakConn(p.c, false)
	}
	return nil
}

// heldRecvs is the number of receive buffers the EP holds: posted to it
// and not completed, or taken from its SRQ and not completed. ia.mu is
// held.
func (p *ep) heldRecvs() int {
	n := p.recvs.Len()
	if c := p.c; c != nil && c.inRecv {
		n++
	}
	return n
}

// watermarks checks the EP's high watermarks against held receive
// buffers: it posts the soft watermark's event if it is due and reports
// whether the hard one is exceeded on a connection that is up, for the
// caller to break it. ia.mu is held.
func (p *ep) watermarks(held int) bool {
	return p.Watch(held, p, &p.ia.async.EVD) && p.c != nil
}
