package loopback_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/godat/godat/api"
	_ "github.com/godat/godat/providers/loopback"
	"github.com/godat/godat/registry"
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

// TestConformanceHooked runs the suite with the guard's hooks on (counting
// and tracing every call, data path included, the trace discarded): the
// hooks must change no result, and each IA must have counted its calls.
func TestConformanceHooked(t *testing.T) {
	r, err := registry.Default()
	if err != nil {
		t.Fatal(err)
	}
	discard := registry.WithTraceLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	var mu sync.Mutex
	var opened []api.IA
	conformance.RunWith(t, func(ctx context.Context) (api.IA, error) {
		ia, err := r.Open(ctx, "loopback-hooked", discard)
		if err == nil {
			mu.Lock()
			opened = append(opened, ia)
			mu.Unlock()
		}
		return ia, err
	})
	if len(opened) == 0 {
		t.Fatal("the suite opened no IA")
	}
	for _, ia := range opened {
		counts, err := registry.Counts(ia)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(counts, func(c registry.OpCount) bool { return c.Op == "IA.Close" && c.Calls > 0 }) {
			t.Fatalf("an IA of the suite counted no IA.Close: %v", counts)
		}
	}
}
