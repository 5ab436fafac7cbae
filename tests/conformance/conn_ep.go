package conformance

import (
	"bytes"
	"fmt"

	"github.com/godat/godat/api"
)

// connEPGroups checks the EP's connection calls after dat_ep_connect: ending
// a connection (disconnect, reset, free), dat_ep_dup_connect(3DAT) and
// dat_ep_get_status(3DAT).
var connEPGroups = []group{
	{page: "dat_ep_disconnect", checks: []check{
		{"DESCRIPTION", "a graceful disconnect gives DISCONNECTED on both sides and both EPs are DISCONNECTED", func(t *checkT) {
			p := t.pair()
			t.disconnectBoth(p)
			t.eventuallyState(p.srv.ep, "the peer EP", api.EPDisconnected)
		}},
		{"DESCRIPTION", "an abrupt disconnect gives DISCONNECTED locally, ends the peer's connection, and both EPs are DISCONNECTED", func(t *checkT) {
			p := t.pair()
			t.noErr(p.srv.ep.Disconnect(api.CloseAbrupt), "EP.Disconnect(abrupt)")
			p.srv.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED on the disconnecting side")
			p.cli.expectConnEnd("the peer of an abrupt disconnect", api.ConnectionDisconnectedEvent, api.ConnectionBrokenEvent)
			t.eventuallyState(p.srv.ep, "the disconnecting EP", api.EPDisconnected)
			t.eventuallyState(p.cli.ep, "the peer EP", api.EPDisconnected)
		}},
		{"DESCRIPTION", "posted receives complete exactly once with FLUSHED, in post order, when the EP leaves CONNECTED", func(t *checkT) {
			p := t.pair()
			r := p.srv.region(256, api.MemPrivLocalWrite|api.MemPrivLocalRead)
			for i := range 3 {
				p.srv.postRecv(r, i*64, 64, api.Cookie(100+i))
			}
			t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful)")
			for i := range 3 {
				p.srv.expectRecv(api.Cookie(100+i), api.DTOErrFlushed, "a flushed receive")
			}
			p.srv.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED on the peer")
			t.eventuallyState(p.srv.ep, "the peer EP", api.EPDisconnected)
			// A marker: flushed at once, and the next completion, so none
			// of the three came twice.
			p.srv.postRecv(r, 0, 64, 999)
			p.srv.expectRecv(999, api.DTOErrFlushed, "the marker receive")
		}},
		{"DESCRIPTION", "a graceful disconnect lets outstanding sends complete successfully first", func(t *checkT) {
			p := t.pair()
			rr := p.srv.region(64, api.MemPrivLocalWrite)
			sr := p.cli.region(64, api.MemPrivLocalRead)
			want := sr.fill(0, 64, 0x3D)
			p.srv.postRecv(rr, 0, 64, 1)
			p.cli.postSend(sr, 0, 64, 2)
			t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful)")
			p.cli.expectReq(2, api.DTOSuccess, "the send posted before the graceful disconnect")
			p.srv.expectRecv(1, api.DTOSuccess, "the receive of that send")
			if !bytes.Equal(rr.b[:64], want) {
				t.Fatalf("the peer received other bytes than sent")
			}
		}},
		{"DESCRIPTION", "a graceful disconnect with several sends of various sizes outstanding lets every one complete successfully, and the peer receives them all", func(t *checkT) {
			srv, cli := t.serverNode(), t.node()
			x := t.newExchange(cli, srv)
			for round := range disconnectRounds {
				p := x.start(round)
				t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful) with the sends outstanding")
				x.sendsComplete(p, "a send outstanding at the sender's graceful disconnect")
				x.received(p, round)
				x.finish(p)
			}
		}},
		{"DESCRIPTION", "sends whose receives the peer completed complete successfully, not FLUSHED, when the peer then disconnects gracefully", func(t *checkT) {
			// The receiver's completions say the data arrived: the
			// sends delivered it, and the disconnect that follows
			// must not turn them into flushed ones.
			srv, cli := t.serverNode(), t.node()
			x := t.newExchange(cli, srv)
			for round := range disconnectRounds {
				p := x.start(round)
				x.received(p, round)
				t.noErr(p.srv.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful) by the receiver")
				x.sendsComplete(p, "a send the peer received before it disconnected gracefully")
				x.finish(p)
			}
		}},
		{"DESCRIPTION", "a send still waiting for the peer's receive at a graceful disconnect keeps the EP DISCONNECT_PENDING, which refuses new sends; it completes once the peer posts a receive, and then both sides are DISCONNECTED", func(t *checkT) {
			p := t.pair()
			sr := p.cli.region(64, api.MemPrivLocalRead)
			want := sr.fill(0, 64, 0x3E)
			p.cli.postSend(sr, 0, 64, 1) // no receive at the peer: it waits
			t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful) with the send waiting")
			t.wantState(p.cli.ep, api.EPDisconnectPending, "the EP whose send waits after a graceful disconnect")
			t.wantErr(p.cli.ep.PostSend(sr.iov(0, 8), 2, api.CompletionDefault), api.ErrInvalidState, "PostSend in DISCONNECT_PENDING")
			rr := p.srv.region(64, api.MemPrivLocalWrite|api.MemPrivLocalRead)
			p.srv.postRecv(rr, 0, 64, 3)
			ev := p.cli.expectReq(1, api.DTOSuccess, "the send that waited through the graceful disconnect")
			if ev.DTO.Length != 64 {
				t.Errorf("the send's completion says %d bytes, want 64", ev.DTO.Length)
			}
			p.srv.expectRecv(3, api.DTOSuccess, "its receive")
			if !bytes.Equal(rr.b[:64], want) {
				t.Fatalf("the peer received other bytes than sent")
			}
			p.cli.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED once the send completed")
			p.srv.expectConnEnd("the peer's end of the connection", api.ConnectionDisconnectedEvent)
		}},
		{"DESCRIPTION", "an abrupt disconnect in DISCONNECT_PENDING ends the connection without waiting: the send completes, DISCONNECTED follows", func(t *checkT) {
			p := t.pair()
			sr := p.cli.region(64, api.MemPrivLocalRead)
			p.cli.postSend(sr, 0, 64, 1) // no receive at the peer: it waits
			t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful) with the send waiting")
			t.wantState(p.cli.ep, api.EPDisconnectPending, "the EP whose send waits after a graceful disconnect")
			t.noErr(p.cli.ep.Disconnect(api.CloseAbrupt), "EP.Disconnect(abrupt) in DISCONNECT_PENDING")
			// An in-progress DTO may complete either way (the page).
			t.expectEvent(p.cli.req, api.DTOCompletionEvent, "the send the abrupt disconnect ended")
			p.cli.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED after the abrupt disconnect")
			t.wantState(p.cli.ep, api.EPDisconnected, "the EP after the abrupt disconnect")
		}},
		{"DESCRIPTION", "on an EVD shared by all streams, the completions of in-progress DTOs precede DISCONNECTED", func(t *checkT) {
			srv, cli := t.node(), t.node()
			all := cli.evd(api.EVDDTO | api.EVDConnection | api.EVDRMRBind)
			ep, err := cli.ia.CreateEP(cli.pz, all, all, all, nil)
			t.noErr(err, "IA.CreateEP with one EVD for every stream")
			c := &end{node: cli, ep: ep}
			c.req, c.recv, c.conn = all, all, all
			s := t.connectEnd(c, srv)
			c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the shared EVD")
			s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
			rr := s.region(3*32, api.MemPrivLocalWrite)
			sr := c.region(32, api.MemPrivLocalRead)
			for i := range 3 {
				s.postRecv(rr, i*32, 32, api.Cookie(i))
			}
			for i := range 3 {
				c.postSend(sr, 0, 32, api.Cookie(10+i))
			}
			t.noErr(c.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful)")
			for i := range 3 {
				c.expectReq(api.Cookie(10+i), api.DTOSuccess, "a send completion before DISCONNECTED")
			}
			c.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED after the send completions")
		}},
		{"DESCRIPTION", "disconnecting a DISCONNECTED EP is a no-op", func(t *checkT) {
			p := t.pair()
			t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful)")
			p.cli.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED")
			t.eventuallyState(p.cli.ep, "the disconnected EP", api.EPDisconnected)
			t.noErr(p.cli.ep.Disconnect(api.CloseAbrupt), "EP.Disconnect on a DISCONNECTED EP")
			t.wantState(p.cli.ep, api.EPDisconnected, "after the second Disconnect")
		}},
		{"DESCRIPTION", "disconnecting an UNCONNECTED EP is DAT_INVALID_STATE", func(t *checkT) {
			e := t.node().end(nil)
			t.wantErr(e.ep.Disconnect(api.CloseAbrupt), api.ErrInvalidState, "Disconnect on an UNCONNECTED EP")
			t.wantState(e.ep, api.EPUnconnected, "after the refused Disconnect")
		}},
		{"DESCRIPTION", "disconnecting during ACTIVE_CONNECTION_PENDING aborts to DISCONNECTED and flushes preposted receives", func(t *checkT) {
			srv, cli := t.node(), t.node()
			_, q := srv.listen(api.PSPConsumer)
			c := cli.end(nil)
			r := cli.region(64, api.MemPrivLocalWrite)
			c.postRecv(r, 0, 64, 77)
			c.connect(srv, q, nil)
			t.noErr(c.ep.Disconnect(api.CloseAbrupt), "EP.Disconnect during ACTIVE_CONNECTION_PENDING")
			t.eventuallyState(c.ep, "the aborted EP", api.EPDisconnected)
			c.expectRecv(77, api.DTOErrFlushed, "the preposted receive")
		}},
	}},

	{page: "dat_ep_reset", checks: []check{
		{"DESCRIPTION", "Reset moves a DISCONNECTED EP to UNCONNECTED, from where it connects again", func(t *checkT) {
			p := t.pair()
			t.disconnectBoth(p)
			t.noErr(p.cli.ep.Reset(), "EP.Reset")
			t.wantState(p.cli.ep, api.EPUnconnected, "after Reset")
			p.cli.connect(p.srv.node, p.q, nil)
			ev := p.srv.expectCR("the second CONNECTION_REQUEST")
			s := p.srv.node.end(nil)
			t.noErr(ev.CR.CR.Accept(s.ep, nil), "CR.Accept")
			p.cli.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED of the reset EP")
			s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
			t.works(p.cli, s, "the new connection of the reset EP")
		}},
		{"RETURN VALUES", "Reset of a CONNECTED EP is DAT_INVALID_STATE and changes nothing", func(t *checkT) {
			p := t.pair()
			t.wantErr(p.cli.ep.Reset(), api.ErrInvalidState, "Reset of a CONNECTED EP")
			t.wantConnected(p.cli.ep, "after the refused Reset")
			t.works(p.cli, p.srv, "after the refused Reset")
		}},
		{"DESCRIPTION", "Reset of an UNCONNECTED EP is a no-op that keeps preposted receives", func(t *checkT) {
			srv, cli := t.node(), t.node()
			c := cli.end(nil)
			r := cli.region(64, api.MemPrivLocalWrite)
			c.postRecv(r, 0, 64, 5)
			t.noErr(c.ep.Reset(), "EP.Reset of an UNCONNECTED EP")
			t.wantState(c.ep, api.EPUnconnected, "after Reset")
			s := t.connectEnd(c, srv)
			c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED")
			s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
			sr := s.region(16, api.MemPrivLocalRead)
			want := sr.fill(0, 16, 0x42)
			s.postSend(sr, 0, 16, 6)
			s.expectReq(6, api.DTOSuccess, "the send")
			ev := c.expectRecv(5, api.DTOSuccess, "the receive posted before Reset")
			if ev.DTO.Length != 16 || !bytes.Equal(r.b[:16], want) {
				t.Fatalf("the kept receive got %d bytes %x, want %x", ev.DTO.Length, r.b[:16], want)
			}
		}},
	}},

	{page: "dat_ep_dup_connect", checks: []check{
		{"DESCRIPTION", "DupConnect reaches the same remote service point with its private data, and accepting connects", func(t *checkT) {
			p := t.pair()
			d := p.cli.node.end(nil)
			pd := pattern(20, 0x0D)
			t.noErr(d.ep.DupConnect(p.cli.ep, connTimeout, pd, api.QOSBestEffort), "EP.DupConnect")
			ev := p.srv.expectCR("the request of DupConnect")
			if ev.CR.PSP != p.psp {
				t.Errorf("the DupConnect request arrived on another service point")
			}
			cp, err := ev.CR.CR.Query()
			t.noErr(err, "CR.Query")
			if !bytes.Equal(cp.PrivateData, pd) {
				t.Errorf("DupConnect private data %x, want %x", cp.PrivateData, pd)
			}
			s := p.srv.node.end(nil)
			t.noErr(ev.CR.CR.Accept(s.ep, nil), "CR.Accept")
			d.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED of the duplicate")
			s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
			t.works(d, s, "the duplicate connection")
		}},
		{"RETURN VALUES", "a dup EP that is not connected is DAT_INVALID_STATE", func(t *checkT) {
			n := t.node()
			d, u := n.end(nil), n.end(nil)
			t.wantErr(d.ep.DupConnect(u.ep, connTimeout, nil, api.QOSBestEffort), api.ErrInvalidState, "DupConnect from an UNCONNECTED EP")
			t.wantState(d.ep, api.EPUnconnected, "after the refused DupConnect")
		}},
		{"DESCRIPTION", "private data longer than MaxPrivateDataSize is DAT_INVALID_PARAMETER", func(t *checkT) {
			p := t.pair()
			d := p.cli.node.end(nil)
			err := d.ep.DupConnect(p.cli.ep, connTimeout, make([]byte, p.cli.maxPD()+1), api.QOSBestEffort)
			t.wantErr(err, api.ErrInvalidParameter, "DupConnect with MaxPrivateDataSize+1 bytes")
		}},
	}},

	{page: "dat_ep_free", checks: []check{
		{"DESCRIPTION", "freeing a connected EP ends the peer's connection (DISCONNECTED or BROKEN)", func(t *checkT) {
			p := t.pair()
			t.noErr(p.cli.ep.Free(), "EP.Free of a connected EP")
			p.srv.expectConnEnd("the peer of a freed EP", api.ConnectionDisconnectedEvent, api.ConnectionBrokenEvent)
			t.eventuallyState(p.srv.ep, "the peer EP", api.EPDisconnected)
		}},
		{"RETURN VALUES", "freeing a RESERVED EP is DAT_INVALID_STATE", func(t *checkT) {
			n := t.node()
			e := n.end(nil)
			_, err := n.ia.CreateRSP(n.freeQual(), e.ep, n.cr)
			t.noErr(err, "IA.CreateRSP")
			t.wantErr(e.ep.Free(), api.ErrInvalidState, "EP.Free in RESERVED")
			t.wantState(e.ep, api.EPReserved, "after the refused Free")
		}},
		{"RETURN VALUES", "freeing an EP in PASSIVE_CONNECTION_PENDING is DAT_INVALID_STATE", func(t *checkT) {
			r := t.rspRequest()
			t.wantErr(r.s.ep.Free(), api.ErrInvalidState, "EP.Free in PASSIVE_CONNECTION_PENDING")
			t.wantState(r.s.ep, api.EPPassiveConnectionPending, "after the refused Free")
		}},
		{"DESCRIPTION", "every call on a freed EP, and every call that passes it, is DAT_INVALID_HANDLE", freedEP},
	}},

	{page: "dat_ep_get_status", checks: []check{
		{"DESCRIPTION", "recv_idle is false while a receive is posted and true once it completed", func(t *checkT) {
			srv, cli := t.node(), t.node()
			c := cli.end(nil)
			r := cli.region(64, api.MemPrivLocalWrite)
			_, idle, _, err := c.ep.GetStatus()
			t.noErr(err, "EP.GetStatus")
			if !idle {
				t.Fatalf("recv_idle is false on a new EP")
			}
			c.postRecv(r, 0, 64, 1)
			_, idle, _, err = c.ep.GetStatus()
			t.noErr(err, "EP.GetStatus")
			if idle {
				t.Fatalf("recv_idle is true with a receive posted")
			}
			s := t.connectEnd(c, srv)
			c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED")
			s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
			sr := s.region(8, api.MemPrivLocalRead)
			s.postSend(sr, 0, 8, 2)
			s.expectReq(2, api.DTOSuccess, "the send")
			c.expectRecv(1, api.DTOSuccess, "the receive")
			_, idle, _, err = c.ep.GetStatus()
			t.noErr(err, "EP.GetStatus")
			if !idle {
				t.Fatalf("recv_idle is false after the only receive completed")
			}
		}},
	}},
}

// disconnectSizes are the message sizes of the graceful disconnect checks
// with several sends: from a byte to a few pages, 0x2000 (the size of a
// DAPL transaction test's messages) among them.
var disconnectSizes = []int{0x2000, 64, 0x2000, 1, 0x3001, 0x2000}

// disconnectRounds is how many connections those checks make in turn: the
// faults they look for (a disconnect that overtakes the news of data the
// peer already has) show in some rounds only.
const disconnectRounds = 16

// exchange is the setup of those checks: a server and a client node, and
// regions for one round's messages (disconnectSizes, back to back).
type exchange struct {
	t        *checkT
	cli, srv *node
	sr, rr   *region
	total    int    // the bytes of one round
	sent     []byte // this round's data
}

// disconnectBoth disconnects p's client gracefully, waits for DISCONNECTED
// on both sides and for the client's EP to be DISCONNECTED.
func (t *checkT) disconnectBoth(p *pair) {
	t.T.Helper()
	t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect(graceful)")
	p.cli.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED on the disconnecting side")
	p.srv.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED on the peer")
	t.eventuallyState(p.cli.ep, "the disconnecting EP", api.EPDisconnected)
}

// newExchange registers the regions of an exchange between cli and srv.
func (t *checkT) newExchange(cli, srv *node) *exchange {
	t.T.Helper()
	total := 0
	for _, n := range disconnectSizes {
		total += n
	}
	return &exchange{t: t, cli: cli, srv: srv, total: total,
		sr: cli.region(total, api.MemPrivLocalRead|api.MemPrivLocalWrite),
		rr: srv.region(total, api.MemPrivLocalRead|api.MemPrivLocalWrite)}
}

// start connects a new pair, posts a receive on the server for each of
// disconnectSizes and then the matching sends on the client, receive k
// with cookie k and send k with cookie 100+k.
func (x *exchange) start(round int) *pair {
	t := x.t
	t.T.Helper()
	p := t.pairWith(pairCfg{cli: x.cli, srv: x.srv})
	clear(x.rr.b)
	x.sent = x.sr.fill(0, x.total, byte(round))
	off := 0
	for k, n := range disconnectSizes {
		p.srv.postRecv(x.rr, off, n, api.Cookie(k))
		off += n
	}
	off = 0
	for k, n := range disconnectSizes {
		p.cli.postSend(x.sr, off, n, api.Cookie(100+k))
		off += n
	}
	return p
}

// sendsComplete waits for the client's send completions, in post order,
// each a success with its length.
func (x *exchange) sendsComplete(p *pair, what string) {
	x.t.T.Helper()
	for k, n := range disconnectSizes {
		ev := p.cli.expectReq(api.Cookie(100+k), api.DTOSuccess, fmt.Sprintf("%s (%#x bytes)", what, n))
		if int(ev.DTO.Length) != n {
			x.t.Fatalf("%s: the completion of a send of %#x bytes says %#x", what, n, ev.DTO.Length)
		}
	}
}

// received waits for the server's receive completions, in post order, each
// a success with the length sent, and checks the bytes that arrived.
func (x *exchange) received(p *pair, round int) {
	t := x.t
	t.T.Helper()
	for k, n := range disconnectSizes {
		ev := p.srv.expectRecv(api.Cookie(k), api.DTOSuccess, fmt.Sprintf("the receive of a %#x-byte send", n))
		if int(ev.DTO.Length) != n {
			t.Fatalf("round %d: the receive of a %#x-byte send completed with length %#x", round, n, ev.DTO.Length)
		}
	}
	if !bytes.Equal(x.rr.b[:len(x.sent)], x.sent) {
		t.Fatalf("round %d: the receiver has other bytes than were sent", round)
	}
}

// finish waits for DISCONNECTED on both ends and frees the pair's EPs and
// PSP.
func (x *exchange) finish(p *pair) {
	t := x.t
	t.T.Helper()
	p.cli.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED on the client")
	p.srv.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED on the server")
	t.noErr(p.cli.ep.Free(), "EP.Free of the client EP")
	t.noErr(p.srv.ep.Free(), "EP.Free of the server EP")
	t.noErr(p.psp.Free(), "PSP.Free")
}
