package host_test

import (
	"context"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/host"
	"github.com/godat/godat/tests/conformance"
)

// The example plugin (godat's loopback provider out of process) passes the
// whole conformance suite through the plugin host: every operation,
// attribute and event crosses the process boundary.
func TestConformance(t *testing.T) {
	r := loadRegistry(t, writeConfig(t, examplePath, "", "lp0"))
	conformance.RunWith(t, func(ctx context.Context) (api.IA, error) { return r.Open(ctx, "lp0") })
}

// The same with every post made by a call, the path of a post that the
// submission ring cannot take (too many segments, a full ring, a queue
// of suppressed requests): each DTO's arguments then cross in the
// protocol's own messages.
func TestConformanceByCall(t *testing.T) {
	defer host.SetPostByCall()()
	r := loadRegistry(t, writeConfig(t, examplePath, "", "lpc"))
	conformance.RunWith(t, func(ctx context.Context) (api.IA, error) { return r.Open(ctx, "lpc") })
}
