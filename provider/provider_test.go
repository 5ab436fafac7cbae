package provider_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
)

type fake struct{}

// runs numbers the runs of the tests below: the registry is process-wide
// and keeps every name, so under -count=N each run registers names of
// its own.
var runs atomic.Int32

// unique returns name suffixed with this run's number.
func unique(name string) string { return fmt.Sprintf("%s-%d", name, runs.Add(1)) }

func (fake) Open(context.Context, api.OpenParams) (api.IA, error) {
	return nil, api.Errorf(api.NotImplemented, api.NoSubtype, "fake")
}

func TestRegisterLookupNames(t *testing.T) {
	a, b := unique("provider-test-a"), unique("provider-test-b")
	provider.Register(b, fake{})
	provider.Register(a, fake{})
	if p, ok := provider.Lookup(a); !ok || p != (fake{}) {
		t.Errorf("Lookup(%s) = %v, %v; want the registered provider", a, p, ok)
	}
	if p, ok := provider.Lookup("provider-test-none"); ok || p != nil {
		t.Errorf("Lookup of an unregistered name = %v, %v; want nil, false", p, ok)
	}
	names := provider.Names()
	if !slices.IsSorted(names) || !slices.Contains(names, a) || !slices.Contains(names, b) {
		t.Errorf("Names() = %q; want both registered names, sorted", names)
	}
}

func TestRegisterPanics(t *testing.T) {
	dup := unique("provider-test-dup")
	provider.Register(dup, fake{})
	for _, c := range []struct {
		name string
		p    api.Provider
		want string
	}{
		{dup, fake{}, "registered twice"},
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
