package registry_test

import (
	"context"
	"fmt"
	"slices"

	"github.com/godat/godat/api"
)

// A shared receive queue (SRQ) holds receive buffers for several EPs: the
// server posts them once, on the SRQ, and a message on any connection
// takes the next. Here the server has two EPs on one SRQ, one for each of
// two clients, and client b sends first.
func Example_srq() {
	ctx := context.Background()
	srv, a, b := openPeer(), newPeer(), newPeer()
	defer srv.close()
	defer a.close()
	defer b.close()

	srq, err := srv.ia.CreateSRQ(srv.pz, api.SRQAttr{MaxRecvDTOs: 4, MaxRecvIOV: 1})
	check(err)
	var eps []api.EP
	for _, cli := range []*peer{a, b} {
		ep, err := srv.ia.CreateEPWithSRQ(srv.pz, srv.evd, srv.evd, srv.evd, srq, &api.EPAttr{})
		check(err)
		connect(ctx, cli, srv, ep, nil)
		eps = append(eps, ep)
	}
	for i := range 2 {
		check(srq.PostRecv([]api.LMRTriplet{srv.buf.Triplet(uint64(i)*64, 64)}, api.Cookie(i)))
	}

	for _, m := range []struct {
		from *peer
		text string
	}{{b, "hello from b"}, {a, "hello from a"}} {
		m.from.send(m.text)
		ev, err := api.WaitFor(ctx, srv.evd, api.DTOCompletionEvent)
		check(err)
		at := int(ev.DTO.Cookie) * 64
		fmt.Printf("server: EP %d received %q in buffer %d\n", slices.Index(eps, ev.DTO.EP), srv.mem.Bytes()[at:at+int(ev.DTO.Length)], ev.DTO.Cookie)
	}
	// Output:
	// server: EP 1 received "hello from b" in buffer 0
	// server: EP 0 received "hello from a" in buffer 1
}
