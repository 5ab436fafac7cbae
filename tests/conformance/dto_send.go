package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/godat/godat/api"
)

// postSendGroups checks dat_ep_post_send(3DAT): what a send delivers, how its
// completions and their flags behave, and how a bad local IOV or a missing
// receive is reported.
var postSendGroups = []group{
	{page: "dat_ep_post_send", checks: []check{
		{"DESCRIPTION", "a send delivers its bytes; the completions report op, cookie, length and EP", func(t *checkT) {
			p := t.pair()
			sr := p.cli.region(100, rw)
			want := sr.fill(0, 100, 0x01)
			rr := p.srv.region(200, rw)
			p.srv.postRecv(rr, 0, 200, 11)
			p.cli.postSend(sr, 0, 100, 12)
			ev := p.cli.expectReq(12, api.DTOSuccess, "the send completion")
			if ev.DTO.Op != api.OpSend || ev.DTO.Length != 100 {
				t.Errorf("send completion op %v length %d, want %v length 100", ev.DTO.Op, ev.DTO.Length, api.OpSend)
			}
			ev = p.srv.expectRecv(11, api.DTOSuccess, "the receive completion")
			if ev.DTO.Op != api.OpReceive || ev.DTO.Length != 100 {
				t.Errorf("receive completion op %v length %d, want %v length 100", ev.DTO.Op, ev.DTO.Length, api.OpReceive)
			}
			if !bytes.Equal(rr.b[:100], want) {
				t.Errorf("received bytes differ from the sent ones")
			}
			if !bytes.Equal(rr.b[100:200], make([]byte, 100)) {
				t.Errorf("the receive buffer changed beyond the message length")
			}
		}},
		{"DESCRIPTION", "a multi-segment send gathers its segments in IOV order", func(t *checkT) {
			p := t.pair()
			if m := t.queryEP(p.cli.ep).Attr.MaxRequestIOV; m < 3 {
				t.Skipf("MaxRequestIOV is %d", m)
			}
			a, b := p.cli.region(128, rw), p.cli.region(128, rw)
			x, y, z := a.fill(0, 10, 0x10), b.fill(5, 20, 0x20), a.fill(50, 7, 0x30)
			rr := p.srv.region(64, rw)
			p.srv.postRecv(rr, 0, 64, 1)
			t.noErr(p.cli.ep.PostSend([]api.LMRTriplet{a.tr(0, 10), b.tr(5, 20), a.tr(50, 7)}, 2, api.CompletionDefault), "EP.PostSend with 3 segments")
			p.cli.expectReq(2, api.DTOSuccess, "the send completion")
			ev := p.srv.expectRecv(1, api.DTOSuccess, "the receive completion")
			want := append(append(append([]byte{}, x...), y...), z...)
			if ev.DTO.Length != 37 || !bytes.Equal(rr.b[:37], want) {
				t.Fatalf("received %d bytes %x, want %x", ev.DTO.Length, rr.b[:ev.DTO.Length], want)
			}
		}},
		{"PARAMETERS", "a send with no segments is a zero-size message: the receive completes with length 0", func(t *checkT) {
			p := t.pair()
			rr := p.srv.region(64, rw)
			rr.fill(0, 64, 0x44)
			snap := rr.snapshot()
			p.srv.postRecv(rr, 0, 64, 1)
			t.noErr(p.cli.ep.PostSend(nil, 2, api.CompletionDefault), "EP.PostSend with no segments")
			p.cli.expectReq(2, api.DTOSuccess, "the send completion")
			ev := p.srv.expectRecv(1, api.DTOSuccess, "the receive completion")
			if ev.DTO.Length != 0 {
				t.Errorf("receive length %d, want 0", ev.DTO.Length)
			}
			rr.unchanged(snap, "a zero-size message")
		}},
		{"DESCRIPTION", "sends and receives complete in post order and messages arrive in send order", func(t *checkT) {
			p := t.pair()
			n := min(8, t.queryEP(p.cli.ep).Attr.MaxRequestDTOs, t.queryEP(p.srv.ep).Attr.MaxRecvDTOs)
			sr, rr := p.cli.region(n*32, rw), p.srv.region(n*32, rw)
			var msgs [][]byte
			for i := range n {
				p.srv.postRecv(rr, i*32, 32, api.Cookie(100+i))
				msgs = append(msgs, sr.fill(i*32, 16+i, byte(i*16)))
			}
			for i := range n {
				p.cli.postSend(sr, i*32, 16+i, api.Cookie(200+i))
			}
			for i := range n {
				p.cli.expectReq(api.Cookie(200+i), api.DTOSuccess, "a send completion, in post order")
			}
			for i := range n {
				ev := p.srv.expectRecv(api.Cookie(100+i), api.DTOSuccess, "a receive completion, in post order")
				if int(ev.DTO.Length) != 16+i || !bytes.Equal(rr.b[i*32:i*32+16+i], msgs[i]) {
					t.Fatalf("receive %d holds %d bytes that are not message %d", i, ev.DTO.Length, i)
				}
			}
		}},
		{"DESCRIPTION", "every posted DTO completes exactly once", func(t *checkT) {
			p := t.pair()
			n := min(6, t.queryEP(p.cli.ep).Attr.MaxRequestDTOs-1, t.queryEP(p.srv.ep).Attr.MaxRecvDTOs-1)
			sr, rr := p.cli.region(64, rw), p.srv.region(64*(n+1), rw)
			for i := range n + 1 {
				p.srv.postRecv(rr, i*64, 64, api.Cookie(i))
			}
			for i := range n {
				p.cli.postSend(sr, 0, 8, api.Cookie(i))
			}
			for i := range n {
				p.cli.expectReq(api.Cookie(i), api.DTOSuccess, "a send completion")
				p.srv.expectRecv(api.Cookie(i), api.DTOSuccess, "a receive completion")
			}
			// Completions are ordered per queue: if any came twice, the
			// marker's would not be the next one.
			p.cli.postSend(sr, 0, 8, 999)
			p.cli.expectReq(999, api.DTOSuccess, "the marker send, next after the others")
			p.srv.expectRecv(api.Cookie(n), api.DTOSuccess, "the marker receive, next after the others")
			t.expectEmpty(p.cli.req, "the request EVD after the marker")
			t.expectEmpty(p.srv.recv, "the receive EVD after the marker")
		}},
		{"DESCRIPTION (DESIGN §4)", "a consumer polling the EVDs while a send runs finds the message in place the moment the receive's, and the send's, completion is visible", func(t *checkT) {
			p := t.pair()
			n := t.inPlaceLen(p, false)
			sr, rr := p.cli.region(n, rw), p.srv.region(n, rw)
			inPlaceDo(func(round int) bool {
				want := sr.fill(0, n, byte(1+round*37))
				clear(rr.b)
				p.srv.postRecv(rr, 0, n, api.Cookie(round))
				rp := t.poll(p.srv.recv, api.Cookie(round), rr.b[:n], want, fmt.Sprintf("round %d, the receive of %d bytes", round, n))
				sp := t.poll(p.cli.req, api.Cookie(100+round), rr.b[:n], want, fmt.Sprintf("round %d, the send of %d bytes", round, n))
				rp.start()
				sp.start()
				p.cli.postSend(sr, 0, n, api.Cookie(100+round))
				recvClose, sendClose := rp.check(), sp.check()
				return recvClose || sendClose
			})
		}},
		{"RETURN VALUES", "MaxRequestDTOs sends may wait for the peer's receives; one more is DAT_INSUFFICIENT_RESOURCES, and those posted complete once receives come", func(t *checkT) {
			cli := t.node()
			a := cli.epAttr()
			a.MaxRequestDTOs = 4
			p := t.pairWith(pairCfg{cli: cli, cliAttr: a})
			m := t.queryEP(p.cli.ep).Attr.MaxRequestDTOs
			if m < 1 || m > 1024 {
				t.Skipf("MaxRequestDTOs is %d", m)
			}
			sr := p.cli.region(8, rw)
			for i := range m {
				p.cli.postSend(sr, 0, 8, api.Cookie(i)) // no receive at the peer: each waits
			}
			t.wantErr(p.cli.ep.PostSend(sr.iov(0, 8), api.Cookie(m), api.CompletionDefault), api.ErrInsufficientResources, fmt.Sprintf("PostSend with MaxRequestDTOs (%d) sends outstanding", m))
			// They wait: none may reach the peer before its receives, and
			// the connection stays up meanwhile.
			t.quiet(p.cli.conn, 100*time.Millisecond, "the client's connection EVD while its sends wait for the peer's receives")
			t.quiet(p.srv.conn, 10*time.Millisecond, "the server's connection EVD while the client's sends wait for its receives")
			rr := p.srv.region(8*m, rw)
			for i := range m {
				p.srv.postRecv(rr, 8*i, 8, api.Cookie(i))
			}
			for i := range m {
				p.cli.expectReq(api.Cookie(i), api.DTOSuccess, "a send that waited for a receive")
				p.srv.expectRecv(api.Cookie(i), api.DTOSuccess, "its receive")
			}
			t.works(p.cli, p.srv, "after the refused post (which must not have been queued)")
		}},
		{"PARAMETERS", "DAT_COMPLETION_SUPPRESS_FLAG hides a successful completion; the message is still delivered", func(t *checkT) {
			p := t.pair()
			sr := p.twoReceives()
			t.noErr(p.cli.ep.PostSend(sr.iov(0, 8), 10, api.CompletionSuppress), "EP.PostSend with CompletionSuppress")
			p.cli.postSend(sr, 0, 8, 11)
			p.cli.expectReq(11, api.DTOSuccess, "the next request completion (the suppressed one must not appear)")
			p.srv.expectRecv(1, api.DTOSuccess, "the receive of the suppressed send")
			p.srv.expectRecv(2, api.DTOSuccess, "the receive of the second send")
		}},
		{"PARAMETERS", "a long run of requests with DAT_COMPLETION_SUPPRESS_FLAG never fills the request queue for good, and none of them completes visibly", func(t *checkT) {
			p := t.pair()
			src, dst := p.cli.region(64, rw), p.srv.region(64, remote)
			n := 4 * t.queryEP(p.cli.ep).Attr.MaxRequestDTOs
			deadline := time.Now().Add(eventTimeout)
			var ev api.Event
			// post retries a write the full queue refuses, as a
			// polling consumer would, until the queue has room.
			post := func(what string, cookie api.Cookie, flags api.CompletionFlags) {
				for {
					err := p.cli.ep.PostRDMAWrite(src.iov(0, 8), cookie, dst.rtr(0, 8), flags)
					if err == nil {
						return
					}
					if !errors.Is(err, api.ErrInsufficientResources) {
						t.Fatalf("%s: %v", what, err)
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: the request queue stayed full for %v (%v)", what, eventTimeout, err)
					}
					// Dequeue lets the provider see the completions,
					// and must find none to report.
					if err := p.cli.req.Dequeue(&ev); err == nil {
						t.Fatalf("the request EVD reported %s while only suppressed requests succeeded", describe(&ev))
					}
				}
			}
			for i := range n {
				post(fmt.Sprintf("suppressed PostRDMAWrite %d of %d", i+1, n), api.Cookie(i), api.CompletionSuppress)
			}
			marker := api.Cookie(n) // no suppressed write has this cookie
			post("the marker PostRDMAWrite", marker, api.CompletionDefault)
			p.cli.expectReq(marker, api.DTOSuccess, "the marker write's completion, the first the EVD reports")
			t.expectEmpty(p.cli.req, "the request EVD after the marker")
		}},
		{"PARAMETERS", "DAT_COMPLETION_SUPPRESS_FLAG: a suppressed send posted on a DISCONNECTED EP still completes, FLUSHED", func(t *checkT) {
			t.sendOnDisconnected(api.CompletionSuppress, "PostSend(suppressed) on a DISCONNECTED EP", "the flushed suppressed send")
		}},
		{"PARAMETERS", "DAT_COMPLETION_SUPPRESS_FLAG: suppressed sends outstanding when the connection ends still complete, FLUSHED, in post order", func(t *checkT) {
			p := t.pair()
			sr := p.cli.region(8, rw)
			for i := range 3 {
				// No receive at the peer: each stays outstanding.
				t.noErr(p.cli.ep.PostSend(sr.iov(0, 8), api.Cookie(i), api.CompletionSuppress), "PostSend(suppressed)")
			}
			t.noErr(p.cli.ep.Disconnect(api.CloseAbrupt), "EP.Disconnect(abrupt)")
			for i := range 3 {
				p.cli.expectReq(api.Cookie(i), api.DTOErrFlushed, "a flushed suppressed send")
			}
			p.cli.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED after the flushed sends")
		}},
		{"PARAMETERS", "DAT_COMPLETION_SUPPRESS_FLAG: a suppressed send from a segment outside its LMR is refused, or still completes with its error; the peer gets nothing", func(t *checkT) {
			p := t.pair()
			r := p.cli.region(64, rw)
			t.sendFault(p, func(c api.Cookie) error {
				return p.cli.ep.PostSend([]api.LMRTriplet{r.tr(len(r.b)-8, 16)}, c, api.CompletionSuppress)
			}, api.DTOErrLocalProtection, api.DTOErrLocalLength)
		}},
		{"DESCRIPTION", "DAT_COMPLETION_UNSIGNALLED_FLAG is DAT_INVALID_PARAMETER unless the EP's request completion flags allow it", func(t *checkT) {
			cli := t.node()
			a := cli.epAttr()
			a.RequestCompletionFlags &^= api.CompletionUnsignalled
			p := t.pairWith(pairCfg{cli: cli, cliAttr: a})
			sr := p.cli.region(8, rw)
			t.wantErr(p.cli.ep.PostSend(sr.iov(0, 8), 1, api.CompletionUnsignalled), api.ErrInvalidParameter, "PostSend(unsignalled) on an EP without unsignalled completions")
		}},
		{"DESCRIPTION", "an unsignalled completion is still queued, in order, on an EP configured for it", func(t *checkT) {
			p, sr := t.unsignalledSend(t.node())
			p.cli.postSend(sr, 0, 8, 21)
			p.cli.expectReq(20, api.DTOSuccess, "the unsignalled send's completion")
			p.cli.expectReq(21, api.DTOSuccess, "the signalled send's completion")
		}},
		{"PARAMETERS", "an unsignalled completion does not trigger the request EVD's CNO; a signalled one does", func(t *checkT) {
			// The unsignalled send's completion is not looked for by
			// polling: a provider may hold a completion that does not
			// notify until a later one does (the plugin host does).
			// The message's arrival shows that the send is done.
			cli := t.node()
			c := cli.cnoOn(cli.req, "the request EVD")
			p, sr := t.unsignalledSend(cli)
			p.srv.expectRecv(1, api.DTOSuccess, "the unsignalled send's message")
			t.neverTriggered(c, "by an unsignalled completion")
			p.cli.postSend(sr, 0, 8, 21)
			t.eventuallyTriggered(c, p.cli.req, "by the signalled send's completion")
			p.cli.expectReq(20, api.DTOSuccess, "the unsignalled send's completion")
			p.cli.expectReq(21, api.DTOSuccess, "the signalled send's completion")
		}},
		{"PARAMETERS", "on a solicited-wait EP, a send without the solicited flag does not trigger the receive EVD's CNO; a solicited one does", func(t *checkT) {
			// As above: the sender's completion shows that the message
			// is placed, without polling for a receive that does not
			// notify.
			srv := t.serverNode()
			t.skipForDeviation(srv, DeviationSolicitedNotify)
			c := srv.cnoOn(srv.recv, "the receive EVD")
			p := t.solicitedPair(srv)
			sr := p.twoReceives()
			p.cli.postSend(sr, 0, 8, 3)
			p.cli.expectReq(3, api.DTOSuccess, "the unsolicited send's completion")
			t.neverTriggered(c, "by the receive of a message sent without the solicited flag")
			t.noErr(p.cli.ep.PostSend(sr.iov(0, 8), 4, api.CompletionSolicitedWait), "PostSend(solicited)")
			t.eventuallyTriggered(c, p.srv.recv, "by the receive of a solicited message")
			p.cli.expectReq(4, api.DTOSuccess, "the solicited send's completion")
			p.srv.expectRecv(1, api.DTOSuccess, "the unsolicited message's receive")
			p.srv.expectRecv(2, api.DTOSuccess, "the solicited message's receive")
		}},
		{"PARAMETERS", "a solicited send wakes a waiter on the receive EVD of a solicited-wait EP", func(t *checkT) {
			p := t.solicitedPair(t.serverNode())
			sr, rr := p.cli.region(8, rw), p.srv.region(64, rw)
			p.srv.postRecv(rr, 0, 64, 1)
			got := make(chan api.Event, 1)
			errc := make(chan error, 1)
			t.spawn(func() {
				ev, err := t.tryWait(p.srv.recv)
				got <- ev
				errc <- err
			})
			t.noErr(p.cli.ep.PostSend(sr.iov(0, 8), 2, api.CompletionSolicitedWait), "PostSend(solicited)")
			p.cli.expectReq(2, api.DTOSuccess, "the solicited send's completion")
			ev, err := <-got, <-errc
			t.noErr(err, "the waiter on the solicited-wait receive EVD")
			if ev.Number != api.DTOCompletionEvent || ev.DTO.Cookie != 1 || ev.DTO.Status != api.DTOSuccess {
				t.Fatalf("the waiter got %s, want the receive completion (cookie 1)", describe(&ev))
			}
		}},
		{"PARAMETERS", "on a solicited-wait EP, once a solicited message arrives, waits take the receives of the unsolicited messages before it and its own, in order", func(t *checkT) {
			p := t.solicitedPair(t.serverNode())
			sr, rr := p.cli.region(8, rw), p.srv.region(64, rw)
			for i := range 4 {
				p.srv.postRecv(rr, 16*i, 16, api.Cookie(1+i))
			}
			for i := range 3 {
				p.cli.postSend(sr, 0, 8, api.Cookie(10+i))
			}
			t.noErr(p.cli.ep.PostSend(sr.iov(0, 8), 13, api.CompletionSolicitedWait), "PostSend(solicited)")
			for i := range 4 {
				p.cli.expectReq(api.Cookie(10+i), api.DTOSuccess, "a send's completion")
			}
			for i := range 4 {
				ev, err := t.tryWait(p.srv.recv)
				t.noErr(err, fmt.Sprintf("Wait %d on the solicited-wait receive EVD", i+1))
				if ev.Number != api.DTOCompletionEvent || ev.DTO.Cookie != api.Cookie(1+i) || ev.DTO.Status != api.DTOSuccess {
					t.Fatalf("Wait %d got %s, want the receive of cookie %d", i+1, describe(&ev), 1+i)
				}
			}
		}},
		{"PARAMETERS", "DAT_COMPLETION_BARRIER_FENCE_FLAG: a fenced send starts only after the earlier RDMA read has placed its data", func(t *checkT) {
			// A large read takes a while to land, long enough for a
			// send that does not wait for it to go out without it;
			// many rounds, since how long varies (a send that does not wait
			// still carries the right bytes in some rounds over tcp, whose
			// writer may gather its payload after the read has landed).
			p := t.pair()
			n := min(t.inPlaceLen(p, false), t.inPlaceLen(p, true), 256<<10)
			src := p.srv.region(n, remote)
			l := p.cli.region(n, rw)
			rr := p.srv.region(n, rw)
			for round := range 32 {
				want := src.fill(0, n, byte(0xA0+round))
				clear(l.b) // zero until the read lands
				p.srv.postRecv(rr, 0, n, 1)
				t.noErr(p.cli.ep.PostRDMARead(l.iov(0, n), 2, src.rtr(0, n), api.CompletionDefault), "PostRDMARead")
				t.noErr(p.cli.ep.PostSend(l.iov(0, n), 3, api.CompletionBarrierFence), "PostSend(barrier fence) of the read's buffer")
				p.cli.expectReq(2, api.DTOSuccess, "the RDMA read")
				p.cli.expectReq(3, api.DTOSuccess, "the fenced send")
				p.srv.expectRecv(1, api.DTOSuccess, "the receive of the fenced send")
				if d := lastDiff(rr.b[:n], want); d >= 0 {
					t.Fatalf("round %d: the fenced send carried other bytes than the read fetched (byte %d of %d differs)", round, d, n)
				}
			}
		}},
		{"RETURN VALUES", "a send on an UNCONNECTED EP is DAT_INVALID_STATE", func(t *checkT) {
			e := t.node().end(nil)
			r := e.region(8, rw)
			t.wantErr(e.ep.PostSend(r.iov(0, 8), 1, api.CompletionDefault), api.ErrInvalidState, "PostSend on an UNCONNECTED EP")
			t.expectEmpty(e.req, "the request EVD after the refused post")
		}},
		{"DESCRIPTION", "a send posted on a DISCONNECTED EP is accepted and flushed at once", func(t *checkT) {
			t.sendOnDisconnected(api.CompletionDefault, "PostSend on a DISCONNECTED EP", "the flushed send")
		}},
		{"RETURN VALUES", "more segments than the EP's MaxRequestIOV is DAT_INVALID_PARAMETER; exactly MaxRequestIOV works", func(t *checkT) {
			p := t.pair()
			n := t.queryEP(p.cli.ep).Attr.MaxRequestIOV
			iov := p.cli.segsPast("MaxRequestIOV", n, 4096)
			t.wantErr(p.cli.ep.PostSend(iov, 1, api.CompletionDefault), api.ErrInvalidParameter, "PostSend with MaxRequestIOV+1 segments")
			rr := p.srv.region(n+1, rw)
			p.srv.postRecv(rr, 0, n+1, 2)
			t.noErr(p.cli.ep.PostSend(iov[:n], 3, api.CompletionDefault), "PostSend with MaxRequestIOV segments")
			p.cli.expectReq(3, api.DTOSuccess, "the send with MaxRequestIOV segments")
			ev := p.srv.expectRecv(2, api.DTOSuccess, "its receive")
			if int(ev.DTO.Length) != n {
				t.Fatalf("received %d bytes, want %d", ev.DTO.Length, n)
			}
		}},
		{"RETURN VALUES", "a segment outside its LMR is refused or fails with a local protection error; the peer gets nothing", func(t *checkT) {
			p := t.pair()
			r := p.cli.region(64, rw)
			t.sendFault(p, func(c api.Cookie) error {
				tr := r.tr(len(r.b)-8, 16) // runs 8 bytes past the end
				return p.cli.ep.PostSend([]api.LMRTriplet{tr}, c, api.CompletionDefault)
			}, api.DTOErrLocalProtection, api.DTOErrLocalLength)
		}},
		{"RETURN VALUES", "an LMR context that names no LMR is refused or fails with a local protection error; the peer gets nothing", func(t *checkT) {
			p := t.pair()
			r := p.cli.region(64, rw)
			t.sendFault(p, func(c api.Cookie) error {
				tr := r.tr(0, 16)
				tr.LMRContext = lmrContextNotIn(r)
				return p.cli.ep.PostSend([]api.LMRTriplet{tr}, c, api.CompletionDefault)
			})
		}},
		{"RETURN VALUES", "an LMR without local read privilege as send source is refused or fails; the peer gets nothing", func(t *checkT) {
			p := t.pair()
			r := p.cli.region(64, api.MemPrivLocalWrite)
			r.fill(0, 64, 0x13)
			t.sendFault(p, func(c api.Cookie) error {
				return p.cli.ep.PostSend(r.iov(0, 16), c, api.CompletionDefault)
			})
		}},
		{"RETURN VALUES", "an LMR of another PZ than the EP's is a protection violation; the peer gets nothing", func(t *checkT) {
			p := t.pair()
			r := p.cli.regionIn(p.cli.newPZ(), 64, rw)
			r.fill(0, 64, 0x14)
			t.sendFault(p, func(c api.Cookie) error {
				return p.cli.ep.PostSend(r.iov(0, 16), c, api.CompletionDefault)
			})
		}},
	}},
}

// unsignalledSend connects a pair whose client, cli, is configured for
// unsignalled request completions, posts two receives on the server (see
// twoReceives) and an unsignalled 8-byte send (cookie 20) from the client;
// it returns the pair and the client's send region.
func (t *checkT) unsignalledSend(cli *node) (*pair, *region) {
	t.T.Helper()
	a := cli.epAttr()
	a.RequestCompletionFlags = api.CompletionUnsignalled
	p := t.pairWith(pairCfg{cli: cli, cliAttr: a})
	sr := p.twoReceives()
	t.noErr(p.cli.ep.PostSend(sr.iov(0, 8), 20, api.CompletionUnsignalled), "PostSend(unsignalled)")
	return p, sr
}

// sendOnDisconnected checks that an 8-byte send with flags, posted on a
// DISCONNECTED EP, is accepted (post names the call) and completes
// FLUSHED (what names the completion).
func (t *checkT) sendOnDisconnected(flags api.CompletionFlags, post, what string) {
	t.T.Helper()
	p := t.disconnectedPair()
	r := p.cli.region(8, rw)
	t.noErr(p.cli.ep.PostSend(r.iov(0, 8), 7, flags), post)
	p.cli.expectReq(7, api.DTOErrFlushed, what)
}

// solicitedPair connects a client to an EP on srv whose receives complete
// with DAT_COMPLETION_SOLICITED_WAIT: only a solicited message's receive
// notifies.
func (t *checkT) solicitedPair(srv *node) *pair {
	t.T.Helper()
	a := srv.epAttr()
	a.RecvCompletionFlags = api.CompletionSolicitedWait
	return t.pairWith(pairCfg{srv: srv, srvAttr: a})
}
