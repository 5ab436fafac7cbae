package epattr

import (
	"errors"
	"net"
	"testing"

	"github.com/godat/godat/api"
)

// DupTarget is the dup's remote end for an UNCONNECTED EP and a CONNECTED
// dup; otherwise ErrInvalidState with the subtype of the EP at fault.
func TestDupTarget(t *testing.T) {
	remote := &net.IPAddr{IP: net.IPv4(192, 0, 2, 7)}
	var e, dup Endpoint
	e.State = api.EPUnconnected
	dup.State, dup.RemoteAddr, dup.RemotePort = api.EPConnected, remote, 4791
	if a, q, err := e.DupTarget(&dup); err != nil || a != net.Addr(remote) || q != 4791 {
		t.Fatalf("DupTarget = %v, %d, %v", a, q, err)
	}
	dup.State = api.EPDisconnected
	if _, _, err := e.DupTarget(&dup); !errors.Is(err, &api.Error{Type: api.InvalidState, Sub: api.EPDisconnected.StateSubtype()}) {
		t.Fatalf("DupTarget of a DISCONNECTED dup: %v", err)
	}
	dup.State, e.State = api.EPConnected, api.EPReserved
	if _, _, err := e.DupTarget(&dup); !errors.Is(err, &api.Error{Type: api.InvalidState, Sub: api.EPReserved.StateSubtype()}) {
		t.Fatalf("DupTarget from a RESERVED EP: %v", err)
	}
}
