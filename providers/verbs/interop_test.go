//go:build verbs && cgo

package verbs_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godat/godat/api"
)

// rpingInfo is the 16-byte message rdma-core's rping exchanges to
// advertise a buffer: its address, rkey and size, big-endian.
type rpingInfo struct {
	addr uint64
	rkey uint32
	size uint32
}

func (r rpingInfo) put(b []byte) {
	binary.BigEndian.PutUint64(b[0:], r.addr)
	binary.BigEndian.PutUint32(b[8:], r.rkey)
	binary.BigEndian.PutUint32(b[12:], r.size)
}

func getRpingInfo(b []byte) rpingInfo {
	return rpingInfo{binary.BigEndian.Uint64(b[0:]), binary.BigEndian.Uint32(b[8:]), binary.BigEndian.Uint32(b[12:])}
}

// TestRpingInterop runs rdma-core's rping client against a godat server
// that speaks rping's protocol through the DAT API: the client connects
// through rdma_cm and, for each ping, advertises a buffer that the server
// RDMA-reads, then a second buffer that the server RDMA-writes the same
// bytes into; the client checks that both hold the same bytes (-V) and
// exits non-zero otherwise. So a godat RC connection made through rdma_cm
// carries rkeys, RDMA reads and writes and sends of a peer that is not
// godat.
func TestRpingInterop(t *testing.T) {
	needDevice(t)
	rping, err := exec.LookPath("rping")
	if err != nil {
		if os.Getenv("RXE_VM") != "" {
			t.Fatalf("inside rxe-vm, but rping (rdmacm-utils) is missing: %v", err)
		}
		t.Skipf("needs rdma-core's rping (apt rdmacm-utils): %v", err)
	}
	const (
		count   = 10
		size    = 64
		recvOff = 0    // the 16-byte receive
		sendOff = 64   // the 16-byte advertisement godat sends
		dataOff = 4096 // the bytes read from the client and written back
	)
	srv := newSide(t)
	psp, q, err := srv.ia.CreatePSPAny(srv.evd, api.PSPConsumer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { psp.Free() })

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, rping, "-c", "-a", vmIP().String(), "-p", strconv.Itoa(int(q)),
		"-C", strconv.Itoa(count), "-S", strconv.Itoa(size), "-V", "-v")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
		t.Logf("rping:\n%s", out.String())
	}()

	mem := srv.mem.Bytes()
	recv := func(cookie int) {
		t.Helper()
		if err := srv.ep.PostRecv([]api.LMRTriplet{srv.seg(recvOff, 16)}, api.Cookie(cookie), api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
	}
	// dto waits for the completion of the DTO with the given cookie: in
	// this exchange every DTO completes before the next one is posted,
	// except a receive, which stays posted while the others run.
	pending := map[api.Cookie]api.DTOCompletionData{}
	dto := func(cookie int, op api.DTOOp, what string) api.DTOCompletionData {
		t.Helper()
		for {
			if d, ok := pending[api.Cookie(cookie)]; ok {
				delete(pending, api.Cookie(cookie))
				if d.Op != op || d.Status != api.DTOSuccess {
					t.Fatalf("%s: completion %+v, want %v succeeded", what, d, op)
				}
				return d
			}
			ev := srv.wait(t, api.DTOCompletionEvent)
			pending[ev.DTO.Cookie] = ev.DTO
		}
	}

	// next waits up to 10 s for the server's next event, of any kind.
	next := func(what string) api.Event {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		var e api.Event
		if _, err := srv.evd.Wait(wctx, 1, &e); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return e
	}
	// lastSend waits for the completion of the last ping's last send.
	// rping disconnects as soon as that message is in, and the
	// disconnect (an rdma_cm event) and the completion (from the CQ)
	// reach the EVD in either order; once the disconnect is in, the
	// send may complete flushed, if its acknowledgement had not come
	// back when the queue pair went to the error state. rping's output,
	// checked below, says whether the message arrived.
	lastSend := func(cookie int) {
		t.Helper()
		disconnected := false
		for {
			switch e := next("the last send"); {
			case e.Number == api.ConnectionDisconnectedEvent && !disconnected:
				disconnected = true
			case e.Number == api.DTOCompletionEvent && e.DTO.Cookie == api.Cookie(cookie):
				if e.DTO.Op != api.OpSend || !(e.DTO.Status == api.DTOSuccess || disconnected && e.DTO.Status == api.DTOErrFlushed) {
					t.Fatalf("the last send completed as %+v (disconnected first: %v)", e.DTO, disconnected)
				}
				return
			default:
				t.Fatalf("the last send: event %v (%+v)", e.Number, e.DTO)
			}
		}
	}

	// The cookies of ping i: 10*i+1 and +2 its two receives, +3 the RDMA
	// read, +4 the go-ahead send, +5 the RDMA write, +6 the last send.
	c := func(i, k int) int { return 10*i + k }
	ev := srv.wait(t, api.ConnectionRequestEvent)
	recv(c(0, 1))
	if err := ev.CR.CR.Accept(srv.ep, nil); err != nil {
		t.Fatal(err)
	}
	// The client sends as soon as its side is up: its first message may
	// complete here before the passive side's ESTABLISHED event is seen
	// (rdma_cm's event and the CQ's are separate channels).
	for established := false; !established; {
		switch e := next("waiting for the connection"); {
		case e.Number == api.ConnectionEstablishedEvent:
			established = true
		case e.Number == api.DTOCompletionEvent:
			pending[e.DTO.Cookie] = e.DTO
		default:
			t.Fatalf("waiting for the connection: event %v", e.Number)
		}
	}
	ours := rpingInfo{addr: uint64(srv.lp.RegisteredAddress) + dataOff, rkey: uint32(srv.lp.RMRContext), size: size}
	for i := range count {
		// The client advertises the buffer holding this ping's bytes.
		if d := dto(c(i, 1), api.OpReceive, fmt.Sprintf("ping %d: the client's first advertisement", i)); d.Length != 16 {
			t.Fatalf("ping %d: a %d-byte advertisement, want 16", i, d.Length)
		}
		src := getRpingInfo(mem[recvOff:])
		if src.size == 0 || src.size > 4096 {
			t.Fatalf("ping %d: the client advertises %d bytes", i, src.size)
		}
		recv(c(i, 2))
		if err := srv.ep.PostRDMARead([]api.LMRTriplet{srv.seg(dataOff, int(src.size))}, api.Cookie(c(i, 3)),
			api.RMRTriplet{RMRContext: api.RMRContext(src.rkey), Addr: api.VAddr(src.addr), Length: src.size}, api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		dto(c(i, 3), api.OpRDMARead, fmt.Sprintf("ping %d: the RDMA read of the client's buffer", i))
		data := mem[dataOff : dataOff+int(src.size)]
		if want := fmt.Sprintf("rdma-ping-%d: ", i); !bytes.HasPrefix(data, []byte(want)) {
			t.Fatalf("ping %d: read %q, want it to start with %q", i, data, want)
		}
		// Go on: our advertisement (the client looks only at its length).
		ours.put(mem[sendOff:])
		if err := srv.ep.PostSend([]api.LMRTriplet{srv.seg(sendOff, 16)}, api.Cookie(c(i, 4)), api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		dto(c(i, 4), api.OpSend, fmt.Sprintf("ping %d: the go-ahead", i))
		// The client advertises the buffer the bytes go back to.
		dto(c(i, 2), api.OpReceive, fmt.Sprintf("ping %d: the client's second advertisement", i))
		dst := getRpingInfo(mem[recvOff:])
		n := bytes.IndexByte(data, 0) + 1
		if n <= 0 || uint32(n) > dst.size {
			t.Fatalf("ping %d: %d bytes to write back into a %d-byte buffer", i, n, dst.size)
		}
		if i+1 < count {
			recv(c(i+1, 1))
		}
		if err := srv.ep.PostRDMAWrite([]api.LMRTriplet{srv.seg(dataOff, n)}, api.Cookie(c(i, 5)),
			api.RMRTriplet{RMRContext: api.RMRContext(dst.rkey), Addr: api.VAddr(dst.addr), Length: uint32(n)}, api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		dto(c(i, 5), api.OpRDMAWrite, fmt.Sprintf("ping %d: the RDMA write back", i))
		if err := srv.ep.PostSend([]api.LMRTriplet{srv.seg(sendOff, 16)}, api.Cookie(c(i, 6)), api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		if i+1 < count {
			dto(c(i, 6), api.OpSend, fmt.Sprintf("ping %d: begin again", i))
		} else {
			lastSend(c(i, 6))
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rping client: %v", err)
	}
	exited = true
	if got := strings.Count(out.String(), "ping data: rdma-ping-"); got != count {
		t.Fatalf("rping printed %d pings, want %d", got, count)
	}
}
