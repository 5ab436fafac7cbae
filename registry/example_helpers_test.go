package registry_test

import (
	"context"
	"log"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// The examples beside Example share the set-up that it shows step by
// step: a peer (an IA with a PZ, one EVD, an EP and a page of registered
// memory) and a connection between two EPs.

// peer is one side of an example: an IA of the in-process loopback
// provider, a protection zone, one EVD for its completions and connection
// events, an EP (nil from openPeer), and a page of memory from
// AllocMemory registered as an LMR with every privilege, described by
// buf.
type peer struct {
	ia  api.IA
	pz  api.PZ
	evd api.EVD
	ep  api.EP
	mem *api.Memory
	lmr api.LMR
	buf api.LMRParam
}

// exampleRegistry has one IA, "lo", of the loopback provider.
var exampleRegistry = func() *registry.Registry {
	cfg, err := registry.ParseConfig("example.conf", []byte(`
[[ia]]
name        = "lo"
provider    = "loopback"
api_version = "u2.0"
`))
	check(err)
	return registry.New(cfg)
}()

// openPeer opens a peer without an EP.
func openPeer() *peer {
	p := &peer{}
	var err error
	p.ia, err = exampleRegistry.Open(context.Background(), "lo")
	check(err)
	p.pz, err = p.ia.CreatePZ()
	check(err)
	p.evd, err = p.ia.CreateEVD(16, nil, api.EVDDTO|api.EVDConnection|api.EVDCR|api.EVDRMRBind)
	check(err)
	p.mem, err = api.AllocMemory(4096)
	check(err)
	// MemTypeVirtual memory from AllocMemory suits every provider.
	p.lmr, err = p.ia.CreateLMR(p.pz, api.Region{Type: api.MemTypeVirtual, Bytes: p.mem.Bytes()}, api.MemPrivAll, api.VATypeVA)
	check(err)
	p.buf, err = p.lmr.Query()
	check(err)
	return p
}

// newPeer opens a peer with an EP whose queues all report to its EVD.
func newPeer() *peer {
	p := openPeer()
	var err error
	p.ep, err = p.ia.CreateEP(p.pz, p.evd, p.evd, p.evd, nil)
	check(err)
	return p
}

// close closes the peer's IA, which frees all its objects, then its
// memory.
func (p *peer) close() {
	check(p.ia.Close(api.CloseAbrupt))
	check(p.mem.Free())
}

// send posts a send, with cookie 1, of text, which it copies to the start
// of p's memory.
func (p *peer) send(text string) {
	n := uint32(copy(p.mem.Bytes(), text))
	check(p.ep.PostSend([]api.LMRTriplet{p.buf.Triplet(0, n)}, 1, api.CompletionDefault))
}

// connect connects the EP of cli to srvEP, an EP of srv whose connection
// events go to srv's EVD, and returns the private data the client got
// with the connection: srv listens on a free connection qualifier, cli
// connects to it, srv accepts with private data pd, and both see
// CONNECTION_ESTABLISHED.
func connect(ctx context.Context, cli, srv *peer, srvEP api.EP, pd []byte) []byte {
	psp, q, err := srv.ia.CreatePSPAny(srv.evd, api.PSPConsumer)
	check(err)
	defer psp.Free()
	attr, _, err := srv.ia.Query()
	check(err)
	check(cli.ep.Connect(attr.Address, q, api.TimeoutInfinite, nil, api.QOSBestEffort, api.ConnectDefault))
	req, err := api.WaitFor(ctx, srv.evd, api.ConnectionRequestEvent)
	check(err)
	check(req.CR.CR.Accept(srvEP, pd))
	_, err = api.WaitFor(ctx, srv.evd, api.ConnectionEstablishedEvent)
	check(err)
	est, err := api.WaitFor(ctx, cli.evd, api.ConnectionEstablishedEvent)
	check(err)
	return est.Conn.PrivateData
}

// connectedPeers returns a server and a client peer connected EP to EP,
// for a test; both close when the test ends.
func connectedPeers(t *testing.T) (srv, cli *peer) {
	srv, cli = newPeer(), newPeer()
	t.Cleanup(srv.close)
	t.Cleanup(cli.close)
	connect(context.Background(), cli, srv, srv.ep, nil)
	return srv, cli
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
