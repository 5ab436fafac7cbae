package connreq

import (
	"net"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/epattr"
)

// ErrCRDone is the error of a call on a connection request that was
// already accepted, rejected or handed off.
var ErrCRDone = api.Errorf(api.InvalidHandle, api.SubHandleCR, "the connection request was already accepted, rejected or handed off")

// CR is the part of a connection request (dat_cr_query(3DAT) and the
// calls on a CR) that a software provider keeps as every other does: its
// handle, the EP reserved for it (an RSP's, or one the provider made for
// a PSP; the zero E when none) and whether it is done. The provider's CR
// type embeds it under the provider's lock; E is the provider's EP
// pointer type, which embeds epattr.Endpoint.
type CR[E interface {
	comparable
	api.EP
	EndpointBase() *epattr.Endpoint
}] struct {
	api.ContextSlot
	Local E
	Done  bool // accepted, rejected or handed off
}

// HandleType reports HandleCR (dat_get_handle_type(3DAT)).
func (c *CR[E]) HandleType() api.HandleType { return api.HandleCR }

// Param returns the request's parameters (dat_cr_query(3DAT)) from the
// requester's address, port qualifier and private data, with the
// reserved EP if there is one; ErrCRDone once the request is done.
func (c *CR[E]) Param(remote net.Addr, port api.ConnQual, pd []byte) (api.CRParam, error) {
	if c.Done {
		return api.CRParam{}, ErrCRDone
	}
	prm := api.CRParam{RemoteAddr: remote, RemotePortQual: port, PrivateData: pd}
	var none E
	if c.Local != none {
		prm.LocalEP = c.Local
	}
	return prm, nil
}

// TakeLocal returns the reserved EP, the zero E when there is none, and
// forgets it: for an accept that connects it, or a reject or handoff
// that gives it back.
func (c *CR[E]) TakeLocal() E {
	p := c.Local
	var none E
	c.Local = none
	return p
}

// ReleaseLocal gives back the reserved EP of a request that will not be
// accepted on it (rejected, handed off, or its requester gone) and
// forgets it: an RSP's EP returns to UNCONNECTED (epattr.Endpoint.Unclaim),
// and an EP the provider made for the request is returned for the
// provider to destroy; otherwise, and for an EP already freed, it returns
// the zero E.
func (c *CR[E]) ReleaseLocal() E {
	var none E
	if p := c.TakeLocal(); p != none && !p.EndpointBase().Freed && p.EndpointBase().Unclaim() {
		return p
	}
	return none
}

// Finish marks the request done, as a reject or handoff leaves it, and
// releases its local EP as ReleaseLocal does, returning the EP the
// provider must destroy (the zero E when none).
func (c *CR[E]) Finish() E {
	c.Done = true
	return c.ReleaseLocal()
}

// Accepting is the start of dat_cr_accept(3DAT) that every software
// provider makes alike, under its lock. It refuses a request that is done
// (ErrCRDone); picks the accepting EP, the consumer's given EP or the
// request's own (AcceptEP), and checks that EP's state (ErrInvalidState
// with the state's subtype). On any error nothing changes. Otherwise the
// request is done and forgets its reserved EP, and the accepting EP,
// now the consumer's, is in COMPLETION_PENDING; the provider removes the
// CR from its table and goes on to connect the EP.
func (c *CR[E]) Accepting(given E, reserved bool) (E, error) {
	var none E
	if c.Done {
		return none, ErrCRDone
	}
	p, want, err := AcceptEP(c.Local, given, reserved)
	if err != nil {
		return none, err
	}
	e := p.EndpointBase()
	if e.State != want {
		return none, e.StateErr("accepting a connection request")
	}
	c.Done, c.Local = true, none
	e.ProviderOwned = false
	e.State = api.EPCompletionPending
	return p, nil
}

// RSP is the part of a reserved service point (dat_rsp_create(3DAT)) that
// a software provider keeps as every other does: its handle, the EP it
// reserved, and whether a connection request has taken that EP. The
// provider's RSP type embeds it under the provider's lock and adds how it
// listens.
type RSP[E interface {
	comparable
	api.EP
	EndpointBase() *epattr.Endpoint
}] struct {
	api.ContextSlot
	EP    E    // the reserved EP
	Taken bool // a request arrived and took EP; the RSP listens no more
}

// HandleType reports HandleRSP (dat_get_handle_type(3DAT)).
func (r *RSP[E]) HandleType() api.HandleType { return api.HandleRSP }

// Param returns the RSP's parameters (dat_rsp_query(3DAT)) from its IA,
// qualifier and EVD, with the reserved EP until that EP is freed.
func (r *RSP[E]) Param(ia api.IA, q api.ConnQual, evd api.EVD) api.RSPParam {
	prm := api.RSPParam{IA: ia, ConnQual: q, EVD: evd}
	if !r.EP.EndpointBase().Freed {
		prm.EP = r.EP
	}
	return prm
}

// Unreserve is what dat_rsp_free(3DAT) does to the reserved EP: back to
// UNCONNECTED if no request has taken it. A taken EP may since have been
// reserved again, by another RSP, and is left alone.
func (r *RSP[E]) Unreserve() {
	if !r.Taken {
		r.EP.EndpointBase().Unreserve()
	}
}
