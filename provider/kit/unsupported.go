package kit

import "github.com/godat/godat/api"

// The Unsupported bases fill in the optional calls of the provider
// interface table, the way rdma-core's verbs_dummy_ops does: a provider
// embeds the base in its object type and defines the calls it supports;
// Go's method promotion lets its own definitions win. Every call left to
// a base fails with ErrModelNotSupported and says what is missing.
//
// The provider's attributes must agree with what it leaves out (for
// instance ProviderAttr.SRQSupported false, IAAttr.MaxRMRs 0), so that
// consumers know not to ask for it. The conformance suite skips the
// checks of a feature whose absence the attributes can state (SRQs, PSPs
// that create EPs, EP receive counts) and checks the others all the same
// (docs/decisions.md, "The provider kit").

func unsupported(what string) error {
	return api.Errorf(api.ModelNotSupported, api.NoSubtype, "the provider does not support "+what)
}

// UnsupportedIA answers the IA's optional calls: CNOs with a descriptor,
// shared receive queues and reserved service points.
type UnsupportedIA struct{}

// CreateCNOFD fails: no CNOs with a file descriptor.
func (UnsupportedIA) CreateCNOFD() (api.CNO, int, error) {
	return nil, -1, unsupported("CNOs with a file descriptor")
}

// CreateEPWithSRQ fails: no shared receive queues.
func (UnsupportedIA) CreateEPWithSRQ(api.PZ, api.EVD, api.EVD, api.EVD, api.SRQ, *api.EPAttr) (api.EP, error) {
	return nil, unsupported("shared receive queues")
}

// CreateSRQ fails: no shared receive queues.
func (UnsupportedIA) CreateSRQ(api.PZ, api.SRQAttr) (api.SRQ, error) {
	return nil, unsupported("shared receive queues")
}

// CreateRSP fails: no reserved service points.
func (UnsupportedIA) CreateRSP(api.ConnQual, api.EP, api.EVD) (api.RSP, error) {
	return nil, unsupported("reserved service points")
}

// UnsupportedPZ answers the PZ's optional call: RMRs.
type UnsupportedPZ struct{}

// CreateRMR fails: no remote memory regions.
func (UnsupportedPZ) CreateRMR() (api.RMR, error) { return nil, unsupported("RMRs") }

// UnsupportedEP answers the EP's optional calls: duplicate connections,
// sends that invalidate an RMR, RDMA reads into an RMR, and the receive
// counts of dat_ep_recv_query(3DAT), which come with SRQs (the page allows
// DAT_MODEL_NOT_SUPPORTED; the provider then reports
// ProviderAttr.EPRecvInfoSupported as 0).
type UnsupportedEP struct{}

// RecvQuery fails: no receive buffer counts.
func (UnsupportedEP) RecvQuery() (int, int, error) {
	return 0, 0, unsupported("dat_ep_recv_query")
}

// DupConnect fails: no dat_ep_dup_connect.
func (UnsupportedEP) DupConnect(api.EP, api.Timeout, []byte, api.QOS) error {
	return unsupported("dat_ep_dup_connect")
}

// PostSendWithInvalidate fails: no remote invalidation.
func (UnsupportedEP) PostSendWithInvalidate([]api.LMRTriplet, api.Cookie, api.CompletionFlags, bool, api.RMRContext) error {
	return unsupported("sends with invalidate")
}

// PostRDMAReadToRMR fails: no RDMA reads into an RMR.
func (UnsupportedEP) PostRDMAReadToRMR(api.RMRTriplet, api.Cookie, api.RMRTriplet, api.CompletionFlags) error {
	return unsupported("RDMA reads into an RMR")
}

// UnsupportedCR answers the CR's optional call: handing a request off.
type UnsupportedCR struct{}

// Handoff fails: no dat_cr_handoff.
func (UnsupportedCR) Handoff(api.ConnQual) error { return unsupported("dat_cr_handoff") }
