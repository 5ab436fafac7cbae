package minimal

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/completion"
	"github.com/godat/godat/provider/kit/connreq"
	"github.com/godat/godat/provider/kit/epattr"
	"github.com/godat/godat/provider/kit/ring"
)

// ep is an endpoint. Its state follows dat_ep_create(3DAT) and the pages
// it names; a call the state does not allow is ErrInvalidState with the
// state's subtype and changes nothing.
type ep struct {
	kit.UnsupportedEP                      // no receive counts (they belong with SRQs)
	epattr.Endpoint                        // attributes, state, connection ends, watermarks
	completion.Posts                       // the DTO post calls, through PostRequest
	ia                                     *ia
	epattr.Links[*pz, *evd, *epattr.NoSRQ] // PZ and EVDs
	recvs                                  completion.Recvs
	reqs                                   ring.Ring[reqWR] // requests behind a send that waits for a receive
	peer                                   *ep              // while CONNECTED or DISCONNECT_PENDING
	cr                                     *cr              // the active side's pending request
	timeout                                connreq.Timeout  // the active side's connection timeout
}

// CreateEP creates an UNCONNECTED EP (dat_ep_create(3DAT)); limits its
// attributes leave at zero get the provider's defaults.
func (i *ia) CreateEP(z api.PZ, recv, req, conn api.EVD, attr *api.EPAttr) (api.EP, error) {
	defer lock()()
	p := &ep{ia: i, Endpoint: epattr.Endpoint{Attr: defaultEPAttr}}
	p.Posts.To = p
	p.Link(z, recv, req, conn)
	if attr != nil {
		p.Attr = epattr.WithDefaults(*attr, defaultEPAttr)
	}
	return kit.Put[api.EP](&i.eps, p)
}

func (p *ep) HandleType() api.HandleType { return api.HandleEP }

func (p *ep) Query() (api.EPParam, error) {
	defer lock()()
	prm := p.Param(p.ia, p.ia.addr)
	p.Fill(&prm)
	return prm, nil
}

func (p *ep) GetStatus() (api.EPState, bool, bool, error) {
	defer lock()()
	return p.State, p.recvs.Len() == 0, p.reqs.Len() == 0, nil
}

// Modify changes what mask selects, in the states dat_ep_modify(3DAT)
// allows it.
func (p *ep) Modify(mask api.EPParamMask, prm *api.EPParam) error {
	if err := epattr.CheckModify(mask, prm); err != nil {
		return err
	}
	defer lock()()
	return p.Change(mask, prm, limits.EP(), p.recvs.Len(), p.Apply)
}

// Reset returns a DISCONNECTED EP to UNCONNECTED (dat_ep_reset(3DAT)).
func (p *ep) Reset() error {
	defer lock()()
	if p.State != api.EPUnconnected && p.State != api.EPDisconnected {
		return p.StateErr("Reset")
	}
	p.State, p.LocalPort, p.RemotePort, p.RemoteAddr = api.EPUnconnected, 0, 0, nil
	return nil
}

// Free destroys the EP (dat_ep_free(3DAT)); its peer sees DISCONNECTED.
// Outstanding work is dropped without completions.
func (p *ep) Free() error {
	fabric.Lock()
	if p.State == api.EPReserved || p.State == api.EPPassiveConnectionPending {
		defer fabric.Unlock()
		return p.StateErr("Free")
	}
	wait := p.destroy()
	fabric.Unlock()
	wait()
	return nil
}

// destroy tears the EP down and returns what to wait for once fabric is
// unlocked.
func (p *ep) destroy() func() {
	switch p.State {
	case api.EPConnected, api.EPDisconnectPending:
		if q := p.peer; q != nil {
			p.peer = nil
			q.toDisconnected(api.ConnectionDisconnectedEvent, nil)
		}
	case api.EPActiveConnectionPending:
		p.abandon()
	}
	p.timeout.Stop()
	p.State, p.Freed = api.EPDisconnected, true
	p.recvs.Clear()
	p.reqs.Clear()
	p.ia.eps.Remove(p)
	return p.timeout.Wait
}

func (p *ep) connEvent(n api.EventNumber, pd []byte) {
	ev := api.Event{Number: n, Conn: api.ConnectionData{EP: p, PrivateData: pd}}
	p.ConnectEVD.Deliver(&ev, true)
}

// toDisconnected flushes the EP's outstanding DTOs, in post order,
// requests first, then posts event n.
func (p *ep) toDisconnected(n api.EventNumber, pd []byte) {
	p.State, p.peer = api.EPDisconnected, nil
	p.timeout.Stop()
	p.flush()
	p.connEvent(n, pd)
}

// endPair ends the connection on both sides with event n.
func (p *ep) endPair(n api.EventNumber) {
	q := p.peer
	p.toDisconnected(n, nil)
	if q != nil {
		q.toDisconnected(n, nil)
	}
}

// Disconnect ends the connection or the attempt (dat_ep_disconnect(3DAT)).
// A graceful one with requests still waiting for receives at the peer
// waits in DISCONNECT_PENDING until they have run.
func (p *ep) Disconnect(flags api.CloseFlags) error {
	defer lock()()
	step, err := p.DisconnectStep(flags, p.reqs.Len() > 0)
	switch step {
	case epattr.DisconnectNow:
		p.endPair(api.ConnectionDisconnectedEvent)
	case epattr.DisconnectAbandon:
		p.abandon()
		p.toDisconnected(api.ConnectionDisconnectedEvent, nil)
	}
	return err
}

// SetWatermark sets the high watermarks on the receives the EP holds
// (dat_ep_set_watermark(3DAT)); EP.Query reports the soft one.
func (p *ep) SetWatermark(soft, hard int) error {
	defer lock()()
	p.SetWatermarks(soft, hard)
	p.watermarks()
	return nil
}

// watermarks posts the soft watermark's event when it is due and breaks
// the connection when the hard one is exceeded.
func (p *ep) watermarks() {
	if p.Watch(p.recvs.Len(), p, &p.ia.async.EVD) {
		p.endPair(api.ConnectionBrokenEvent)
	}
}
