package tcp

// Tests across hosts: network namespaces joined by a veth pair stand in
// for two machines. The test binary re-executes itself inside a namespace
// with `ip netns exec NS <test binary> -test.run=^TestHelper...$`, the way
// twoproc_test.go runs its helper, with a configuration file whose "tcp"
// IA is the namespace's address. They need root and iproute2 (ip); they
// skip without them, except under CI (CI=true), where not being able to
// create a namespace is a failure.

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// needNetns skips t unless network namespaces can be built here.
func needNetns(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds network namespaces and starts processes")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (Debian package iproute2)")
	}
}

var netnsSeq atomic.Int32

// newNetns creates a network namespace, unique to this process, with its
// loopback up; it is deleted when t ends.
func newNetns(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("godat-%d-%d", os.Getpid(), netnsSeq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("cannot create a network namespace: %v: %s", err, bytes.TrimSpace(out))
		}
		t.Fatalf("ip netns add %s: %v: %s", name, err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, bytes.TrimSpace(out))
		}
	})
	ipCmd(t, "-n", name, "link", "set", "lo", "up")
	return name
}

// twoHosts creates two network namespaces joined by a veth pair: gdv0 in
// the first with address server+prefix, gdv1 in the second with
// client+prefix (extra are further flags of ip addr add), both up.
func twoHosts(t *testing.T, server, client, prefix string, extra ...string) (a, b string) {
	t.Helper()
	a, b = newNetns(t), newNetns(t)
	ipCmd(t, "-n", a, "link", "add", "gdv0", "type", "veth", "peer", "name", "gdv1", "netns", b)
	ipCmd(t, append([]string{"-n", a, "addr", "add", server + prefix, "dev", "gdv0"}, extra...)...)
	ipCmd(t, append([]string{"-n", b, "addr", "add", client + prefix, "dev", "gdv1"}, extra...)...)
	ipCmd(t, "-n", a, "link", "set", "gdv0", "up")
	ipCmd(t, "-n", b, "link", "set", "gdv1", "up")
	return a, b
}

// ipCmd runs ip with args.
func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

// writeConf writes a configuration whose IA "tcp" has ia_params addr.
func writeConf(t *testing.T, addr string) string {
	t.Helper()
	return writeConfPlatform(t, addr, "")
}

// writeConfPlatform is writeConf with platform_params platform.
func writeConfPlatform(t *testing.T, addr, platform string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "dat.conf")
	conf := fmt.Sprintf(`[[ia]]
name             = "tcp"
provider         = "tcp"
api_version      = "u2.0"
threadsafe       = true
default          = true
provider_version = "godat.1.0"
ia_params        = %q
platform_params  = %q
`, addr, platform)
	if err := os.WriteFile(p, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// nsCommand returns a command running this test binary in namespace ns
// with args, the configuration conf and the extra environment env.
func nsCommand(t *testing.T, ns, conf string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, exe}, args...)...)
	cmd.Env = append(append(os.Environ(), registry.EnvOverride+"="+conf), env...)
	return cmd
}

// runChildTest runs the test function name in namespace ns and returns
// its standard output; it fails t unless that test ran and passed.
func runChildTest(t *testing.T, ns, conf, name string, env []string) string {
	t.Helper()
	cmd := nsCommand(t, ns, conf, env, "-test.run=^"+name+"$", "-test.v", "-test.count=1", "-test.timeout=3m")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil || !strings.Contains(stdout.String(), "--- PASS: "+name) {
		t.Fatalf("%s in namespace %s: %v\nstdout:\n%s\nstderr:\n%s", name, ns, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// netnsConnectEnv carries TestFaultUnreachable's cases to the process in
// the namespace (see encodeCases).
const netnsConnectEnv = "GODAT_TCP_NETNS_CONNECT"

// runConnectChild runs TestHelperNetnsConnect in ns, whose IA is local,
// and returns what it saw for each case.
func runConnectChild(t *testing.T, ns, local string, cases []unreachableCase) map[string]connectResult {
	t.Helper()
	out := runChildTest(t, ns, writeConf(t, local), "TestHelperNetnsConnect", []string{netnsConnectEnv + "=" + encodeCases(cases)})
	res := map[string]connectResult{}
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "GODAT-RESULT ")
		if !ok {
			continue
		}
		f := strings.Split(rest, "|")
		if len(f) != 4 {
			t.Fatalf("bad result line %q", line)
		}
		ev, err1 := strconv.ParseUint(f[1], 10, 32)
		ns, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad result line %q", line)
		}
		res[f[0]] = connectResult{event: api.EventNumber(ev), elapsed: time.Duration(ns), state: f[3]}
	}
	return res
}

// TestHelperNetnsConnect is TestFaultUnreachable's process inside the
// namespace: for each case it connects a new EP to port 7 of the case's
// address and prints the connection event it gets, the time it took and
// the EP's state. It does nothing in a normal run.
func TestHelperNetnsConnect(t *testing.T) {
	spec := os.Getenv(netnsConnectEnv)
	if spec == "" {
		t.Skip("runs only inside TestFaultUnreachable's namespace")
	}
	ia := openIA(t)
	for _, c := range strings.Split(spec, ";") {
		f := strings.Split(c, "|")
		if len(f) != 3 {
			t.Fatalf("bad case %q", c)
		}
		name, ip := f[0], net.ParseIP(f[1])
		timeout, err := strconv.ParseInt(f[2], 10, 64)
		if ip == nil || err != nil {
			t.Fatalf("bad case %q", c)
		}
		e := newEndpoint(t, ia, 16, 4096)
		to := api.Timeout(timeout)
		if timeout == 0 {
			to = api.TimeoutInfinite
		}
		start := time.Now()
		if err := e.ep.Connect(&net.IPAddr{IP: ip}, 7, to, []byte(name), api.QOSBestEffort, api.ConnectDefault); err != nil {
			t.Fatalf("%s: Connect: %v", name, err)
		}
		if timeout == 0 {
			// No timeout: the attempt is still pending after a while, and
			// the consumer abandons it.
			time.Sleep(100 * time.Millisecond)
			expectState(t, e.ep, api.EPActiveConnectionPending, name+": the attempt without timeout")
			if err := e.ep.Disconnect(api.CloseAbrupt); err != nil {
				t.Fatal(err)
			}
		}
		ev := e.next(e.connEVD, name)
		elapsed := time.Since(start)
		st, _, _, err := e.ep.GetStatus()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("GODAT-RESULT %s|%d|%d|%s\n", name, uint32(ev.Number), elapsed.Nanoseconds(), st)
		if err := e.ep.Free(); err != nil {
			t.Fatal(err)
		}
	}
}

// nsHelper starts the helper server (helper_test.go) in namespace ns with
// configuration conf; it is stopped (stdin closed) when t ends, and must
// exit cleanly then.
func nsHelper(t *testing.T, ns, conf string) *helperProc {
	t.Helper()
	cmd := nsCommand(t, ns, conf, []string{helperEnv + "=1"}, "-test.run=^$")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	h, err := spawnHelper(t, cmd)
	if err != nil {
		t.Fatalf("the helper in %s did not report its port: %v\n%s", ns, err, stderr.String())
	}
	t.Cleanup(func() {
		killed, err := h.stop(hangDeadline)
		if killed {
			t.Errorf("the helper in %s did not exit when its stdin closed", ns)
		}
		if err != nil {
			t.Errorf("the helper in %s: %v\n%s", ns, err, stderr.String())
		}
	})
	return h
}

// buildDatinfo builds cmd/datinfo into a temporary directory of t.
func buildDatinfo(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not in PATH: cannot build cmd/datinfo")
	}
	bin := filepath.Join(t.TempDir(), "datinfo")
	if out, err := exec.Command(goCmd, "build", "-o", bin, "github.com/godat/godat/cmd/datinfo").CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/datinfo: %v\n%s", err, out)
	}
	return bin
}

// datinfoRow runs datinfo -f conf in namespace ns and returns the fields
// of the row of IA "tcp" (without the default marker and the ORIGIN
// column).
func datinfoRow(t *testing.T, bin, ns, conf string) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, bin, "-f", conf).CombinedOutput()
	if err != nil {
		t.Fatalf("datinfo in %s: %v\n%s", ns, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "*" {
			f = f[1:]
		}
		// IA, ORIGIN, PROVIDER, ...: the row without its ORIGIN.
		if len(f) >= 4 && f[0] == "tcp" && f[2] == "tcp" {
			return append(f[:1], f[2:]...)
		}
	}
	t.Fatalf("datinfo in %s lists no IA tcp:\n%s", ns, out)
	return nil
}

// netnsClientEnv tells TestHelperNetnsClient the server's address and
// port and its own address: "server port client".
const netnsClientEnv = "GODAT_TCP_NETNS_CLIENT"

// TestNetnsTwoHosts runs the helper server in one namespace and a client
// in another, joined by a veth pair, over IPv4 and IPv6: connect with
// private data, RDMA write and read, send and receive, NON_PEER_REJECTED
// from a port of the other host nobody listens on, a graceful disconnect
// (TestHelperNetnsClient). datinfo, run in the server's namespace with its
// configuration, shows the namespace's address and "available"; run in the
// client's namespace with the same file, the IA is unavailable.
func TestNetnsTwoHosts(t *testing.T) {
	needNetns(t)
	datinfo := buildDatinfo(t)
	for _, fam := range []struct {
		name           string
		server, client string
		prefix         string
		extra          []string
	}{
		{"IPv4", "10.77.0.1", "10.77.0.2", "/24", nil},
		{"IPv6", "fd00:77::1", "fd00:77::2", "/64", []string{"nodad"}},
	} {
		t.Run(fam.name, func(t *testing.T) {
			a, b := twoHosts(t, fam.server, fam.client, fam.prefix, fam.extra...)
			confA, confB := writeConf(t, fam.server), writeConf(t, fam.client)

			// datinfo: the server's configuration in its own namespace...
			row := datinfoRow(t, datinfo, a, confA)
			if row[2] != fam.server || row[len(row)-1] != "available" {
				t.Fatalf("datinfo in the server's namespace: row %q, want address %s and available", row, fam.server)
			}
			// ...and in the client's, where that address does not exist.
			row = datinfoRow(t, datinfo, b, confA)
			if !strings.Contains(strings.Join(row, " "), "unavailable") || !strings.Contains(strings.Join(row, " "), "not an address of this host") {
				t.Fatalf("datinfo in the client's namespace with the server's configuration: row %q, want unavailable", row)
			}

			h := nsHelper(t, a, confA)
			runChildTest(t, b, confB, "TestHelperNetnsClient",
				[]string{fmt.Sprintf("%s=%s %d %s", netnsClientEnv, fam.server, h.port, fam.client)})
		})
	}
}

// serverSpec reads the environment variable env that a test sets for its
// child test run in a namespace: n fields, the first two the server's IP
// address and port. It skips t when env is unset (a normal run, not inside
// where) and fails it when the fields are not that.
func serverSpec(t *testing.T, env string, n int, where string) (f []string, server net.IP, port api.ConnQual) {
	t.Helper()
	spec := os.Getenv(env)
	if spec == "" {
		t.Skip("runs only inside " + where)
	}
	f = strings.Fields(spec)
	if len(f) != n {
		t.Fatalf("bad %s %q", env, spec)
	}
	server = net.ParseIP(f[0])
	q, err := strconv.ParseUint(f[1], 10, 16)
	if server == nil || err != nil {
		t.Fatalf("bad %s %q", env, spec)
	}
	return f, server, api.ConnQual(q)
}

// TestHelperNetnsClient is TestNetnsTwoHosts's client, run in the client's
// namespace. It does nothing in a normal run.
func TestHelperNetnsClient(t *testing.T) {
	f, server, port := serverSpec(t, netnsClientEnv, 3, "TestNetnsTwoHosts's client namespace")
	client := net.ParseIP(f[2])
	if client == nil {
		t.Fatalf("bad %s %q", netnsClientEnv, f)
	}
	ia := openIA(t)
	attr, _, err := ia.Query()
	if err != nil {
		t.Fatal(err)
	}
	if ip, ok := attr.Address.(*net.IPAddr); !ok || !ip.IP.Equal(client) {
		t.Fatalf("IA address %v, want %v", attr.Address, client)
	}

	c := newClient(t, ia)
	if err := c.ep.PostRecv([]api.LMRTriplet{c.lmr.Triplet(0, 64)}, 1, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := c.ep.Connect(&net.IPAddr{IP: server}, port, hangDeadline, []byte("across"), api.QOSBestEffort, api.ConnectDefault); err != nil {
		t.Fatal(err)
	}
	ev := c.expect(c.connEVD, api.ConnectionEstablishedEvent, "ESTABLISHED across namespaces")
	if string(ev.Conn.PrivateData) != "welcome across" {
		t.Fatalf("accept private data %q, want %q", ev.Conn.PrivateData, "welcome across")
	}
	prm, err := c.ep.Query()
	if err != nil {
		t.Fatal(err)
	}
	if ra, ok := prm.RemoteAddr.(*net.IPAddr); !ok || !ra.IP.Equal(server) || prm.RemotePortQual != port {
		t.Fatalf("EP remote %v port %d, want %v port %d", prm.RemoteAddr, prm.RemotePortQual, server, port)
	}
	if la, ok := prm.LocalAddr.(*net.IPAddr); !ok || !la.IP.Equal(client) {
		t.Fatalf("EP local address %v, want %v", prm.LocalAddr, client)
	}
	c.exchange(3000, "across namespaces")

	// A port of the server's host nobody listens on (the kernel there
	// answers RST): NON_PEER_REJECTED.
	n := newClient(t, ia)
	if err := n.ep.Connect(&net.IPAddr{IP: server}, 1, hangDeadline, nil, api.QOSBestEffort, api.ConnectDefault); err != nil {
		t.Fatal(err)
	}
	n.expect(n.connEVD, api.ConnectionNonPeerRejectedEvent, "a closed port of the other host")
	expectState(t, n.ep, api.EPDisconnected, "after NON_PEER_REJECTED")

	// A graceful disconnect: DISCONNECTED.
	if err := c.ep.Disconnect(api.CloseGraceful); err != nil {
		t.Fatal(err)
	}
	c.expect(c.connEVD, api.ConnectionDisconnectedEvent, "DISCONNECTED")
	if err := c.ep.Free(); err != nil {
		t.Fatal(err)
	}
}
