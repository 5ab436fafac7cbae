package tcp

import (
	"testing"

	"github.com/godat/godat/tests/conformance"
)

// TestConformance runs the shared DAT conformance suite against the IA
// "tcp" on 127.0.0.1; both ends of every connection live in this process
// and talk over real TCP sockets.
func TestConformance(t *testing.T) { conformance.Run(t, "tcp") }

// TestConformanceSerialized runs it with the IA configured non-thread-safe,
// so that every call goes through the guard's serialization.
func TestConformanceSerialized(t *testing.T) { conformance.Run(t, "tcp-serial") }
