package tcp

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"unicode"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
	"github.com/godat/godat/provider/kit/dispatch"
	"github.com/godat/godat/provider/kit/epattr"
	"github.com/godat/godat/provider/kit/iaattr"
)

func init() { provider.Register("tcp", Provider{}) }

// Provider is the tcp provider: RDMA semantics over TCP
// (dat_provider_init(3DAT), dat_ia_open(3DAT)). The zero value is ready
// for use; the package registers one under the name "tcp".
type Provider struct{}

// Open opens a tcp IA on the local address that p.Params names
// (dat_ia_open(3DAT)): an IPv4 or IPv6 address ("127.0.0.1", "::1",
// "[::1]") or a network interface name ("eth0"), whose first IPv4 address,
// else first IPv6 address, is used. An address that is not configured on
// this host, or an interface without addresses, is ErrProviderNotFound
// with the reason. p.PlatformParams holds the IA's options (options.go):
// "peer_timeout=<duration>", how long a silent peer is waited for before
// its connections are broken (default 30s, 0 for the kernel's defaults);
// anything else there, or a bad value, is ErrInvalidParameter. Each call
// opens a new, independent IA.
func (Provider) Open(ctx context.Context, p api.OpenParams) (api.IA, error) {
	qlen, err := dispatch.CheckOpen(ctx, p, providerLimits.MaxEVDQLen)
	if err != nil {
		return nil, err
	}
	opts, err := parseOptions(p.PlatformParams)
	if err != nil {
		return nil, err
	}
	ip, err := localIP(p.Params)
	if err != nil {
		return nil, err
	}
	i := newIA(ip)
	i.opts = opts
	i.async = newEVD(i, qlen, api.EVDAsync, nil)
	i.InitIA(&i.mu, i.async)
	return i, nil
}

// CheckParams checks p.Params and p.PlatformParams as Open reads them,
// without looking at the host (provider.ParamChecker): platform_params
// must be valid options, and ia_params an IP address or a string that
// can be an interface name. Whether the address or interface exists here
// is left to Open.
func (Provider) CheckParams(p api.OpenParams) (iaParams, platformParams error) {
	_, _, iaParams = parseIAParams(p.Params)
	_, platformParams = parseOptions(p.PlatformParams)
	return iaParams, platformParams
}

// wantIAParams is what ia_params must be, for error messages.
const wantIAParams = `expected an IP address of this host, such as "127.0.0.1" or "::1", or an interface name, such as "eth0"`

// parseIAParams reads ia_params: an IP address (ip), or else an interface
// name (ifname), by their form alone.
func parseIAParams(s string) (ip net.IP, ifname string, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, "", api.Errorf(api.ProviderNotFound, api.NoSubtype, "tcp: ia_params is empty; "+wantIAParams)
	}
	if ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); ip != nil {
		return ip, "", nil
	}
	if why := notIfName(s); why != "" {
		return nil, "", api.Errorf(api.ProviderNotFound, api.NoSubtype, fmt.Sprintf("tcp: ia_params %q %s; %s", s, why, wantIAParams))
	}
	return nil, s, nil
}

// maxIfName is the longest interface name Linux allows (IFNAMSIZ less
// the terminating NUL).
const maxIfName = 15

// notIfName says why s, which is not an IP address, cannot name an
// interface either, or "". Besides the kernel's rules for interface names
// (dev_valid_name), a string of digits and dots, or one with a colon, is
// taken for a mistyped IPv4 or IPv6 address: no sensible interface is
// called 10.0.0.300.
func notIfName(s string) string {
	switch {
	case s == "." || s == "..":
		return "is not an IP address nor an interface name"
	case strings.Trim(s, "0123456789.") == "" && strings.Contains(s, "."):
		return "is not an IPv4 address (four numbers from 0 to 255, separated by dots)"
	case strings.Contains(s, ":"):
		return "is not an IPv6 address"
	case len(s) > maxIfName:
		return fmt.Sprintf("is not an IP address, and is too long for an interface name (at most %d bytes)", maxIfName)
	case strings.ContainsRune(s, '/') || strings.IndexFunc(s, unicode.IsSpace) >= 0:
		return "is not an IP address, and an interface name has no '/' and no blanks"
	}
	return ""
}

// localIP resolves ia_params to an IP address configured on this host.
func localIP(s string) (net.IP, error) {
	ip, name, err := parseIAParams(s)
	if err != nil {
		return nil, err
	}
	if ip != nil {
		if ip.IsLoopback() || ip.IsUnspecified() {
			return ip, nil
		}
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			return nil, &api.Error{Type: api.ProviderNotFound, Msg: "tcp: listing the host's addresses", Cause: err}
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return ip, nil
			}
		}
		return nil, api.Errorf(api.ProviderNotFound, api.NoSubtype, fmt.Sprintf("tcp: %s is not an address of this host", ip))
	}
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return nil, &api.Error{Type: api.ProviderNotFound, Msg: fmt.Sprintf("tcp: ia_params %q is neither an IP address nor an interface", name), Cause: err}
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return nil, &api.Error{Type: api.ProviderNotFound, Msg: fmt.Sprintf("tcp: addresses of %s", name), Cause: err}
	}
	var v6 net.IP
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if n.IP.To4() != nil {
			return n.IP.To4(), nil
		}
		if v6 == nil && !n.IP.IsLinkLocalUnicast() {
			v6 = n.IP
		}
	}
	if v6 == nil {
		return nil, api.Errorf(api.ProviderNotFound, api.NoSubtype, fmt.Sprintf("tcp: interface %s has no usable IP address", name))
	}
	return v6, nil
}

// remoteIP converts the remote address of Connect: a *net.IPAddr or a
// *net.TCPAddr (whose port is ignored: the connection qualifier is the
// port), or any other net.Addr of network "ip" or "tcp" (or their 4 and 6
// forms) whose String is an address in Go's form, such as an IA address
// that reached this process from another one (a plugin's, for instance).
func remoteIP(a net.Addr) (net.IP, error) {
	switch v := a.(type) {
	case *net.IPAddr:
		if v != nil && v.IP != nil {
			return v.IP, nil
		}
	case *net.TCPAddr:
		if v != nil && v.IP != nil {
			return v.IP, nil
		}
	case nil:
	default:
		host := a.String()
		switch a.Network() {
		case "ip", "ip4", "ip6":
		case "tcp", "tcp4", "tcp6":
			h, _, err := net.SplitHostPort(host)
			if err != nil {
				return nil, api.Errorf(api.InvalidAddress, api.SubAddressMalformed, fmt.Sprintf("%s address %q: %v", a.Network(), host, err))
			}
			host = h
		default:
			return nil, api.Errorf(api.InvalidAddress, api.SubAddressUnsupported,
				fmt.Sprintf("%s address %q is not an IP address", a.Network(), a.String()))
		}
		if i := strings.IndexByte(host, '%'); i >= 0 {
			host = host[:i] // a zone: link-local addresses are not routed by zone here
		}
		if ip := net.ParseIP(host); ip != nil {
			return ip, nil
		}
		return nil, api.Errorf(api.InvalidAddress, api.SubAddressMalformed, fmt.Sprintf("%s address %q is not an IP literal", a.Network(), a.String()))
	}
	return nil, api.Errorf(api.InvalidAddress, api.SubAddressMalformed, "remote address is nil or has no IP")
}

const (
	maxConnQual    = 65535 // the largest connection qualifier: a TCP port
	maxPrivateData = 1024  // what a handshake frame may carry
)

// providerLimits are the limits the provider reports in IA.Query and
// enforces: a software provider's, with fewer DTOs per EP (each request
// in flight holds its place in the request queue until the peer's ACK).
var providerLimits = func() iaattr.Limits {
	l := iaattr.Software()
	l.MaxDTOPerEP = 1 << 14
	l.MaxPrivateData = maxPrivateData
	return l
}()

// defaultEPAttr is what an EP gets for a nil attribute pointer, and what
// zero numeric fields of a given one are replaced with.
var defaultEPAttr = epattr.Defaults(providerLimits.EP(), 1024, 16, 16)

// portQuals numbers the port qualifiers of active EPs, process-wide. They
// start above every TCP port so that they are never mistaken for one.
var portQuals atomic.Uint64

func nextPortQual() api.ConnQual { return api.ConnQual(1<<32 + portQuals.Add(1)) }
