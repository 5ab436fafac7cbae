package tcp

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// Tests with a raw TCP peer that does not follow the protocol. Each must
// end in a clean failure of that connection only: BROKEN (or a refused
// connect), no panic, no hang, no allocation sized by the peer.

// server is an IA listening on a PSP whose requests the test accepts.
type server struct {
	*client
	crEVD api.EVD
	q     api.ConnQual
}

// newServer is newServerOn an IA of its own.
func newServer(t testing.TB) *server { return newServerOn(t, openIA(t)) }

// newServerOn makes a server of ia: a client EP, a CR EVD and a PSP on a
// free port whose requests go to that EVD.
func newServerOn(t testing.TB, ia api.IA) *server {
	t.Helper()
	s := &server{client: newClient(t, ia)}
	s.crEVD, _, s.q = listenAny(t, ia, 16)
	return s
}

// listenAny makes an EVD of ia for qlen connection requests and a PSP on
// a free port whose requests go to it.
func listenAny(t testing.TB, ia api.IA, qlen int) (api.EVD, api.PSP, api.ConnQual) {
	t.Helper()
	evd, err := ia.CreateEVD(qlen, nil, api.EVDCR)
	if err != nil {
		t.Fatal(err)
	}
	psp, q, err := ia.CreatePSPAny(evd, api.PSPConsumer)
	if err != nil {
		t.Fatal(err)
	}
	return evd, psp, q
}

// establish connects cli to s's PSP with private data pd and accepts the
// request on srv, which may be s's own client: both EPs get ESTABLISHED.
// what names the connection in failures.
func (s *server) establish(cli, srv *client, pd, what string) {
	s.t.Helper()
	cli.connect(s.q, pd)
	ev := s.expect(s.crEVD, api.ConnectionRequestEvent, what+": the request")
	if err := ev.CR.CR.Accept(srv.ep, nil); err != nil {
		s.t.Fatal(err)
	}
	cli.expect(cli.connEVD, api.ConnectionEstablishedEvent, what+": ESTABLISHED (active)")
	srv.expect(srv.connEVD, api.ConnectionEstablishedEvent, what+": ESTABLISHED (passive)")
}

// rawHello returns a valid HELLO with generous limits.
func rawHello(pd []byte) []byte {
	b := make([]byte, hsLen+len(pd))
	encodeHS(b, &hsMsg{Version: wireVersion, Type: hsHello, PDLen: uint16(len(pd)), MaxMsg: 1 << 20, MaxRDMA: 1 << 20, ReadsIn: 4, ReadsOut: 4, PortQual: 99})
	copy(b[hsLen:], pd)
	return b
}

// rawConnect connects a raw peer to s, which accepts on its EP; it
// returns the socket after READY, with s's EP ESTABLISHED.
func rawConnect(t *testing.T, s *server) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", itoa(s.q)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if _, err := nc.Write(rawHello(nil)); err != nil {
		t.Fatal(err)
	}
	ev := s.expect(s.crEVD, api.ConnectionRequestEvent, "the raw peer's request")
	if err := ev.CR.CR.Accept(s.ep, nil); err != nil {
		t.Fatal(err)
	}
	var b [hsLen]byte
	if _, err := io.ReadFull(nc, b[:]); err != nil {
		t.Fatal(err)
	}
	if m, err := decodeHS(b[:], maxPrivateData); err != nil || m.Type != hsAccept {
		t.Fatalf("answer %+v, %v; want ACCEPT", m, err)
	}
	encodeHS(b[:], &hsMsg{Version: wireVersion, Type: hsReady})
	if _, err := nc.Write(b[:]); err != nil {
		t.Fatal(err)
	}
	s.expect(s.connEVD, api.ConnectionEstablishedEvent, "ESTABLISHED with the raw peer")
	return nc
}

func itoa(q api.ConnQual) string {
	return (&net.TCPAddr{Port: int(q)}).String()[1:]
}

func frameBytes(f frame) []byte {
	b := make([]byte, frameLen)
	encodeFrame(b, &f)
	return b
}

// goodPair checks that a second, well-behaved connection of the same IAs
// still works: a message goes through.
func goodPair(t *testing.T, s *server) {
	t.Helper()
	srv := newClient(t, s.ia)
	cli := newClient(t, s.ia)
	if err := srv.ep.PostRecv([]api.LMRTriplet{srv.lmr.Triplet(0, 64)}, 1, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	s.establish(cli, srv, "good", "the good connection")
	copy(cli.buf, "fine")
	if err := cli.ep.PostSend([]api.LMRTriplet{cli.lmr.Triplet(0, 4)}, 2, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	cli.dto(cli.req, 2, api.DTOSuccess, "the good send")
	srv.dto(srv.recv, 1, api.DTOSuccess, "the good receive")
	if string(srv.buf[:4]) != "fine" {
		t.Fatal("the good connection carried other bytes")
	}
}

func TestHostileFrames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bytes func() []byte
	}{
		{"garbage", func() []byte { return []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n0123456789") }},
		{"unknown type", func() []byte { return frameBytes(frame{Type: 99}) }},
		{"unknown flags", func() []byte { return frameBytes(frame{Type: frSend, Flags: 0x80, Seq: 1}) }},
		{"send beyond the message limit", func() []byte { return frameBytes(frame{Type: frSend, Len: 1<<31 + 5, Seq: 1}) }},
		{"write beyond the RDMA limit", func() []byte { return frameBytes(frame{Type: frWrite, Len: 0xFFFFFFFF, Seq: 1}) }},
		{"read request beyond the RDMA limit", func() []byte { return frameBytes(frame{Type: frReadReq, RLen: 0xFFFFFFFF, Seq: 1}) }},
		{"sequence gap", func() []byte { return frameBytes(frame{Type: frWrite, Seq: 7}) }},
		{"send without credit", func() []byte { return frameBytes(frame{Type: frSend, Len: 4, Seq: 1}) }},
		{"ack of nothing sent", func() []byte { return frameBytes(frame{Type: frAck, Flags: frFlagAck, Ack: 3}) }},
		{"ack of nothing sent, riding a write", func() []byte {
			return frameBytes(frame{Type: frWrite, Seq: 1, Flags: frFlagAck, Ack: 3, Credits: 1})
		}},
		{"ack frame without the ack flag", func() []byte { return frameBytes(frame{Type: frAck}) }},
		{"ack fields without the ack flag", func() []byte {
			b := frameBytes(frame{Type: frWrite, Seq: 1})
			b[frameLen-1] = 1 // a credit count, but no flag says so
			return b
		}},
		{"ack flag on a disconnect", func() []byte { return frameBytes(frame{Type: frDisc, Flags: frFlagAck}) }},
		{"unsolicited read response", func() []byte { return frameBytes(frame{Type: frReadResp, Seq: 1, Len: 4}) }},
		{"nak of nothing sent", func() []byte { return frameBytes(frame{Type: frNak, Seq: 1, Status: 6}) }},
		{"nak with a bad status", func() []byte { return frameBytes(frame{Type: frNak, Seq: 1, Status: 99}) }},
		{"credits going down", func() []byte {
			return append(frameBytes(frame{Type: frAck, Flags: frFlagAck, Credits: 5}), frameBytes(frame{Type: frAck, Flags: frFlagAck, Credits: 2})...)
		}},
		{"truncated header then close", func() []byte { return frameBytes(frame{Type: frWrite, Seq: 1})[:9] }},
		{"truncated payload then close", func() []byte { return append(frameBytes(frame{Type: frWrite, Seq: 1, Len: 100, RKey: 1}), 1, 2, 3) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			nc := rawConnect(t, s)
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			if _, err := nc.Write(tc.bytes()); err != nil {
				t.Fatal(err)
			}
			nc.(*net.TCPConn).CloseWrite()
			s.expect(s.connEVD, api.ConnectionBrokenEvent, "BROKEN after "+tc.name)
			runtime.ReadMemStats(&ms)
			if d := ms.TotalAlloc - before; d > 16<<20 {
				t.Errorf("%d bytes allocated while handling the frame", d)
			}
			goodPair(t, s)
		})
	}
}

func TestHostileDuplicateAck(t *testing.T) {
	s := newServer(t)
	nc := rawConnect(t, s)
	// The same ACK twice is harmless; the connection stays up.
	ack := frameBytes(frame{Type: frAck, Flags: frFlagAck, Credits: 1})
	if _, err := nc.Write(append(ack, ack...)); err != nil {
		t.Fatal(err)
	}
	// The EP may now send one message; the raw peer reads its frame.
	copy(s.buf, "abcd")
	if err := s.ep.PostSend([]api.LMRTriplet{s.lmr.Triplet(0, 4)}, 5, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	var h [frameLen + 4]byte
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		if _, err := io.ReadFull(nc, h[:frameLen]); err != nil {
			t.Fatal(err)
		}
		f, err := decodeFrame(h[:frameLen], &limits{maxMsg: 1 << 20, maxRDMA: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if f.Type == frAck {
			continue
		}
		if f.Type != frSend || f.Seq != 1 || f.Len != 4 {
			t.Fatalf("got frame %+v, want SEND 1 of 4 bytes", f)
		}
		break
	}
	if _, err := io.ReadFull(nc, h[frameLen:]); err != nil || string(h[frameLen:]) != "abcd" {
		t.Fatalf("payload %q, %v", h[frameLen:], err)
	}
	// Not yet acknowledged: no completion. Then ACK it twice.
	ack = frameBytes(frame{Type: frAck, Flags: frFlagAck, Ack: 1, Credits: 1})
	if _, err := nc.Write(append(ack, ack...)); err != nil {
		t.Fatal(err)
	}
	s.dto(s.req, 5, api.DTOSuccess, "the send, once acknowledged")
	// An ACK going backwards breaks the connection.
	if _, err := nc.Write(frameBytes(frame{Type: frAck, Flags: frFlagAck, Ack: 0, Credits: 1})); err != nil {
		t.Fatal(err)
	}
	s.expect(s.connEVD, api.ConnectionBrokenEvent, "BROKEN after an ACK going backwards")
}

func TestHostileSilentPeerDisconnect(t *testing.T) {
	// A peer that says nothing after READY: nothing happens until the
	// consumer disconnects, which does not wait for the peer.
	s := newServer(t)
	rawConnect(t, s)
	if err := s.ep.PostRecv([]api.LMRTriplet{s.lmr.Triplet(0, 64)}, 9, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := s.ep.Disconnect(api.CloseAbrupt); err != nil {
		t.Fatal(err)
	}
	s.dto(s.recv, 9, api.DTOErrFlushed, "the flushed receive")
	s.expect(s.connEVD, api.ConnectionDisconnectedEvent, "DISCONNECTED")
	if err := s.ep.Free(); err != nil { // must not hang on the silent peer
		t.Fatal(err)
	}
}

// rawListener is a raw TCP listener standing in for a listening peer.
func rawListener(t *testing.T, serve func(net.Conn)) api.ConnQual {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		serve(nc)
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return api.ConnQual(ln.Addr().(*net.TCPAddr).Port)
}

func TestHostileListener(t *testing.T) {
	readHello := func(nc net.Conn) bool {
		var b [hsLen]byte
		_, err := io.ReadFull(nc, b[:])
		return err == nil
	}
	answer := func(m hsMsg, pd []byte) func(net.Conn) {
		return func(nc net.Conn) {
			if readHello(nc) {
				b := make([]byte, hsLen+len(pd))
				encodeHS(b, &m)
				copy(b[hsLen:], pd)
				nc.Write(b)
			}
			io.Copy(io.Discard, nc)
		}
	}
	for _, tc := range []struct {
		name    string
		serve   func(net.Conn)
		timeout time.Duration
		want    api.EventNumber
	}{
		{"garbage answer", func(nc net.Conn) {
			readHello(nc)
			nc.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\n" + string(make([]byte, 64))))
		}, 20 * time.Second, api.ConnectionNonPeerRejectedEvent},
		{"unknown version", answer(hsMsg{Version: 9, Type: hsAccept}, nil), 20 * time.Second, api.ConnectionNonPeerRejectedEvent},
		{"VERSION answer", answer(hsMsg{Version: wireVersion, Type: hsVersion}, nil), 20 * time.Second, api.ConnectionNonPeerRejectedEvent},
		{"private data beyond the limit", func(nc net.Conn) {
			if readHello(nc) {
				b := make([]byte, hsLen)
				encodeHS(b, &hsMsg{Version: wireVersion, Type: hsAccept})
				binary.BigEndian.PutUint16(b[10:], 0xFFFF)
				nc.Write(b)
			}
			io.Copy(io.Discard, nc)
		}, 20 * time.Second, api.ConnectionNonPeerRejectedEvent},
		{"truncated answer", func(nc net.Conn) { readHello(nc); nc.Write([]byte("GDAT\x00\x01")) }, 20 * time.Second, api.ConnectionNonPeerRejectedEvent},
		{"silence", func(nc net.Conn) { io.Copy(io.Discard, nc) }, 300 * time.Millisecond, api.ConnectionTimedOutEvent},
		{"reject", answer(hsMsg{Version: wireVersion, Type: hsReject, PDLen: 3}, []byte("bye")), 20 * time.Second, api.ConnectionPeerRejectedEvent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := rawListener(t, tc.serve)
			ia := openIA(t)
			c := newClient(t, ia)
			a, _, _ := ia.Query()
			if err := c.ep.Connect(a.Address, q, tc.timeout, []byte("x"), api.QOSBestEffort, api.ConnectDefault); err != nil {
				t.Fatal(err)
			}
			c.expect(c.connEVD, tc.want, tc.name)
		})
	}
}

func TestHostileRequester(t *testing.T) {
	// Requests the listener must drop without a CONNECTION_REQUEST: the
	// PSP keeps serving good requests.
	for _, tc := range []struct {
		name string
		send []byte
	}{
		{"garbage", []byte("SSH-2.0-OpenSSH_9.0\r\n" + string(make([]byte, 64)))},
		{"unknown version", func() []byte { b := rawHello(nil); binary.BigEndian.PutUint16(b[4:], 7); return b }()},
		{"private data beyond the limit", func() []byte { b := rawHello(nil); binary.BigEndian.PutUint16(b[10:], 5000); return b }()},
		{"wrong type", func() []byte { b := rawHello(nil); binary.BigEndian.PutUint16(b[6:], hsReady); return b }()},
		{"truncated", rawHello(nil)[:20]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", itoa(s.q)))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.Write(tc.send)
			nc.(*net.TCPConn).CloseWrite()
			// The listener closes the socket (after a VERSION answer for
			// an unknown version).
			nc.SetReadDeadline(time.Now().Add(20 * time.Second))
			b, err := io.ReadAll(nc)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the listener did not close the connection: %v", err)
			}
			if len(b) > 0 {
				if m, err := decodeHS(b, maxPrivateData); err != nil || m.Type != hsVersion {
					t.Fatalf("the listener answered %x", b)
				}
			}
			goodPair(t, s)
			var ev api.Event
			if err := s.crEVD.Dequeue(&ev); err == nil {
				t.Fatalf("a CONNECTION_REQUEST was delivered for the bad request")
			}
		})
	}
}

// Connections that say nothing hold a listener's handshake slots for
// hsTimeout at most, and no more than maxHandshakes of them at once: one
// beyond is closed at once, and once the silent ones go, good requests
// are served again.
func TestHostileSilentRequesters(t *testing.T) {
	old := maxHandshakes
	maxHandshakes = 2
	t.Cleanup(func() { maxHandshakes = old })
	// Opened without the registry, to read the count.
	x, err := Provider{}.Open(context.Background(), api.OpenParams{Name: "tcp", Params: "127.0.0.1", AsyncEVDQLen: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close(api.CloseAbrupt) })
	i := x.(*ia)
	handshakes := func() int {
		i.mu.Lock()
		defer i.mu.Unlock()
		return i.handshakes
	}
	s := newServerOn(t, x)
	dial := func() net.Conn {
		t.Helper()
		nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", itoa(s.q)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return nc
	}
	// closedSoon reports whether the listener closed nc within d.
	closedSoon := func(nc net.Conn, d time.Duration) bool {
		nc.SetReadDeadline(time.Now().Add(d))
		_, err := nc.Read(make([]byte, 1))
		ne, ok := err.(net.Error)
		return !(ok && ne.Timeout())
	}
	waitFor := func(n int, what string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); handshakes() != n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d handshakes counted, want %d", what, handshakes(), n)
			}
		}
	}
	silent := []net.Conn{dial(), dial()}
	waitFor(2, "two silent connections")
	if extra := dial(); !closedSoon(extra, 5*time.Second) {
		t.Fatal("a third silent connection was kept beyond maxHandshakes = 2")
	}
	for i, nc := range silent {
		if closedSoon(nc, 100*time.Millisecond) {
			t.Fatalf("silent connection %d was closed before hsTimeout", i)
		}
		nc.Close()
	}
	// The listener notices the two ends and frees their slots.
	waitFor(0, "after the silent connections closed")
	goodPair(t, s)
	waitFor(0, "after a good request")
}

func TestConnectUnreachable(t *testing.T) {
	// An IPv4 IA cannot reach an IPv6 address: UNREACHABLE.
	ia := openIA(t)
	c := newClient(t, ia)
	if err := c.ep.Connect(&net.IPAddr{IP: net.IPv6loopback}, 1, 20*time.Second, nil, api.QOSBestEffort, api.ConnectDefault); err != nil {
		t.Fatal(err)
	}
	c.expect(c.connEVD, api.ConnectionUnreachableEvent, "connecting from 127.0.0.1 to ::1")
}

func TestIPv6(t *testing.T) {
	ia, err := registry.Open(context.Background(), "tcp6")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer ia.Close(api.CloseAbrupt)
	a, _, err := ia.Query()
	if err != nil || a.Address.String() != "::1" {
		t.Fatalf("address %v, %v", a.Address, err)
	}
	cr, err := ia.CreateEVD(4, nil, api.EVDCR)
	if err != nil {
		t.Fatal(err)
	}
	_, q, err := ia.CreatePSPAny(cr, api.PSPConsumer)
	if err != nil {
		t.Skipf("cannot listen on ::1: %v", err)
	}
	cli, srv := newClient(t, ia), newClient(t, ia)
	cli.connect(q, "v6")
	ev := cli.expect(cr, api.ConnectionRequestEvent, "the request over IPv6")
	if err := ev.CR.CR.Accept(srv.ep, nil); err != nil {
		t.Fatal(err)
	}
	cli.expect(cli.connEVD, api.ConnectionEstablishedEvent, "ESTABLISHED over IPv6")
}

// CheckParams refuses, by their form alone, the ia_params and
// platform_params that Open refuses on every host, and accepts the rest,
// whether or not the address or interface exists here.
func TestCheckParams(t *testing.T) {
	for _, p := range []string{"127.0.0.1", " 10.1.2.3 ", "::1", "[fe80::1]", "192.0.2.77", "eth0", "no-such-if0", "enp0s31f6", "ib0.8001", "br-1a2b3c4d5e6f"} {
		if ia, _ := (Provider{}).CheckParams(api.OpenParams{Params: p}); ia != nil {
			t.Errorf("ia_params %q: %v", p, ia)
		}
	}
	for p, want := range map[string]string{
		"":                  "ia_params is empty",
		"999.1.2.3":         `"999.1.2.3" is not an IPv4 address`,
		"10.0.0":            `"10.0.0" is not an IPv4 address`,
		"fe80::1::2":        "is not an IPv6 address",
		"127.0.0.1 0":       "no '/' and no blanks",
		"a/b":               "no '/' and no blanks",
		"an-interface-name": "too long for an interface name",
		"..":                "nor an interface name",
	} {
		ia, _ := (Provider{}).CheckParams(api.OpenParams{Params: p})
		if !errors.Is(ia, api.ErrProviderNotFound) || !strings.Contains(ia.Error(), want) {
			t.Errorf("ia_params %q: %v, want an error saying %q", p, ia, want)
		}
		if _, err := localIP(p); err == nil || err.Error() != ia.Error() {
			t.Errorf("Open and CheckParams differ on ia_params %q: %v and %v", p, err, ia)
		}
	}
	for pp, ok := range map[string]bool{"": true, "peer_timeout=0": true, " peer_timeout=2m ": true,
		"peer_timeout=forever": false, "peer_timeout=1ms": false, "colour=blue": false, "peer_timeout": false} {
		_, err := (Provider{}).CheckParams(api.OpenParams{Params: "127.0.0.1", PlatformParams: pp})
		if (err == nil) != ok || err != nil && !errors.Is(err, api.ErrInvalidParameter) {
			t.Errorf("platform_params %q: %v", pp, err)
		}
	}
}

// A configuration file reports the ia_params and platform_params that tcp
// refuses by their form at their positions, without opening the IA.
func TestConfigChecksParams(t *testing.T) {
	_, err := registry.ParseConfig("f", []byte(`[[ia]]
name = "t"
provider = "tcp"
api_version = "u2.0"
ia_params = "999.1.2.3"
platform_params = "peer_timeout=forever"
`))
	var ce registry.ConfigErrors
	if !errors.As(err, &ce) || len(ce) != 2 ||
		ce[0].Error() != `f:5:13: tcp: ia_params "999.1.2.3" is not an IPv4 address (four numbers from 0 to 255, separated by dots); `+wantIAParams ||
		ce[1].Error() != `f:6:19: tcp: platform_params: peer_timeout="forever" is not a duration (for example 30s or 1m)` {
		t.Fatalf("ParseConfig: %v (%q)", err, ce)
	}
}

func TestOpenParams(t *testing.T) {
	for _, p := range []string{"127.0.0.1", "[::1]", "lo"} {
		if _, err := localIP(p); err != nil && p != "[::1]" {
			t.Errorf("localIP(%q): %v", p, err)
		}
	}
	for _, p := range []string{"", "192.0.2.77", "no-such-if0"} {
		if _, err := localIP(p); err == nil {
			t.Errorf("localIP(%q) succeeded", p)
		}
	}
}
