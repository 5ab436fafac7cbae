package tcp

import (
	"errors"
	"net"
	"testing"

	"github.com/godat/godat/api"
)

// foreignAddr is a net.Addr of another type than the net package's, as an
// address that crossed a process boundary is (a plugin's IA address).
type foreignAddr struct{ network, s string }

func (a foreignAddr) Network() string { return a.network }
func (a foreignAddr) String() string  { return a.s }

func TestRemoteIP(t *testing.T) {
	good := []struct {
		a    net.Addr
		want string
	}{
		{&net.IPAddr{IP: net.IPv4(127, 0, 0, 1)}, "127.0.0.1"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 9}, "::1"},
		{foreignAddr{"ip", "127.0.0.1"}, "127.0.0.1"},
		{foreignAddr{"ip6", "fe80::1%eth0"}, "fe80::1"},
		{foreignAddr{"tcp", "127.0.0.1:18515"}, "127.0.0.1"},
		{foreignAddr{"tcp6", "[::1]:1"}, "::1"},
	}
	for _, g := range good {
		ip, err := remoteIP(g.a)
		if err != nil || ip.String() != g.want {
			t.Errorf("remoteIP(%s %q) = %v, %v; want %s", g.a.Network(), g.a.String(), ip, err, g.want)
		}
	}
	bad := []struct {
		a   net.Addr
		sub api.Subtype
	}{
		{nil, api.SubAddressMalformed},
		{&net.IPAddr{}, api.SubAddressMalformed},
		{foreignAddr{"unix", "/tmp/x"}, api.SubAddressUnsupported},
		{foreignAddr{"ip", "localhost"}, api.SubAddressMalformed},
		{foreignAddr{"tcp", "127.0.0.1"}, api.SubAddressMalformed},
	}
	for _, b := range bad {
		_, err := remoteIP(b.a)
		if !errors.Is(err, &api.Error{Type: api.InvalidAddress, Sub: b.sub}) {
			t.Errorf("remoteIP(%v) = %v, want DAT_INVALID_ADDRESS(%v)", b.a, err, b.sub)
		}
	}
}
