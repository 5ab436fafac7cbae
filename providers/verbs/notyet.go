//go:build verbs && cgo

package verbs

import "github.com/godat/godat/api"

// notYet is the error of the parts of the provider that are still to be
// written: RMRs, SRQs, RSPs and the rarer EP operations.
func notYet(what string) error {
	return api.Errorf(api.NotImplemented, api.NoSubtype, "verbs provider: "+what+" are not implemented yet")
}

// CreateSRQ is not implemented yet (dat_srq_create(3DAT)).
func (i *ia) CreateSRQ(api.PZ, api.SRQAttr) (api.SRQ, error) {
	return nil, notYet("shared receive queues")
}
