package registry

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
)

// recordingProvider opens fake IAs and remembers what it was asked to
// open.
type recordingProvider struct {
	mu   sync.Mutex
	last api.OpenParams
}

func (p *recordingProvider) Open(ctx context.Context, op api.OpenParams) (api.IA, error) {
	p.mu.Lock()
	p.last = op
	p.mu.Unlock()
	return fakeProvider{}.Open(ctx, op)
}

var aliasTestProvider = &recordingProvider{}

func init() { provider.Register("aliastest", aliasTestProvider) }

// A classic line for godat's own C library stands for the godat IA its
// ia_params names: one of the file, before or after it, or a built-in one.
// Whatever it cannot stand for makes it unavailable with the reason.
func TestConfigGodatLibraryAlias(t *testing.T) {
	const conf = `godat-tcp   u2.0 nonthreadsafe default /usr/lib/libdat2.so.2 godat.2.0 "tcp" ""
godat-dev   u2.0 nonthreadsafe default /opt/godat/lib/libdatgodat.so.1 godat.2.0 " dev0 " ""
dev0        u2.0 threadsafe nondefault libgodat-aliastest.so godat.1.0 "card7 2" "opt=1"
godat-ib    u2.0 nonthreadsafe default libdat2.so.2 godat.2.0 "ofa-v2-ib0" ""
ofa-v2-ib0  u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "ib0 0" ""
godat-none  u2.0 nonthreadsafe default libdat2.so.2 godat.2.0 "nosuch" ""
godat-chain u2.0 nonthreadsafe default libdat2.so.2 godat.2.0 "godat-tcp" ""
godat-mcm   u2.0 nonthreadsafe default libdat2.so.2 godat.2.0 "ofa-v2-mcm-1" ""
ofa-v2-mcm-1 u2.0 nonthreadsafe default libdaplomcm.so.2 dapl.2.0 "mlx4_0 1" ""
godat-empty u2.0 nonthreadsafe default libdat2.so.2 godat.2.0 "" ""
godat-two   u2.0 nonthreadsafe default libdat2.so.2 godat.2.0 "tcp 0" ""
godat-old   u1.2 nonthreadsafe default libdat2.so.2 godat.2.0 "tcp" ""
libdat1     u2.0 nonthreadsafe default libdat2.so.1 godat.2.0 "tcp" ""
`
	cfg := mustParse(t, "alias.conf", []byte(conf))
	type row struct {
		name, aliasOf, provider, params, platform string
		threadSafe                                bool
		unavailable                               string // a prefix
	}
	want := []row{
		{"godat-tcp", "tcp", "tcp", "127.0.0.1", "", true, ""},
		{"godat-dev", "dev0", "aliastest", "card7 2", "opt=1", true, ""},
		{"dev0", "", "aliastest", "card7 2", "opt=1", true, ""},
		{"godat-ib", "ofa-v2-ib0", "verbs", "ib0 0", "", false, ""},
		{"ofa-v2-ib0", "", "verbs", "ib0 0", "", false, ""},
		{"godat-none", "nosuch", "", "nosuch", "", false,
			`it stands for IA "nosuch" (its ia_params), which neither this file nor godat's built-in IAs define`},
		{"godat-chain", "godat-tcp", "", "godat-tcp", "", false,
			`it stands for IA "godat-tcp" (alias.conf:1:1), which is itself a line for godat's C library`},
		{"godat-mcm", "ofa-v2-mcm-1", "", "ofa-v2-mcm-1", "", false,
			`it stands for IA "ofa-v2-mcm-1" (alias.conf:9:1), which is unavailable: godat does not provide library libdaplomcm.so.2`},
		{"ofa-v2-mcm-1", "", "", "mlx4_0 1", "", false, "godat does not provide library libdaplomcm.so.2"},
		{"godat-empty", "", "", "", "", false, `ia_params "" of a line for godat's C library must name the godat IA it serves`},
		{"godat-two", "", "", "tcp 0", "", false, `ia_params "tcp 0" of a line for godat's C library must name the godat IA it serves`},
		{"godat-old", "tcp", "", "tcp", "", false, `api_version "u1.2" is DAT 1.x`},
		{"libdat1", "", "", "tcp", "", false, "godat does not provide library libdat2.so.1"},
	}
	if len(cfg.IAs) != len(want) {
		t.Fatalf("%d IAs, want %d", len(cfg.IAs), len(want))
	}
	for i, w := range want {
		e := cfg.IAs[i]
		got := row{e.Name, e.AliasOf, e.Provider, e.IAParams, e.PlatformParams, e.ThreadSafe, e.Unavailable}
		if w.unavailable != "" && strings.HasPrefix(got.unavailable, w.unavailable) {
			got.unavailable = w.unavailable
		}
		if got != w {
			t.Errorf("line %d:\n got %+v\nwant %+v", i+1, got, w)
		}
		if e.Library == "" || e.Pos.Line != i+1 || e.BuiltIn {
			t.Errorf("line %d: %+v", i+1, e)
		}
	}

	// Opening the alias opens the IA it stands for, under its own name.
	r := New(cfg)
	ia, err := r.Open(context.Background(), "godat-dev")
	if err != nil {
		t.Fatal(err)
	}
	aliasTestProvider.mu.Lock()
	got := aliasTestProvider.last
	aliasTestProvider.mu.Unlock()
	if got.Name != "godat-dev" || got.Params != "card7 2" || got.PlatformParams != "opt=1" || !got.ThreadSafe {
		t.Errorf("provider asked to open %+v", got)
	}
	if err := ia.Close(api.CloseAbrupt); err != nil {
		t.Fatal(err)
	}
	for _, pi := range r.List() {
		if pi.IAName == "godat-dev" && (pi.AliasOf != "dev0" || pi.Provider != "aliastest" || !pi.Available || pi.Origin != "alias.conf:2") {
			t.Errorf("listed as %+v", pi)
		}
	}
	if _, err := r.Open(context.Background(), "godat-chain"); err == nil || !strings.Contains(err.Error(), "itself a line for godat's C library") {
		t.Errorf("Open(godat-chain) = %v", err)
	}
}
