package conformance

import (
	"slices"

	"github.com/godat/godat/api"
)

// pending is a connection request that has arrived and is not answered.
type pending struct {
	srv, cli *node
	c        *end // the requesting EP, ACTIVE_CONNECTION_PENDING
	psp      api.PSP
	q        api.ConnQual
	ev       api.Event // the CONNECTION_REQUEST event
	cr       api.CR
}

// request opens a server and a client IA, listens on the server and sends a
// connection request with private data pd from a new client EP.
func (t *checkT) request(pd []byte) *pending {
	t.T.Helper()
	return t.requestWithin(pd, connTimeout)
}

// requestWithin is request with the connect timeout given.
func (t *checkT) requestWithin(pd []byte, timeout api.Timeout) *pending {
	t.T.Helper()
	srv, cli := t.node(), t.node()
	psp, q := srv.listen(api.PSPConsumer)
	c := cli.end(nil)
	c.connectWithin(srv, q, pd, timeout)
	ev := srv.expectCR("the CONNECTION_REQUEST")
	return &pending{srv: srv, cli: cli, c: c, psp: psp, q: q, ev: ev, cr: ev.CR.CR}
}

// accept accepts the request on s with private data pd and waits for
// ESTABLISHED on both sides; it returns the active side's event.
func (pr *pending) accept(s *end, pd []byte) api.Event {
	t := pr.srv.t
	t.T.Helper()
	t.noErr(pr.cr.Accept(s.ep, pd), "CR.Accept")
	est := pr.c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the active side")
	s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
	return est
}

// connected reports whether s is one of the connected states.
func connected(s api.EPState) bool {
	return s == api.EPConnected || s == api.EPConnectedSinglePath || s == api.EPConnectedMultiPath
}

// wantConnected fails unless ep is connected.
func (t *checkT) wantConnected(ep api.EP, what string) {
	t.T.Helper()
	if s := t.state(ep); !connected(s) {
		t.Fatalf("%s: EP state %v, want CONNECTED", what, s)
	}
}

// maxPD returns the provider's private data limit, failing the check if it
// is below the 64 bytes dat_ia_query(3DAT) guarantees.
func (n *node) maxPD() int {
	n.t.T.Helper()
	m := n.pattr.MaxPrivateDataSize
	if why, ok := n.deviation(DeviationPrivateDataMin64); ok && m > 0 {
		n.t.Logf("%s: using MaxPrivateDataSize %d: the provider declares deviation %q: %s", n.t.ref, m, DeviationPrivateDataMin64, why)
		return m
	}
	if m < 64 {
		n.t.Fatalf("ProviderAttr.MaxPrivateDataSize is %d; dat_ia_query(3DAT) says it is at least 64", m)
	}
	return m
}

// unsupportedQOS returns a QOS value the provider does not support.
func (n *node) unsupportedQOS() (api.QOS, bool) {
	for _, q := range []api.QOS{api.QOSHighThroughput, api.QOSLowLatency, api.QOSEconomy, api.QOSPremium} {
		if n.pattr.QOSSupported&q == 0 {
			return q, true
		}
	}
	return 0, false
}

// connGroups are the connection pages' checks in run order:
// conn_connect.go (connect and the CR calls), conn_listen.go (PSPs and
// RSPs), conn_ep.go (the EP's other connection calls).
var connGroups = slices.Concat(connectGroups, listenGroups, connEPGroups)
