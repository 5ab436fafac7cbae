//go:build verbs && cgo

package verbs

import "github.com/godat/godat/api"

// notYet is the error of the parts of the provider that are still to be
// written: endpoints, service points, RMRs and SRQs.
func notYet(what string) error {
	return api.Errorf(api.NotImplemented, api.NoSubtype, "verbs provider: "+what+" are not implemented yet")
}

// CreateEP is not implemented yet (dat_ep_create(3DAT)).
func (i *ia) CreateEP(api.PZ, api.EVD, api.EVD, api.EVD, *api.EPAttr) (api.EP, error) {
	return nil, notYet("endpoints")
}

// CreateEPWithSRQ is not implemented yet (dat_ep_create_with_srq(3DAT)).
func (i *ia) CreateEPWithSRQ(api.PZ, api.EVD, api.EVD, api.EVD, api.SRQ, *api.EPAttr) (api.EP, error) {
	return nil, notYet("endpoints")
}

// CreatePSP is not implemented yet (dat_psp_create(3DAT)).
func (i *ia) CreatePSP(api.ConnQual, api.EVD, api.PSPFlags) (api.PSP, error) {
	return nil, notYet("public service points")
}

// CreatePSPAny is not implemented yet (dat_psp_create_any(3DAT)).
func (i *ia) CreatePSPAny(api.EVD, api.PSPFlags) (api.PSP, api.ConnQual, error) {
	return nil, 0, notYet("public service points")
}

// CreateRSP is not implemented yet (dat_rsp_create(3DAT)).
func (i *ia) CreateRSP(api.ConnQual, api.EP, api.EVD) (api.RSP, error) {
	return nil, notYet("reserved service points")
}

// CreateSRQ is not implemented yet (dat_srq_create(3DAT)).
func (i *ia) CreateSRQ(api.PZ, api.SRQAttr) (api.SRQ, error) {
	return nil, notYet("shared receive queues")
}
