package minimal_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	_ "example.com/minimal-provider"       // registers "minimal"
	_ "github.com/godat/godat/plugin/host" // opens the IAs of [[plugin]] entries
	"github.com/godat/godat/registry"
	"github.com/godat/godat/tests/conformance"
)

// TestMain builds the plugin executable (with the race detector when the
// tests have it) and points the registry at a configuration with one IA
// of the provider in process and one served by the plugin.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "minimal-provider-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "minimal-plugin")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "./cmd/minimal-plugin")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the plugin:", err)
		return 1
	}
	// A race-enabled plugin writes its reports to files, checked below,
	// and would sleep a second at every exit.
	race := filepath.Join(dir, "race")
	conf := fmt.Sprintf(`
[[ia]]
name        = "minimal0"
provider    = "minimal"
api_version = "u2.0"
threadsafe  = true

[[plugin]]
name = "minimal-plugin"
path = %q
env  = { GORACE = "atexit_sleep_ms=0 log_path=%s" }

[[ia]]
name        = "minimal-plugin0"
provider    = "minimal-plugin"
api_version = "u2.0"
threadsafe  = true
`, bin, race)
	path := filepath.Join(dir, "dat.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv(registry.EnvOverride, path)
	code := m.Run()
	if reports, _ := filepath.Glob(race + ".*"); len(reports) > 0 {
		for _, f := range reports {
			b, _ := os.ReadFile(f)
			fmt.Fprintf(os.Stderr, "data race in the plugin process:\n%s\n", b)
		}
		code = 1
	}
	return code
}

// TestConformance runs the whole suite against the provider in process.
func TestConformance(t *testing.T) { conformance.Run(t, "minimal0") }

// TestConformancePlugin runs it against the provider served by
// cmd/minimal-plugin through plugin.Serve: every call, event and byte
// crosses the process boundary.
func TestConformancePlugin(t *testing.T) { conformance.Run(t, "minimal-plugin0") }
