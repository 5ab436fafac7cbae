package connreq

import (
	"errors"
	"testing"

	"github.com/godat/godat/api"
)

type ep struct{ int }

func TestAcceptEP(t *testing.T) {
	local, given := &ep{1}, &ep{2}
	for _, tc := range []struct {
		local, given *ep
		reserved     bool
		want         *ep
		state        api.EPState
		err          error
	}{
		{nil, given, false, given, api.EPUnconnected, nil},
		{nil, nil, false, nil, 0, api.ErrInvalidHandle},
		{local, nil, true, local, api.EPPassiveConnectionPending, nil},
		{local, local, false, local, api.EPTentativeConnectionPending, nil},
		{local, given, false, nil, 0, api.ErrInvalidParameter},
	} {
		p, s, err := AcceptEP(tc.local, tc.given, tc.reserved)
		if p != tc.want || s != tc.state || (tc.err == nil) != (err == nil) || (tc.err != nil && !errors.Is(err, tc.err)) {
			t.Errorf("AcceptEP(%v, %v, %v) = %v, %v, %v", tc.local, tc.given, tc.reserved, p, s, err)
		}
	}
}

func TestCheckConnectFlags(t *testing.T) {
	if err := CheckConnectFlags(api.ConnectMultipathRequested, "x"); err != nil {
		t.Error(err)
	}
	if err := CheckConnectFlags(api.ConnectMultipathRequired, "x"); !errors.Is(err, api.ErrModelNotSupported) {
		t.Errorf("multipath required: %v", err)
	}
}
