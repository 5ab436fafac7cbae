package tcp

// Tests of the IA options (options.go): platform_params as Open reads it,
// the socket options it leads to, and a peer that goes silent across two
// network namespaces.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
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
// A platform_params that CheckParams refuses makes the configuration
// invalid, and that is the error.
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
		return nil, err
	}
	ia, err := registry.New(cfg).Open(context.Background(), "tcp")
	if err == nil {
		t.Cleanup(func() { ia.Close(api.CloseAbrupt) })
	}
	return ia, err
}

// TestOptionsParse opens IAs with good and bad platform_params: the good
// ones open with the peer timeout they say, each bad one fails with
// DAT_INVALID_PARAMETER naming the key and the value: in a configuration
// file as a problem at the position of the value, and in Open.
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
		var ce registry.ConfigErrors
		if !errors.As(err, &ce) || len(ce) != 1 || ce[0].Pos != (registry.Position{File: "options.conf", Line: 8, Col: 20}) {
			t.Errorf("platform_params %q: %v, want one problem at options.conf:8:20", tc.platform, err)
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
			s, cli := newServerOn(t, ia), newClient(t, ia)
			s.establish(cli, s.client, "options", "the connection")

			dialled, accepted := connSockets(t, s.q)
			if len(dialled) == 0 || len(accepted) == 0 {
				t.Fatalf("found %d dialled and %d accepted sockets for port %d, want both", len(dialled), len(accepted), s.q)
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
			s.expect(s.connEVD, api.ConnectionDisconnectedEvent, "DISCONNECTED (passive)")
		})
	}
}

// netnsSilentEnv tells TestHelperNetnsSilent where the server is and how
// to silence it: "server port namespace device".
const netnsSilentEnv = "GODAT_TCP_NETNS_SILENT"

// TestNetnsSilentPeer runs the helper server in one namespace and a client
// in another, both with peer_timeout=2s, and then makes the server's host
// silent without closing any socket: its end of the veth pair goes down.
// The client must see CONNECTION_BROKEN on an idle connection (found by
// keepalive) and on one with an RDMA write, a send and a receive
// outstanding (found by the user timeout), whose DTOs complete FLUSHED,
// and a connect whose request the server holds unanswered, without a
// connect timeout, must fail as a handshake does (TestHelperNetnsSilent).
// Only an upper bound is checked: each event within 20 s.
func TestNetnsSilentPeer(t *testing.T) {
	needNetns(t)
	const server, client = "10.78.0.1", "10.78.0.2"
	a, b := twoHosts(t, server, client, "/24")
	h := nsHelper(t, a, writeConfPlatform(t, server, "peer_timeout=2s"))
	out := runChildTest(t, b, writeConfPlatform(t, client, "peer_timeout=2s"), "TestHelperNetnsSilent",
		[]string{fmt.Sprintf("%s=%s %d %s gdv0", netnsSilentEnv, server, h.port, a)})
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "GODAT-SILENT") {
			t.Log(strings.TrimSpace(line))
		}
	}
}

// TestHelperNetnsSilent is TestNetnsSilentPeer's client, run in the
// client's namespace. It does nothing in a normal run.
func TestHelperNetnsSilent(t *testing.T) {
	f, server, port := serverSpec(t, netnsSilentEnv, 4, "TestNetnsSilentPeer's client namespace")
	ia := openIA(t)

	// Two connections to the helper, each with its window message.
	connect := func(name string) (*client, api.RMRTriplet) {
		c := newClient(t, ia)
		if err := c.ep.PostRecv([]api.LMRTriplet{c.lmr.Triplet(0, 64)}, 1, api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		if err := c.ep.Connect(&net.IPAddr{IP: server}, port, hangDeadline, []byte(name), api.QOSBestEffort, api.ConnectDefault); err != nil {
			t.Fatal(err)
		}
		c.expect(c.connEVD, api.ConnectionEstablishedEvent, name+": ESTABLISHED")
		c.dto(c.recv, 1, api.DTOSuccess, name+": the window message")
		return c, helperWin(c.buf)
	}
	// A request the helper holds unanswered: the requester waits in the
	// handshake, without a timeout of its own.
	held := newClient(t, ia)
	if err := held.ep.Connect(&net.IPAddr{IP: server}, port, api.TimeoutInfinite, []byte("hold"), api.QOSBestEffort, api.ConnectDefault); err != nil {
		t.Fatal(err)
	}
	idle, _ := connect("idle")
	busy, win := connect("busy")
	// The held request's TCP connection is up (the TCP connect is bounded
	// by the Connect timeout, not by peer_timeout).
	for deadline := time.Now().Add(20 * time.Second); ; {
		if dialled, _ := connSockets(t, port); len(dialled) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the held request's TCP connection did not come up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	expectState(t, held.ep, api.EPActiveConnectionPending, "the held request")

	// The server's host goes silent: its end of the link goes down, and
	// nothing it had is closed.
	if out, err := exec.Command("ip", "-n", f[2], "link", "set", f[3], "down").CombinedOutput(); err != nil {
		t.Fatalf("ip -n %s link set %s down: %v: %s", f[2], f[3], err, out)
	}
	start := time.Now()

	// On the busy connection: an RDMA write and a send the server will
	// never acknowledge, and a receive.
	if err := busy.ep.PostRecv([]api.LMRTriplet{busy.lmr.Triplet(64<<10, 4096)}, 2, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := busy.ep.PostRDMAWrite([]api.LMRTriplet{busy.lmr.Triplet(128<<10, win.Length)}, 10, win, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := busy.ep.PostSend([]api.LMRTriplet{busy.lmr.Triplet(192<<10, 1000)}, 11, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}

	// c.next bounds each wait at 20 s.
	idle.expect(idle.connEVD, api.ConnectionBrokenEvent, "the idle connection to the silent peer")
	fmt.Printf("GODAT-SILENT idle connection broken after %v\n", time.Since(start).Round(time.Millisecond))
	expectState(t, idle.ep, api.EPDisconnected, "the idle EP after BROKEN")
	busy.expect(busy.connEVD, api.ConnectionBrokenEvent, "the busy connection to the silent peer")
	fmt.Printf("GODAT-SILENT busy connection broken after %v\n", time.Since(start).Round(time.Millisecond))
	expectState(t, busy.ep, api.EPDisconnected, "the busy EP after BROKEN")
	busy.dto(busy.req, 10, api.DTOErrFlushed, "the RDMA write to the silent peer")
	busy.dto(busy.req, 11, api.DTOErrFlushed, "the send to the silent peer")
	busy.dto(busy.recv, 2, api.DTOErrFlushed, "the receive of the broken connection")
	expectQuiet(t, busy.req, "the busy EP's request EVD after the flush")
	// The handshake fails as when its socket fails: TIMED_OUT for the
	// kernel's ETIMEDOUT, NON_PEER_REJECTED for another error.
	ev := held.next(held.connEVD, "the held request to the silent peer")
	if ev.Number != api.ConnectionTimedOutEvent && ev.Number != api.ConnectionNonPeerRejectedEvent {
		t.Fatalf("the held request to the silent peer: %v, want TIMED_OUT or NON_PEER_REJECTED", ev.Number)
	}
	fmt.Printf("GODAT-SILENT held request ended (%v) after %v\n", ev.Number, time.Since(start).Round(time.Millisecond))
	expectState(t, held.ep, api.EPDisconnected, "the held EP")
	for _, c := range []*client{held, idle, busy} {
		if err := c.ep.Free(); err != nil {
			t.Fatal(err)
		}
	}
}
