package tcp

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/godat/godat/registry"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	// The conformance suite opens "tcp" through the default registry;
	// point it at this package's configuration unless the caller chose one.
	if os.Getenv(registry.EnvOverride) == "" {
		os.Setenv(registry.EnvOverride, "testdata/dat.conf")
	}
	goleak.VerifyTestMain(m)
}
