package registry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// Where the provider, not the guard, refuses a free or a graceful close
// (the loopback provider here), the guard's error still names the object
// and what holds it, keeps the provider's code, subtype and words.
func TestProviderInUseNamesObjects(t *testing.T) {
	ctx := context.Background()
	srv, _ := connectedPeers(t)
	name := registry.HandleName
	refused := func(err error, sub api.Subtype, want string) {
		t.Helper()
		if !errors.Is(err, &api.Error{Type: api.InvalidState, Sub: sub}) {
			t.Fatalf("got %v, want DAT_INVALID_STATE(%v)", err, sub)
		}
		if got := err.(*api.Error).Msg; got != want {
			t.Errorf("message %q, want %q", got, want)
		}
	}

	// An RMR bound to the LMR: only the provider knows the binding.
	rmr, err := srv.pz.CreateRMR()
	check(err)
	_, err = rmr.Bind(srv.lmr, srv.buf.Triplet(0, 64), api.MemPrivRemoteRead, api.VATypeVA, srv.ep, 1, api.CompletionDefault)
	check(err)
	_, err = api.WaitFor(ctx, srv.evd, api.RMRBindCompletionEvent)
	check(err)
	refused(srv.lmr.Free(), api.SubStateLMRInUse, fmt.Sprintf("%s is still used by 1 object(s): %s (provider: 1 RMR(s) are bound to the LMR)",
		name(srv.lmr), name(rmr)))
	check(rmr.Free())

	// A graceful close of an IA that still has objects: every one of them
	// but the async EVD, oldest first.
	ia, err := exampleRegistry.Open(ctx, "lo")
	check(err)
	pz, err := ia.CreatePZ()
	check(err)
	evd, err := ia.CreateEVD(4, nil, api.EVDDTO)
	check(err)
	refused(ia.Close(api.CloseGraceful), api.SubStateIAInUse, fmt.Sprintf("%s still has 2 object(s): %s, %s (provider: the IA still has 2 object(s): 1 PZ, 1 EVD)",
		name(ia), name(pz), name(evd)))
	check(evd.Free())
	check(pz.Free())
	check(ia.Close(api.CloseGraceful))
}
