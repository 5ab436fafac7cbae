package verbs_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/godat/godat/registry"
)

func TestMain(m *testing.M) {
	// The tests open IAs through the default registry: point it at this
	// package's configuration unless the caller chose one (the machine's
	// /etc/dat.conf need not have them).
	if os.Getenv(registry.EnvOverride) == "" {
		os.Setenv(registry.EnvOverride, "testdata/dat.conf")
	}
	goleak.VerifyTestMain(m)
}
