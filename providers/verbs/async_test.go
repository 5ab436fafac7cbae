//go:build verbs && cgo

package verbs_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/godat/godat/api"
)

// TestPortDownIsAnAsyncEvent takes the link under the IA's port down and
// up again. Every IA open on the device, not only one, must get
// ASYNC_ERROR_IA_CATASTROPHIC with reason IA_OTHER_ERROR on its async
// EVD: the device's events have one reader per process. It changes the
// machine's network, so it runs only inside rxe-vm.
func TestPortDownIsAnAsyncEvent(t *testing.T) {
	needDevice(t)
	if os.Getenv("RXE_VM") == "" {
		t.Skip("takes a network link down and up: runs only inside rxe-vm")
	}
	a, b := openIA(t, "verbs"), openIA(t, "verbs")
	attr, _, err := a.Query()
	if err != nil {
		t.Fatal(err)
	}
	dev, port, netdev := named(attr.TransportAttrs, "device"), named(attr.TransportAttrs, "port"), named(attr.TransportAttrs, "netdev")
	if dev == "" || port == "" || netdev == "" {
		t.Fatalf("IA attributes name no device, port or netdev: %+v", attr.TransportAttrs)
	}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	state := "/sys/class/infiniband/" + dev + "/ports/" + port + "/state"
	t.Cleanup(func() {
		// Leave the port active for the tests that follow.
		exec.Command("ip", "link", "set", netdev, "up").Run()
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if s, _ := os.ReadFile(state); strings.Contains(string(s), "ACTIVE") {
				return
			}
		}
		t.Errorf("port %s of %s did not become active again", port, dev)
	})
	ip("link", "set", netdev, "down")
	for _, ia := range []api.IA{a, b} {
		async, err := ia.AsyncEVD()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var ev api.Event
		_, err = async.Wait(ctx, 1, &ev)
		cancel()
		if err != nil {
			t.Fatalf("no async event after the link went down: %v", err)
		}
		if ev.Number != api.AsyncIACatastrophicEvent || ev.Async.Object != ia || ev.Async.Reason != api.ReasonIAOther {
			t.Fatalf("event %v about %v, reason %d; want %v about the IA, reason %d (IA_OTHER_ERROR)",
				ev.Number, ev.Async.Object, ev.Async.Reason, api.AsyncIACatastrophicEvent, api.ReasonIAOther)
		}
	}
}
