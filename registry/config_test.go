package registry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godat/godat/api"
)

// mustParse returns the configuration in text, read as the file name; an
// error fails the test.
func mustParse(t testing.TB, name string, text []byte) *Config {
	t.Helper()
	cfg, err := ParseConfig(name, text)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "config", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// configErrors checks that err is a well-formed configuration error and
// returns its problems as "line:col: message" strings.
func configErrors(t testing.TB, err error) []string {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	var de *api.Error
	if !errors.As(err, &de) || de.Type != api.InvalidParameter {
		t.Fatalf("error %v is not an *api.Error of type InvalidParameter", err)
	}
	var ce ConfigErrors
	if !errors.As(err, &ce) || len(ce) == 0 {
		t.Fatalf("error %v has no ConfigErrors cause", err)
	}
	var out []string
	for _, e := range ce {
		if e.Pos.Line < 1 || e.Pos.Col < 1 {
			t.Errorf("problem without a position: %v", e)
		}
		out = append(out, fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Col, e.Msg))
	}
	return out
}

// wantProblems checks that got holds, in order, one problem per want entry,
// each "line:col: substring".
func wantProblems(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		at, sub, _ := strings.Cut(w, " ")
		if !strings.HasPrefix(got[i], at+" ") || !strings.Contains(got[i], sub) {
			t.Errorf("problem %d = %q, want at %s containing %q", i, got[i], at, sub)
		}
	}
}

func TestConfigGoodTOML(t *testing.T) {
	cfg := mustParse(t, "good.toml", readTestdata(t, "good.toml"))
	if cfg.Format != FormatTOML || cfg.File != "good.toml" || len(cfg.IAs) != 3 {
		t.Fatalf("got %+v", cfg)
	}
	want := []IAEntry{
		{Name: "lo0", Provider: "loopback", APIVersion: "u2.0", ThreadSafe: true, Default: true,
			ProviderVersion: "godat.1.0", Pos: Position{"good.toml", 3, 1}},
		{Name: "tcp0", Provider: "tcp", APIVersion: "u2.1", IAParams: "127.0.0.1", Pos: Position{"good.toml", 13, 1}},
		{Name: "min", Provider: "loopback", APIVersion: "u2.0", Pos: Position{"good.toml", 21, 1}},
	}
	for i, w := range want {
		if !reflect.DeepEqual(cfg.IAs[i], w) {
			t.Errorf("IA %d:\n got %+v\nwant %+v", i, cfg.IAs[i], w)
		}
	}
}

func TestConfigGoodClassic(t *testing.T) {
	cfg := mustParse(t, "good.conf", readTestdata(t, "good.conf"))
	if cfg.Format != FormatClassic || len(cfg.IAs) != 6 {
		t.Fatalf("got format %q, %d IAs", cfg.Format, len(cfg.IAs))
	}
	type row struct {
		name, provider, lib, params string
		line, col                   int
		ts, def                     bool
		unavailable                 string
	}
	want := []row{
		{"godat-lo", "loopback", "libgodat-loopback.so", "", 4, 1, true, true, ""},
		{"godat-tcp", "tcp", "/usr/lib/libgodat-tcp.so.1", "127.0.0.1", 5, 1, false, false, ""},
		{"ofa-v2-ib0", "verbs", "libdaplofa.so.2", "ib0 0", 6, 1, false, true, ""},
		{"ofa-v2-mlx5_0-1s", "verbs", "libdaploscm.so.2", "mlx5_0 1", 7, 2, false, true, ""},
		{"ofa-v2-mcm-1", "", "libdaplomcm.so.2", "mlx4_0 1", 8, 1, false, true, "godat does not provide library libdaplomcm.so.2"},
		{"OpenIB-cma", "", "libdaplcma.so.1", "ib0 0", 9, 1, false, true, `api_version "u1.2" is DAT 1.x`},
	}
	for i, w := range want {
		e := cfg.IAs[i]
		got := row{e.Name, e.Provider, e.Library, e.IAParams, e.Pos.Line, e.Pos.Col, e.ThreadSafe, e.Default, e.Unavailable}
		if w.unavailable != "" && strings.HasPrefix(got.unavailable, w.unavailable) {
			got.unavailable = w.unavailable
		}
		if got != w {
			t.Errorf("IA %d:\n got %+v\nwant %+v", i, got, w)
		}
		if e.APIVersion == "" || e.ProviderVersion == "" || e.PlatformParams != "" {
			t.Errorf("IA %d: fields %+v", i, e)
		}
	}

	cfg = mustParse(t, "crlf.conf", readTestdata(t, "crlf.conf"))
	if len(cfg.IAs) != 1 || cfg.IAs[0].PlatformParams != "" || cfg.IAs[0].Provider != "loopback" {
		t.Fatalf("CRLF file: %+v", cfg.IAs)
	}
}

func TestConfigBadFiles(t *testing.T) {
	_, err := ParseConfig("bad.toml", readTestdata(t, "bad.toml"))
	wantProblems(t, configErrors(t, err),
		`6:15: api_version "2.0" is malformed; expected "u2.<minor>"`,
		`7:14: threadsafe is the string "yes"; expected true or false`,
		`9:1: unknown key colour in [[ia]]`,
		`11:1: [[ia]] table has no provider`,
		`12:1: duplicate IA name "a": the IA at bad.toml:3:1 already has it`,
		`13:15: api_version "u1.2" is DAT 1.x`,
		`14:1: IA "a" is marked default but IA "a" (bad.toml:3:1) already is`,
		`16:1: [[plugin]] table has no path`,
		`19:1: unknown table [[plugins]]; expected only [[ia]] and [[plugin]] tables (did you mean plugin?)`,
	)
	if !strings.HasPrefix(err.Error(), "DAT_INVALID_PARAMETER: invalid DAT configuration bad.toml: bad.toml:6:15: ") ||
		!strings.HasSuffix(err.Error(), "(and 8 more errors)") {
		t.Errorf("Error() = %q", err)
	}

	_, err = ParseConfig("bad.conf", readTestdata(t, "bad.conf"))
	wantProblems(t, configErrors(t, err),
		`3:51: line has 5 fields, missing provider_version, ia_params, platform_params`,
		`4:12: api_version "2.0" is malformed`,
		`5:16: threadsafety is "safe"; expected threadsafe or nonthreadsafe`,
		`6:28: default is "yes"; expected default or nondefault`,
		`7:1: duplicate IA name "good": the IA at bad.conf:2:1 already has it`,
		`8:72: unterminated quoted field`,
		`9:68: unexpected field "more": line has 9 fields`,
	)
}

func TestConfigTOMLProblems(t *testing.T) {
	const ok = "name = \"x\"\nprovider = \"loopback\"\napi_version = \"u2.0\"\n"
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"syntax", "[[ia]]\nname = \n", []string{`2:8: TOML syntax error: expected value`}},
		{"syntax at line start", "[[ia]]\nname = \"a\"\nname = \"b\"\n", []string{`3:1: TOML syntax error: Key 'ia.name' has already been defined`}},
		{"unterminated string", "[[ia]]\nname = \"abc\n", []string{`2:12: TOML syntax error: strings cannot contain newlines`}},
		{"missing all", "# c\n\n  [[ia]]\n", []string{
			`3:3: [[ia]] table has no name`, `3:3: [[ia]] table has no provider`, `3:3: [[ia]] table has no api_version`}},
		{"table not array", "[ia]\n" + ok, []string{`1:1: ia is a table; expected one [[ia]] table per IA`}},
		{"inline array", "ia = [{name = \"x\"}]\n", []string{`1:1: ia is an array; expected one [[ia]] table per IA`}},
		{"ia string", "ia = \"x\"\n", []string{`1:1: ia is the string "x"; expected one [[ia]] table`}},
		{"top-level key", "nmae = 1\n[[ia]]\n" + ok, []string{`1:1: unknown top-level key nmae`}},
		{"top-level table", "[[ia]]\n" + ok + "[foo.bar]\nx = 1\n", []string{`5:1: unknown table [foo]`}},
		{"near miss", "[[ia]]\n" + ok + "providr = \"y\"\n", []string{`5:1: unknown key providr in [[ia]] (did you mean provider?)`}},
		{"sub-table", "[[ia]]\n" + ok + "[ia.extra]\nx = 1\n", []string{`5:1: unknown key extra in [[ia]]`}},
		{"dotted key", "[[ia]]\nprovider = \"l\"\napi_version = \"u2.0\"\n  name.first = \"x\"\n", []string{`4:3: name is a table; expected a string`}},
		{"wrong types", "[[ia]]\nname = 1\nprovider = true\napi_version = 2.0\ndefault = \"true\"\nia_params = [1]\n", []string{
			`2:8: name is the integer 1; expected a string`,
			`3:12: provider is the boolean true; expected a string`,
			`4:15: api_version is a float; expected a string`,
			`5:11: default is the string "true"; expected true or false`,
			`6:13: ia_params is an array; expected a string`}},
		{"bad names", "[[ia]]\nname = \"a b\"\nprovider = \"\"\napi_version = \"u2.0\"\n", []string{
			`2:8: IA name "a b" contains ' '`, `3:12: empty provider name`}},
		{"long name", "[[ia]]\nname = \"" + strings.Repeat("n", 256) + "\"\nprovider = \"p\"\napi_version = \"u2.0\"\n", []string{
			`2:8: IA name is 256 bytes long`}},
		{"versions", "[[ia]]\nname = \"a\"\nprovider = \"p\"\napi_version = \"u3.0\"\n" +
			"[[ia]]\nname = \"b\"\nprovider = \"p\"\napi_version = \"k2.0\"\n" +
			"[[ia]]\nname = \"c\"\nprovider = \"p\"\napi_version = \"u2.\"\n", []string{
			`4:15: api_version "u3.0" is DAT 3.x`, `8:15: api_version "k2.0" is the kernel kDAPL API`, `12:15: api_version "u2." is malformed`}},
		{"hooks", "[[ia]]\n" + ok + "hooks = [\"count\", \"tarce\", 3, \"count\"]\n" +
			"[[ia]]\nname = \"y\"\nprovider = \"p\"\napi_version = \"u2.0\"\nhooks = \"count\"\n", []string{
			`5:9: hooks[1] is "tarce" (did you mean trace?); expected one of count, trace, trace-data`,
			`5:9: hooks[2] is the integer 3; expected a string`,
			`5:9: hooks[3] repeats "count"`,
			`10:9: hooks is the string "count"; expected an array of hook names`}},
		{"two defaults", "[[ia]]\n" + ok + "default = true\n[[ia]]\nname = \"y\"\nprovider = \"p\"\napi_version = \"u2.0\"\ndefault = true\n", []string{
			`10:1: IA "y" is marked default but IA "x" (f:1:1) already is`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("f", []byte(tc.in))
			wantProblems(t, configErrors(t, err), tc.want...)
		})
	}
}

// The scanner must not be fooled by text inside strings and arrays.
func TestConfigTOMLPositions(t *testing.T) {
	in := `# [[ia]] in a comment
[[ia]]
name = "a"
provider = "loopback"
api_version = "u2.0"
platform_params = """
[[ia]]
name = "fake"
"""
ia_params = '''
 x ''' # comment

[[ia]] # second
provider = "loopback"
"api_version" = "u2.0"
platform_params = "[[ia]] \" name = 1"
'name' = "a"
`
	_, err := ParseConfig("p", []byte(in))
	wantProblems(t, configErrors(t, err), `17:1: duplicate IA name "a": the IA at p:2:1 already has it`)

	in = "[[ia]]\nname = \"a\"\nprovider = \"p\"\napi_version = \"u2.0\"\nx = [\n  1, # ]\n  \"]\",\n]\n" +
		"y = { a = 1, b = [2] }\n\n[[ ia ]]\nname = \"b\"\n"
	_, err = ParseConfig("p", []byte(in))
	wantProblems(t, configErrors(t, err),
		`5:1: unknown key x`, `9:1: unknown key y`, `11:1: [[ia]] table has no provider`, `11:1: [[ia]] table has no api_version`)
}

func TestConfigClassicProblems(t *testing.T) {
	const tail = ` u2.0 threadsafe default libgodat-loopback.so godat.1.0 "" ""`
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"quote inside field", "a\"b" + tail + "\n", []string{`1:2: unexpected " inside a field`}},
		{"no blank after quote", `"a"b` + tail + "\n", []string{`1:4: unexpected 'b' after a closing quote`}},
		{"control", "a\x01" + tail + "\n", []string{`1:2: control character U+0001`}},
		{"control in quotes", "a" + strings.Replace(tail, `""`, "\"x\x7f\"", 1), []string{`1:60: control character U+007F`}},
		{"invalid utf8", "a\xff" + tail, []string{`1:2: invalid UTF-8 byte 0xff`}},
		{"empty name", `""` + tail, []string{`1:1: empty IA name`}},
		{"name with space", `"a b"` + tail, []string{`1:1: IA name "a b" contains ' '`}},
		{"empty lib", `a u2.0 threadsafe default "" godat.1.0 "" ""`, []string{`1:27: lib_path is empty`}},
		{"kdapl", `a k2.0 threadsafe default libgodat-x.so v "" ""`, nil},
		{"toml line", "a" + tail + "\n[[ia]]\nname = \"x\"\n", []string{
			`2:1: this line looks like TOML`, `3:1: this line looks like TOML`}},
		{"too many errors", strings.Repeat("x\n", 60), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig("c", []byte(tc.in))
			if tc.want == nil && tc.name != "too many errors" {
				if err != nil {
					t.Fatal(err)
				}
				if len(cfg.IAs) != 1 || !strings.Contains(cfg.IAs[0].Unavailable, "kDAPL") {
					t.Fatalf("%+v", cfg.IAs)
				}
				return
			}
			got := configErrors(t, err)
			if tc.name == "too many errors" {
				if len(got) != maxReported+1 || !strings.HasPrefix(got[maxReported], "51:2: too many errors: 10 more not shown") {
					t.Fatalf("%d problems, last %q", len(got), got[len(got)-1])
				}
				return
			}
			wantProblems(t, got, tc.want...)
		})
	}
}

func TestConfigDetectFormat(t *testing.T) {
	for in, toml := range map[string]bool{
		"":                          true,
		"# only a comment\n\n":      true,
		"[[ia]]\n":                  true,
		"  [ia]\n":                  true,
		"a = 1\n":                   true,
		"a.b = 1\n":                 true,
		"\"a b\" . c= 1\n":          true,
		"'a' = 1\n":                 true,
		"ia.0 u2.0 x":               false,
		"ofa-v2-ib0 u2.0 x\n[[ia]]": false,
		"\"ibd0\" \"u1.2\"":         false,
		"a":                         false,
		"\"unterminated = 1":        false,
		"a. = 1":                    false,
	} {
		if got := detectTOML([]byte(in)); got != toml {
			t.Errorf("detectTOML(%q) = %v", in, got)
		}
	}
}

func TestConfigLibraryProvider(t *testing.T) {
	for lib, want := range map[string]string{
		"libgodat-tcp.so":             "tcp",
		"libgodat-tcp.so.1":           "tcp",
		"libgodat-tcp.so.1.2.3":       "tcp",
		"/opt/lib/libgodat-acme.so":   "acme",
		"libgodat-my-prov.so":         "my-prov",
		"libdaplofa.so.2":             "verbs",
		"libdaplofa.so":               "verbs",
		"/usr/lib64/libdaploscm.so.2": "verbs",
		"libdaploucm.so.2":            "verbs",
		"libdaploucm.so.1":            "",
		"libdaplomcm.so.2":            "",
		"libgodat-.so":                "",
		"libgodat-tcp.sox":            "",
		"libgodat-tcp":                "",
		"libgodat.so":                 "",
	} {
		p, why := libraryProvider(lib)
		if p != want || (p == "") != (why != "") {
			t.Errorf("libraryProvider(%q) = %q, %q; want %q", lib, p, why, want)
		}
	}
}

func TestConfigFileLimits(t *testing.T) {
	_, err := ParseConfig("big", make([]byte, MaxConfigSize+1))
	wantProblems(t, configErrors(t, err), `1:1: file is 1048577 bytes`)
	_, err = ParseConfig("u16", []byte("\xff\xfe[\x00[\x00"))
	wantProblems(t, configErrors(t, err), `1:1: file looks like UTF-16`)
	cfg, err := ParseConfig("bom", []byte("\xef\xbb\xbf[[ia]]\nname=\"a\"\nprovider=\"p\"\napi_version=\"u2.0\"\n"))
	if err != nil || cfg.IAs[0].Pos.Line != 1 {
		t.Fatalf("BOM: %v %+v", err, cfg)
	}
}

func TestConfigEmbedded(t *testing.T) {
	cfg := EmbeddedConfig()
	if cfg.File != "<embedded>" || cfg.Format != "embedded" || cfg.Source != "embedded" || len(cfg.IAs) != 2 {
		t.Fatalf("%+v", cfg)
	}
	want := IAEntry{Name: "loopback", Provider: "loopback", APIVersion: "u2.0", ThreadSafe: true, Default: true,
		ProviderVersion: "godat.1.0", Pos: cfg.IAs[0].Pos, BuiltIn: true}
	if !reflect.DeepEqual(cfg.IAs[0], want) || cfg.IAs[0].Pos.File != "<embedded>" || cfg.IAs[0].Pos.Line < 1 {
		t.Fatalf("got %+v", cfg.IAs[0])
	}
	wantTCP := IAEntry{Name: "tcp", Provider: "tcp", APIVersion: "u2.0", ThreadSafe: true,
		ProviderVersion: "godat.1.0", IAParams: "127.0.0.1", Pos: cfg.IAs[1].Pos, BuiltIn: true}
	if !reflect.DeepEqual(cfg.IAs[1], wantTCP) {
		t.Fatalf("got %+v", cfg.IAs[1])
	}
	cfg.IAs[0].Name = "changed"
	if EmbeddedConfig().IAs[0].Name != "loopback" {
		t.Fatal("EmbeddedConfig returned shared state")
	}
}

func TestConfigExample(t *testing.T) {
	data, err := os.ReadFile("../dat.conf.example")
	if err != nil {
		t.Fatal(err)
	}
	cfg := mustParse(t, "dat.conf.example", data)
	var got []string
	for _, e := range cfg.IAs {
		got = append(got, fmt.Sprintf("%s/%s/%s/%v/%v/%q", e.Name, e.Provider, e.APIVersion, e.ThreadSafe, e.Default, e.IAParams))
	}
	want := []string{`loopback/loopback/u2.0/true/true/""`, `tcp0/tcp/u2.0/true/false/"127.0.0.1"`, `mlx5_0-1/verbs/u2.0/false/false/"mlx5_0 1"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("IAs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(cfg.Plugins) != 1 || cfg.Plugins[0].Name != "acme" || cfg.Plugins[0].Path != "/usr/local/libexec/dat/dat-provider-acme" ||
		len(cfg.Plugins[0].Args) != 2 || len(cfg.Plugins[0].Env) != 1 {
		t.Fatalf("plugins: %+v", cfg.Plugins)
	}

	// The classic lines in its comments say the same thing.
	var classic []string
	for _, l := range strings.Split(string(data), "\n") {
		if l, ok := strings.CutPrefix(l, "#   "); ok && strings.Contains(l, " u2.0 ") {
			classic = append(classic, l)
		}
	}
	ccfg := mustParse(t, "classic", []byte(strings.Join(classic, "\n")))
	if len(ccfg.IAs) != len(cfg.IAs) {
		t.Fatalf("classic example has %d IAs", len(ccfg.IAs))
	}
	for i, e := range ccfg.IAs {
		x := cfg.IAs[i]
		if e.Name != x.Name || e.Provider != x.Provider || e.ThreadSafe != x.ThreadSafe || e.Default != x.Default || e.IAParams != x.IAParams {
			t.Errorf("classic %+v differs from %+v", e, x)
		}
	}
}

// A real system file, when this machine has one, must read as a valid file.
func TestConfigSystemFile(t *testing.T) {
	data, err := os.ReadFile("/etc/dat.conf")
	if err != nil {
		t.Skip("no /etc/dat.conf here")
	}
	if _, err := ParseConfig("/etc/dat.conf", data); err != nil {
		t.Fatal(err)
	}
}

func TestConfigLoadOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	entry := func(n string) string {
		return fmt.Sprintf("[[ia]]\nname = %q\nprovider = \"loopback\"\napi_version = \"u2.0\"\n", n)
	}
	argFile := write("arg.conf", entry("arg"))
	envFile := write("env.conf", entry("env"))
	sysFile := write("sys.conf", "sys u2.0 threadsafe default libgodat-loopback.so v \"\" \"\"\n")
	badFile := write("bad.conf", "[[ia]]\n")

	old := SystemConfigPath
	t.Cleanup(func() { SystemConfigPath = old })
	check := func(path, wantName, wantSource, wantFormat string) {
		t.Helper()
		cfg, err := LoadConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.IAs) == 0 || cfg.IAs[0].Name != wantName || cfg.Source != wantSource || cfg.Format != wantFormat {
			t.Fatalf("LoadConfig(%q) = %+v", path, cfg)
		}
	}

	SystemConfigPath = sysFile
	t.Setenv(EnvOverride, envFile)
	check(argFile, "arg", "argument", "toml")
	check("", "env", "DAT_OVERRIDE", "toml")
	t.Setenv(EnvOverride, "")
	check("", "sys", "system", "classic")
	SystemConfigPath = filepath.Join(dir, "missing")
	check("", "loopback", "embedded", "embedded")

	// A file the user named must exist: without it no IA is registered
	// (DAT_PROVIDER_NOT_FOUND, as dat_ia_open(3DAT) says for a name the
	// registry lacks). A system file that is not a regular file is an
	// error, not a silent fallback.
	notRegistered := &api.Error{Type: api.ProviderNotFound, Sub: api.SubNameNotRegistered}
	_, err := LoadConfig(filepath.Join(dir, "nope"))
	if !errors.Is(err, notRegistered) || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing argument: %v", err)
	}
	t.Setenv(EnvOverride, filepath.Join(dir, "nope"))
	_, err = LoadConfig("")
	if !errors.Is(err, notRegistered) || !strings.Contains(err.Error(), "$DAT_OVERRIDE") {
		t.Fatalf("missing $DAT_OVERRIDE: %v", err)
	}
	t.Setenv(EnvOverride, "")
	SystemConfigPath = dir // a directory
	if _, err = LoadConfig(""); !errors.Is(err, api.ErrInvalidParameter) || !strings.Contains(err.Error(), "it is a directory; expected a regular file") {
		t.Fatalf("system file that is a directory: %v", err)
	}
	SystemConfigPath = old
	if err := os.Chmod(argFile, 0); err == nil && os.Geteuid() != 0 {
		if _, err := LoadConfig(argFile); !errors.Is(err, api.ErrInternal) || !errors.Is(err, os.ErrPermission) {
			t.Errorf("unreadable file: %v", err)
		}
	}

	_, err = LoadConfig(badFile)
	wantProblems(t, configErrors(t, err), "1:1: [[ia]] table has no name", "1:1: [[ia]] table has no provider", "1:1: [[ia]] table has no api_version")
	if ce := (ConfigErrors)(nil); errors.As(err, &ce) && ce[0].Pos.File != badFile {
		t.Fatalf("position names %q, want %q", ce[0].Pos.File, badFile)
	}

	// An oversized file is reported with its size, not the size of what
	// was read of it.
	big := write("big.conf", strings.Repeat("#\n", 5*MaxConfigSize))
	_, err = LoadConfig(big)
	wantProblems(t, configErrors(t, err), "1:1: file is 10485760 bytes; expected a configuration of at most 1048576 bytes")
	if !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("oversized file: %v", err)
	}
}

// A configuration path that names a FIFO, a device or a directory is
// refused at once: nothing is read from it and nothing waits for a
// writer.
func TestConfigNotRegularFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for path, kind := range map[string]string{fifo: "a named pipe (FIFO)", "/dev/null": "a character device", t.TempDir(): "a directory"} {
		done := make(chan error, 1)
		go func() {
			_, err := LoadConfig(path)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, api.ErrInvalidParameter) || !strings.Contains(err.Error(), path+" cannot be used: it is "+kind+"; expected a regular file") {
				t.Errorf("LoadConfig(%s) = %v", path, err)
			}
		case <-time.After(10 * time.Second): // a bound on a hang, not a measurement
			// Unblock the open so that the goroutine ends.
			if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
			<-done
			t.Errorf("LoadConfig(%s) blocked", path)
		}
	}
}

func TestConfigErrorsFormatting(t *testing.T) {
	var es ConfigErrors
	if es.Error() != "no errors" {
		t.Fatal(es.Error())
	}
	es = ConfigErrors{{Pos: Position{"f", 1, 2}, Msg: "m"}}
	if es.Error() != "f:1:2: m" {
		t.Fatal(es.Error())
	}
}
