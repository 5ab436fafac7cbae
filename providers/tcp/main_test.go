package tcp

import (
	"os"
	"testing"

	"github.com/godat/godat/internal/testmain"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	// The conformance suite opens "tcp" through the default registry.
	testmain.Run(m, "testdata/dat.conf")
}
