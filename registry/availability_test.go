package registry

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
)

// absentProvider is a provider whose hardware is never there: it says so
// through Availability and must never be asked to open.
type absentProvider struct{}

func (absentProvider) Open(context.Context, api.OpenParams) (api.IA, error) {
	panic("Open called on a provider that said it is unavailable")
}

func (absentProvider) Unavailable(iaParams string) string { return "no device for " + iaParams }

func init() { provider.Register("absenttest", absentProvider{}) }

func TestAvailabilityMakesIAUnavailable(t *testing.T) {
	r := New(mustParse(t, "avail.conf", []byte(`
[[ia]]
name = "gone"
provider = "absenttest"
api_version = "u2.0"
ia_params = "dev0 1"
`)))
	l := r.List()
	if len(l) != 1 || l[0].Available || l[0].Reason != "no device for dev0 1" {
		t.Fatalf("List = %+v, want unavailable with the provider's reason word for word", l)
	}
	_, err := r.Open(context.Background(), "gone")
	if !errors.Is(err, api.ErrProviderNotFound) || !strings.HasSuffix(err.Error(), ": no device for dev0 1") {
		t.Fatalf("Open = %v, want ErrProviderNotFound ending in the reason", err)
	}
}
