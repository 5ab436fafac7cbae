package registry_test

import (
	"context"
	"fmt"
	"slices"

	"github.com/godat/godat/api"
)

// A CNO lets one goroutine wait for the events of many EVDs. Here each of
// the server's two connections has an EVD of its own for receives, both
// feeding one CNO; the server waits on the CNO, which names the EVD that
// got an event, and dequeues it there. (Example_cnoFD waits for a CNO in
// poll(2).)
func Example_cno() {
	ctx := context.Background()
	srv, a, b := openPeer(), newPeer(), newPeer()
	defer srv.close()
	defer a.close()
	defer b.close()

	cno, err := srv.ia.CreateCNO(nil)
	check(err)
	var recv []api.EVD
	for i, cli := range []*peer{a, b} {
		evd, err := srv.ia.CreateEVD(8, cno, api.EVDDTO)
		check(err)
		ep, err := srv.ia.CreateEP(srv.pz, evd, srv.evd, srv.evd, nil)
		check(err)
		connect(ctx, cli, srv, ep, nil)
		check(ep.PostRecv([]api.LMRTriplet{srv.buf.Triplet(uint64(i)*64, 64)}, api.Cookie(i), api.CompletionDefault))
		recv = append(recv, evd)
	}

	for _, m := range []struct {
		from *peer
		text string
	}{{b, "hello from b"}, {a, "hello from a"}} {
		m.from.send(m.text)
		evd, err := cno.Wait(ctx)
		check(err)
		var ev api.Event
		check(evd.Dequeue(&ev))
		at := int(ev.DTO.Cookie) * 64
		fmt.Printf("server: the CNO names the EVD of connection %d: %q\n", slices.Index(recv, evd), srv.mem.Bytes()[at:at+int(ev.DTO.Length)])
	}
	// Output:
	// server: the CNO names the EVD of connection 1: "hello from b"
	// server: the CNO names the EVD of connection 0: "hello from a"
}
