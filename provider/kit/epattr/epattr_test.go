package epattr

import (
	"errors"
	"testing"

	"github.com/godat/godat/api"
)

func TestModifiable(t *testing.T) {
	for _, tc := range []struct {
		s    api.EPState
		mask api.EPParamMask
		ok   bool
	}{
		{api.EPUnconnected, api.EPFieldPZ | api.EPFieldRecvEVD | api.EPFieldMaxRecvDTOs, true},
		{api.EPTentativeConnectionPending, api.EPFieldPZ, true},
		{api.EPReserved, api.EPFieldPZ, false},
		{api.EPReserved, api.EPFieldConnectEVD | api.EPFieldQOS, true},
		{api.EPPassiveConnectionPending, api.EPFieldRequestEVD, true},
		{api.EPConnected, api.EPFieldMaxRecvDTOs, false},
		{api.EPConnected, 0, true},
	} {
		if got := Modifiable(tc.s, tc.mask); got != tc.ok {
			t.Errorf("Modifiable(%s, %#x) = %v; want %v", tc.s, uint64(tc.mask), got, tc.ok)
		}
	}
}

func TestCheckModify(t *testing.T) {
	prm := &api.EPParam{}
	if err := CheckModify(api.EPFieldPZ|api.EPFieldMaxRDMASize, prm); err != nil {
		t.Error(err)
	}
	for _, mask := range []api.EPParamMask{api.EPFieldState, api.EPFieldSRQ, api.EPFieldIA} {
		if err := CheckModify(mask, prm); !errors.Is(err, api.ErrInvalidParameter) {
			t.Errorf("mask %#x: %v", uint64(mask), err)
		}
	}
	if err := CheckModify(api.EPFieldPZ, nil); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("nil parameters: %v", err)
	}
}

// TestModified checks that an EP's state gates the change before the
// attributes are merged, and that the merge sees the posted receives.
func TestModified(t *testing.T) {
	l := Limits{MaxDTOs: 100, MaxIOV: 4, MaxRDMAReads: 4, MaxMessageSize: 1 << 20, MaxRDMASize: 1 << 20}
	e := Endpoint{Attr: api.EPAttr{ServiceType: api.ServiceRC, MaxRecvDTOs: 10, MaxRequestDTOs: 10}, State: api.EPConnected}
	prm := &api.EPParam{Attr: api.EPAttr{MaxRecvDTOs: 20}}
	_, err := e.Modified(api.EPFieldMaxRecvDTOs, prm, l, 0)
	var de *api.Error
	if !errors.As(err, &de) || de.Type != api.InvalidState || de.Sub != api.EPConnected.StateSubtype() {
		t.Errorf("CONNECTED: %v; want ErrInvalidState with the state's subtype", err)
	}
	e.State = api.EPReserved
	if a, err := e.Modified(api.EPFieldMaxRecvDTOs, prm, l, 0); err != nil || a.MaxRecvDTOs != 20 || e.Attr.MaxRecvDTOs != 10 {
		t.Errorf("RESERVED: %+v, %v; want MaxRecvDTOs 20 returned, the EP's own unchanged", a, err)
	}
	if _, err := e.Modified(api.EPFieldPZ, prm, l, 0); !errors.Is(err, api.ErrInvalidState) {
		t.Errorf("the PZ in RESERVED: %v; want ErrInvalidState", err)
	}
	if _, err := e.Modified(api.EPFieldMaxRecvDTOs, prm, l, 21); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("below the posted receives: %v", err)
	}
	applied := 0
	apply := func(api.EPParamMask, *api.EPParam) { applied++ }
	if err := e.Change(api.EPFieldMaxRecvDTOs, prm, l, 21, apply); err == nil || applied != 0 || e.Attr.MaxRecvDTOs != 10 {
		t.Errorf("a refused Change: %v, applied %d times, MaxRecvDTOs %d", err, applied, e.Attr.MaxRecvDTOs)
	}
	if err := e.Change(api.EPFieldMaxRecvDTOs, prm, l, 0, apply); err != nil || applied != 1 || e.Attr.MaxRecvDTOs != 20 {
		t.Errorf("Change: %v, applied %d times, MaxRecvDTOs %d", err, applied, e.Attr.MaxRecvDTOs)
	}
}

func TestModifyAttr(t *testing.T) {
	l := Limits{MaxDTOs: 100, MaxIOV: 4, MaxRDMAReads: 4, MaxMessageSize: 1 << 20, MaxRDMASize: 1 << 20}
	cur := api.EPAttr{ServiceType: api.ServiceRC, MaxRecvDTOs: 10, MaxRequestDTOs: 10}
	next := &api.EPAttr{MaxRecvDTOs: 20, MaxRequestDTOs: 99}
	a, err := ModifyAttr(cur, next, api.EPFieldMaxRecvDTOs, l, 0)
	if err != nil || a.MaxRecvDTOs != 20 || a.MaxRequestDTOs != 10 {
		t.Errorf("ModifyAttr = %+v, %v; want only MaxRecvDTOs changed", a, err)
	}
	if _, err := ModifyAttr(cur, next, api.EPFieldMaxRecvDTOs, l, 21); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("below the posted receives: %v", err)
	}
	next.MaxRecvDTOs = 101
	if _, err := ModifyAttr(cur, next, api.EPFieldMaxRecvDTOs, l, 0); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("above the limit: %v", err)
	}
	if a, err := ModifyAttr(cur, next, api.EPFieldPZ, l, 50); err != nil || a.MaxRecvDTOs != cur.MaxRecvDTOs {
		t.Errorf("no attribute in the mask: %+v, %v", a, err)
	}
}

func TestWatermarks(t *testing.T) {
	var w Watermarks
	if s, h := w.Check(1 << 20); s || h {
		t.Errorf("zero Watermarks fired: soft %v hard %v", s, h)
	}
	w.Set(2, api.WatermarkInfinite)
	if s, h := w.Check(2); s || h {
		t.Errorf("at the soft watermark: soft %v hard %v, want neither", s, h)
	}
	if s, h := w.Check(3); !s || h {
		t.Errorf("above the soft watermark: soft %v hard %v, want soft only", s, h)
	}
	if s, _ := w.Check(4); s {
		t.Error("the soft event fired twice for one Set")
	}
	w.Set(2, 0)
	if s, h := w.Check(3); !s || !h {
		t.Errorf("after Set again: soft %v hard %v, want both", s, h)
	}
	if _, h := w.Check(0); h {
		t.Error("hard watermark 0 exceeded by 0 buffers")
	}
	w.Set(api.WatermarkInfinite, api.WatermarkInfinite)
	if s, h := w.Check(1 << 20); s || h {
		t.Errorf("infinite watermarks fired: soft %v hard %v", s, h)
	}
}

// TestUnreserve: only a RESERVED EP returns to UNCONNECTED.
func TestUnreserve(t *testing.T) {
	for s, want := range map[api.EPState]api.EPState{
		api.EPReserved:                 api.EPUnconnected,
		api.EPPassiveConnectionPending: api.EPPassiveConnectionPending,
		api.EPConnected:                api.EPConnected,
		api.EPUnconnected:              api.EPUnconnected,
	} {
		e := Endpoint{State: s}
		if e.Unreserve(); e.State != want {
			t.Errorf("Unreserve in %s left %s; want %s", s, e.State, want)
		}
	}
}

func TestEndpoint(t *testing.T) {
	e := Endpoint{State: api.EPDisconnected, LocalPort: 7, RemotePort: 9}
	e.Attr.MaxMessageSize = 64
	e.Attr.ProviderSpecific = []api.NamedAttr{{Name: "a", Value: "1"}}
	err := e.StateErr("posting a send")
	var de *api.Error
	if !errors.As(err, &de) || de.Type != api.InvalidState || de.Sub != api.EPDisconnected.StateSubtype() {
		t.Fatalf("StateErr: %v", err)
	}
	prm := e.Param(nil, nil)
	if prm.State != api.EPDisconnected || prm.LocalPortQual != 7 || prm.RemotePortQual != 9 || prm.Attr.MaxMessageSize != 64 {
		t.Fatalf("Param: %+v", prm)
	}
	prm.Attr.ProviderSpecific[0].Value = "changed"
	if e.Attr.ProviderSpecific[0].Value != "1" {
		t.Fatal("Param hands out the EP's own attribute list")
	}
}

// Resolve gives the defaults for a nil attr, fills a given one's zero
// limits from them and refuses one beyond the limits.
func TestDefaultsAndResolve(t *testing.T) {
	l := Limits{MaxDTOs: 64, MaxIOV: 8, MaxRDMAReads: 4, MaxMessageSize: 1 << 20, MaxRDMASize: 1 << 21,
		QOS: api.QOSBestEffort, Flags: api.CompletionSuppress}
	d := Defaults(l, 32, 8, 4)
	want := api.EPAttr{ServiceType: api.ServiceRC, MaxMessageSize: 1 << 20, MaxRDMASize: 1 << 21,
		MaxRecvDTOs: 32, MaxRequestDTOs: 32, MaxRecvIOV: 8, MaxRequestIOV: 8, MaxRDMAReadIOV: 8, MaxRDMAWriteIOV: 8,
		MaxRDMAReadIn: 4, MaxRDMAReadOut: 4}
	if d.ServiceType != want.ServiceType || d.MaxMessageSize != want.MaxMessageSize || d.MaxRDMASize != want.MaxRDMASize ||
		d.MaxRecvDTOs != 32 || d.MaxRequestDTOs != 32 || d.MaxRecvIOV != 8 || d.MaxRequestIOV != 8 ||
		d.MaxRDMAReadIOV != 8 || d.MaxRDMAWriteIOV != 8 || d.MaxRDMAReadIn != 4 || d.MaxRDMAReadOut != 4 {
		t.Fatalf("Defaults = %+v, want %+v", d, want)
	}
	if a, err := Resolve(nil, d, l); err != nil || a.MaxRecvDTOs != 32 || a.MaxMessageSize != 1<<20 {
		t.Fatalf("Resolve(nil) = %+v, %v; want the defaults", a, err)
	}
	given := api.EPAttr{ServiceType: api.ServiceRC, MaxRecvDTOs: 16, ProviderSpecific: []api.NamedAttr{{Name: "x"}}}
	a, err := Resolve(&given, d, l)
	if err != nil || a.MaxRecvDTOs != 16 || a.MaxRequestDTOs != 32 || a.MaxRecvIOV != 8 {
		t.Fatalf("Resolve(given) = %+v, %v; want its own receive depth and the defaults elsewhere", a, err)
	}
	if a.ProviderSpecific[0].Name = "y"; given.ProviderSpecific[0].Name != "x" || given.MaxRequestDTOs != 0 {
		t.Fatal("Resolve modified or shares the consumer's attributes")
	}
	big := api.EPAttr{ServiceType: api.ServiceRC, MaxRecvDTOs: 65}
	if _, err := Resolve(&big, d, l); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("Resolve beyond the limits: %v, want ErrInvalidParameter", err)
	}
}

// Unclaim hands a provider-made EP back for destruction and returns a
// consumer's pending EP to UNCONNECTED, and touches nothing else.
func TestUnclaim(t *testing.T) {
	for _, tc := range []struct {
		owned   bool
		from    api.EPState
		destroy bool
		state   api.EPState
	}{
		{true, api.EPTentativeConnectionPending, true, api.EPTentativeConnectionPending},
		{false, api.EPPassiveConnectionPending, false, api.EPUnconnected},
		{false, api.EPConnected, false, api.EPConnected},
		{false, api.EPReserved, false, api.EPReserved},
	} {
		e := &Endpoint{ProviderOwned: tc.owned, State: tc.from}
		if d := e.Unclaim(); d != tc.destroy || e.State != tc.state {
			t.Errorf("Unclaim of %v (provider's %v): destroy %v, state %v; want %v, %v", tc.from, tc.owned, d, e.State, tc.destroy, tc.state)
		}
	}
}
