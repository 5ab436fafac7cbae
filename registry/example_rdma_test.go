package registry_test

import (
	"context"
	"fmt"

	"github.com/godat/godat/api"
)

// An RDMA write puts bytes into the peer's memory; the peer posts nothing
// and sees no event for it. The server lets the client write 64 bytes of
// its LMR, sending it their remote triplet in the accept's private data;
// the client writes, then sends a message, which reaches the server after
// the written bytes. (newPeer and connect, in example_helpers_test.go,
// set up what Example shows step by step.)
func Example_rdmaWrite() {
	ctx := context.Background()
	srv, cli := newPeer(), newPeer()
	defer srv.close()
	defer cli.close()

	window, err := srv.buf.RemoteTriplet(0, 64).MarshalBinary()
	check(err)
	pd := connect(ctx, cli, srv, srv.ep, window)
	check(srv.ep.PostRecv([]api.LMRTriplet{srv.buf.Triplet(64, 64)}, 1, api.CompletionDefault))

	var remote api.RMRTriplet
	check(remote.UnmarshalBinary(pd))
	n := uint32(copy(cli.mem.Bytes(), "written by the client"))
	check(cli.ep.PostRDMAWrite([]api.LMRTriplet{cli.buf.Triplet(0, n)}, 2, remote, api.CompletionDefault))
	ev, err := api.WaitFor(ctx, cli.evd, api.DTOCompletionEvent)
	check(err)
	fmt.Println("client:", ev.DTO.Op, ev.DTO.Status)
	m := uint32(copy(cli.mem.Bytes()[n:], "done"))
	check(cli.ep.PostSend([]api.LMRTriplet{cli.buf.Triplet(uint64(n), m)}, 3, api.CompletionDefault))
	_, err = api.WaitFor(ctx, cli.evd, api.DTOCompletionEvent)
	check(err)

	ev, err = api.WaitFor(ctx, srv.evd, api.DTOCompletionEvent)
	check(err)
	// (Needed where ProviderAttr.LMRSyncRequired is set, harmless elsewhere.)
	check(srv.ia.SyncRDMAWrite([]api.LMRTriplet{srv.buf.Triplet(0, 64)}))
	mem := srv.mem.Bytes()
	fmt.Printf("server: %v of %q; its memory holds %q\n", ev.DTO.Op, mem[64:64+ev.DTO.Length], mem[:n])
	// Output:
	// client: RDMA_WRITE SUCCESS
	// server: RECEIVE of "done"; its memory holds "written by the client"
}

// An RDMA read fetches bytes from the peer's memory. Here the server
// grants it through an RMR: a window over 32 bytes of its LMR, bound on
// the connection's EP with remote read only, which it withdraws by
// freeing the RMR while the LMR stays. It sends the window's triplet in
// a message; the client reads through it.
func Example_rdmaRead() {
	ctx := context.Background()
	srv, cli := newPeer(), newPeer()
	defer srv.close()
	defer cli.close()
	connect(ctx, cli, srv, srv.ep, nil)

	copy(srv.mem.Bytes()[128:], "read by the client")
	check(srv.ia.SyncRDMARead([]api.LMRTriplet{srv.buf.Triplet(128, 32)})) // (as SyncRDMAWrite above)
	rmr, err := srv.pz.CreateRMR()
	check(err)
	_, err = rmr.Bind(srv.lmr, srv.buf.Triplet(128, 32), api.MemPrivRemoteRead, api.VATypeVA, srv.ep, 1, api.CompletionDefault)
	check(err)
	_, err = api.WaitFor(ctx, srv.evd, api.RMRBindCompletionEvent)
	check(err)
	bound, err := rmr.Query()
	check(err)

	check(cli.ep.PostRecv([]api.LMRTriplet{cli.buf.Triplet(0, api.RMRTripletSize)}, 2, api.CompletionDefault))
	msg, err := bound.Triplet(0, 18).MarshalBinary()
	check(err)
	copy(srv.mem.Bytes(), msg)
	check(srv.ep.PostSend([]api.LMRTriplet{srv.buf.Triplet(0, uint32(len(msg)))}, 3, api.CompletionDefault))
	_, err = api.WaitFor(ctx, srv.evd, api.DTOCompletionEvent)
	check(err)

	ev, err := api.WaitFor(ctx, cli.evd, api.DTOCompletionEvent)
	check(err)
	var remote api.RMRTriplet
	check(remote.UnmarshalBinary(cli.mem.Bytes()[:ev.DTO.Length]))
	check(cli.ep.PostRDMARead([]api.LMRTriplet{cli.buf.Triplet(64, remote.Length)}, 4, remote, api.CompletionDefault))
	ev, err = api.WaitFor(ctx, cli.evd, api.DTOCompletionEvent)
	check(err)
	fmt.Printf("client: %v of %d bytes: %q\n", ev.DTO.Op, ev.DTO.Length, cli.mem.Bytes()[64:64+ev.DTO.Length])
	check(rmr.Free())
	// Output:
	// client: RDMA_READ of 18 bytes: "read by the client"
}
