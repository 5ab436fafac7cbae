package datnet_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/datnet"
)

var providers = []string{"lo", "tcp", "plugin"}

func eachProvider(t *testing.T, f func(t *testing.T, open opener)) {
	for _, name := range providers {
		t.Run(name, func(t *testing.T) { f(t, inProcess(name)) })
	}
	if envIA != "" {
		t.Run(envIA, func(t *testing.T) { f(t, configured(envIA)) })
	}
}

func mustPipe(t *testing.T, open opener, o datnet.Options) *pipe {
	t.Helper()
	p, err := newPipe(t, open, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return p
}

// pass writes msg on w and reads len(buf) bytes from r into buf, failing
// the test on an error of either. It allocates nothing itself, so that
// TestReadWriteAllocateNothing can measure a Write and a Read through it.
func pass(t testing.TB, w, r net.Conn, msg, buf []byte) {
	t.Helper()
	if _, err := w.Write(msg); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
}

// A half-close: the peer reads every byte, then io.EOF, and can still
// answer on the other direction.
func TestCloseWriteHalfClose(t *testing.T) {
	eachProvider(t, func(t *testing.T, open opener) {
		p := mustPipe(t, open, datnet.Options{Buffers: 4, BufferSize: 64})
		msg := bytes.Repeat([]byte("0123456789"), 100) // more than the buffers hold
		wrote := make(chan error, 1)
		go func() {
			if _, err := p.c1.Write(msg); err != nil {
				wrote <- err
				return
			}
			if err := p.c1.(*datnet.Conn).CloseWrite(); err != nil {
				wrote <- err
				return
			}
			if _, err := p.c1.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
				wrote <- fmt.Errorf("Write after CloseWrite: %v, want EPIPE", err)
				return
			}
			wrote <- nil
		}()
		got, err := io.ReadAll(p.c2)
		if werr := <-wrote; werr != nil {
			t.Fatal(werr)
		}
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("ReadAll: %d bytes, %v; want %d bytes", len(got), err, len(msg))
		}
		if _, err := p.c2.Write([]byte("answer")); err != nil {
			t.Fatal(err)
		}
		if err := p.c2.Close(); err != nil {
			t.Fatal(err)
		}
		got, err = io.ReadAll(p.c1)
		if err != nil || string(got) != "answer" {
			t.Fatalf("answer: %q, %v", got, err)
		}
	})
}

// CloseWrite while a Write is under way ends the stream after the bytes
// that Write reports as written, never in the middle of them: the peer
// reads exactly those bytes, then io.EOF. How far the Write has got when
// CloseWrite comes varies, so each provider runs several rounds.
func TestCloseWriteDuringWrite(t *testing.T) {
	msg := make([]byte, 1<<20)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	eachProvider(t, func(t *testing.T, open opener) {
		for round := range 20 {
			p := mustPipe(t, open, datnet.Options{Buffers: 4, BufferSize: 16 << 10})
			type result struct {
				n   int
				got []byte
				err error
			}
			wrote, read := make(chan result, 1), make(chan result, 1)
			go func() {
				n, err := p.c1.Write(msg)
				wrote <- result{n: n, err: err}
			}()
			go func() {
				got, err := io.ReadAll(p.c2)
				read <- result{got: got, err: err}
			}()
			time.Sleep(time.Duration(round%5) * 50 * time.Microsecond)
			if err := p.c1.(*datnet.Conn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			w, r := <-wrote, <-read
			if w.err != nil && !errors.Is(w.err, syscall.EPIPE) {
				t.Fatalf("round %d: Write: %v, want nil or EPIPE", round, w.err)
			}
			if r.err != nil || !bytes.Equal(r.got, msg[:w.n]) {
				t.Fatalf("round %d: the peer read %d bytes (%v) after a Write of %d, want exactly those bytes then io.EOF", round, len(r.got), r.err, w.n)
			}
		}
	})
}

// A reader that does not read stops the writer (no overrun, nothing
// lost): the write deadline ends a Write that has posted what the
// receiver's buffers hold, and every byte posted arrives.
func TestFlowControlBlocksWriter(t *testing.T) {
	eachProvider(t, func(t *testing.T, open opener) {
		const size = 64
		p := mustPipe(t, open, datnet.Options{Buffers: 4, BufferSize: size})
		big := bytes.Repeat([]byte{7}, 100*size)
		p.c1.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := p.c1.Write(big)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Write to a reader that does not read: n=%d, %v; want a deadline error", n, err)
		}
		if n == 0 || n >= len(big) {
			t.Fatalf("posted %d of %d bytes before the deadline", n, len(big))
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("%v is not a net.Error with Timeout", err)
		}
		// What was posted is all there, and nothing more.
		p.c1.(*datnet.Conn).CloseWrite()
		got, err := io.ReadAll(p.c2)
		if err != nil || len(got) != n {
			t.Fatalf("read %d bytes, %v; want the %d posted", len(got), err, n)
		}
	})
}

// Closing with bytes unread resets the connection: the peer's Read
// fails with ECONNRESET rather than reporting a clean end.
func TestCloseWithUnreadDataResets(t *testing.T) {
	eachProvider(t, func(t *testing.T, open opener) {
		p := mustPipe(t, open, datnet.Options{})
		if _, err := p.c1.Write([]byte("unread")); err != nil {
			t.Fatal(err)
		}
		// Wait until c2 holds the bytes, without reading them.
		buf := make([]byte, 1)
		pass(t, p.c2, p.c1, []byte("x"), buf)
		time.Sleep(50 * time.Millisecond) // c1's message lands in c2's queue
		if err := p.c2.Close(); err != nil {
			t.Fatal(err)
		}
		p.c1.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := p.c1.Read(buf)
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("Read after the peer closed with unread data: %v, want ECONNRESET", err)
		}
		if _, err := p.c1.Write([]byte("more")); !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("Write after a reset: %v, want EPIPE", err)
		}
	})
}

// Close unblocks Accept; Accept and Close after it report net.ErrClosed.
func TestListenerClose(t *testing.T) {
	eachProvider(t, func(t *testing.T, open opener) {
		ia, l := openListener(t, open)
		defer ia.Close(api.CloseGraceful)
		done := make(chan error, 1)
		go func() {
			_, err := l.Accept()
			done <- err
		}()
		time.Sleep(20 * time.Millisecond)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
		}
		if err := l.Close(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("second Close: %v, want net.ErrClosed", err)
		}
	})
}

// Dialing where nobody listens fails, and leaves nothing behind (the IA
// closes gracefully: no object of the attempt survives).
func TestDialRefused(t *testing.T) {
	eachProvider(t, func(t *testing.T, open opener) {
		ia, l := openListener(t, open)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		addr := l.Addr().String()
		l.Close()
		c, err := datnet.Dial(ctx, ia, addr)
		if err == nil {
			c.Close()
			t.Fatal("Dial to a closed listener succeeded")
		}
		// As package net's: a *net.OpError that names the address.
		if oe := (*net.OpError)(nil); !errors.As(err, &oe) || oe.Op != "dial" || oe.Addr == nil || oe.Addr.String() != addr {
			t.Errorf("Dial's error %#v (%v) is not a dial *net.OpError naming %s", err, err, addr)
		}
		if err := ia.Close(api.CloseGraceful); err != nil {
			t.Fatalf("the failed Dial left objects: %v", err)
		}
	})
}

// Dialing a service point that is not a datnet listener, which accepts
// with private data that is not a hello, fails with an error that says
// so, and leaves nothing behind.
func TestDialRejectsStrangers(t *testing.T) {
	eachProvider(t, func(t *testing.T, open opener) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		srv, err := open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close(api.CloseAbrupt)
		cli, err := open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pz, _ := srv.CreatePZ()
		evd, _ := srv.CreateEVD(8, nil, api.EVDCR|api.EVDConnection|api.EVDDTO)
		ep, err := srv.CreateEP(pz, evd, evd, evd, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, q, err := srv.CreatePSPAny(evd, api.PSPConsumer)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			var ev api.Event
			if _, err := evd.Wait(ctx, 1, &ev); err == nil && ev.Number == api.ConnectionRequestEvent {
				ev.CR.CR.Accept(ep, []byte("HTTP/1.0 200 OK\r\n\r\n"))
			}
		}()
		a, _, _ := srv.Query()
		addr := (&datnet.Addr{IA: a.Address, Qual: q}).String()
		c, err := datnet.Dial(ctx, cli, addr)
		if err == nil {
			c.Close()
			t.Fatal("Dial to a service point that is not a datnet listener succeeded")
		}
		if !strings.Contains(err.Error(), "not a datnet stream") {
			t.Errorf("Dial's error %q does not say the peer is not a datnet stream", err)
		}
		if err := cli.Close(api.CloseGraceful); err != nil {
			t.Fatalf("the failed Dial left objects: %v", err)
		}
	})
}

// A connection request that is not a datnet stream, or whose hello
// declares receive buffers a stream cannot run on, is rejected, and Accept
// goes on to the next.
func TestAcceptRejectsStrangers(t *testing.T) {
	hello := func(buffers, size uint32) []byte {
		b := append([]byte("gdn1"), 1, 0, 0, 0)
		b = binary.LittleEndian.AppendUint32(b, buffers)
		return binary.LittleEndian.AppendUint32(b, size)
	}
	strangers := []struct {
		name string
		pd   []byte
	}{
		{"not a hello", []byte("GET / HTTP/1.0")},
		{"one receive buffer", hello(1, 4096)},
		{"buffers without room for payload", hello(8, 8)},
	}
	eachProvider(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		cli, l, accepted := listenForRaw(t, open)
		la := l.Addr().(*datnet.Addr)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		for _, st := range strangers {
			// A plain DAT connect with the stranger's private data.
			p := newRawPeer(t, cli, 4096)
			ep, evd := p.ep, p.evd
			if err := ep.Connect(la.IA, la.Qual, api.TimeoutInfinite, st.pd, 0, 0); err != nil {
				t.Fatal(err)
			}
			var ev api.Event
			if _, err := evd.Wait(wctx, 1, &ev); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if ev.Number != api.ConnectionPeerRejectedEvent {
				t.Fatalf("%s: the connect got %v, want PEER_REJECTED", st.name, ev.Number)
			}
			p.free()
		}

		// A real stream is accepted afterwards.
		c, err := datnet.Dial(wctx, cli, l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s := <-accepted
		if s == nil {
			t.Fatal("Accept failed after rejecting a stranger")
		}
		c.Close()
		s.Close()
	})
}

func TestAddrs(t *testing.T) {
	p := mustPipe(t, inProcess("tcp"), datnet.Options{})
	for _, a := range []net.Addr{p.c1.LocalAddr(), p.c1.RemoteAddr(), p.c2.LocalAddr(), p.c2.RemoteAddr(), p.l.Addr()} {
		if a.Network() != "dat" {
			t.Errorf("%v: network %q", a, a.Network())
		}
		host, _, err := net.SplitHostPort(a.String())
		if err != nil || host != "127.0.0.1" {
			t.Errorf("address %q does not print as 127.0.0.1:port", a)
		}
	}
	if p.c1.RemoteAddr().String() != p.l.Addr().String() {
		t.Errorf("client's remote %v is not the listener's %v", p.c1.RemoteAddr(), p.l.Addr())
	}
}

func TestBadOptionsAndAddresses(t *testing.T) {
	ia, err := inProcess("lo")(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer ia.Close(api.CloseGraceful)
	ctx := context.Background()
	for _, o := range []datnet.Options{{Buffers: 3}, {Buffers: 1 << 20}, {BufferSize: -1}, {BufferSize: 16 << 20}, {Linger: -1}} {
		if _, err := (&datnet.Dialer{Options: o}).Dial(ctx, ia, ":1"); err == nil {
			t.Errorf("Dial with %+v succeeded", o)
		}
		if _, err := (&datnet.ListenConfig{Options: o}).Listen(ia, ":0"); err == nil {
			t.Errorf("Listen with %+v succeeded", o)
		}
	}
	for _, a := range []string{"nocolon", "lo#1:port", "other#9:1"} {
		if l, err := datnet.Listen(ia, a); err == nil {
			l.Close()
			t.Errorf("Listen(%q) succeeded", a)
		}
	}
}

// A peer that breaks the stream's format ends the connection with an
// error that says how: Read fails (or, after the peer's end of stream,
// returns io.EOF and Write fails), nothing panics or hangs. The broken
// messages: one shorter than its header; one that returns credits for
// buffers this side never sent into (the peer would have it overrun
// receives it did not post); payload after the peer's end mark.
func TestBrokenPeerMessage(t *testing.T) {
	credits := make([]byte, 8)
	credits[0] = 1 // a header returning one credit, no payload
	fin := []byte{0, 0, 0, 0, 1, 0, 0, 0}
	for _, tc := range []struct {
		name string
		msgs [][]byte
		want string
	}{
		{"short", [][]byte{[]byte("abc")}, "shorter than its header"},
		{"credits", [][]byte{credits}, "returned 1 credits while this side held 4 of the 4"},
		{"after-fin", [][]byte{fin, append(make([]byte, 8), "abc"...)}, "sent 3 bytes after the end of its stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachProvider(t, func(t *testing.T, open opener) {
				testBrokenPeerMessage(t, open, tc.msgs, tc.want)
			})
		})
	}
}

func testBrokenPeerMessage(t *testing.T, open opener, msgs [][]byte, want string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cli, l, accepted := listenForRaw(t, open)

	// A hand-made client with a valid hello: 4 receive buffers of 72
	// bytes ("gdn1", version 1).
	hello := []byte{'g', 'd', 'n', '1', 1, 0, 0, 0, 4, 0, 0, 0, 72, 0, 0, 0}
	p := newRawPeer(t, cli, 4096)
	defer p.free()
	ep, evd, mem, reg := p.ep, p.evd, p.mem, p.reg
	// The 4 receive buffers the hello declares, so that what this side's
	// Writes send before the broken message is taken does not break
	// the connection first.
	for i := range 4 {
		if err := ep.PostRecv([]api.LMRTriplet{reg.Triplet(uint64(2048+i*128), 72)}, api.Cookie(100+i), api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
	}
	la := l.Addr().(*datnet.Addr)
	if err := ep.Connect(la.IA, la.Qual, api.TimeoutInfinite, hello, 0, 0); err != nil {
		t.Fatal(err)
	}
	var ev api.Event
	if _, err := evd.Wait(ctx, 1, &ev); err != nil || ev.Number != api.ConnectionEstablishedEvent {
		t.Fatalf("connect: %v %v", ev.Number, err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("Accept failed")
	}
	defer s.Close()
	for i, m := range msgs {
		off := uint64(i * 128)
		copy(mem.Bytes()[off:], m)
		if err := ep.PostSend([]api.LMRTriplet{reg.Triplet(off, uint32(len(m)))}, api.Cookie(i), api.CompletionDefault); err != nil {
			t.Fatal(err)
		}
	}
	s.SetDeadline(time.Now().Add(10 * time.Second))
	_, err := s.Read(make([]byte, 16))
	if err == io.EOF {
		// The peer ended its stream first: the error shows on Write,
		// once the broken message has come.
		for err == nil || err == io.EOF {
			_, err = s.Write([]byte("x"))
		}
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("after the messages %q: %v, want an error containing %q", msgs, err, want)
	}
	ep.Disconnect(api.CloseAbrupt)
}

// rawPeer is a hand-made DAT client of a stream: one EVD for everything,
// an EP, and registered memory.
type rawPeer struct {
	pz  api.PZ
	evd api.EVD
	ep  api.EP
	mem *api.Memory
	lmr api.LMR
	reg api.LMRParam
}

// newRawPeer makes a rawPeer of ia with size bytes of memory.
func newRawPeer(t testing.TB, ia api.IA, size int) *rawPeer {
	t.Helper()
	p := &rawPeer{}
	var err error
	if p.pz, err = ia.CreatePZ(); err != nil {
		t.Fatal(err)
	}
	if p.evd, err = ia.CreateEVD(64, nil, api.EVDConnection|api.EVDDTO); err != nil {
		t.Fatal(err)
	}
	if p.ep, err = ia.CreateEP(p.pz, p.evd, p.evd, p.evd, nil); err != nil {
		t.Fatal(err)
	}
	if p.mem, err = api.AllocMemory(size); err != nil {
		t.Fatal(err)
	}
	if p.lmr, err = ia.CreateLMR(p.pz, api.Region{Type: api.MemTypeVirtual, Bytes: p.mem.Bytes()}, api.MemPrivAll, api.VATypeVA); err != nil {
		t.Fatal(err)
	}
	if p.reg, err = p.lmr.Query(); err != nil {
		t.Fatal(err)
	}
	return p
}

// free frees the peer's objects, the EP first.
func (p *rawPeer) free() {
	p.ep.Free()
	p.lmr.Free()
	p.mem.Free()
	p.evd.Free()
	p.pz.Free()
}

// openListener opens an IA with open and a listener of it on a free
// qualifier, which the caller closes (the IA too, unless Listen fails).
func openListener(t *testing.T, open opener) (api.IA, net.Listener) {
	t.Helper()
	ia, err := open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	l, err := datnet.Listen(ia, ":0")
	if err != nil {
		ia.Close(api.CloseAbrupt)
		t.Fatal(err)
	}
	return ia, l
}

// listenForRaw opens a server IA with a listener that accepts in the
// background, and a client IA for a connection made by hand; the test's
// cleanup closes them all.
func listenForRaw(t *testing.T, open opener) (cli api.IA, l net.Listener, accepted <-chan net.Conn) {
	t.Helper()
	ctx := context.Background()
	srv, err := open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(api.CloseGraceful) })
	if cli, err = open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close(api.CloseAbrupt) })
	if l, err = datnet.Listen(srv, ":0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		ch <- c
	}()
	return cli, l, ch
}

// TestCloseDuringWrite closes a connection while a Write copies into its
// send buffers, with bytes from the peer left unread so that Close is
// abrupt (no linger): Close must not free the buffers under the Write
// (the race detector, or a fault on the unmapped memory, would say so),
// and the Write returns net.ErrClosed or the count it posted.
func TestCloseDuringWrite(t *testing.T) {
	eachProvider(t, func(t *testing.T, open opener) {
		for range 10 {
			p := mustPipe(t, open, datnet.Options{Buffers: 4, BufferSize: 64 << 10})
			if _, err := p.c2.Write([]byte("unread")); err != nil {
				t.Fatal(err)
			}
			go io.Copy(io.Discard, p.c2)
			msg := make([]byte, 1<<20)
			wrote := make(chan error, 1)
			go func() {
				for {
					if _, err := p.c1.Write(msg); err != nil {
						wrote <- err
						return
					}
				}
			}()
			time.Sleep(time.Millisecond)
			p.c1.Close()
			if err := <-wrote; !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
				t.Fatalf("Write during Close: %v", err)
			}
		}
	})
}
