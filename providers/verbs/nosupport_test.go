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
	reg, err := registry.Load("")
	if err != nil {
		t.Fatal(err)
	}
	const want = "built without verbs support (build with -tags verbs)"
	if verbs.NoSupportReason != want {
		t.Fatalf("NoSupportReason = %q, want %q", verbs.NoSupportReason, want)
	}
	// Every IA of testdata/dat.conf (godat's built-in IAs follow them).
	checked := 0
	for _, pi := range reg.List() {
		if pi.Origin == registry.OriginBuiltIn {
			continue
		}
		checked++
		if pi.Available || pi.Reason != want {
			t.Errorf("IA %s: available=%v reason %q, want unavailable: %q", pi.IAName, pi.Available, pi.Reason, want)
		}
	}
	if checked == 0 {
		t.Error("no IA of the configuration file was listed")
	}
	_, err = reg.Open(context.Background(), "verbs")
	if !errors.Is(err, api.ErrProviderNotFound) || !strings.HasSuffix(err.Error(), ": "+want) {
		t.Fatalf("Open = %v, want ErrProviderNotFound ending in %q", err, want)
	}
	// The provider itself, called without the registry, says the same.
	_, err = verbs.Provider{}.Open(context.Background(), api.OpenParams{Name: "verbs", Params: "rxe0 1", AsyncEVDQLen: 8})
	if !errors.Is(err, api.ErrProviderNotFound) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Provider.Open = %v, want ErrProviderNotFound with %q", err, want)
	}
}
