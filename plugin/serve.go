package plugin

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
	pb "github.com/godat/godat/plugin/proto"
)

// ServeOption configures Serve.
type ServeOption func(*serveOptions)

type serveOptions struct {
	name, version string
	parse         func(network, address string) (net.Addr, error)
}

// WithName sets the name the plugin reports to the host (datinfo shows it);
// the default is the executable's base name.
func WithName(name string) ServeOption { return func(o *serveOptions) { o.name = name } }

// WithVersion sets the version string the plugin reports to the host
// (datinfo shows it), e.g. "1.4.2".
func WithVersion(v string) ServeOption { return func(o *serveOptions) { o.version = v } }

// WithAddrParser gives the plugin a way to turn an address the host passes
// to Connect or Modify (its network and string form) into the provider's
// own net.Addr. Addresses the provider reported itself are recognized
// without it; without it others are parsed as TCP, UDP, IP or Unix
// addresses by their network name, and anything else is handed to the
// provider as a plugin.Addr.
func WithAddrParser(f func(network, address string) (net.Addr, error)) ServeOption {
	return func(o *serveOptions) { o.parse = f }
}

// Serve runs p as a godat provider plugin: it is what a vendor's main calls,
// and it returns when the host stops the plugin. A program started other
// than by godat's plugin host prints an explanation and exits with status
// 1. If the host process dies, the plugin exits (status 3) as soon as it
// notices that its control socket closed.
func Serve(p api.Provider, opts ...ServeOption) {
	o := serveOptions{name: baseName(os.Args[0])}
	for _, f := range opts {
		f(&o)
	}
	if os.Getenv(wire.Handshake.MagicCookieKey) != wire.Handshake.MagicCookieValue {
		// go-plugin explains that this is a plugin and exits.
		goplugin.Serve(&goplugin.ServeConfig{HandshakeConfig: wire.Handshake, VersionedPlugins: wire.PluginSets(nil)})
		return
	}
	ctl, err := pluginCtlConn()
	if err != nil {
		fmt.Fprintln(os.Stderr, "godat plugin:", err)
		os.Exit(1)
	}
	mem := &pluginMem{}
	srv := newServer(p, &o, mem)
	mem.rings = srv.attachRings
	// The host is gone: nobody reads the plugin's output any more (a
	// message on standard error would only raise SIGPIPE), so just exit,
	// after removing the socket the host would have removed.
	go mem.serveCtl(ctl, func(error) {
		removeSocket()
		os.Exit(3)
	})
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.PluginSets(srv),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.UnaryInterceptor(srv.fenceInterceptor))...)
		},
	})
}

// removeSocket removes the plugin's listening socket and the directory
// the host made for it ($PLUGIN_UNIX_SOCKET_DIR, one per plugin process),
// which an exit leaves behind.
func removeSocket() {
	dir := os.Getenv(goplugin.EnvUnixSocketDir)
	if dir == "" {
		return
	}
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if e.Type()&fs.ModeSocket != 0 && strings.HasPrefix(e.Name(), "plugin") {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	os.Remove(dir) // only if nothing else is in it
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// addrCache turns the addresses the host sends back into the provider's
// own values: every address the plugin reported is remembered by its
// network and string form.
type addrCache struct {
	mu    sync.Mutex
	m     map[[2]string]net.Addr
	parse func(network, address string) (net.Addr, error)
}

// maxAddrs bounds the cache; it starts afresh when full.
const maxAddrs = 1 << 14

func newAddrCache(parse func(network, address string) (net.Addr, error)) *addrCache {
	return &addrCache{m: map[[2]string]net.Addr{}, parse: parse}
}

// out records a reported address and converts it for the wire.
func (c *addrCache) out(a net.Addr) *pb.Addr {
	if a == nil || wire.IsNilObject(a) {
		return nil
	}
	k := [2]string{a.Network(), a.String()}
	c.mu.Lock()
	if len(c.m) >= maxAddrs {
		clear(c.m)
	}
	c.m[k] = a
	c.mu.Unlock()
	return &pb.Addr{Network: k[0], Address: k[1]}
}

// in converts an address from the host.
func (c *addrCache) in(a *pb.Addr) net.Addr {
	k := [2]string{a.Network, a.Address}
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return v
	}
	if c.parse != nil {
		if v, err := c.parse(a.Network, a.Address); err == nil && v != nil {
			return v
		}
	}
	switch a.Network {
	case "tcp", "tcp4", "tcp6":
		if v, err := net.ResolveTCPAddr(a.Network, a.Address); err == nil {
			return v
		}
	case "udp", "udp4", "udp6":
		if v, err := net.ResolveUDPAddr(a.Network, a.Address); err == nil {
			return v
		}
	case "ip", "ip4", "ip6":
		if v, err := net.ResolveIPAddr(a.Network, a.Address); err == nil {
			return v
		}
	case "unix", "unixgram", "unixpacket":
		return &net.UnixAddr{Net: a.Network, Name: a.Address}
	}
	return wire.Addr{Net: a.Network, Str: a.Address}
}
