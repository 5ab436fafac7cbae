// Package testmain is the TestMain that godat's provider packages share:
// their tests open IAs through the default registry, whose configuration
// must be the package's own rather than whatever /etc/dat.conf the
// machine has, and no goroutine may outlive them.
package testmain

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/godat/godat/registry"
)

// Run points the default registry at conf unless $DAT_OVERRIDE already
// names a configuration (the caller's choice wins), then runs m as Verify
// does; it does not return.
func Run(m *testing.M, conf string) {
	if os.Getenv(registry.EnvOverride) == "" {
		os.Setenv(registry.EnvOverride, conf)
	}
	Verify(m, nil)
}

// Verify runs m, fails it if goroutines are left over, calls cleanup (when
// not nil) with the exit code, and exits. While fuzzing, what a worker
// process printed as it crashed is shown once the run ends (crash.go).
func Verify(m *testing.M, cleanup func(code int)) {
	report := keepWorkerCrashes(os.Args[1:])
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		report()
		if cleanup != nil {
			cleanup(code)
		}
	}))
}
