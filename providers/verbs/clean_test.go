//go:build verbs && cgo

package verbs_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/godat/godat/api"
)

// TestFastPathAllocatesNothing posts a receive and a send, an RDMA write
// and an RDMA read, dequeues their completions spinning on Dequeue, and
// counts Go allocations.
func TestFastPathAllocatesNothing(t *testing.T) {
	needDevice(t)
	client, server := connect(t)
	var ev api.Event
	spin := func(s *side) {
		for {
			err := s.evd.Dequeue(&ev)
			if err == nil {
				if ev.Number != api.DTOCompletionEvent || ev.DTO.Status != api.DTOSuccess {
					t.Fatalf("event %v %+v", ev.Number, ev.DTO)
				}
				return
			}
			if !errors.Is(err, api.ErrQueueEmpty) {
				t.Fatal(err)
			}
		}
	}
	recv := []api.LMRTriplet{server.seg(0, 64)}
	send := []api.LMRTriplet{client.seg(0, 64)}
	remote := api.RMRTriplet{Addr: server.lp.RegisteredAddress + 4096, Length: 64, RMRContext: server.lp.RMRContext}
	back := []api.LMRTriplet{client.seg(4096, 64)}
	round := func() {
		if err := server.ep.PostRecv(recv, 1, 0); err != nil {
			t.Fatal(err)
		}
		if err := client.ep.PostSend(send, 2, 0); err != nil {
			t.Fatal(err)
		}
		spin(client)
		spin(server)
		if err := client.ep.PostRDMAWrite(send, 3, remote, 0); err != nil {
			t.Fatal(err)
		}
		spin(client)
		if err := client.ep.PostRDMARead(back, 4, remote, 0); err != nil {
			t.Fatal(err)
		}
		spin(client)
	}
	round() // warm up the rings
	if n := testing.AllocsPerRun(200, round); n != 0 {
		t.Errorf("a post/complete round trip allocates %v times", n)
	}
}

// resources returns the device's resource counts as `rdma resource show`
// prints them ("pd 1 cq 2 qp 1 cm_id 0 mr 0 ..."), skipping the test when
// the tool is missing.
func resources(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("rdma"); err != nil {
		t.Skip("no rdma tool (iproute2) to count device resources")
	}
	out, err := exec.Command("rdma", "resource", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("rdma resource show: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestNothingOutlivesTheIA makes every kind of object, connected and
// busy, closes the IA abruptly, and checks that the device's counts of
// PDs, CQs, QPs, cm ids, MRs, MWs and SRQs are back where they were.
func TestNothingOutlivesTheIA(t *testing.T) {
	needDevice(t)
	if os.Getenv("RXE_VM") == "" {
		t.Skip("counts device-wide resources: run it alone, in the rxe VM")
	}
	// librdmacm opens the device, with a PD of its own, the first time
	// it is used and keeps both for the life of the process: take the
	// baseline after one IA has come and gone.
	openIA(t, "verbs").Close(api.CloseAbrupt)
	before := resources(t)
	func() {
		client, server := connect(t)
		if _, err := server.ia.CreateSRQ(server.pz, api.SRQAttr{MaxRecvDTOs: 8, MaxRecvIOV: 1}); err != nil {
			t.Fatal(err)
		}
		rmr, err := server.pz.CreateRMR()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rmr.Bind(server.lmr, server.seg(0, 128), api.MemPrivAll, api.VATypeVA, server.ep, 9, 0); err != nil {
			t.Fatal(err)
		}
		if _, _, err := client.ia.CreatePSPAny(client.evd, api.PSPConsumer); err != nil {
			t.Fatal(err)
		}
		if err := server.ep.PostRecv([]api.LMRTriplet{server.seg(256, 64)}, 3, 0); err != nil {
			t.Fatal(err)
		}
		during := resources(t)
		if during == before {
			t.Errorf("resource counts did not change while objects existed: %s", during)
		}
		t.Logf("with objects: %s", during)
		for _, s := range []*side{client, server} {
			start := time.Now()
			if err := s.ia.Close(api.CloseAbrupt); err != nil {
				t.Fatal(err)
			}
			t.Logf("abrupt close took %v", time.Since(start))
		}
	}()
	if after := resources(t); after != before {
		t.Errorf("resources left after the IAs closed:\nbefore: %s\nafter:  %s", before, after)
	}
}
