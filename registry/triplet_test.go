package registry_test

import (
	"context"
	"testing"

	"github.com/godat/godat/api"
)

// The remote triplets of api.LMRParam.RemoteTriplet and
// api.RMRParam.Triplet name the bytes they are meant to on a provider: an
// RDMA read through each, from an offset inside the window, fetches the
// bytes at that offset, for windows bound with either VA type.
func TestRemoteTripletsReadTheirBytes(t *testing.T) {
	ctx := context.Background()
	srv, cli := connectedPeers(t)
	for i := range srv.mem.Bytes() {
		srv.mem.Bytes()[i] = byte(i * 7)
	}
	read := func(what string, remote api.RMRTriplet, want []byte) {
		t.Helper()
		clear(cli.mem.Bytes())
		if err := cli.ep.PostRDMARead([]api.LMRTriplet{cli.buf.Triplet(0, remote.Length)}, 1, remote, api.CompletionDefault); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if _, err := api.WaitFor(ctx, cli.evd, api.DTOCompletionEvent); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := cli.mem.Bytes()[:remote.Length]; string(got) != string(want) {
			t.Errorf("%s read % x, want % x", what, got, want)
		}
	}
	read("LMRParam.RemoteTriplet(300, 40)", srv.buf.RemoteTriplet(300, 40), srv.mem.Bytes()[300:340])
	for _, va := range []api.VAType{api.VATypeVA, api.VATypeZB} {
		rmr, err := srv.pz.CreateRMR()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rmr.Bind(srv.lmr, srv.buf.Triplet(1000, 100), api.MemPrivRemoteRead, va, srv.ep, 2, api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		if _, err := api.WaitFor(ctx, srv.evd, api.RMRBindCompletionEvent); err != nil {
			t.Fatal(err)
		}
		prm, err := rmr.Query()
		if err != nil {
			t.Fatal(err)
		}
		read("RMRParam.Triplet(20, 30) of a window bound with VA type "+map[api.VAType]string{api.VATypeVA: "VA", api.VATypeZB: "ZB"}[va],
			prm.Triplet(20, 30), srv.mem.Bytes()[1020:1050])
		if err := rmr.Free(); err != nil {
			t.Fatal(err)
		}
	}
}
