package verbs

import (
	"context"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
)

// NoSupportReason is why a build without the verbs tag cannot open verbs
// IAs; the registry and datinfo show it word for word.
const NoSupportReason = "built without verbs support (build with -tags verbs)"

func init() { provider.Register("verbs", Provider{}) }

// Provider is the verbs provider. The package registers one under the
// name "verbs" in every build; only a build with the verbs tag (and cgo)
// can open its IAs. The zero value is ready for use.
type Provider struct{}

// Open opens the IA on the RDMA device and port that p.Params names (see
// the package doc for the forms it takes) with an async EVD of at least
// p.AsyncEVDQLen events (dat_ia_open(3DAT)). It fails with
// ErrProviderNotFound and a reason when the build has no verbs support,
// when rdma-core finds no device, or when p.Params names no device, port
// or address of one.
func (Provider) Open(ctx context.Context, p api.OpenParams) (api.IA, error) {
	if ctx.Err() != nil {
		return nil, api.ContextError(ctx)
	}
	return open(ctx, p)
}

// Unavailable says why no verbs IA can be opened at all, or "" when one
// may be: the build lacks verbs support, or rdma-core lists no RDMA device
// (provider.Availability). Whether iaParams names one of the devices is
// left to Open, whose error says what it looked for.
func (Provider) Unavailable(iaParams string) string { return unavailable() }
