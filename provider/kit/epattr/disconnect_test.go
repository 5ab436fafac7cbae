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
	}{
		{api.EPConnected, g, true, DisconnectPending, api.EPDisconnectPending},
		{api.EPConnected, g, false, DisconnectNow, api.EPConnected},
		{api.EPConnected, a, true, DisconnectNow, api.EPConnected},
		{api.EPDisconnectPending, g, true, DisconnectNothing, api.EPDisconnectPending},
		{api.EPDisconnectPending, a, true, DisconnectNow, api.EPDisconnectPending},
		{api.EPActiveConnectionPending, g, false, DisconnectAbandon, api.EPActiveConnectionPending},
		{api.EPCompletionPending, a, false, DisconnectAbandon, api.EPCompletionPending},
		{api.EPDisconnected, g, false, DisconnectNothing, api.EPDisconnected},
	} {
		e := Endpoint{State: tc.from}
		got, err := e.DisconnectStep(tc.flags, tc.outstanding)
		if err != nil || got != tc.want || e.State != tc.to {
			t.Errorf("from %v flags %v outstanding %v: %v, %v, state %v; want %v, state %v",
				tc.from, tc.flags, tc.outstanding, got, err, e.State, tc.want, tc.to)
		}
	}
	for _, from := range []api.EPState{api.EPUnconnected, api.EPReserved, api.EPPassiveConnectionPending, api.EPTentativeConnectionPending} {
		e := Endpoint{State: from}
		if got, err := e.DisconnectStep(g, true); !errors.Is(err, api.ErrInvalidState) || got != DisconnectNothing || e.State != from {
			t.Errorf("from %v: %v, %v, state %v; want ErrInvalidState and no change", from, got, err, e.State)
		}
	}
}
