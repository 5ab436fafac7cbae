//go:build verbs && cgo

package verbs_test

import (
	"testing"

	"github.com/godat/godat/tests/conformance"
)

// TestConformance runs the shared DAT conformance suite against the IA
// "verbs" (rxe0 in the rxe VM; TestMain points DAT_OVERRIDE at
// testdata/dat.conf unless it is set).
func TestConformance(t *testing.T) {
	needDevice(t)
	conformance.Run(t, "verbs")
}
