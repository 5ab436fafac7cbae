//go:build !verbs

package verbs_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/providers/verbs"
	"github.com/godat/godat/registry"
)

// TestUnsupportedBuild checks that a build without verbs support still
// knows the provider and says, in the listing and on open, why its IAs
// cannot be used.
func TestUnsupportedBuild(t *testing.T) {
	if verbs.Supported {
		t.Fatal("Supported is true in a build without the verbs tag and cgo")
	}
	if !strings.Contains(strings.Join(registry.Providers(), " "), "verbs") {
		t.Fatalf("providers %v do not include verbs", registry.Providers())
	}
	const want = "built without verbs support (build with -tags verbs)"
	if verbs.NoSupportReason != want {
		t.Fatalf("NoSupportReason = %q, want %q", verbs.NoSupportReason, want)
	}
	expectUnavailable(t, want)
	// The provider itself, called without the registry, says the same.
	_, err := verbs.Provider{}.Open(context.Background(), api.OpenParams{Name: "verbs", Params: "rxe0 1", AsyncEVDQLen: 8})
	if !errors.Is(err, api.ErrProviderNotFound) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Provider.Open = %v, want ErrProviderNotFound with %q", err, want)
	}
}
