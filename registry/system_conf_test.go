package registry_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/providers/verbs"
	"github.com/godat/godat/registry"

	_ "github.com/godat/godat/providers/loopback"
	_ "github.com/godat/godat/providers/tcp"
)

// debianConf is the /etc/dat.conf that Debian's libdapl2
// (2.1.10.1.f1e05b7a-3+b1) installs, unchanged.
var debianConf = filepath.Join("testdata", "config", "debian-dat.conf")

// useSystemFile makes the search order find path as /etc/dat.conf.
func useSystemFile(t *testing.T, path string) {
	t.Setenv(registry.EnvOverride, "")
	old := registry.SystemConfigPath
	registry.SystemConfigPath = path
	t.Cleanup(func() { registry.SystemConfigPath = old })
}

// classicLine is what a test expects of one line of debianConf.
type classicLine struct {
	name, lib, params string
	line              int
}

// classicLines reads the IA lines of a classic file with a pattern of its
// own, independent of the parser under test.
func classicLines(t *testing.T, path string) []classicLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^(\S+) u2\.0 nonthreadsafe default (\S+) dapl\.2\.0 "([^"]*)" ""$`)
	var out []classicLine
	for i, l := range strings.Split(string(data), "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("%s:%d: unexpected line %q", path, i+1, l)
		}
		out = append(out, classicLine{name: m[1], lib: m[2], params: m[3], line: i + 1})
	}
	return out
}

// With the /etc/dat.conf of an installed uDAPL, godat's built-in IAs can
// still be opened by name, and each ofa-v2 line for rdma-core's uDAPL
// libraries is an IA of the verbs provider with the line's ia_params.
func TestDebianSystemFile(t *testing.T) {
	useSystemFile(t, debianConf)
	reg, err := registry.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := reg.Config(); cfg.Format != registry.FormatClassic || cfg.Source != "system" || cfg.File != debianConf {
		t.Fatalf("config %s, %s form, source %s", cfg.File, cfg.Format, cfg.Source)
	}

	ctx := context.Background()
	for _, name := range []string{"loopback", "tcp"} {
		ia, err := reg.Open(ctx, name)
		if err != nil {
			t.Fatalf("Open(%q) next to the uDAPL file: %v", name, err)
		}
		if err := ia.Close(api.CloseAbrupt); err != nil {
			t.Fatal(err)
		}
	}

	lines := classicLines(t, debianConf)
	list := reg.List()
	if len(lines) != 62 || len(list) != len(lines)+2 {
		t.Fatalf("%d lines in the file, %d IAs listed; want 62 lines and the 2 built-in IAs after them", len(lines), len(list))
	}
	verbsLines := 0
	for i, l := range lines {
		pi := list[i]
		if pi.IAName != l.name || pi.IAParams != l.params || pi.Pos.Line != l.line ||
			pi.Origin != debianConf+":"+strconv.Itoa(l.line) || !pi.Default || pi.APIVersion != "u2.0" {
			t.Errorf("line %d (%s %q): listed as %s %q at %v, origin %q, default %v", l.line, l.name, l.params,
				pi.IAName, pi.IAParams, pi.Pos, pi.Origin, pi.Default)
		}
		switch l.lib {
		case "libdaplofa.so.2", "libdaploscm.so.2", "libdaploucm.so.2":
			verbsLines++
			if pi.Provider != "verbs" {
				t.Errorf("%s (%s): provider %q, want verbs", l.name, l.lib, pi.Provider)
			}
			if !verbs.Supported && (pi.Available || pi.Reason != verbs.NoSupportReason) {
				t.Errorf("%s: available %v, reason %q; want the verbs provider's own reason", l.name, pi.Available, pi.Reason)
			}
		case "libdaplomcm.so.2":
			if pi.Available || !strings.Contains(pi.Reason, "does not provide library libdaplomcm.so.2") {
				t.Errorf("%s: available %v, reason %q", l.name, pi.Available, pi.Reason)
			}
		default:
			t.Errorf("%s: library %s not expected in the fixture", l.name, l.lib)
		}
	}
	if verbsLines != 43 {
		t.Errorf("%d lines for verbs, want 43", verbsLines)
	}
	// The adapters the issue names, as dtest -P would pick them.
	for name, params := range map[string]string{"ofa-v2-mlx4_0-1": "mlx4_0 1", "ofa-v2-ib0": "ib0 0",
		"ofa-v2-mlx5_0-1u": "mlx5_0 1", "ofa-v2-cma-roe-eth2": "eth2 0", "ofa-v2-mlx5_0-1s": "mlx5_0 1"} {
		found := false
		for _, pi := range list {
			if pi.IAName == name {
				found = true
				if pi.Provider != "verbs" || pi.IAParams != params {
					t.Errorf("%s: provider %q, ia_params %q; want verbs, %q", name, pi.Provider, pi.IAParams, params)
				}
			}
		}
		if !found {
			t.Errorf("%s not listed", name)
		}
	}

	for i, name := range []string{"loopback", "tcp"} {
		pi := list[len(lines)+i]
		if pi.IAName != name || pi.Provider != name || pi.Origin != registry.OriginBuiltIn || pi.Default || !pi.Available {
			t.Errorf("built-in IA %d: %+v", i, pi)
		}
	}
	// The file's defaults stand: OpenDefault tries each, and none of them
	// is on this host (no such adapters, or no verbs in the build).
	if _, err := reg.OpenDefault(ctx); !errors.Is(err, api.ErrProviderNotFound) ||
		!strings.Contains(err.Error(), "none of the "+strconv.Itoa(len(lines))+" IAs marked default in "+debianConf) ||
		!strings.Contains(err.Error(), `IA "ofa-v2-mlx4_0-1"`) {
		t.Errorf("OpenDefault: %v, want ErrProviderNotFound naming the file's first default, ofa-v2-mlx4_0-1", err)
	}
	_, err = reg.Open(ctx, "nosuch")
	if !errors.Is(err, api.ErrProviderNotFound) || !strings.Contains(err.Error(), `no IA named "nosuch" in `+debianConf+" nor among godat's built-in IAs") {
		t.Errorf("Open(nosuch) = %v", err)
	}
}

// A file that defines a built-in IA's name replaces it, in either form;
// the other built-in IA stays.
func TestBuiltInIAsRedefined(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, content string }{
		{"dat.conf", "tcp u2.0 threadsafe nondefault libgodat-loopback.so godat.1.0 \"\" \"\"\n"},
		{"dat.toml", "[[ia]]\nname = \"tcp\"\nprovider = \"loopback\"\napi_version = \"u2.0\"\n"},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := registry.LoadConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.IAs) != 2 || cfg.IAs[0].Name != "tcp" || cfg.IAs[0].Provider != "loopback" || cfg.IAs[0].BuiltIn ||
			cfg.IAs[0].Origin() != path+":1" || cfg.IAs[1].Name != "loopback" || !cfg.IAs[1].BuiltIn || cfg.IAs[1].Default {
			t.Errorf("%s: %+v", c.name, cfg.IAs)
		}
		// With no default in the file, OpenDefault opens its first IA, not
		// the built-in loopback.
		ia, err := registry.New(cfg).OpenDefault(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		attr, _, err := ia.Query()
		if err != nil || attr.AdapterName != "tcp" {
			t.Errorf("%s: OpenDefault opened %q (%v), want tcp", c.name, attr.AdapterName, err)
		}
		if err := ia.Close(api.CloseAbrupt); err != nil {
			t.Fatal(err)
		}
	}
}

// OpenDefault passes over an IA marked default that is not on this host
// (DAT_PROVIDER_NOT_FOUND) for the next one, and stops at any other error.
func TestOpenDefaultSkipsAbsentIAs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dat.conf")
	conf := `ofa-v2-mlx4_0-1 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "mlx4_0 1" ""
ofa-v2-mcm-1 u2.0 nonthreadsafe default libdaplomcm.so.2 dapl.2.0 "mlx4_0 1" ""
lo2 u2.0 threadsafe default libgodat-loopback.so godat.1.0 "" ""
lo3 u2.0 threadsafe default libgodat-loopback.so godat.1.0 "" ""
`
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := registry.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(cfg)
	if got, want := strings.Join(reg.DefaultIAs(), " "), "ofa-v2-mlx4_0-1 ofa-v2-mcm-1 lo2 lo3"; got != want {
		t.Errorf("DefaultIAs = %s, want %s", got, want)
	}
	ia, err := reg.OpenDefault(context.Background())
	if err != nil {
		t.Fatalf("OpenDefault: %v", err)
	}
	attr, _, err := ia.Query()
	if err != nil || attr.AdapterName != "lo2" {
		t.Errorf("OpenDefault opened %q (%v), want lo2", attr.AdapterName, err)
	}
	if err := ia.Close(api.CloseAbrupt); err != nil {
		t.Fatal(err)
	}

	// OpenFirst does the same over any list.
	ia, err = reg.OpenFirst(context.Background(), []string{"ofa-v2-mcm-1", "lo3", "lo2"})
	if err != nil {
		t.Fatalf("OpenFirst: %v", err)
	}
	if attr, _, err := ia.Query(); err != nil || attr.AdapterName != "lo3" {
		t.Errorf("OpenFirst opened %q (%v), want lo3", attr.AdapterName, err)
	}
	if err := ia.Close(api.CloseAbrupt); err != nil {
		t.Fatal(err)
	}

	// An error other than DAT_PROVIDER_NOT_FOUND ends the search at lo2.
	if _, err := reg.OpenDefault(context.Background(), registry.WithAsyncEVDQLen(0)); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("OpenDefault with a zero async queue = %v, want ErrInvalidParameter", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := reg.OpenDefault(ctx); err == nil || errors.Is(err, api.ErrProviderNotFound) {
		t.Errorf("OpenDefault with an ended context = %v, want its error", err)
	}
}
