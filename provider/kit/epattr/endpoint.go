package epattr

import (
	"fmt"
	"net"
	"slices"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/dispatch"
)

// Endpoint is what a software provider records of an EP alike, whatever
// moves its data: consumer context, attributes, state, the two ends of its
// connection, the private data of its last connection event, and its
// receive watermarks. A provider's EP type embeds it and guards it with the
// lock that guards the EP.
type Endpoint struct {
	api.ContextSlot
	Attr  api.EPAttr
	State api.EPState
	// ProviderOwned marks an EP a PSPProvider service point created for a
	// connection request and that is not yet accepted
	// (dat_psp_create(3DAT)).
	ProviderOwned bool
	// Freed marks an EP the consumer has freed that the provider still
	// reaches from elsewhere (a connection request, a peer, an RSP).
	Freed bool

	LocalPort, RemotePort api.ConnQual
	RemoteAddr            net.Addr
	PeerPD                []byte // private data of the ESTABLISHED or PEER_REJECTED event
	WM                    Watermarks
}

// EndpointBase returns e: through the provider's EP type that embeds it,
// it gives kit code that holds the provider's type (connreq.CR) the
// Endpoint.
func (e *Endpoint) EndpointBase() *Endpoint { return e }

// StateErr is the error for a call, described by what ("posting a
// send"), that the EP's state does not allow: ErrInvalidState with the
// state's subtype.
func (e *Endpoint) StateErr(what string) error {
	return api.Errorf(api.InvalidState, e.State.StateSubtype(), fmt.Sprintf("%s is not allowed in state %s", what, e.State))
}

// Modified returns the EP's attributes as dat_ep_modify(3DAT) would make
// them: ErrInvalidState (nothing changes) when the EP's state does not
// allow the fields of mask to change, else ModifyAttr's result for an EP
// holding posted receives. The caller applies the result and the links
// (Links.Apply) once it has done what the change needs of its own.
func (e *Endpoint) Modified(mask api.EPParamMask, prm *api.EPParam, l Limits, posted int) (api.EPAttr, error) {
	if !Modifiable(e.State, mask) {
		return e.Attr, e.StateErr("modifying these EP parameters")
	}
	return ModifyAttr(e.Attr, &prm.Attr, mask, l, posted)
}

// Change is dat_ep_modify(3DAT) for an EP whose change needs nothing but
// its records: Modified, then, on success, the new attributes and apply,
// the EP's Links.Apply. On an error nothing changes.
func (e *Endpoint) Change(mask api.EPParamMask, prm *api.EPParam, l Limits, posted int, apply func(api.EPParamMask, *api.EPParam)) error {
	a, err := e.Modified(mask, prm, l, posted)
	if err != nil {
		return err
	}
	e.Attr = a
	apply(mask, prm)
	return nil
}

// Param returns the EP's parameters as dat_ep_query(3DAT) reports them,
// with ia and the local address local filled in; the provider adds the
// PZ, the EVDs and the SRQ, whose objects it holds. The attributes' named
// lists are copies.
func (e *Endpoint) Param(ia api.IA, local net.Addr) api.EPParam {
	prm := api.EPParam{
		IA: ia, State: e.State, LocalAddr: local, LocalPortQual: e.LocalPort,
		RemoteAddr: e.RemoteAddr, RemotePortQual: e.RemotePort, Attr: e.Attr,
	}
	prm.Attr.TransportSpecific = slices.Clone(e.Attr.TransportSpecific)
	prm.Attr.ProviderSpecific = slices.Clone(e.Attr.ProviderSpecific)
	return prm
}

// Unclaim ends the hold of a connection request that will not be
// accepted on its local EP (dat_cr_reject(3DAT), or the requester gave
// up): it reports true for an EP the provider made for the request
// (ProviderOwned), which the provider then destroys; a consumer's EP that
// the request moved to PASSIVE_CONNECTION_PENDING returns to UNCONNECTED;
// an EP in any other state is left as it is. The provider skips an EP it
// has freed.
func (e *Endpoint) Unclaim() (destroy bool) {
	if e.ProviderOwned {
		return true
	}
	if e.State == api.EPPassiveConnectionPending {
		e.State = api.EPUnconnected
	}
	return false
}

// DupTarget returns where dat_ep_dup_connect(3DAT) connects e: the
// remote address and connection qualifier of dup. e must be UNCONNECTED
// and dup CONNECTED; otherwise it fails with ErrInvalidState and the
// subtype of the EP that is in the wrong state. The provider's lock is
// held.
func (e *Endpoint) DupTarget(dup *Endpoint) (net.Addr, api.ConnQual, error) {
	if e.State != api.EPUnconnected {
		return nil, 0, e.StateErr("DupConnect")
	}
	if dup.State != api.EPConnected {
		return nil, 0, api.Errorf(api.InvalidState, dup.State.StateSubtype(), "the EP to duplicate is not connected")
	}
	return dup.RemoteAddr, dup.RemotePort, nil
}

// Unreserve returns an EP that an RSP reserved to UNCONNECTED, for an
// RSP freed before a request arrived on it (dat_rsp_free(3DAT)); an EP in
// any other state is left as it is.
func (e *Endpoint) Unreserve() {
	if e.State == api.EPReserved {
		e.State = api.EPUnconnected
	}
}

// SetWatermarks records the high watermarks of dat_ep_set_watermark(3DAT),
// which the guard has checked: the soft one in the attributes, where
// dat_ep_query(3DAT) reports it, and both in WM, armed again.
func (e *Endpoint) SetWatermarks(soft, hard int) {
	e.Attr.SRQSoftHighWatermark = soft
	e.WM.Set(soft, hard)
}

// Watch checks the watermarks against the held receive buffers (WM.Check):
// when the soft one's event is due it posts it to async, the IA's async
// EVD, as SoftHighWatermarkEvent naming self, the provider's EP; it
// reports whether the hard one is exceeded while the EP is CONNECTED, for
// the provider to break the connection. The EP's lock is held.
func (e *Endpoint) Watch(held int, self api.EP, async *dispatch.EVD) (breakConn bool) {
	soft, hard := e.WM.Check(held)
	if soft {
		async.PostAsync(SoftHighWatermarkEvent, self, api.ReasonEPSoftHighWater)
	}
	return hard && e.State == api.EPConnected
}

// Disconnect is what dat_ep_disconnect(3DAT) leaves a provider to do,
// as DisconnectStep decides it from the EP's state.
type Disconnect uint8

const (
	// DisconnectNothing: the EP is DISCONNECTED already, or a graceful
	// disconnect is pending and this one is graceful too.
	DisconnectNothing Disconnect = iota
	// DisconnectPending: a graceful disconnect of an EP with requests
	// outstanding. The EP is now DISCONNECT_PENDING; the provider ends
	// the connection when the last request completes, or when an abrupt
	// disconnect follows.
	DisconnectPending
	// DisconnectNow: end the connection, both sides DISCONNECTED with a
	// DISCONNECTED event, outstanding requests flushed.
	DisconnectNow
	// DisconnectAbandon: a connection attempt, or an accepted request
	// still completing; the provider abandons it and the EP moves to
	// DISCONNECTED with a DISCONNECTED event.
	DisconnectAbandon
)

// DisconnectStep applies the state rules of dat_ep_disconnect(3DAT) with
// close flags flags; outstanding says whether the EP has requests that
// have not completed. It moves a CONNECTED EP to DISCONNECT_PENDING itself
// when the disconnect must wait for them, and returns what else the
// provider does. In UNCONNECTED, RESERVED and the passive pending states
// it is ErrInvalidState and nothing changes.
func (e *Endpoint) DisconnectStep(flags api.CloseFlags, outstanding bool) (Disconnect, error) {
	switch e.State {
	case api.EPConnected:
		if flags == api.CloseGraceful && outstanding {
			e.State = api.EPDisconnectPending
			return DisconnectPending, nil
		}
		return DisconnectNow, nil
	case api.EPDisconnectPending:
		if flags != api.CloseGraceful {
			return DisconnectNow, nil
		}
		return DisconnectNothing, nil
	case api.EPActiveConnectionPending, api.EPCompletionPending:
		return DisconnectAbandon, nil
	case api.EPDisconnected:
		return DisconnectNothing, nil
	}
	return DisconnectNothing, e.StateErr("Disconnect")
}
