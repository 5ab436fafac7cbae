// Package connreq holds the connection-management rules that godat's
// software providers share: the argument checks of dat_ep_connect(3DAT),
// dat_ep_dup_connect(3DAT), dat_cr_accept(3DAT) and dat_cr_reject(3DAT),
// the choice of the EP an accept connects, the active side's connection
// timeout, and, for a provider whose qualifiers are its own, the table of
// listening qualifiers. How a request travels (a process-wide table, a
// TCP handshake) stays in the provider.
package connreq

import (
	"github.com/godat/godat/api"
)

// CheckConnectFlags checks the flags of a connect over a transport with a
// single path, named transport in the error: ConnectMultipathRequired is
// ErrModelNotSupported. (The flags name only bits package api defines:
// the guard has checked that, api/doc.go.)
func CheckConnectFlags(flags api.ConnectFlags, transport string) error {
	if flags&api.ConnectMultipathRequired != 0 {
		return api.Errorf(api.ModelNotSupported, api.NoSubtype, transport+" connections have a single path")
	}
	return nil
}

// AcceptEP chooses the EP that dat_cr_accept(3DAT) connects and the state
// it must be in: the consumer's EP given, in UNCONNECTED, when the request
// carries none; else the request's own EP local, in
// PASSIVE_CONNECTION_PENDING for an RSP's (reserved) and
// TENTATIVE_CONNECTION_PENDING for one a PSP created, and then given must
// be the zero EP or local (ErrInvalidParameter). No EP at all is
// ErrInvalidHandle.
func AcceptEP[EP comparable](local, given EP, reserved bool) (EP, api.EPState, error) {
	var zero EP
	switch {
	case local != zero && given != zero && given != local:
		return zero, 0, api.Errorf(api.InvalidParameter, api.SubHandle2, "the connection request carries its own EP; pass nil")
	case local != zero && reserved:
		return local, api.EPPassiveConnectionPending, nil
	case local != zero:
		return local, api.EPTentativeConnectionPending, nil
	case given == zero:
		return zero, 0, api.Errorf(api.InvalidHandle, api.SubHandleEP, "the connection request has no EP; pass one")
	}
	return given, api.EPUnconnected, nil
}
