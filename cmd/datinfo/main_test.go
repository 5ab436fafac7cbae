package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/host"
	"github.com/godat/godat/provider"
	"github.com/godat/godat/registry"
)

// Two test providers: one whose IAs open and report known limits, one
// whose Open always fails.
type infoProvider struct{}

func (infoProvider) Open(ctx context.Context, p api.OpenParams) (api.IA, error) {
	return &infoIA{params: p.Params}, nil
}

type failProvider struct{}

// busyProvider's Open fails as an IA that exists but cannot open now.
type busyProvider struct{}

func (busyProvider) Open(ctx context.Context, p api.OpenParams) (api.IA, error) {
	return nil, api.Errorf(api.InsufficientResources, api.NoSubtype, "busy")
}

func (failProvider) Open(ctx context.Context, p api.OpenParams) (api.IA, error) {
	return nil, api.Errorf(api.ProviderNotFound, api.NoSubtype, "no device "+p.Params)
}

func init() {
	provider.Register("datinfo-test", infoProvider{})
	provider.Register("datinfo-fail", failProvider{})
	provider.Register("datinfo-busy", busyProvider{})
}

// infoIA implements the part of api.IA that datinfo and the registry's
// guard use; any other call would panic on the nil embedded interface.
type infoIA struct {
	api.IA
	ctx    api.ContextSlot
	params string
}

func (ia *infoIA) ConsumerContext() (any, error)  { return ia.ctx.ConsumerContext() }
func (ia *infoIA) SetConsumerContext(v any) error { return ia.ctx.SetConsumerContext(v) }

func (*infoIA) HandleType() api.HandleType { return api.HandleIA }

func (ia *infoIA) Query() (api.IAAttr, api.ProviderAttr, error) {
	return api.IAAttr{
			AdapterName: "test adapter", Address: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4791},
			MaxEPs: 77, MaxEVDQLen: 4096, MaxMessageSize: 1 << 20, MaxRDMASize: 1<<30 + 1,
			MaxIOVSegmentsPerDTO: 8, MaxLMRVirtualAddress: 1<<64 - 1,
			TransportAttrs: []api.NamedAttr{{Name: "mtu", Value: "4096"}},
		}, api.ProviderAttr{
			ProviderName: "datinfo-test", MaxPrivateDataSize: 256, ThreadSafe: true,
			CompletionFlagsSupported: api.CompletionSuppress | api.CompletionBarrierFence,
			EPCreator:                api.PSPCreatesEPIfAsked,
			ProviderSpecific:         []api.NamedAttr{{Name: "a", Value: "1"}, {Name: "b", Value: "x y"}},
		}, nil
}

func (ia *infoIA) AsyncEVD() (api.EVD, error) { return &infoEVD{}, nil }

func (ia *infoIA) Close(api.CloseFlags) error { return nil }

type infoEVD struct{ api.EVD }

func (*infoEVD) HandleType() api.HandleType { return api.HandleEVD }

func (*infoEVD) Query() (api.EVDParam, error) {
	return api.EVDParam{QLen: 64, Flags: api.EVDAsync}, nil
}

const testConfig = `# datinfo test configuration
[[ia]]
name = "good0"
provider = "datinfo-test"
api_version = "u2.0"
threadsafe = true
ia_params = "dev0"

[[ia]]
name = "broken0"
provider = "datinfo-fail"
api_version = "u2.0"
default = true
ia_params = "dev9"

[[ia]]
name = "missing0"
provider = "nosuch"
api_version = "u2.0"
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// iaEntry returns one [[ia]] table of a configuration file: IA name of
// provider with the API version every IA here has, then the lines of
// more. Its head takes four lines, so in a file that starts with the table
// the lines of more are lines 5, 6, ...: TestCheckParams counts on it.
func iaEntry(name, provider string, more ...string) string {
	s := fmt.Sprintf("[[ia]]\nname = %q\nprovider = %q\napi_version = \"u2.0\"\n", name, provider)
	for _, l := range more {
		s += l + "\n"
	}
	return s
}

// datinfoResult is what one run of datinfo returned.
type datinfoResult struct {
	code           int
	stdout, stderr string
}

// startDatinfo runs datinfo with args on a goroutine and hands its result
// on the channel: for a test that bounds a run that could hang.
func startDatinfo(t *testing.T, args ...string) <-chan datinfoResult {
	done := make(chan datinfoResult, 1)
	go func() {
		code, out, errs := runDatinfo(t, args...)
		done <- datinfoResult{code, out, errs}
	}()
	return done
}

func runDatinfo(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// runDatinfoOK runs datinfo for a test that needs it to succeed: it fails
// the test unless datinfo exits 0 with nothing on standard error, and
// returns standard output.
func runDatinfoOK(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := runDatinfo(t, args...)
	if code != 0 || errs != "" {
		t.Fatalf("datinfo %q: exit %d, stderr %q", args, code, errs)
	}
	return out
}

// isolate makes the search order find nothing but what a test sets.
func isolate(t *testing.T) {
	t.Setenv(registry.EnvOverride, "")
	old := registry.SystemConfigPath
	registry.SystemConfigPath = filepath.Join(t.TempDir(), "no-dat.conf")
	t.Cleanup(func() { registry.SystemConfigPath = old })
}

// row returns the table line of IA name.
func row(t *testing.T, table, name string) string {
	t.Helper()
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Fields(l); len(f) > 1 && (f[0] == name || (f[0] == "*" && f[1] == name)) {
			return l
		}
	}
	t.Fatalf("no row for %s in:\n%s", name, table)
	return ""
}

func TestTable(t *testing.T) {
	isolate(t)
	cfg := writeFile(t, "dat.conf", testConfig)
	out := runDatinfoOK(t, "-f", cfg)
	if !strings.Contains(out, "Configuration: "+cfg+" (toml form, from -f)") {
		t.Errorf("no configuration line:\n%s", out)
	}
	if got := strings.Fields(row(t, out, "good0")); !slices.Equal(got,
		[]string{"good0", "dat.conf:2", "datinfo-test", "192.0.2.1:4791", "77", "4096", "1MiB", "1073741825", "8", "256", "available"}) {
		t.Errorf("good0 row: %q", got)
	}
	// godat's built-in IAs follow the file's, marked as such.
	for _, name := range []string{"loopback", "tcp"} {
		if f := strings.Fields(row(t, out, name)); f[0] != name || f[1] != "built-in" || f[2] != name || f[len(f)-1] != "available" {
			t.Errorf("%s row: %q", name, f)
		}
	}
	if r := row(t, out, "broken0"); !strings.HasPrefix(r, "* broken0") || !strings.Contains(r, "dev9") ||
		!strings.Contains(r, "unavailable: DAT_PROVIDER_NOT_FOUND: no device dev9") {
		t.Errorf("broken0 row: %q", r)
	}
	if r := row(t, out, "missing0"); !strings.Contains(r, `unavailable: no provider named "nosuch"`) {
		t.Errorf("missing0 row: %q", r)
	}
	if !strings.Contains(out, "* marked default; OpenDefault fails here: broken0 is unavailable.") {
		t.Errorf("no default line:\n%s", out)
	}

	// $DAT_OVERRIDE picks the file when -f does not.
	t.Setenv(registry.EnvOverride, cfg)
	code, out, _ := runDatinfo(t)
	if code != 0 || !strings.Contains(out, "from $DAT_OVERRIDE") || !strings.Contains(out, "good0") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestVerbose(t *testing.T) {
	isolate(t)
	cfg := writeFile(t, "dat.conf", testConfig)
	out := runDatinfoOK(t, "-v", "-f", cfg)
	for _, want := range []string{
		"IA good0", `ia_params         "dev0"`, "status            available",
		"AdapterName                    \"good0\"", // the registry reports the opened IA name (dat_ia_query(3DAT))
		"Address                        tcp 192.0.2.1:4791",
		"MaxLMRVirtualAddress           0xffffffffffffffff",
		"TransportAttrs                 mtu = \"4096\"",
		"CompletionFlagsSupported       0x9 (SUPPRESS|BARRIER_FENCE)",
		"EPCreator                      IF_ASKED (1)",
		"ProviderSpecific               a = \"1\"",
		"                               b = \"x y\"",
		"VendorAttrs                    (none)",
		"IA broken0", "status            unavailable: DAT_PROVIDER_NOT_FOUND: no device dev9",
		"origin            " + cfg + ":2\n", "IA loopback", "origin            built-in\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	// Every field of both attribute structs is printed.
	for _, v := range []any{api.IAAttr{}, api.ProviderAttr{}} {
		for _, f := range reflect.VisibleFields(reflect.TypeOf(v)) {
			if !strings.Contains(out, "    "+f.Name+" ") {
				t.Errorf("field %s not printed", f.Name)
			}
		}
	}
}

func TestJSON(t *testing.T) {
	isolate(t)
	cfg := writeFile(t, "dat.conf", testConfig)
	out := runDatinfoOK(t, "--json", "-f", cfg)
	var got struct {
		Config    map[string]string `json:"config"`
		Providers []string          `json:"providers"`
		IAs       []map[string]any  `json:"ias"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if got.Config["file"] != cfg || got.Config["format"] != "toml" || got.Config["source"] != "argument" {
		t.Errorf("config %v", got.Config)
	}
	// The file's three IAs, then the built-in loopback and tcp.
	if !slices.Contains(got.Providers, "datinfo-test") || len(got.IAs) != 5 {
		t.Fatalf("providers %v, %d IAs", got.Providers, len(got.IAs))
	}
	for i, want := range []string{cfg + ":2", cfg + ":9", cfg + ":16", "built-in", "built-in"} {
		if got.IAs[i]["origin"] != want {
			t.Errorf("IA %d (%v) origin %v, want %q", i, got.IAs[i]["name"], got.IAs[i]["origin"], want)
		}
	}
	if got.IAs[3]["name"] != "loopback" || got.IAs[4]["name"] != "tcp" || got.IAs[3]["default"] != false {
		t.Errorf("built-in IAs: %v, %v", got.IAs[3], got.IAs[4])
	}
	good := got.IAs[0]
	for k, v := range map[string]any{"name": "good0", "provider": "datinfo-test", "api_version": "u2.0",
		"threadsafe": true, "default": false, "ia_params": "dev0", "platform_params": "", "provider_version": "",
		"available": true, "position": cfg + ":2:1"} {
		if good[k] != v {
			t.Errorf("good0[%s] = %v, want %v", k, good[k], v)
		}
	}
	if _, ok := good["reason"]; ok {
		t.Error("an available IA has a reason")
	}
	ia, _ := good["ia_attr"].(map[string]any)
	pa, _ := good["provider_attr"].(map[string]any)
	if ia["max_eps"] != 77.0 || ia["address"] != "192.0.2.1:4791" || pa["max_private_data_size"] != 256.0 {
		t.Errorf("attrs %v / %v", ia, pa)
	}
	if l, _ := pa["provider_specific"].([]any); len(l) != 2 || l[1].(map[string]any)["value"] != "x y" {
		t.Errorf("provider_specific %v", pa["provider_specific"])
	}
	bad := got.IAs[1]
	if bad["available"] != false || !strings.Contains(bad["reason"].(string), "no device dev9") || bad["ia_attr"] != nil {
		t.Errorf("broken0 %v", bad)
	}
}

const brokenConfig = `[[ia]]
name = "x"
provider = "datinfo-test"
api_version = "1.2"
threadsafe = "yes"
`

func TestCheck(t *testing.T) {
	isolate(t)
	bad := writeFile(t, "bad.conf", brokenConfig)
	code, out, errs := runDatinfo(t, "check", bad)
	want := bad + `:4:15: api_version "1.2" is malformed; expected "u2.<minor>" such as "u2.0" (godat implements the uDAPL 2.x API)` + "\n" +
		bad + `:5:14: threadsafe is the string "yes"; expected true or false (a TOML boolean, not quoted)` + "\n"
	if code != 1 || out != "" || errs != want {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, out, errs, want)
	}

	good := writeFile(t, "good.conf", testConfig)
	code, out, errs = runDatinfo(t, "check", good)
	if code != 0 || errs != "" || !strings.HasPrefix(out, good+": ok: toml form, 3 IAs\n") ||
		!strings.Contains(out, good+`:16:1: note: IA missing0 is unavailable: no provider named "nosuch"`) {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errs, out)
	}

	// Several files: one bad one fails the whole check.
	code, out, errs = runDatinfo(t, "check", good, bad, filepath.Join(t.TempDir(), "none"))
	if code != 1 || !strings.Contains(out, good+": ok") || strings.Count(errs, "\n") != 3 ||
		!strings.Contains(errs, "datinfo: DAT_PROVIDER_NOT_FOUND(DAT_NAME_NOT_REGISTERED): the configuration file ") ||
		!strings.Contains(errs, "none does not exist, so no IA is registered") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}

	// Without a file: the search order, here the built-in default.
	code, out, _ = runDatinfo(t, "check")
	if code != 0 || !strings.HasPrefix(out, "<embedded> (no configuration file found; godat's built-in default): ok: embedded form, 2 IAs\n") {
		t.Fatalf("exit %d, stdout:\n%s", code, out)
	}

	code, out, errs = runDatinfo(t, "--json", "check", good, bad)
	var res []checkJSON
	if err := json.Unmarshal([]byte(out), &res); code != 1 || errs != "" || err != nil || len(res) != 2 {
		t.Fatalf("exit %d, %v, stderr %q, stdout:\n%s", code, err, errs, out)
	}
	if !res[0].Valid || res[0].IAs != 3 || len(res[0].Problems) != 0 || len(res[0].Unavailable) != 1 {
		t.Errorf("good: %+v", res[0])
	}
	if res[1].Valid || len(res[1].Problems) != 2 || res[1].Problems[1] != (problemJSON{File: bad, Line: 5, Column: 14,
		Message: `threadsafe is the string "yes"; expected true or false (a TOML boolean, not quoted)`}) {
		t.Errorf("bad: %+v", res[1])
	}
	if !strings.Contains(out, `"column": 14`) {
		t.Errorf("field names changed:\n%s", out)
	}
}

// check finds what the providers can tell from a file without opening an
// IA, with positions; the listing refuses such a file the same way.
func TestCheckParams(t *testing.T) {
	isolate(t)
	f := writeFile(t, "params.conf", iaEntry("t", "tcp", `ia_params = "999.1.2.3"`, `platform_params = "peer_timeout=forever"`))
	want := f + `:5:13: tcp: ia_params "999.1.2.3" is not an IPv4 address (four numbers from 0 to 255, separated by dots); ` +
		`expected an IP address of this host, such as "127.0.0.1" or "::1", or an interface name, such as "eth0"` + "\n" +
		f + `:6:19: tcp: platform_params: peer_timeout="forever" is not a duration (for example 30s or 1m)` + "\n"
	for _, args := range [][]string{{"check", f}, {"-f", f}} {
		code, out, errs := runDatinfo(t, args...)
		if code != 1 || out != "" || errs != want {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n%s\nwant:\n%s", args, code, out, errs, want)
		}
	}
}

// A file that defines no IA is valid (the built-in IAs work next to it)
// but gets a warning, in text and in JSON.
func TestCheckEmptyFile(t *testing.T) {
	isolate(t)
	f := writeFile(t, "empty.conf", "# nothing yet\n")
	code, out, errs := runDatinfo(t, "check", f)
	if code != 0 || errs != "" || !strings.HasPrefix(out, f+": valid, 1 warning: toml form, 0 IAs\n"+
		f+":1:1: warning: the file defines no IA; expected at least one [[ia]] table, or a line of the classic dat.conf form\n") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s", code, errs, out)
	}
	code, out, _ = runDatinfo(t, "--json", "check", f)
	var res []checkJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || len(res) != 1 || !res[0].Valid ||
		len(res[0].Warnings) != 1 || res[0].Warnings[0].Line != 1 || !strings.Contains(res[0].Warnings[0].Message, "defines no IA") {
		t.Errorf("exit %d, %v, stdout:\n%s", code, err, out)
	}
}

// A path that is not a regular file is refused without waiting on it (a
// FIFO would block an open for reading until a writer comes), and an
// oversized file is reported with its real size.
func TestUnusableFiles(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := startDatinfo(t, "-f", fifo)
	select {
	case r := <-done:
		if r.code != 1 || r.stdout != "" || r.stderr != "datinfo: DAT_INVALID_PARAMETER: the configuration file "+fifo+
			" cannot be used: it is a named pipe (FIFO); expected a regular file\n" {
			t.Errorf("FIFO: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	case <-time.After(10 * time.Second): // a bound on a hang, not a measurement
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close() // lets the blocked open go on to read nothing
		}
		<-done
		t.Error("datinfo -f FIFO blocked")
	}

	big := filepath.Join(dir, "big.conf")
	if err := os.WriteFile(big, bytes.Repeat([]byte("#\n"), 5<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runDatinfo(t, "check", big)
	if code != 1 || out != "" || errs != big+":1:1: file is 10485760 bytes; expected a configuration of at most 1048576 bytes\n" {
		t.Errorf("big file: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestInvalidConfigListing(t *testing.T) {
	isolate(t)
	bad := writeFile(t, "bad.conf", "x u2.0 threadsafe maybe libgodat-loopback.so v \"\" \"\"\n")
	code, out, errs := runDatinfo(t, "-f", bad)
	if code != 1 || out != "" || errs != bad+":1:19: default is \"maybe\"; expected default or nondefault\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestUsage(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{{"--bogus"}, {"frobnicate"}, {"check", "--bogus"}, {"-f"}} {
		code, out, errs := runDatinfo(t, args...)
		if code != 2 || out != "" || !strings.Contains(errs, "usage:") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"check", "-h"}} {
		code, out, _ := runDatinfo(t, args...)
		if code != 0 || !strings.Contains(out, "exit status:") || !strings.Contains(out, "2  usage error") {
			t.Errorf("%v: exit %d, stdout %q", args, code, out)
		}
	}
}

// On a machine with no configuration file, datinfo lists the built-in
// default.
func TestEmbeddedDefault(t *testing.T) {
	isolate(t)
	out := runDatinfoOK(t)
	if !strings.Contains(out, "Configuration: godat's built-in default (no configuration file found)") {
		t.Errorf("output:\n%s", out)
	}
	r := row(t, out, "loopback")
	if !strings.HasPrefix(r, "* loopback") {
		t.Errorf("loopback row %q", r)
	}
	if slices.Contains(registry.Providers(), "loopback") && !strings.HasSuffix(r, "available") {
		t.Errorf("loopback is built in but its row says %q", r)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 1: "1", 1024: "1KiB", 1536: "1536", 1 << 20: "1MiB",
		3 << 30: "3GiB", 1<<32 - 1: "4294967295", 1 << 40: "1024GiB"} {
		if got := size(n); got != want {
			t.Errorf("size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestFlagNames(t *testing.T) {
	if got := flagNames(0, []string{"A"}, "NONE"); got != "0x0 (NONE)" {
		t.Error(got)
	}
	if got := flagNames(0x13, []string{"A", "B"}, "NONE"); got != "0x13 (A|B|0x10)" {
		t.Error(got)
	}
	if got := enumName(7, "X"); got != "7" {
		t.Error(got)
	}
}

// datinfo lists plugin IAs with the plugin's path, version and state, and
// the reason when the plugin cannot run; -v shows the attributes the plugin
// reports.
func TestPluginIAs(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "loopback-plugin")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/godat/godat/examples/loopback-plugin").CombinedOutput(); err != nil {
		t.Fatalf("building the example plugin: %v\n%s", err, out)
	}
	conf := filepath.Join(dir, "dat.conf")
	if err := os.WriteFile(conf, []byte(`[[plugin]]
name = "lp"
path = "loopback-plugin"

[[plugin]]
name = "gone"
path = "/nonexistent/dat-plugin"

[[ia]]
name = "lp0"
provider = "lp"
api_version = "u2.0"
threadsafe = true

[[ia]]
name = "g0"
provider = "gone"
api_version = "u2.0"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-f", conf}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	out := stdout.String()
	if r := row(t, out, "lp0"); !strings.Contains(r, " lp (plugin) ") || !strings.Contains(r, "lp0#1") || !strings.HasSuffix(r, " available") {
		t.Errorf("lp0 row: %q", r)
	}
	if r := row(t, out, "g0"); !strings.Contains(r, " gone (plugin) ") ||
		!strings.HasSuffix(r, `unavailable: plugin "gone": executable /nonexistent/dat-plugin does not exist`) {
		t.Errorf("g0 row: %q", r)
	}
	for _, want := range []string{"Plugins:", bin, "1.0.0 (protocol 1)", "works (ran as pid"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	stdout.Reset()
	if code := run([]string{"-v", "-f", conf}, &stdout, &stderr); code != exitOK {
		t.Fatalf("-v: exit %d, stderr %s", code, stderr.String())
	}
	for _, want := range []string{"plugin_path       " + bin, "ProviderName                   \"loopback\"", "AdapterName                    \"lp0\""} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("-v output lacks %q:\n%s", want, stdout.String())
		}
	}

	stdout.Reset()
	if code := run([]string{"--json", "-f", conf}, &stdout, &stderr); code != exitOK {
		t.Fatalf("--json: exit %d, stderr %s", code, stderr.String())
	}
	var list struct {
		IAs []struct {
			Name      string
			Available bool
			Plugin    *struct{ Name, Path, Version, State, Reason string }
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	// The two plugin IAs, then the built-in loopback and tcp.
	if len(list.IAs) != 4 || list.IAs[0].Plugin == nil || list.IAs[0].Plugin.Path != bin || list.IAs[0].Plugin.Version != "1.0.0" ||
		!list.IAs[0].Available || list.IAs[1].Available || list.IAs[1].Plugin == nil || list.IAs[2].Plugin != nil {
		t.Errorf("JSON: %s", stdout.String())
	}
}

// debianConf is the /etc/dat.conf that Debian's libdapl2 installs (see
// the registry's tests).
const debianConf = "../../registry/testdata/config/debian-dat.conf"

// With the /etc/dat.conf of an installed uDAPL, datinfo lists its ofa-v2
// lines as verbs IAs with their ia_params, then godat's built-in IAs, and
// says where each comes from.
func TestDebianSystemFile(t *testing.T) {
	isolate(t)
	registry.SystemConfigPath = debianConf
	out := runDatinfoOK(t)
	if !strings.Contains(out, "Configuration: "+debianConf+" (classic form, system file)") ||
		!strings.Contains(out, "  IA ") || !strings.Contains(out, " ORIGIN ") {
		t.Errorf("output:\n%s", out)
	}
	for name, want := range map[string][]string{
		"ofa-v2-mlx4_0-1":  {"* ofa-v2-mlx4_0-1 ", " debian-dat.conf:19 ", " verbs ", " mlx4_0 1 "},
		"ofa-v2-ib0":       {" debian-dat.conf:21 ", " verbs ", " ib0 0 "},
		"ofa-v2-mlx5_0-1u": {" debian-dat.conf:57 ", " verbs ", " mlx5_0 1 "},
		"ofa-v2-mcm-1":     {" debian-dat.conf:37 ", "unavailable: godat does not provide library libdaplomcm.so.2"},
	} {
		r := row(t, out, name)
		for _, w := range want {
			if !strings.Contains(r, w) {
				t.Errorf("%s row lacks %q: %q", name, w, r)
			}
		}
	}
	for _, name := range []string{"loopback", "tcp"} {
		if f := strings.Fields(row(t, out, name)); f[0] != name || f[1] != "built-in" || f[len(f)-1] != "available" {
			t.Errorf("%s row: %q", name, f)
		}
	}
	if !regexp.MustCompile(`\* marked default; OpenDefault fails here: none of the \d+ IAs it tries is available\.`).MatchString(out) {
		t.Errorf("default line:\n%s", out)
	}

	out = runDatinfoOK(t, "--json")
	var list struct {
		IAs []iaJSON `json:"ias"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if n := len(list.IAs); n != 64 || list.IAs[n-2].Name != "loopback" || list.IAs[n-1].Name != "tcp" {
		t.Fatalf("%d IAs, want the file's 62 and loopback, tcp", n)
	}
	for _, ia := range list.IAs {
		switch {
		case ia.Name == "loopback" || ia.Name == "tcp":
			if ia.Origin != "built-in" || ia.Library != "" || !ia.Available || ia.Default {
				t.Errorf("%+v", ia)
			}
		case !strings.HasPrefix(ia.Origin, debianConf+":") || ia.Origin+":1" != ia.Position:
			t.Errorf("%s: origin %q, position %q", ia.Name, ia.Origin, ia.Position)
		case strings.HasPrefix(ia.Library, "libdaplo") && !strings.HasPrefix(ia.Library, "libdaplomcm"):
			if ia.Provider != "verbs" || ia.IAParams == "" {
				t.Errorf("%s (%s): provider %q, ia_params %q", ia.Name, ia.Library, ia.Provider, ia.IAParams)
			}
		}
	}
	if !strings.Contains(out, `"origin": "built-in"`) || !strings.Contains(out, `"origin": "`+debianConf+`:19"`) {
		t.Errorf("JSON keys changed:\n%s", out)
	}

	code, out, _ := runDatinfo(t, "check")
	if code != 0 || !strings.HasPrefix(out, debianConf+": ok: classic form, 62 IAs\n"+
		debianConf+": note: godat's built-in IAs loopback, tcp are available too (the file does not define them)\n") {
		t.Fatalf("check: exit %d:\n%s", code, out)
	}
	code, out, _ = runDatinfo(t, "--json", "check")
	var res []checkJSON
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || len(res) != 1 {
		t.Fatalf("check --json: exit %d, %v:\n%s", code, err, out)
	}
	if res[0].IAs != 62 || !slices.Equal(res[0].BuiltIn, []string{"loopback", "tcp"}) || !strings.Contains(out, `"built_in": [`) {
		t.Errorf("check --json: %+v", res[0])
	}
}

// A classic line for godat's C library lists the IA it stands for, with
// that IA's provider and parameters, and opens it.
func TestAliasLine(t *testing.T) {
	isolate(t)
	cfg := writeFile(t, "dat.conf", `godat-tcp u2.0 nonthreadsafe default /usr/lib/libdat2.so.2 godat.2.0 "tcp" ""`+"\n")
	out := runDatinfoOK(t, "--json", "-f", cfg)
	var list struct {
		IAs []iaJSON `json:"ias"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.IAs) != 3 {
		t.Fatalf("%d IAs:\n%s", len(list.IAs), out)
	}
	a := list.IAs[0]
	if a.Name != "godat-tcp" || a.AliasOf != "tcp" || a.Provider != "tcp" || a.IAParams != "127.0.0.1" ||
		a.Library != "/usr/lib/libdat2.so.2" || a.Origin != cfg+":1" || !a.Available || a.IAAttr["adapter_name"] != "godat-tcp" {
		t.Errorf("alias: %+v", a)
	}
	code, out, _ := runDatinfo(t, "-v", "-f", cfg)
	if code != 0 || !strings.Contains(out, "alias_of          tcp\n") {
		t.Errorf("-v: exit %d:\n%s", code, out)
	}
}

// A plugin that never answers, with a child that holds its output, costs
// datinfo the plugin's start timeout once: both its IAs are listed
// unavailable with the reason, and the child is gone afterwards. The
// plugin's timeout is datinfo's own, as by default, and still the one that
// ends the wait.
func TestSilentPlugin(t *testing.T) {
	defer func(d time.Duration) { host.StartTimeout = d }(host.StartTimeout)
	host.StartTimeout = openTimeout
	dir := t.TempDir()
	exe, childPID := filepath.Join(dir, "hangs"), filepath.Join(dir, "child")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nsleep 1000 &\necho $! > "+childPID+"\nexec sleep 1000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "dat.conf")
	plugin := "[[plugin]]\nname = \"hangs\"\npath = \"hangs\"\n"
	if err := os.WriteFile(conf, []byte(plugin+iaEntry("h0", "hangs")+iaEntry("h1", "hangs")), 0o644); err != nil {
		t.Fatal(err)
	}
	done := startDatinfo(t, "-f", conf)
	var res datinfoResult
	select {
	case res = <-done:
	case <-time.After(2 * time.Minute): // a bound on a hang
		// Each start leaves a child that holds the pipes: kill them until
		// datinfo is through.
		for {
			if b, err := os.ReadFile(childPID); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			select {
			case <-done:
				t.Fatal("datinfo did not finish within two minutes")
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	if res.code != exitOK {
		t.Fatalf("exit %d, stderr %s", res.code, res.stderr)
	}
	why := fmt.Sprintf("did not complete the handshake within %v", openTimeout)
	if l := row(t, res.stdout, "h0"); !strings.Contains(l, "unavailable") || !strings.Contains(l, why) {
		t.Errorf("h0: %q, want unavailable saying %q", l, why)
	}
	if l := row(t, res.stdout, "h1"); !strings.Contains(l, "unavailable") || !strings.Contains(l, why) || !strings.Contains(l, "not started again") {
		t.Errorf("h1: %q, want unavailable saying %q and that the plugin is not started again", l, why)
	}
	b, err := os.ReadFile(childPID)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// The killed child may take a moment to be gone.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(stat), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the plugin's child %d is still running", pid)
		}
	}
}

// A configuration whose every IA fails to open: the file replaces both
// built-in IAs with ones that cannot open. datinfo says so in the table's
// last line and exits with exitNoIA, in every output form; one available
// IA is enough for exitOK.
func TestNoIAAvailable(t *testing.T) {
	isolate(t)
	cfg := writeFile(t, "dat.conf", iaEntry("loopback", "datinfo-fail")+iaEntry("tcp", "nosuch"))
	code, out, errs := runDatinfo(t, "-f", cfg)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if want := "No IA is available: none of the 2 listed can be opened (exit status 3)."; code != exitNoIA || errs != "" || lines[len(lines)-1] != want {
		t.Errorf("exit %d (want %d), stderr %q, last line %q, want %q:\n%s", code, exitNoIA, errs, lines[len(lines)-1], want, out)
	}
	for _, args := range [][]string{{"-v", "-f", cfg}, {"--json", "-f", cfg}} {
		if code, _, _ := runDatinfo(t, args...); code != exitNoIA {
			t.Errorf("datinfo %q: exit %d, want %d", args, code, exitNoIA)
		}
	}
	// The usage and the package doc say what the status means.
	if _, help, _ := runDatinfo(t, "-help"); !strings.Contains(help, "  3  no IA can be opened") {
		t.Errorf("the usage does not document exit status 3:\n%s", help)
	}

	code, out, _ = runDatinfo(t, "-f", writeFile(t, "one.conf", testConfig))
	if code != exitOK || strings.Contains(out, "No IA is available") {
		t.Errorf("with an available IA: exit %d:\n%s", code, out)
	}
}

// The line under the table and "open_default" say what OpenDefault does
// here: it passes over IAs marked default that are absent from this host,
// and stops at one that fails otherwise.
func TestDefaultLine(t *testing.T) {
	isolate(t)
	for _, c := range []struct {
		name, conf, line string
		opens            any
	}{
		{"skips", "broken0 u2.0 threadsafe default libgodat-datinfo-fail.so godat.1.0 \"dev9\" \"\"\n" +
			"good0 u2.0 threadsafe default libgodat-datinfo-test.so godat.1.0 \"dev0\" \"\"\n",
			"* marked default; OpenDefault opens good0, passing over 1 unavailable here before it.", "good0"},
		{"stops", "busy0 u2.0 threadsafe default libgodat-datinfo-busy.so godat.1.0 \"\" \"\"\n" +
			"good0 u2.0 threadsafe default libgodat-datinfo-test.so godat.1.0 \"dev0\" \"\"\n",
			"* marked default; OpenDefault fails here: busy0 does not open (its STATUS above).", nil},
		{"none marked", "broken0 u2.0 threadsafe nondefault libgodat-datinfo-fail.so godat.1.0 \"dev9\" \"\"\n" +
			"good0 u2.0 threadsafe nondefault libgodat-datinfo-test.so godat.1.0 \"dev0\" \"\"\n",
			"No IA is marked default; OpenDefault opens good0, passing over 1 unavailable here before it.", "good0"},
	} {
		cfg := writeFile(t, "dat.conf", c.conf)
		if out := runDatinfoOK(t, "-f", cfg); !strings.Contains(out, "\n"+c.line+"\n") {
			t.Errorf("%s: want %q under the table:\n%s", c.name, c.line, out)
		}
		var got struct {
			DefaultIAs  []string `json:"default_ias"`
			OpenDefault any      `json:"open_default"`
		}
		if err := json.Unmarshal([]byte(runDatinfoOK(t, "-f", cfg, "--json")), &got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.DefaultIAs, []string{strings.Fields(c.conf)[0], "good0"}) || got.OpenDefault != c.opens {
			t.Errorf("%s: default_ias %q, open_default %v; want %v", c.name, got.DefaultIAs, got.OpenDefault, c.opens)
		}
	}
}
