package tcp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/mutated"
)

// FuzzHostileStream plays a peer that says anything at all on a live
// connection: the input is a script of frames (fuzzScript), most of them
// well formed enough to reach deep into the connection's state (sequence
// numbers in order, RDMA at the server's real window, ACKs and credits),
// some not; the server has a send, an RDMA read and an RDMA write of its
// own outstanding. Whatever the peer sends, the server's EP must end
// DISCONNECTED or BROKEN once the peer stops, every receive and request
// it posted must complete once and only once, and nothing may panic,
// hang or allocate what the peer asks for. With poll set, the server's
// consumer spins on its EVDs, so that the polling consumer, not the
// reader goroutine, meets the peer's frames (quiet mode). goleak
// (TestMain) checks that nothing outlives the IA.
func FuzzHostileStream(f *testing.F) {
	for _, seed := range hostileStreamSeeds() {
		f.Add(false, seed)
		f.Add(true, seed)
	}
	// One IA and PSP for every input: a listening port each would run
	// the host out of ports (TIME_WAIT) at thousands of inputs a second.
	shared := newServer(f)
	f.Fuzz(func(t *testing.T, poll bool, script []byte) { hostileStream(t, shared, poll, script) })
}

// hostileStreamSeeds are FuzzHostileStream's seed scripts.
func hostileStreamSeeds() [][]byte {
	return [][]byte{
		// A send, a write into the window, a read of it, a disconnect.
		{1, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 40, 1, 3, 0, 0, 4, 0, 0, 0, 1, 3, 8, 0, 8, 0, 0, 0, 0, 0, 0, 0},
		// Each alone, then a disconnect; a disconnect alone.
		{1, 0, 0, 2, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0},
		{3, 0, 0, 2, 1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0},
		{4, 0, 0, 0, 1, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0},
		{8, 0, 0, 0, 0, 0, 0, 0},
		// Sends beyond the receives posted, solicited, with an ACK riding.
		{1, 1, 0, 1, 0, 0, 0, 0, 1, 3, 0, 3, 0, 0, 0, 9, 1, 0, 0, 4, 0, 0, 0, 0, 1, 0, 0, 4, 0, 0, 0, 0, 1, 0, 0, 4, 0, 0, 0, 0, 1, 0, 0, 4, 0, 0, 0, 0},
		// A write outside the window, then a read request past its end.
		{3, 0, 0, 10, 1, 250, 0, 0, 4, 0, 0, 0, 1, 255, 255, 0},
		// Garbage, a NAK, a read response nobody asked for.
		{0, 'G', 'E', 'T', ' ', '/', 'x', 'y', 7, 0, 1, 0, 0, 0, 0, 6, 5, 0, 0, 2, 0, 0, 0, 0},
		// Sequence numbers out of order.
		{3, 0, 0x81, 1, 1, 0, 0, 0, 3, 0, 0x85, 1, 1, 0, 0, 0},
		// Answers to the server's own requests: credits for its send,
		// a response to its read (whichever sequence number it has).
		{6, 2, 0x80, 0, 0, 0, 0, 4, 8, 0, 0, 0, 0, 0, 0, 0},
		{5, 0, 0x81, 4, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0},
		{5, 0, 0x82, 4, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0},
		{5, 2, 0x81, 4, 0, 0, 1, 4, 8, 0, 0, 0, 0, 0, 0, 0},
		{6, 2, 0x80, 0, 0, 0, 0, 4, 6, 2, 0x80, 0, 0, 0, 1, 4, 5, 0, 0x82, 4, 0, 0, 0, 0, 6, 2, 0x80, 0, 0, 0, 3, 4, 8, 0, 0, 0, 0, 0, 0, 0},
		// Send with invalidate of the window's own key.
		{2, 0, 0, 1, 1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0},
	}
}

// hostileStream plays one input of FuzzHostileStream against the IA and
// PSP of shared.
func hostileStream(t *testing.T, shared *server, poll bool, script []byte) {
	if len(script) > 64*8 {
		script = script[:64*8]
	}
	s := &server{client: newClient(t, shared.ia), crEVD: shared.crEVD, q: shared.q}
	defer s.free()
	const nrecv = 4
	for c := api.Cookie(1); c <= nrecv; c++ {
		if err := s.ep.PostRecv([]api.LMRTriplet{s.lmr.Triplet(uint64(c)*64, 64)}, c, api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
	}
	_, win := s.window(64 << 10)
	nc := rawConnect(t, s)
	// Requests of the server's own, which the peer must acknowledge
	// (or answer) right for them to succeed: they meet its ACKs,
	// credits, read responses and NAKs.
	peer := api.RMRTriplet{RMRContext: 7, Addr: 0x1000, Length: 256}
	posts := []error{
		s.ep.PostSend([]api.LMRTriplet{s.lmr.Triplet(0, 16)}, 11, api.CompletionDefault),
		s.ep.PostRDMARead([]api.LMRTriplet{s.lmr.Triplet(1024, 256)}, 12, peer, api.CompletionDefault),
		s.ep.PostRDMAWrite([]api.LMRTriplet{s.lmr.Triplet(0, 64)}, 13, peer, api.CompletionDefault),
	}
	for _, err := range posts {
		if err != nil {
			t.Fatal(err)
		}
	}
	go io.Copy(io.Discard, nc) // whatever the server answers
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	// got holds what a polling consumer dequeued while the peer
	// spoke, for the checks below.
	got := map[api.EVD][]api.Event{}
	// A polling consumer polls each EVD polls times after each step
	// of the script: the connection goes quiet, and the polls meet
	// the frames.
	steps, polls := fuzzScript(script, win), 20
	if !poll {
		steps, polls = [][]byte{bytes.Join(steps, nil)}, 0
	}
	for _, b := range steps {
		// (The server may close first, on an early violation.)
		if _, err := nc.Write(b); err != nil {
			break
		}
		for range polls {
			for _, e := range []api.EVD{s.connEVD, s.recv, s.req} {
				var ev api.Event
				if e.Dequeue(&ev) == nil {
					got[e] = append(got[e], ev)
				}
			}
		}
	}
	nc.(*net.TCPConn).CloseWrite()
	next := func(e api.EVD, what string) api.Event {
		if q := got[e]; len(q) > 0 {
			got[e] = q[1:]
			return q[0]
		}
		if poll {
			return s.spin(e, what)
		}
		return s.next(e, what)
	}
	ev := next(s.connEVD, "the connection's end")
	if ev.Number != api.ConnectionBrokenEvent && ev.Number != api.ConnectionDisconnectedEvent {
		t.Fatalf("connection event %v, want BROKEN or DISCONNECTED", ev.Number)
	}
	seen := map[api.Cookie]bool{}
	for len(seen) < nrecv {
		ev := next(s.recv, "the posted receives' completions")
		if ev.Number != api.DTOCompletionEvent || ev.DTO.Cookie < 1 || ev.DTO.Cookie > nrecv || seen[ev.DTO.Cookie] {
			t.Fatalf("receive EVD event %v, cookie %d (seen %v)", ev.Number, ev.DTO.Cookie, seen)
		}
		seen[ev.DTO.Cookie] = true
	}
	var extra api.Event
	if err := s.recv.Dequeue(&extra); err == nil || len(got[s.recv]) > 0 {
		t.Fatalf("a completion beyond the receives posted: %+v %+v", extra, got[s.recv])
	}
	seen = map[api.Cookie]bool{}
	for len(seen) < len(posts) {
		ev := next(s.req, "the server's requests' completions")
		if ev.Number != api.DTOCompletionEvent || ev.DTO.Cookie < 11 || ev.DTO.Cookie > 13 || seen[ev.DTO.Cookie] {
			t.Fatalf("request EVD event %v, cookie %d (seen %v)", ev.Number, ev.DTO.Cookie, seen)
		}
		seen[ev.DTO.Cookie] = true
	}
	if err := s.req.Dequeue(&extra); err == nil || len(got[s.req]) > 0 {
		t.Fatalf("a completion beyond the requests posted: %+v %+v", extra, got[s.req])
	}
	runtime.ReadMemStats(&ms)
	if d := ms.TotalAlloc - before; d > 16<<20 {
		t.Errorf("%d bytes allocated while handling the stream", d)
	}
}

// hostileInputs is how many inputs TestHostileStreamMutated plays: a
// few seconds' worth by default, millions for a hunt (go test -run
// HostileStreamMutated -hostile.inputs 3000000 ./providers/tcp).
var hostileInputs = flag.Int("hostile.inputs", 1000, "inputs TestHostileStreamMutated plays")

// TestHostileStreamMutated plays FuzzHostileStream's scripts, mutated at
// random, in a plain loop (package mutated says why). A failure names its
// script and poll, which FuzzHostileStream takes as a seed to replay.
func TestHostileStreamMutated(t *testing.T) {
	shared := newServer(t)
	mutated.Play(t, *hostileInputs, hostileStreamSeeds(), 0, scriptEdits,
		func(t *testing.T, rng *rand.Rand, script []byte) {
			poll := rng.IntN(2) == 0
			defer func() {
				if t.Failed() {
					t.Logf("poll=%v", poll)
				}
			}()
			hostileStream(t, shared, poll, script)
		})
}

// scriptEdits are the changes TestHostileStreamMutated makes to a script:
// a byte set, a step's frame type set, a random step added, the script cut
// at a step, another script's steps appended.
var scriptEdits = []mutated.Edit{
	mutated.SetByte,
	func(rng *rand.Rand, sc []byte, _ [][]byte) []byte {
		if len(sc) >= 8 {
			sc[8*rng.IntN(len(sc)/8)] = byte(rng.IntN(9))
		}
		return sc
	},
	func(rng *rand.Rand, sc []byte, _ [][]byte) []byte {
		var step [8]byte
		for i := range step {
			step[i] = byte(rng.Uint32())
		}
		return append(sc, step[:]...)
	},
	func(rng *rand.Rand, sc []byte, _ [][]byte) []byte {
		if len(sc) >= 8 {
			sc = sc[:8*rng.IntN(len(sc)/8+1)]
		}
		return sc
	},
	func(rng *rand.Rand, sc []byte, corpus [][]byte) []byte {
		return append(sc, corpus[rng.IntN(len(corpus))]...)
	},
}

// fuzzScript turns script, eight bytes a step, into what the peer sends,
// a piece a step. Step byte 0 picks the frame type (0: the other seven
// bytes as they are); 1 the flags (bit 7: bits 0-6 as they are, even
// undefined ones); 2 the sequence number (bit 7 clear: the next
// request's, else bits 0-6); 3 the payload length in units of 16 bytes
// (a send) or 64 bytes; 4, bit 0: RDMA names the window (else bytes 4
// and 5 are the key); 5 the offset, in 64-byte units; 6 a read's length
// in 64-byte units and the ACK's sequence number; 7 the ACK's credits,
// the NAK's status.
func fuzzScript(script []byte, w api.RMRTriplet) [][]byte {
	var out [][]byte
	next := uint64(1)
	for ; len(script) >= 8; script = script[8:] {
		s := script[:8]
		typ := s[0] % 9
		if typ == 0 {
			out = append(out, s[1:])
			continue
		}
		fr := frame{Type: typ, Flags: s[1] & frFlagMask}
		if s[1]&0x80 != 0 {
			fr.Flags = s[1] & 0x7f
		}
		fr.Seq = uint64(s[2] & 0x7f)
		if s[2]&0x80 == 0 {
			fr.Seq = next
		}
		switch typ {
		case frSend, frSendInv:
			fr.Len = uint32(s[3]) * 16
			if typ == frSendInv {
				fr.RKey = uint32(w.RMRContext)
			}
		case frWrite, frReadResp:
			fr.Len = uint32(s[3]) * 64
		}
		if typ == frWrite || typ == frReadReq {
			fr.RKey, fr.Addr = uint32(s[5])<<8|uint32(s[4]), uint64(s[5])*64
			if s[4]&1 != 0 {
				fr.RKey, fr.Addr = uint32(w.RMRContext), uint64(w.Addr)+uint64(s[5])*64
			}
			if typ == frReadReq {
				fr.RLen = uint32(s[6]) * 64
			}
		}
		if fr.Flags&frFlagAck != 0 {
			fr.Ack, fr.Credits = uint64(s[6]), uint64(s[7])
		}
		if typ == frNak {
			fr.Status = uint16(s[7])
		}
		if typ <= frReadReq && s[2]&0x80 == 0 {
			next++
		}
		b := make([]byte, frameLen+int(fr.Len))
		encodeFrame(b, &fr)
		if fr.Len >= 8 {
			binary.LittleEndian.PutUint64(b[frameLen:], fr.Seq)
		}
		out = append(out, b)
	}
	return out
}

// FuzzHostileHandshake plays a peer that says anything while a
// connection is set up. Input byte 0 picks the side: even, the peer
// requests a connection of the server's PSP with the rest of the input
// (then closes its side) and the server accepts what CONNECTION_REQUEST
// comes (bit 1 clear: rejects it); odd, the peer is a listener that
// answers the server's Connect with the rest and closes. Either way the
// handshake must end, within bounds, in one terminal connection event
// (after ESTABLISHED, if the peer's bytes got that far), and the PSP, shared
// by every input, must close each hostile connection.
func FuzzHostileHandshake(f *testing.F) {
	ready := make([]byte, hsLen)
	encodeHS(ready, &hsMsg{Version: wireVersion, Type: hsReady})
	accept := make([]byte, hsLen+2)
	encodeHS(accept, &hsMsg{Version: wireVersion, Type: hsAccept, PDLen: 2, MaxMsg: 1 << 20, MaxRDMA: 1 << 20, ReadsIn: 4, ReadsOut: 4})
	reject := make([]byte, hsLen)
	encodeHS(reject, &hsMsg{Version: wireVersion, Type: hsReject})
	for _, seed := range [][]byte{
		append(append([]byte{2}, rawHello([]byte("hi"))...), ready...),
		append(append(append([]byte{2}, rawHello(nil)...), ready...), frameBytes(frame{Type: frDisc})...),
		append([]byte{0}, rawHello(nil)...),
		append([]byte{2}, rawHello(nil)[:30]...),
		append([]byte{1}, accept...),
		append(append([]byte{1}, accept...), frameBytes(frame{Type: frDisc})...),
		append([]byte{1}, reject...),
		{1, 'G', 'D'},
		{0},
	} {
		f.Add(seed)
	}
	shared := newServer(f)
	addr := func() net.Addr { a, _, _ := shared.ia.Query(); return a.Address }()
	// One raw listener for every input: each connection gets the answer
	// of the input that is running.
	var answers atomic.Pointer[[]byte]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	var served sync.WaitGroup
	served.Add(1)
	go func() {
		defer served.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			served.Add(1)
			go func() {
				defer served.Done()
				defer nc.Close()
				var hello [hsLen]byte
				if _, err := io.ReadFull(nc, hello[:]); err != nil {
					return
				}
				nc.Write(*answers.Load())
				nc.(*net.TCPConn).CloseWrite()
				nc.SetReadDeadline(time.Now().Add(10 * time.Second))
				io.Copy(io.Discard, nc)
			}()
		}
	}()
	f.Cleanup(func() { ln.Close(); served.Wait() })
	lq := api.ConnQual(ln.Addr().(*net.TCPAddr).Port)

	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 || len(in) > 4096 {
			return
		}
		c := newClient(t, shared.ia)
		defer c.free()
		// A copy: the raw listener may still be writing it when the
		// connection has ended, and the fuzzer reuses in.
		says := slices.Clone(in[1:])
		if in[0]&1 == 1 {
			answers.Store(&says)
			if err := c.ep.Connect(addr, lq, 5*time.Second, []byte("x"), api.QOSBestEffort, api.ConnectDefault); err != nil {
				t.Fatal(err)
			}
			handshakeEnd(t, c)
			return
		}
		nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", itoa(shared.q)))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.Write(says)
		nc.(*net.TCPConn).CloseWrite()
		eof := make(chan error, 1)
		go func() {
			nc.SetReadDeadline(time.Now().Add(20 * time.Second))
			_, err := io.Copy(io.Discard, nc)
			eof <- err
		}()
		accepted := false
		for done := false; !done; {
			var ev api.Event
			if err := shared.crEVD.Dequeue(&ev); err == nil {
				if ev.Number != api.ConnectionRequestEvent {
					t.Fatalf("CR EVD event %v", ev.Number)
				}
				if in[0]&2 != 0 {
					if err := ev.CR.CR.Accept(c.ep, nil); err != nil {
						t.Fatal(err)
					}
					accepted = true
				} else if err := ev.CR.CR.Reject(nil); err != nil {
					t.Fatal(err)
				}
				continue
			}
			select {
			case err := <-eof:
				// (A reset is a close: the listener leaves unread bytes.)
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("the listener did not close the connection: %v", err)
				}
				done = true
			case <-time.After(time.Millisecond):
			}
		}
		if accepted {
			handshakeEnd(t, c)
		}
	})
}

// spin is next for a consumer that polls: it spins on e's Dequeue, which
// drives the connections that feed e, for up to 20 seconds.
func (c *client) spin(e api.EVD, what string) api.Event {
	c.t.Helper()
	var ev api.Event
	for end := time.Now().Add(20 * time.Second); ; {
		err := e.Dequeue(&ev)
		if err == nil {
			return ev
		}
		if !errors.Is(err, api.ErrQueueEmpty) {
			c.t.Fatalf("%s: %v", what, err)
		}
		if time.Now().After(end) {
			c.t.Fatalf("%s: nothing in 20 s of polling", what)
		}
		runtime.Gosched()
	}
}

// handshakeEnd checks that c's connection, set up with a hostile peer
// that has closed its side, ends in one terminal event.
func handshakeEnd(t *testing.T, c *client) {
	t.Helper()
	ev := c.next(c.connEVD, "the handshake's end")
	if ev.Number == api.ConnectionEstablishedEvent {
		ev = c.next(c.connEVD, "the connection's end")
	}
	switch ev.Number {
	case api.ConnectionBrokenEvent, api.ConnectionDisconnectedEvent, api.ConnectionNonPeerRejectedEvent,
		api.ConnectionPeerRejectedEvent, api.ConnectionAcceptCompletionErrorEvent, api.ConnectionTimedOutEvent:
	default:
		t.Fatalf("connection event %v, want one that ends the connection", ev.Number)
	}
}
