package tcp

// Tests of the IA options (options.go): platform_params as Open reads it,
// and the socket options it leads to.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// openWithPlatform opens IA "tcp" on 127.0.0.1 of a configuration whose
// platform_params is platform, through the registry as a consumer would.
func openWithPlatform(t *testing.T, platform string) (api.IA, error) {
	t.Helper()
	conf := fmt.Sprintf(`[[ia]]
name             = "tcp"
provider         = "tcp"
api_version      = "u2.0"
threadsafe       = true
provider_version = "godat.1.0"
ia_params        = "127.0.0.1"
platform_params  = %q
`, platform)
	cfg, err := registry.ParseConfig("options.conf", []byte(conf))
	if err != nil {
		t.Fatalf("configuration with platform_params %q: %v", platform, err)
	}
	ia, err := registry.New(cfg).Open(context.Background(), "tcp")
	if err == nil {
		t.Cleanup(func() { ia.Close(api.CloseAbrupt) })
	}
	return ia, err
}

// TestOptionsParse opens IAs with good and bad platform_params: the good
// ones open with the peer timeout they say, each bad one fails with
// DAT_INVALID_PARAMETER naming the key and the value.
func TestOptionsParse(t *testing.T) {
	for _, tc := range []struct {
		platform string
		want     time.Duration
	}{
		{"", defaultPeerTimeout},
		{"   \t ", defaultPeerTimeout},
		{"peer_timeout=5s", 5 * time.Second},
		{"peer_timeout=0", 0},
		{"peer_timeout=0s", 0},
		{"peer_timeout=1m30s", 90 * time.Second},
		{"peer_timeout=1500ms", 1500 * time.Millisecond},
		{"peer_timeout=1s", time.Second},
		{"peer_timeout=24h", 24 * time.Hour},
		{"  peer_timeout=2s\t\n", 2 * time.Second},
	} {
		if _, err := openWithPlatform(t, tc.platform); err != nil {
			t.Errorf("platform_params %q: %v", tc.platform, err)
		}
		o, err := parseOptions(tc.platform)
		if err != nil || o.peerTimeout != tc.want {
			t.Errorf("parseOptions(%q) = %v, %v; want peer timeout %v", tc.platform, o.peerTimeout, err, tc.want)
		}
		// Straight through the provider, as well.
		x, err := Provider{}.Open(context.Background(), api.OpenParams{Name: "tcp", Params: "127.0.0.1", PlatformParams: tc.platform, AsyncEVDQLen: 8})
		if err != nil {
			t.Errorf("Provider.Open with platform_params %q: %v", tc.platform, err)
			continue
		}
		if got := x.(*ia).opts.peerTimeout; got != tc.want {
			t.Errorf("platform_params %q: peer timeout %v, want %v", tc.platform, got, tc.want)
		}
		if err := x.Close(api.CloseGraceful); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		platform string
		mention  []string // what the message must name
	}{
		{"peer_timeout=5", []string{"peer_timeout", `"5"`}},
		{"peer_timeout=", []string{"peer_timeout", `""`}},
		{"peer_timeout=soon", []string{"peer_timeout", `"soon"`}},
		{"peer_timeout=-1s", []string{"peer_timeout", "-1s", "negative"}},
		{"peer_timeout=500ms", []string{"peer_timeout", "500ms"}},
		{"peer_timeout=25h", []string{"peer_timeout", "25h"}},
		{"keepalive=5s", []string{"keepalive", "5s"}},
		{"peer_timeout=5s bogus=1", []string{"bogus", "1"}},
		{"peer_timeout=5s peer_timeout=6s", []string{"peer_timeout", "6s"}},
		{"peer_timeout", []string{"peer_timeout"}},
		{"=5s", []string{"=5s"}},
		{"peer_timeout = 5s", []string{"peer_timeout"}},
		{"PEER_TIMEOUT=5s", []string{"PEER_TIMEOUT", "5s"}},
	} {
		ia, err := openWithPlatform(t, tc.platform)
		if err == nil {
			ia.Close(api.CloseAbrupt)
			t.Errorf("platform_params %q: the IA opened", tc.platform)
			continue
		}
		var de *api.Error
		if !errors.As(err, &de) || de.Type != api.InvalidParameter || !errors.Is(err, api.ErrInvalidParameter) {
			t.Errorf("platform_params %q: %v (%T), want DAT_INVALID_PARAMETER", tc.platform, err, err)
			continue
		}
		for _, m := range tc.mention {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("platform_params %q: message %q does not name %s", tc.platform, err, m)
			}
		}
		_, err = Provider{}.Open(context.Background(), api.OpenParams{Name: "tcp", Params: "127.0.0.1", PlatformParams: tc.platform, AsyncEVDQLen: 8})
		if !errors.Is(err, api.ErrInvalidParameter) {
			t.Errorf("Provider.Open with platform_params %q: %v, want DAT_INVALID_PARAMETER", tc.platform, err)
		}
	}
}

// TestOptionsKeepAlive checks the keepalive settings derived from peer
// timeouts: the first probe and the probes add up to the timeout (or to
// the nearest whole second above it), in whole seconds.
func TestOptionsKeepAlive(t *testing.T) {
	for _, tc := range []struct {
		timeout  time.Duration
		iv       time.Duration
		count    int
		coverage time.Duration // idle + count*interval
	}{
		{30 * time.Second, 6 * time.Second, 4, 30 * time.Second},
		{2 * time.Second, time.Second, 1, 2 * time.Second},
		{time.Second, time.Second, 1, 2 * time.Second},
		{1500 * time.Millisecond, time.Second, 1, 2 * time.Second},
		{7 * time.Second, 2 * time.Second, 3, 8 * time.Second},
		{10 * time.Second, 2 * time.Second, 4, 10 * time.Second},
		{24 * time.Hour, 17280 * time.Second, 4, 24 * time.Hour},
	} {
		k := keepAlive(tc.timeout)
		if !k.Enable || k.Idle != tc.iv || k.Interval != tc.iv || k.Count != tc.count {
			t.Errorf("keepAlive(%v) = %+v, want idle = interval = %v, count %d", tc.timeout, k, tc.iv, tc.count)
		}
		if got := k.Idle + time.Duration(k.Count)*k.Interval; got != tc.coverage {
			t.Errorf("keepAlive(%v) covers %v, want %v", tc.timeout, got, tc.coverage)
		}
	}
}

// sockOpts are the broken-peer settings of a socket, as getsockopt reads
// them.
type sockOpts struct {
	keepAlive, idle, interval, count, userTimeout int
}

// connSockets finds the sockets of this process connected to or accepted
// from TCP port q on 127.0.0.1 (looking at every descriptor, so that how
// the provider keeps its sockets does not matter), and returns the
// settings of those dialled to q and of those accepted on q.
func connSockets(t *testing.T, q api.ConnQual) (dialled, accepted []sockOpts) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot list this process's descriptors: %v", err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || !strings.HasPrefix(link, "socket:") {
			continue
		}
		if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_STREAM {
			continue
		}
		local, err1 := unix.Getsockname(fd)
		peer, err2 := unix.Getpeername(fd)
		if err1 != nil || err2 != nil {
			continue // not connected: a listener, or not ours
		}
		l4, ok1 := local.(*unix.SockaddrInet4)
		p4, ok2 := peer.(*unix.SockaddrInet4)
		if !ok1 || !ok2 {
			continue
		}
		var o sockOpts
		for _, g := range []struct {
			level, name int
			v           *int
		}{
			{unix.SOL_SOCKET, unix.SO_KEEPALIVE, &o.keepAlive},
			{unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, &o.idle},
			{unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, &o.interval},
			{unix.IPPROTO_TCP, unix.TCP_KEEPCNT, &o.count},
			{unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, &o.userTimeout},
		} {
			if *g.v, err = unix.GetsockoptInt(fd, g.level, g.name); err != nil {
				t.Fatalf("getsockopt %d/%d of descriptor %d: %v", g.level, g.name, fd, err)
			}
		}
		switch {
		case p4.Port == int(q):
			dialled = append(dialled, o)
		case l4.Port == int(q):
			accepted = append(accepted, o)
		}
	}
	return dialled, accepted
}

// TestOptionsSocket connects two EPs of an IA and reads the socket options
// of both ends back: the default peer timeout (30 s: user timeout 30000 ms,
// keepalive after 6 s, every 6 s, 4 probes), a peer timeout of 2 s, and
// peer_timeout=0, which leaves both sockets without keepalive or user
// timeout.
func TestOptionsSocket(t *testing.T) {
	for _, tc := range []struct {
		platform string
		want     sockOpts
	}{
		{"", sockOpts{keepAlive: 1, idle: 6, interval: 6, count: 4, userTimeout: 30000}},
		{"peer_timeout=2s", sockOpts{keepAlive: 1, idle: 1, interval: 1, count: 1, userTimeout: 2000}},
		{"peer_timeout=0", sockOpts{keepAlive: 0, userTimeout: 0}},
	} {
		t.Run(fmt.Sprintf("%q", tc.platform), func(t *testing.T) {
			ia, err := openWithPlatform(t, tc.platform)
			if err != nil {
				t.Fatal(err)
			}
			cli, srv := newClient(t, ia), newClient(t, ia)
			crEVD, err := ia.CreateEVD(4, nil, api.EVDCR)
			if err != nil {
				t.Fatal(err)
			}
			_, q, err := ia.CreatePSPAny(crEVD, api.PSPConsumer)
			if err != nil {
				t.Fatal(err)
			}
			cli.connect(q, "options")
			ev := cli.expect(crEVD, api.ConnectionRequestEvent, "the request")
			if err := ev.CR.CR.Accept(srv.ep, nil); err != nil {
				t.Fatal(err)
			}
			cli.expect(cli.conn, api.ConnectionEstablishedEvent, "ESTABLISHED (active)")
			srv.expect(srv.conn, api.ConnectionEstablishedEvent, "ESTABLISHED (passive)")

			dialled, accepted := connSockets(t, q)
			if len(dialled) == 0 || len(accepted) == 0 {
				t.Fatalf("found %d dialled and %d accepted sockets for port %d, want both", len(dialled), len(accepted), q)
			}
			for side, socks := range map[string][]sockOpts{"dialled": dialled, "accepted": accepted} {
				for _, o := range socks {
					if tc.want.keepAlive == 0 {
						// The kernel's defaults: only these two matter
						// (the others are unused without keepalive).
						o.idle, o.interval, o.count = 0, 0, 0
					}
					if o != tc.want {
						t.Errorf("%s socket: %+v, want %+v", side, o, tc.want)
					}
				}
			}
			if err := cli.ep.Disconnect(api.CloseAbrupt); err != nil {
				t.Fatal(err)
			}
			srv.expect(srv.conn, api.ConnectionDisconnectedEvent, "DISCONNECTED (passive)")
		})
	}
}
