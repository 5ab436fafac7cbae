//go:build !verbs || cgo

package verbs_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// expectUnavailable checks that every IA of testdata/dat.conf is listed
// unavailable with the reason why, and that opening "verbs" through the
// registry fails with ErrProviderNotFound and that reason.
func expectUnavailable(t *testing.T, why string) {
	t.Helper()
	reg, err := registry.Load("")
	if err != nil {
		t.Fatal(err)
	}
	// Every IA of testdata/dat.conf (godat's built-in IAs follow them).
	checked := 0
	for _, pi := range reg.List() {
		if pi.Origin == registry.OriginBuiltIn {
			continue
		}
		checked++
		if pi.Available || pi.Reason != why {
			t.Errorf("IA %s: available=%v reason %q, want unavailable: %q", pi.IAName, pi.Available, pi.Reason, why)
		}
	}
	if checked == 0 {
		t.Error("no IA of the configuration file was listed")
	}
	_, err = reg.Open(context.Background(), "verbs")
	if !errors.Is(err, api.ErrProviderNotFound) || !strings.HasSuffix(err.Error(), ": "+why) {
		t.Errorf("Open = %v, want ErrProviderNotFound ending in %q", err, why)
	}
}
