package epattr

import (
	"errors"
	"testing"

	"github.com/godat/godat/api"
)

// DisconnectStep follows dat_ep_disconnect(3DAT) from every state.
func TestDisconnectStep(t *testing.T) {
	g, a := api.CloseGraceful, api.CloseAbrupt
	for _, tc := range []struct {
		from        api.EPState
		flags       api.CloseFlags
		outstanding bool
		want        Disconnect
		to          api.EPState // the state DisconnectStep leaves
		invalid     bool
	}{
		{api.EPConnected, g, true, DisconnectPending, api.EPDisconnectPending, false},
		{api.EPConnected, g, false, DisconnectNow, api.EPConnected, false},
		{api.EPConnected, a, true, DisconnectNow, api.EPConnected, false},
		{api.EPDisconnectPending, g, true, DisconnectNothing, api.EPDisconnectPending, false},
		{api.EPDisconnectPending, a, true, DisconnectNow, api.EPDisconnectPending, false},
		{api.EPActiveConnectionPending, g, false, DisconnectAbandon, api.EPActiveConnectionPending, false},
		{api.EPCompletionPending, a, false, DisconnectAbandon, api.EPCompletionPending, false},
		{api.EPDisconnected, g, false, DisconnectNothing, api.EPDisconnected, false},
		{api.EPUnconnected, g, false, DisconnectNothing, api.EPUnconnected, true},
		{api.EPReserved, a, false, DisconnectNothing, api.EPReserved, true},
		{api.EPPassiveConnectionPending, g, false, DisconnectNothing, api.EPPassiveConnectionPending, true},
		{api.EPTentativeConnectionPending, g, false, DisconnectNothing, api.EPTentativeConnectionPending, true},
	} {
		e := Endpoint{State: tc.from}
		got, err := e.DisconnectStep(tc.flags, tc.outstanding)
		if tc.invalid != errors.Is(err, api.ErrInvalidState) || got != tc.want || e.State != tc.to {
			t.Errorf("from %v flags %v outstanding %v: %v, %v, state %v; want %v, invalid %v, state %v",
				tc.from, tc.flags, tc.outstanding, got, err, e.State, tc.want, tc.invalid, tc.to)
		}
	}
}
