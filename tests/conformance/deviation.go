package conformance

import "strings"

// DeviationPrefix starts the name of a ProviderAttr.ProviderSpecific entry
// by which a provider declares that one rule of the suite cannot hold on
// its device or transport. The rest of the name is the rule's key (one of
// the Deviation constants), the value says why. The checks of that rule
// then say so by key and reason: either the check is skipped with the
// reason, or it checks the weaker behaviour the constant's comment names
// and logs the reason. A deviation is for a limit of the hardware or the
// wire protocol, not for a feature the provider has yet to implement.
const DeviationPrefix = "conformance.deviation."

// Keys of the rules a provider may declare a deviation from.
const (
	// DeviationPrivateDataMin64: ProviderAttr.MaxPrivateDataSize is below
	// the 64 bytes dat_ia_query(3DAT) asks for. The check of the minimum
	// is skipped; the checks that use private data use the provider's
	// limit.
	DeviationPrivateDataMin64 = "private-data-min-64"
	// DeviationRecvLengthStatus: a receive too small for its message
	// completes with an error status other than DTO_ERR_LOCAL_LENGTH. The
	// check then accepts any error status, and still requires the
	// connection to break.
	DeviationRecvLengthStatus = "recv-length-status"
	// DeviationRMRWindowBounds: the device checks a remote access through
	// an RMR context against the whole LMR, not the RMR's window. The
	// check of an access outside the window but inside the LMR is
	// skipped.
	DeviationRMRWindowBounds = "rmr-window-bounds"
	// DeviationSolicitedNotify: on an EP configured for solicited wait,
	// the receive of a message sent without the solicited flag notifies
	// all the same (the provider cannot tell the two apart). The check
	// that it does not trigger the receive EVD's CNO is skipped; the one
	// that a solicited message wakes a waiter still runs.
	DeviationSolicitedNotify = "solicited-notify"
	// DeviationBindPrivileges: the transport does not require an LMR's
	// privileges to match those of the RMRs bound to it
	// (dat_rmr_bind(3DAT) DESCRIPTION leaves that to the transport), so
	// a bind granting remote write on an LMR without local write, or
	// remote read on one without local read, succeeds. The check then
	// accepts a successful bind.
	DeviationBindPrivileges = "rmr-bind-privileges"
	// DeviationInvalidateScope: the device carries out a
	// send-with-invalidate naming an RMR bound to another EP of the PZ,
	// where the RMR's EP scope would refuse it. The check that the
	// invalidation fails and leaves the RMR bound is skipped.
	DeviationInvalidateScope = "rmr-invalidate-scope"
)

// deviation returns the reason the provider of n gives for not meeting
// rule key, if it declares that.
func (n *node) deviation(key string) (string, bool) {
	for _, a := range n.pattr.ProviderSpecific {
		if strings.HasPrefix(a.Name, DeviationPrefix) && a.Name[len(DeviationPrefix):] == key {
			return a.Value, true
		}
	}
	return "", false
}

// skipForDeviation skips the check when the provider declares a deviation
// from rule key, naming the rule and the provider's reason.
func (t *checkT) skipForDeviation(n *node, key string) {
	t.T.Helper()
	if why, ok := n.deviation(key); ok {
		t.Skipf("the provider declares deviation %q: %s", key, why)
	}
}
