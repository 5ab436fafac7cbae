//go:build !verbs || !cgo

package verbs

import (
	"context"

	"github.com/godat/godat/api"
)

// Supported reports whether this build can drive RDMA devices.
const Supported = false

func open(context.Context, api.OpenParams) (api.IA, error) {
	return nil, api.Errorf(api.ProviderNotFound, api.SubNameNotRegistered, unavailable())
}
