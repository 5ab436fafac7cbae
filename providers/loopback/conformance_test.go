package loopback_test

import (
	"testing"

	_ "github.com/godat/godat/providers/loopback"
	"github.com/godat/godat/tests/conformance"
)

// TestConformance runs the shared DAT conformance suite against the IA
// "loopback" (TestMain points DAT_OVERRIDE at testdata/dat.conf unless it
// is set).
func TestConformance(t *testing.T) { conformance.Run(t, "loopback") }

// TestConformanceSerialized runs it again with the IA configured
// non-thread-safe, so that every call goes through the guard's
// serialization.
func TestConformanceSerialized(t *testing.T) { conformance.Run(t, "loopback-serial") }
