package registry

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the package's tests and
// examples (the IAs they open are closed).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
