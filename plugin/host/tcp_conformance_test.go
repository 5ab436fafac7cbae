package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/godat/godat/api"
	_ "github.com/godat/godat/providers/tcp" // the client ends, in this process
	"github.com/godat/godat/registry"
	"github.com/godat/godat/tests/conformance"
)

// tcpPluginRegistry loads a configuration with the IA "tp0" of godat's tcp
// provider served by a plugin process, followed by the [[ia]] tables in
// extra.
func tcpPluginRegistry(t *testing.T, extra string) *registry.Registry {
	t.Helper()
	conf := fmt.Sprintf("[[plugin]]\nname = \"tp\"\npath = %q\nenv = { GORACE = \"atexit_sleep_ms=0 log_path=%s\" }\n\n[[ia]]\nname = \"tp0\"\nprovider = \"tp\"\napi_version = \"u2.0\"\nthreadsafe = true\nia_params = \"127.0.0.1\"\n",
		tcpPluginPath, filepath.Join(binDir, "race")) + extra
	path := filepath.Join(t.TempDir(), "dat.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return loadRegistry(t, path)
}

// TestConformanceTCPPlugin runs the whole conformance suite on godat's tcp
// provider served out of process.
func TestConformanceTCPPlugin(t *testing.T) {
	r := tcpPluginRegistry(t, "")
	conformance.RunWith(t, func(ctx context.Context) (api.IA, error) { return r.Open(ctx, "tp0") })
}

// TestConformanceTCPTwoProcesses runs the whole conformance suite with the
// two ends of every connected pair in two processes: the server end in the
// tcp provider served by a plugin process, the client end (and every IA
// of a one-IA check) in this process, connected over TCP on 127.0.0.1.
func TestConformanceTCPTwoProcesses(t *testing.T) {
	r := tcpPluginRegistry(t, "\n[[ia]]\nname = \"tcp0\"\nprovider = \"tcp\"\napi_version = \"u2.0\"\nthreadsafe = true\nia_params = \"127.0.0.1\"\n")
	conformance.RunSplit(t,
		func(ctx context.Context) (api.IA, error) { return r.Open(ctx, "tcp0") },
		func(ctx context.Context) (api.IA, error) { return r.Open(ctx, "tp0") })
}
