package iaattr_test

import (
	"net"
	"reflect"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/iaattr"
)

// Named is IA and Provider with the provider's own names filled in, and
// nothing else changed.
func TestNamed(t *testing.T) {
	l := iaattr.Limits{MaxObjects: 8, MaxIOV: 4, MaxPrivateData: 64}
	addr := &net.IPAddr{IP: net.IPv4(192, 0, 2, 1)}
	tr := api.NamedAttr{Name: "transport", Value: "test"}
	a, p := iaattr.Named(l, "prov", addr, true, tr)
	wa, wp := iaattr.IA(l), iaattr.Provider(l)
	wa.AdapterName, wa.Address, wa.TransportAttrs = "prov", addr, []api.NamedAttr{tr}
	wp.ProviderName, wp.ProviderVersionMajor, wp.DTOAsyncReturnGuaranteed = "prov", 1, true
	if !reflect.DeepEqual(a, wa) {
		t.Errorf("IA attributes:\n got %+v\nwant %+v", a, wa)
	}
	if !reflect.DeepEqual(p, wp) {
		t.Errorf("provider attributes:\n got %+v\nwant %+v", p, wp)
	}
	if _, p := iaattr.Named(l, "prov", addr, false); p.DTOAsyncReturnGuaranteed {
		t.Error("asyncReturn false reported as guaranteed")
	}
}
