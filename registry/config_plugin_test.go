package registry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
)

func TestConfigPluginTables(t *testing.T) {
	in := `[[plugin]]
name   = "acme"
path   = "bin/dat-acme"
sha256 = "` + strings.Repeat("aB", 32) + `"
args   = ["-v", "--mode=fast"]
env    = { ACME_LOG = "debug", A = "1" }

[[ia]]
name = "acme0"
provider = "acme"
api_version = "u2.0"

[[plugin]]
name = "other"
path = "/opt/dat/other"
`
	cfg := mustParse(t, "/etc/godat/dat.conf", []byte(in))
	if len(cfg.Plugins) != 2 || len(cfg.IAs) != 1 {
		t.Fatalf("got %d plugins and %d IAs, want 2 and 1", len(cfg.Plugins), len(cfg.IAs))
	}
	p := cfg.Plugins[0]
	if p.Name != "acme" || p.Path != filepath.FromSlash("/etc/godat/bin/dat-acme") || p.SHA256 != strings.Repeat("ab", 32) ||
		!slices.Equal(p.Args, []string{"-v", "--mode=fast"}) || !slices.Equal(p.Env, []string{"A=1", "ACME_LOG=debug"}) ||
		p.Pos != (Position{"/etc/godat/dat.conf", 1, 1}) {
		t.Errorf("first plugin = %+v", p)
	}
	if q := cfg.Plugins[1]; q.Path != "/opt/dat/other" || q.SHA256 != "" || q.Args != nil || q.Env != nil || q.Pos.Line != 13 {
		t.Errorf("second plugin = %+v", q)
	}
	if _, ok := cfg.Plugin("other"); !ok {
		t.Error("Config.Plugin(\"other\") found nothing")
	}
}

// A relative plugin path in a file named without a directory ("dat.conf",
// as datinfo -f dat.conf or DAT_OVERRIDE=dat.conf give it) becomes an
// absolute path against the working directory: a bare name would be looked
// up in $PATH by exec.
func TestConfigPluginRelativeToBareFileName(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"dat-acme", "bin/dat-acme", "./dat-acme"} {
		cfg := mustParse(t, "dat.conf", []byte("[[plugin]]\nname = \"acme\"\npath = \""+path+"\"\n"))
		want := filepath.Join(wd, path)
		if got := cfg.Plugins[0].Path; got != want {
			t.Errorf("path %q in dat.conf: got %q, want %q", path, got, want)
		}
	}
}

func TestConfigPluginProblems(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"missing", "[[plugin]]\n", []string{`1:1: [[plugin]] table has no name`, `1:1: [[plugin]] table has no path`}},
		{"unknown key", "[[plugin]]\nname = \"a\"\npath = \"/x\"\nsha265 = \"0\"\n", []string{`4:1: unknown key sha265 in [[plugin]] (did you mean sha256?)`}},
		{"bad sha", "[[plugin]]\nname = \"a\"\npath = \"/x\"\nsha256 = \"abc\"\n", []string{`4:10: sha256 "abc" is not a SHA-256 digest`}},
		{"types", "[[plugin]]\nname = 1\npath = \"\"\nargs = \"-v\"\nenv = [\"A=1\"]\n", []string{
			`2:8: name is the integer 1; expected a string`,
			`3:8: empty plugin path`,
			`4:8: args is the string "-v"; expected an array of strings`,
			`5:7: env is an array; expected a table of strings`}},
		{"element types", "[[plugin]]\nname = \"a\"\npath = \"/x\"\nargs = [\"a\", 2]\nenv = { A = 1 }\n", []string{
			`4:8: args[1] is the integer 2; expected a string`,
			`5:7: env.A is the integer 1; expected a string`}},
		{"duplicate", "[[plugin]]\nname = \"a\"\npath = \"/x\"\n[[plugin]]\nname = \"a\"\npath = \"/y\"\n", []string{
			`5:1: duplicate plugin name "a": the plugin at f:1:1 already has it`}},
		{"bad name", "[[plugin]]\nname = \"a b\"\npath = \"/x\"\n", []string{`2:8: plugin name "a b" contains ' '`}},
		{"not an array", "[plugin]\nname = \"a\"\npath = \"/x\"\n", []string{`1:1: plugin is a table; expected one [[plugin]] table per plugin`}},
		{"misspelt table", "[[plugins]]\nname = \"a\"\n", []string{`1:1: unknown table [[plugins]]; expected only [[ia]] and [[plugin]] tables (did you mean plugin?)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("f", []byte(tc.in))
			wantProblems(t, configErrors(t, err), tc.want...)
		})
	}
}

// fakePluginHost stands in for package plugin/host.
type fakePluginHost struct{}

type fakePluginProvider struct{ e PluginEntry }

func (fakePluginHost) Provider(e PluginEntry) PluginProvider { return &fakePluginProvider{e} }

func (p *fakePluginProvider) Open(ctx context.Context, op api.OpenParams) (api.IA, error) {
	return nil, api.Errorf(api.ProviderNotFound, api.NoSubtype, "fake plugin "+p.e.Name+" opened for "+op.Name)
}

func (p *fakePluginProvider) Check() error {
	if strings.Contains(p.e.Path, "missing") {
		return errors.New("executable " + p.e.Path + " does not exist")
	}
	return nil
}

func (p *fakePluginProvider) Status() PluginStatus {
	return PluginStatus{Name: p.e.Name, Path: p.e.Path, State: "stopped"}
}

func TestRegistryPluginDispatch(t *testing.T) {
	in := `[[plugin]]
name = "acme"
path = "/opt/acme"
[[plugin]]
name = "gone"
path = "/opt/missing"
[[plugin]]
name = "fake"
path = "/opt/fake"
[[ia]]
name = "a0"
provider = "acme"
api_version = "u2.0"
[[ia]]
name = "g0"
provider = "gone"
api_version = "u2.0"
[[ia]]
name = "f0"
provider = "fake"
api_version = "u2.0"
`
	cfg := mustParse(t, "p.conf", []byte(in))

	// Without a plugin host, plugin IAs are unavailable and say why.
	r := New(cfg)
	for _, pi := range r.List() {
		if pi.Available || !strings.Contains(pi.Reason, "needs plugin support") {
			t.Errorf("without a plugin host, %s: available %v, reason %q", pi.IAName, pi.Available, pi.Reason)
		}
	}
	if _, err := r.Open(context.Background(), "a0"); !errors.Is(err, api.ErrProviderNotFound) || !strings.Contains(err.Error(), "plugin support") {
		t.Errorf("Open without a plugin host: %v", err)
	}

	RegisterPluginHost(fakePluginHost{})
	t.Cleanup(func() {
		hostMu.Lock()
		pluginHost = nil
		hostMu.Unlock()
	})
	r = New(cfg)
	list := r.List()
	if !list[0].Available || list[0].Plugin == nil || list[0].Plugin.Path != "/opt/acme" {
		t.Errorf("a0: %+v", list[0])
	}
	if list[1].Available || !strings.Contains(list[1].Reason, `plugin "gone": executable /opt/missing does not exist`) {
		t.Errorf("g0: available %v, reason %q", list[1].Available, list[1].Reason)
	}
	if _, err := r.Open(context.Background(), "a0"); err == nil || !strings.Contains(err.Error(), "fake plugin acme opened for a0") {
		t.Errorf("Open of a plugin IA did not reach the plugin provider: %v", err)
	}
	if _, err := r.Open(context.Background(), "g0"); !errors.Is(err, api.ErrProviderNotFound) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Open of an unavailable plugin IA: %v", err)
	}
	// A plugin may not take the name of a built-in provider.
	lookupProvider = func(name string) (api.Provider, bool) {
		if name == "fake" {
			return fakeProvider{}, true
		}
		return provider.Lookup(name)
	}
	t.Cleanup(func() { lookupProvider = provider.Lookup })
	if pi := New(cfg).List()[2]; pi.Available || !strings.Contains(pi.Reason, "both built in and a [[plugin]]") {
		t.Errorf("f0: available %v, reason %q", pi.Available, pi.Reason)
	}
}
