package datnet_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/datnet"
	"github.com/godat/godat/internal/testmain"
	"github.com/godat/godat/registry"

	_ "github.com/godat/godat/registry/all" // loopback, tcp and the plugin host
)

// pluginPath is examples/loopback-plugin, built by TestMain or taken from
// $GODAT_DATNET_PLUGIN: the plugin host's IAs run the tests too.
var pluginPath string

// pluginEnv names a prebuilt examples/loopback-plugin for TestMain to use
// instead of building one with the go command: .ci/verbs sets it, as the
// rxe VM has no Go toolchain. A path that names no file fails every test
// at once rather than skipping the plugin's.
const pluginEnv = "GODAT_DATNET_PLUGIN"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) != "" {
		os.Exit(serverMain())
	}
	if p := os.Getenv(pluginEnv); p != "" {
		abs, err := filepath.Abs(p)
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(abs); err == nil && !fi.Mode().IsRegular() {
				err = fmt.Errorf("%s is not a regular file", abs)
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "$%s: %v\n", pluginEnv, err)
			os.Exit(1)
		}
		pluginPath = abs
		testmain.Verify(m, nil)
		return
	}
	dir, err := os.MkdirTemp("", "datnet-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginPath = filepath.Join(dir, "loopback-plugin")
	cmd := exec.Command("go", "build", "-o", pluginPath, "github.com/godat/godat/examples/loopback-plugin")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the example plugin:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	testmain.Verify(m, func(int) { os.RemoveAll(dir) })
}

// testConfig has one IA of each in-process provider the tests run on.
const testConfig = `
[[ia]]
name        = "lo"
provider    = "loopback"
api_version = "u2.0"
threadsafe  = true

[[ia]]
name        = "tcp"
provider    = "tcp"
api_version = "u2.0"
threadsafe  = true
ia_params   = "127.0.0.1"
`

// envIA names an IA of the configuration registry.Open reads
// ($DAT_OVERRIDE, /etc/dat.conf): when set, every test that runs on each
// provider runs on it too, and so does nettest. .ci/verbs sets it to a
// verbs IA on soft-RoCE.
var envIA = os.Getenv("GODAT_DATNET_IA")

func configured(name string) opener {
	return func(ctx context.Context) (api.IA, error) { return registry.Open(ctx, name) }
}

// opener opens an IA for one side of a test connection.
type opener func(ctx context.Context) (api.IA, error)

// inProcess opens name from the tests' own configuration.
func inProcess(name string) opener {
	conf := testConfig
	if pluginPath != "" { // not in the benchmarks' server process
		conf += pluginConfig()
	}
	cfg, err := registry.ParseConfig("datnet-test.conf", []byte(conf))
	if err != nil {
		panic(err) // the configuration is constant
	}
	r := registry.New(cfg)
	return func(ctx context.Context) (api.IA, error) { return r.Open(ctx, name) }
}

// pluginConfig is the IA "plugin" of the example plugin TestMain built.
func pluginConfig() string {
	return fmt.Sprintf(`
[[plugin]]
name = "lp"
path = %q

[[ia]]
name        = "plugin"
provider    = "lp"
api_version = "u2.0"
threadsafe  = true
`, pluginPath)
}

// pipe is a connected pair over two IAs, with what closes it all.
type pipe struct {
	c1, c2 net.Conn
	l      net.Listener
	ias    []api.IA
}

func (p *pipe) stop() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, c := range []net.Conn{p.c1, p.c2} {
		if c != nil {
			c.Close()
		}
	}
	if p.l != nil {
		keep(p.l.Close())
	}
	for _, ia := range p.ias {
		keep(ia.Close(api.CloseGraceful))
	}
	return first
}

// newPipe connects a client IA to a listener on a server IA, both opened
// by open, with options o on both sides.
func newPipe(t testing.TB, open opener, o datnet.Options) (*pipe, error) {
	ctx := context.Background()
	p := &pipe{}
	srv, err := open(ctx)
	if err != nil {
		return nil, err
	}
	p.ias = append(p.ias, srv)
	cli, err := open(ctx)
	if err != nil {
		p.stop()
		return nil, err
	}
	p.ias = append(p.ias, cli)
	lc := datnet.ListenConfig{Options: o}
	p.l, err = lc.Listen(srv, ":0")
	if err != nil {
		p.stop()
		return nil, err
	}
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := p.l.Accept()
		ch <- result{c, err}
	}()
	d := datnet.Dialer{Options: o}
	p.c1, err = d.Dial(ctx, cli, p.l.Addr().String())
	r := <-ch
	p.c2 = r.c
	if err == nil {
		err = r.err
	}
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}
