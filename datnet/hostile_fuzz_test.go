package datnet_test

import (
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"net"
	"os"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/datnet"
	"github.com/godat/godat/internal/mutated"
)

// FuzzHostilePeer plays a stream peer that says anything: a hand-made
// DAT client connects to a Listener (loopback IA) with the hello of the
// input, sends the input's messages and then disconnects (gracefully or
// not). Input byte 0: bit 0 an abrupt disconnect; bits 1-3 how many
// receives the client posts for the server's Writes. Bytes 1-16: the
// hello. Then each message: a length byte and that many bytes. The
// Listener must refuse a bad hello (PEER_REJECTED) without a connection;
// an accepted connection's Read and Write must end in an error (io.EOF
// included) once the peer is gone: no panic, no hang, no more bytes read
// than the peer sent; Close must return.
func FuzzHostilePeer(f *testing.F) {
	for _, seed := range hostileSeeds() {
		f.Add(seed)
	}
	h := newHostileListener(f)
	f.Fuzz(h.run)
}

// hostileSeeds are FuzzHostilePeer's seed inputs.
func hostileSeeds() [][]byte {
	hello := []byte{'g', 'd', 'n', '1', 1, 0, 0, 0, 4, 0, 0, 0, 72, 0, 0, 0}
	msg := func(hdr []byte, payload string) []byte {
		return append([]byte{byte(len(hdr) + len(payload))}, append(hdr, payload...)...)
	}
	hdr := func(credits uint32, flags byte) []byte { return []byte{byte(credits), 0, 0, 0, flags, 0, 0, 0} }
	return [][]byte{
		append(append([]byte{8}, hello...), msg(hdr(0, 0), "hello")...),
		append(append([]byte{9}, hello...), append(msg(hdr(0, 0), "a"), msg(hdr(0, 1), "")...)...),
		append(append([]byte{8}, hello...), msg(hdr(1, 0), "")...),
		append(append([]byte{8}, hello...), msg(hdr(0, 1), "after")...),
		append(append([]byte{8}, hello...), msg([]byte("abc"), "")...),
		append([]byte{8}, "gdn1\x02\x00\x00\x00\x04\x00\x00\x00\x48\x00\x00\x00"...),
		append([]byte{8}, "gdn1\x01\x00\x00\x00\xff\xff\xff\xff\x48\x00\x00\x00"...),
		{0},
	}
}

// hostileListener is FuzzHostilePeer's server side, which every input
// meets: a Listener on a loopback IA, and a client IA for the peers.
type hostileListener struct {
	cli      api.IA
	la       *datnet.Addr
	accepted chan net.Conn
}

// newHostileListener opens the IAs and the Listener; tb's cleanup closes
// them.
func newHostileListener(tb testing.TB) *hostileListener {
	tb.Helper()
	open := inProcess("lo")
	ctx := context.Background()
	srv, err := open(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	cli, err := open(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	l, err := datnet.Listen(srv, ":0")
	if err != nil {
		tb.Fatal(err)
	}
	accepted := make(chan net.Conn)
	stop, acceptDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(acceptDone)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			select {
			case accepted <- c:
			case <-stop: // (an input failed before it took its connection)
				c.Close()
				return
			}
		}
	}()
	tb.Cleanup(func() {
		close(stop)
		l.Close()
		<-acceptDone
		cli.Close(api.CloseAbrupt)
		srv.Close(api.CloseAbrupt)
	})
	return &hostileListener{cli: cli, la: l.Addr().(*datnet.Addr), accepted: accepted}
}

// run plays one input as FuzzHostilePeer's doc says.
func (h *hostileListener) run(t *testing.T, in []byte) {
	if len(in) < 17 || len(in) > 2048 {
		return
	}
	abrupt, nrecv, hello, script := in[0]&1 != 0, int(in[0]>>1)%8, in[1:17], in[17:]
	var msgs [][]byte
	sent := 0
	for len(script) > 0 {
		n := min(int(script[0]), len(script)-1)
		msgs, script = append(msgs, script[1:1+n]), script[1+n:]
		sent += max(n-8, 0)
	}
	p := newRawPeer(t, h.cli, 64<<10)
	defer p.free()
	ep, evd, mem, reg := p.ep, p.evd, p.mem, p.reg
	for i := range nrecv {
		if err := ep.PostRecv([]api.LMRTriplet{reg.Triplet(uint64(32<<10+i*1024), 1024)}, api.Cookie(100+i), api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
	}
	if err := ep.Connect(h.la.IA, h.la.Qual, api.TimeoutInfinite, hello, 0, 0); err != nil {
		t.Fatal(err)
	}
	switch ev := next(t, evd, api.EVDConnection); ev.Number {
	case api.ConnectionEstablishedEvent:
	case api.ConnectionPeerRejectedEvent:
		return // the Listener refused the hello
	default:
		t.Fatalf("the connect got %v, want ESTABLISHED or PEER_REJECTED", ev.Number)
	}
	var s net.Conn
	select {
	case s = <-h.accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("ESTABLISHED, but Accept returned no connection")
	}
	for i, m := range msgs {
		if len(m) == 0 {
			continue // an empty entry of the script sends nothing
		}
		off := uint64(i%32) * 1024
		copy(mem.Bytes()[off:], m)
		if err := ep.PostSend([]api.LMRTriplet{reg.Triplet(off, uint32(len(m)))}, api.Cookie(i), api.CompletionDefault); err != nil {
			break // (the connection may have ended)
		}
	}
	// The server writes too, into whatever credits the hello gave it.
	s.SetDeadline(time.Now().Add(20 * time.Second))
	werr := make(chan error, 1)
	go func() {
		var err error
		for err == nil {
			_, err = s.Write([]byte("0123456789abcdef"))
		}
		werr <- err
	}()
	// Read what the peer sent (or until the stream fails), then have
	// the peer go.
	got, buf := 0, make([]byte, 4096)
	var rerr error
	for got < sent && rerr == nil {
		var n int
		n, rerr = s.Read(buf)
		got += n
	}
	if abrupt {
		ep.Disconnect(api.CloseAbrupt)
	} else {
		ep.Disconnect(api.CloseGraceful)
	}
	for rerr == nil {
		var n int
		n, rerr = s.Read(buf)
		got += n
	}
	if errors.Is(rerr, os.ErrDeadlineExceeded) {
		t.Fatalf("Read: no end 20 s after the peer's disconnect (%d bytes read)", got)
	}
	if got > sent {
		t.Fatalf("read %d bytes; the peer sent %d", got, sent)
	}
	if err := <-werr; errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write: no end 20 s after the peer's disconnect")
	}
	if err := s.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Logf("Close: %v", err)
	}
}

// hostileInputs is how many inputs TestHostilePeerMutated plays: a few
// seconds' worth by default, millions for a hunt (go test -run
// HostilePeerMutated -hostile.inputs 3000000 ./datnet).
var hostileInputs = flag.Int("hostile.inputs", 2000, "inputs TestHostilePeerMutated plays")

// TestHostilePeerMutated plays FuzzHostilePeer's inputs, mutated at
// random, in a plain loop (package mutated says why; the wait race
// TestWriterSeesEndTakenBeforeItWaits pins was found so). A failure names
// its input, which FuzzHostilePeer takes as a seed to replay it.
func TestHostilePeerMutated(t *testing.T) {
	h := newHostileListener(t)
	mutated.Play(t, *hostileInputs, hostileSeeds(), 18, hostileEdits,
		func(t *testing.T, _ *rand.Rand, in []byte) { h.run(t, in) })
}

// hostileEdits are the changes TestHostilePeerMutated makes to an input:
// a byte set, a byte added, the script cut short, the flags byte set,
// another input's script appended.
var hostileEdits = []mutated.Edit{
	mutated.SetByte,
	func(rng *rand.Rand, in []byte, _ [][]byte) []byte { return append(in, byte(rng.Uint32())) },
	func(rng *rand.Rand, in []byte, _ [][]byte) []byte {
		if len(in) > 17 {
			in = in[:17+rng.IntN(len(in)-17)]
		}
		return in
	},
	func(rng *rand.Rand, in []byte, _ [][]byte) []byte {
		if len(in) > 0 {
			in[0] = byte(rng.Uint32())
		}
		return in
	},
	func(rng *rand.Rand, in []byte, corpus [][]byte) []byte {
		if other := corpus[rng.IntN(len(corpus))]; len(other) > 17 {
			in = append(in, other[17:]...)
		}
		return in
	},
}

// next returns the next event of stream kind on e, skipping others, or
// fails the test after 10 seconds.
func next(t *testing.T, e api.EVD, kind api.EVDFlags) api.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		var ev api.Event
		if _, err := e.Wait(ctx, 1, &ev); err != nil {
			t.Fatalf("waiting for an event: %v", err)
		}
		if ev.Number.Stream() == kind {
			return ev
		}
	}
}
