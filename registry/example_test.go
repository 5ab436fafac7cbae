package registry_test

import (
	"context"
	"fmt"
	"log"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"

	_ "github.com/godat/godat/providers/loopback" // the provider the configuration names
)

// The life of a DAT connection, from configuration to disconnect: two
// IAs of the in-process loopback provider, a server that listens on a PSP
// and a client that connects to it with private data, one message sent
// into a posted receive, and a graceful disconnect. The same calls run
// unchanged on the tcp and verbs providers, with the two sides in
// different processes or hosts; only the configuration changes.
func Example() {
	ctx := context.Background()
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}

	// A configuration of one IA, "lo". Programs usually rely on
	// registry.Open, which reads $DAT_OVERRIDE or /etc/dat.conf.
	cfg, err := registry.ParseConfig("example.conf", []byte(`
[[ia]]
name        = "lo"
provider    = "loopback"
api_version = "u2.0"
`))
	check(err)
	reg := registry.New(cfg)

	// Each side: an IA, a protection zone, one event dispatcher for its
	// completions and connection events, an endpoint, and registered
	// memory from AllocMemory (which every provider accepts).
	type side struct {
		ia  api.IA
		pz  api.PZ
		evd api.EVD
		ep  api.EP
		mem *api.Memory
		lmr api.LMR
		buf api.LMRParam
	}
	open := func() *side {
		s := &side{}
		s.ia, err = reg.Open(ctx, "lo")
		check(err)
		s.pz, err = s.ia.CreatePZ()
		check(err)
		s.evd, err = s.ia.CreateEVD(16, nil, api.EVDDTO|api.EVDConnection|api.EVDCR)
		check(err)
		s.ep, err = s.ia.CreateEP(s.pz, s.evd, s.evd, s.evd, nil)
		check(err)
		s.mem, err = api.AllocMemory(4096)
		check(err)
		s.lmr, err = s.ia.CreateLMR(s.pz, api.Region{Type: api.MemTypeVirtual, Bytes: s.mem.Bytes()}, api.MemPrivAll, api.VATypeVA)
		check(err)
		s.buf, err = s.lmr.Query()
		check(err)
		return s
	}
	next := func(s *side) api.Event {
		var ev api.Event
		_, err := s.evd.Wait(ctx, 1, &ev)
		check(err)
		return ev
	}
	srv, cli := open(), open()

	// The server listens on a free connection qualifier; the client
	// connects to the server IA's address and that qualifier.
	_, q, err := srv.ia.CreatePSPAny(srv.evd, api.PSPConsumer)
	check(err)
	srvAttr, _, err := srv.ia.Query()
	check(err)
	check(cli.ep.Connect(srvAttr.Address, q, api.TimeoutInfinite, []byte("hello?"), 0, 0))

	req := next(srv) // CONNECTION_REQUEST
	prm, err := req.CR.CR.Query()
	check(err)
	fmt.Printf("server: %v with private data %q\n", req.Number, prm.PrivateData)
	check(req.CR.CR.Accept(srv.ep, []byte("welcome")))
	fmt.Println("server:", next(srv).Number)
	est := next(cli)
	fmt.Printf("client: %v with private data %q\n", est.Number, est.Conn.PrivateData)

	// A receive is posted before the message that fills it arrives.
	check(srv.ep.PostRecv([]api.LMRTriplet{srv.buf.Triplet(0, 64)}, 1, api.CompletionDefault))
	msg := copy(cli.mem.Bytes(), "hello, DAT")
	check(cli.ep.PostSend([]api.LMRTriplet{cli.buf.Triplet(0, uint32(msg))}, 2, api.CompletionDefault))

	got := next(srv).DTO
	fmt.Printf("server: receive %d completed: %v, %q\n", got.Cookie, got.Status, srv.mem.Bytes()[:got.Length])
	sent := next(cli).DTO
	fmt.Printf("client: send %d completed: %v\n", sent.Cookie, sent.Status)

	// A graceful disconnect: both sides see DISCONNECTED.
	check(cli.ep.Disconnect(api.CloseGraceful))
	fmt.Println("client:", next(cli).Number)
	fmt.Println("server:", next(srv).Number)

	for _, s := range []*side{cli, srv} {
		check(s.ep.Free())
		check(s.lmr.Free())
		check(s.mem.Free())
		check(s.ia.Close(api.CloseAbrupt))
	}
	// Output:
	// server: CONNECTION_REQUEST with private data "hello?"
	// server: CONNECTION_ESTABLISHED
	// client: CONNECTION_ESTABLISHED with private data "welcome"
	// server: receive 1 completed: SUCCESS, "hello, DAT"
	// client: send 2 completed: SUCCESS
	// client: CONNECTION_DISCONNECTED
	// server: CONNECTION_DISCONNECTED
}
