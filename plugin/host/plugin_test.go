package host_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/openfds"
	"github.com/godat/godat/plugin"
	"github.com/godat/godat/plugin/host"
	"github.com/godat/godat/registry"
)

// The executables the tests run, built once by TestMain.
var (
	binDir        string
	examplePath   string // examples/loopback-plugin
	tcpPluginPath string // testdata/tcpplugin: the tcp provider out of process
	oldProtoPath  string // speaks protocol 99
	exitEarly     string // exits before the handshake
	silentPath    string // never completes the handshake
	noCNOPath     string // serves a provider without CNOs
)

func TestMain(m *testing.M) {
	if os.Getenv(envHostRole) != "" {
		os.Exit(hostRole())
	}
	dir, err := os.MkdirTemp("", "godat-plugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	build := func(name, pkg string, race bool) string {
		out := filepath.Join(dir, name)
		args := []string{"build", "-o", out}
		if race {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n", pkg, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
		return out
	}
	// The example runs under the race detector when the tests do, so
	// that the plugin side of the SDK is checked too.
	examplePath = build("loopback-plugin", "github.com/godat/godat/examples/loopback-plugin", raceEnabled)
	tcpPluginPath = build("tcpplugin", "./testdata/tcpplugin", raceEnabled)
	oldProtoPath = build("oldproto", "./testdata/oldproto", false)
	exitEarly = build("exitearly", "./testdata/exitearly", false)
	silentPath = build("silent", "./testdata/silent", false)
	noCNOPath = build("nocno", "./testdata/nocno", false)
	// The tests and their plugins get a $TMPDIR of their own, so that
	// whatever a plugin leaves there (its socket) fails the run.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", tmp)
	code := m.Run()
	if left, _ := filepath.Glob(filepath.Join(tmp, "plugin*")); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "plugin sockets left behind: %v\n", left)
		code = 1
	}
	// A race-enabled plugin writes its race reports to files (see
	// writeConfig); any such file fails the run.
	if reports, _ := filepath.Glob(filepath.Join(dir, "race.*")); len(reports) > 0 {
		for _, f := range reports {
			b, _ := os.ReadFile(f)
			fmt.Fprintf(os.Stderr, "data race in a plugin process (%s):\n%s\n", f, b)
		}
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// writeConfig writes a configuration with one plugin and the IAs named,
// all on that plugin, and returns its path.
func writeConfig(t testing.TB, pluginPath, extra string, ias ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "[[plugin]]\nname = \"lp\"\npath = %q\n%s", pluginPath, extra)
	// A race-enabled plugin would sleep a second at every exit; its
	// reports go to files that TestMain checks.
	fmt.Fprintf(&b, "env = { GORACE = \"atexit_sleep_ms=0 log_path=%s\" }\n", filepath.Join(binDir, "race"))
	for _, n := range ias {
		fmt.Fprintf(&b, "\n[[ia]]\nname = %q\nprovider = \"lp\"\napi_version = \"u2.0\"\nthreadsafe = true\n", n)
	}
	path := filepath.Join(t.TempDir(), "dat.conf")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// must fails t at once if err is not nil.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func loadRegistry(t testing.TB, path string) *registry.Registry {
	t.Helper()
	r, err := registry.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// registerMemory allocates size bytes with api.AllocMemory, the memory a
// plugin's LMR needs, and registers them in pz with every privilege.
func registerMemory(t testing.TB, ia api.IA, pz api.PZ, size int) (*api.Memory, api.LMR, api.LMRParam) {
	t.Helper()
	mem, err := api.AllocMemory(size)
	if err != nil {
		t.Fatal(err)
	}
	lmr, err := ia.CreateLMR(pz, api.Region{Type: api.MemTypeVirtual, Bytes: mem.Bytes()}, api.MemPrivAll, api.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := lmr.Query()
	if err != nil {
		t.Fatal(err)
	}
	return mem, lmr, lp
}

// noNewFDs notes the descriptors open now and returns the check a test
// defers: it reports those open by then that were not now; when says
// what the test has done by then.
func noNewFDs(t testing.TB, when string) func() {
	t.Helper()
	before := openfds.List(t)
	return func() {
		t.Helper()
		var extra []string
		for fd, target := range openfds.List(t) {
			if before[fd] != target {
				extra = append(extra, fd+" -> "+target)
			}
		}
		if len(extra) > 0 {
			t.Errorf("descriptors open %s that were not before: %v", when, extra)
		}
	}
}

// exited reports whether process pid has ended and been reaped.
func exited(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

func pluginStatus(t testing.TB, r *registry.Registry) registry.PluginStatus {
	t.Helper()
	st, ok := r.PluginStatus("lp")
	if !ok {
		t.Fatal("the registry knows no plugin lp")
	}
	return st
}

// The plugin starts on the first Open, serves every IA from one process,
// and stops (reaped) when the last IA closes; the next Open starts a new
// process.
func TestLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t)
	defer noNewFDs(t, "after the plugin stopped")()
	r := loadRegistry(t, writeConfig(t, examplePath, "", "a", "b"))
	if st := pluginStatus(t, r); st.State != "stopped" || st.PID != 0 {
		t.Fatalf("before any Open: %+v", st)
	}
	ctx := context.Background()
	a, err := r.Open(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	st := pluginStatus(t, r)
	if st.State != "running" || st.PID == 0 || st.Version != "1.0.0" || st.Protocol != plugin.ProtocolVersion || st.IAs != 1 {
		t.Fatalf("after Open: %+v", st)
	}
	pid := st.PID
	b, err := r.Open(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if st := pluginStatus(t, r); st.PID != pid || st.IAs != 2 {
		t.Fatalf("second IA: %+v, want the same process %d serving 2 IAs", st, pid)
	}
	if err := a.Close(api.CloseGraceful); err != nil {
		t.Fatal(err)
	}
	if exited(pid) {
		t.Fatal("the plugin stopped while an IA is still open")
	}
	if err := b.Close(api.CloseAbrupt); err != nil {
		t.Fatal(err)
	}
	if !exited(pid) {
		t.Fatalf("the plugin process %d is still there (or unreaped) after its last IA closed", pid)
	}
	if st := pluginStatus(t, r); st.State != "stopped" || st.PID != 0 {
		t.Fatalf("after the last Close: %+v", st)
	}
	c, err := r.Open(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if st := pluginStatus(t, r); st.PID == pid || st.PID == 0 {
		t.Fatalf("reopening: %+v, want a new process", st)
	}
	if err := c.Close(api.CloseAbrupt); err != nil {
		t.Fatal(err)
	}
}

// Every way a plugin can fail to start makes its IA unavailable with the
// reason, from Open and in the listing, without a panic or a hang.
func TestUnavailable(t *testing.T) {
	defer goleak.VerifyNone(t)
	defer noNewFDs(t, "after the failed starts")()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "notexec")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { host.StartTimeout = d }(host.StartTimeout)
	host.StartTimeout = 2 * time.Second
	for _, tc := range []struct {
		name, path, extra string
		want              string
		listed            bool // the listing knows without starting the plugin
	}{
		{"missing", filepath.Join(dir, "nope"), "", "does not exist", true},
		{"directory", dir, "", "is a directory", true},
		{"not executable", notExec, "", "is not executable", true},
		{"checksum", examplePath, "sha256 = \"" + strings.Repeat("0", 64) + "\"\n", "but the configuration", true},
		{"protocol", oldProtoPath, "", "another plugin protocol version", false},
		{"exits", exitEarly, "", `exited during the handshake (it said: "exitearly: cannot find my device")`, false},
		{"silent", silentPath, "", "did not complete the handshake", false},
		{"not a plugin", "/bin/true", "", "exited during the handshake", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := loadRegistry(t, writeConfig(t, tc.path, tc.extra, "x"))
			pi := r.List()[0]
			if tc.listed && (pi.Available || !strings.Contains(pi.Reason, tc.want)) {
				t.Errorf("listing: available %v, reason %q, want unavailable with %q", pi.Available, pi.Reason, tc.want)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ia, err := r.Open(ctx, "x")
			if err == nil {
				ia.Close(api.CloseAbrupt)
				t.Fatal("Open succeeded")
			}
			var de *api.Error
			if !errors.As(err, &de) || !errors.Is(err, api.ErrProviderNotFound) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want DAT_PROVIDER_NOT_FOUND saying %q", err, tc.want)
			}
			if st := pluginStatus(t, r); st.State == "running" {
				t.Fatalf("status after a failed start: %+v", st)
			}
		})
	}
	// With the right checksum the same executable runs.
	sum := fileSHA256(t, examplePath)
	r := loadRegistry(t, writeConfig(t, examplePath, "sha256 = \""+sum+"\"\n", "x"))
	ia, err := r.Open(context.Background(), "x")
	if err != nil {
		t.Fatalf("Open with the right checksum: %v", err)
	}
	ia.Close(api.CloseAbrupt)
}

// The host needs the served provider's CNOs (with a wait agent): a
// provider without them fails Open with its own error, in words that say
// what the host needs, and its process stops.
func TestProviderWithoutCNOs(t *testing.T) {
	r := loadRegistry(t, writeConfig(t, noCNOPath, "", "x"))
	ia, err := r.Open(context.Background(), "x")
	if err == nil {
		ia.Close(api.CloseAbrupt)
		t.Fatal("Open succeeded")
	}
	if !errors.Is(err, api.ErrNotImplemented) || !strings.Contains(err.Error(), "needs CNOs with a wait agent") ||
		!strings.Contains(err.Error(), "this provider has no CNOs") {
		t.Fatalf("Open: %v, want the provider's DAT_NOT_IMPLEMENTED saying the host needs CNOs with a wait agent", err)
	}
	if st := pluginStatus(t, r); st.State == "running" {
		t.Fatalf("status after the failed Open: %+v", st)
	}
}

// LMR memory must come from api.AllocMemory: anything else is
// DAT_INVALID_PARAMETER with a message that says so.
func TestLMRNeedsAllocMemory(t *testing.T) {
	r := loadRegistry(t, writeConfig(t, examplePath, "", "x"))
	ia, err := r.Open(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer ia.Close(api.CloseAbrupt)
	pz, err := ia.CreatePZ()
	if err != nil {
		t.Fatal(err)
	}
	_, err = ia.CreateLMR(pz, api.Region{Type: api.MemTypeVirtual, Bytes: make([]byte, 4096)}, api.MemPrivAll, api.VATypeVA)
	if !errors.Is(err, api.ErrInvalidParameter) || !strings.Contains(err.Error(), "AllocMemory") {
		t.Fatalf("CreateLMR over a Go slice: %v, want DAT_INVALID_PARAMETER naming AllocMemory", err)
	}
	m, err := api.AllocMemory(8192)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	lmr, err := ia.CreateLMR(pz, api.Region{Type: api.MemTypeVirtual, Bytes: m.Bytes()[4096:]}, api.MemPrivAll, api.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	p, err := lmr.Query()
	if err != nil {
		t.Fatal(err)
	}
	if p.RegisteredAddress != api.AddrOf(m.Bytes()[4096:]) || p.RegisteredSize != 4096 {
		t.Fatalf("registered %#x+%d, want the host's address %#x+4096", p.RegisteredAddress, p.RegisteredSize, api.AddrOf(m.Bytes()[4096:]))
	}
	if err := lmr.Free(); err != nil {
		t.Fatal(err)
	}
}
