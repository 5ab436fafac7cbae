package verbs_test

import (
	"testing"

	"github.com/godat/godat/internal/testmain"
)

// The tests open IAs through the default registry.
func TestMain(m *testing.M) { testmain.Run(m, "testdata/dat.conf") }
