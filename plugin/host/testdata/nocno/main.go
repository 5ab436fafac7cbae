// Command nocno serves godat's loopback provider with its CNOs left out,
// as a vendor's provider without CNO support would be: the plugin host
// cannot serve it (see "For vendors" in the plugin package documentation).
package main

import (
	"context"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin"
	"github.com/godat/godat/providers/loopback"
)

// provider is loopback.Provider whose IAs refuse to create CNOs.
type provider struct{ loopback.Provider }

func (p provider) Open(ctx context.Context, op api.OpenParams) (api.IA, error) {
	ia, err := p.Provider.Open(ctx, op)
	if err != nil {
		return nil, err
	}
	return noCNO{ia}, nil
}

// noCNO is an IA without CNOs.
type noCNO struct{ api.IA }

func (noCNO) CreateCNO(api.WaitAgent) (api.CNO, error) {
	return nil, api.Errorf(api.NotImplemented, api.NoSubtype, "this provider has no CNOs")
}

func main() { plugin.Serve(provider{}, plugin.WithName("nocno")) }
