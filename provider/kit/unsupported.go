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

// Unsupported is the ErrModelNotSupported error for a call a provider
// leaves out, saying what is missing.
func Unsupported(what string) error {
	return api.Errorf(api.ModelNotSupported, api.NoSubtype, "the provider does not support "+what)
}

// UnsupportedIA answers the IA's optional calls: CNOs with a descriptor,
// shared receive queues and reserved service points.
type UnsupportedIA struct{}

// CreateCNOFD fails: no CNOs with a file descriptor.
func (UnsupportedIA) CreateCNOFD() (api.CNO, int, error) {
	return nil, -1, Unsupported("CNOs with a file descriptor")
}

// CreateEPWithSRQ fails: no shared receive queues.
func (UnsupportedIA) CreateEPWithSRQ(api.PZ, api.EVD, api.EVD, api.EVD, api.SRQ, *api.EPAttr) (api.EP, error) {
	return nil, Unsupported("shared receive queues")
}

// CreateSRQ fails: no shared receive queues.
func (UnsupportedIA) CreateSRQ(api.PZ, api.SRQAttr) (api.SRQ, error) {
	return nil, Unsupported("shared receive queues")
}

// CreateRSP fails: no reserved service points.
func (UnsupportedIA) CreateRSP(api.ConnQual, api.EP, api.EVD) (api.RSP, error) {
	return nil, Unsupported("reserved service points")
}

// UnsupportedPZ answers the PZ's optional call: RMRs.
type UnsupportedPZ struct{}

// CreateRMR fails: no remote memory regions.
func (UnsupportedPZ) CreateRMR() (api.RMR, error) { return nil, Unsupported("RMRs") }

// UnsupportedEP answers the EP's optional calls: duplicate connections and
// the receive counts of dat_ep_recv_query(3DAT), which come with SRQs (the
// page allows DAT_MODEL_NOT_SUPPORTED; the provider then reports
// ProviderAttr.EPRecvInfoSupported as 0). The optional post calls, sends
// that invalidate an RMR and RDMA reads into an RMR, come with the other
// posts from completion.Posts; a provider without them refuses those
// requests in its PostRequest with Unsupported.
type UnsupportedEP struct{}

// RecvQuery fails: no receive buffer counts.
func (UnsupportedEP) RecvQuery() (int, int, error) {
	return 0, 0, Unsupported("dat_ep_recv_query")
}

// DupConnect fails: no dat_ep_dup_connect.
func (UnsupportedEP) DupConnect(api.EP, api.Timeout, []byte, api.QOS) error {
	return Unsupported("dat_ep_dup_connect")
}

// UnsupportedCR answers the CR's optional call: handing a request off.
type UnsupportedCR struct{}

// Handoff fails: no dat_cr_handoff.
func (UnsupportedCR) Handoff(api.ConnQual) error { return Unsupported("dat_cr_handoff") }
