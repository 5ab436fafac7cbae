package provider_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
)

type fake struct{}

func (fake) Open(context.Context, api.OpenParams) (api.IA, error) {
	return nil, api.Errorf(api.NotImplemented, api.NoSubtype, "fake")
}

func TestRegisterLookupNames(t *testing.T) {
	provider.Register("provider-test-b", fake{})
	provider.Register("provider-test-a", fake{})
	if p, ok := provider.Lookup("provider-test-a"); !ok || p != (fake{}) {
		t.Errorf("Lookup(provider-test-a) = %v, %v; want the registered provider", p, ok)
	}
	if p, ok := provider.Lookup("provider-test-none"); ok || p != nil {
		t.Errorf("Lookup of an unregistered name = %v, %v; want nil, false", p, ok)
	}
	names := provider.Names()
	if !slices.IsSorted(names) || !slices.Contains(names, "provider-test-a") || !slices.Contains(names, "provider-test-b") {
		t.Errorf("Names() = %q; want both registered names, sorted", names)
	}
}

func TestRegisterPanics(t *testing.T) {
	provider.Register("provider-test-dup", fake{})
	for _, c := range []struct {
		name string
		p    api.Provider
		want string
	}{
		{"provider-test-dup", fake{}, "registered twice"},
		{"provider-test-nil", nil, "nil provider"},
	} {
		func() {
			defer func() {
				r, _ := recover().(string)
				if !strings.Contains(r, c.want) {
					t.Errorf("Register(%q, %v) panicked with %q; want a panic saying %q", c.name, c.p, r, c.want)
				}
			}()
			provider.Register(c.name, c.p)
		}()
	}
	if _, ok := provider.Lookup("provider-test-nil"); ok {
		t.Error("a nil provider was registered")
	}
}
