package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/godat/godat/api"
)

const (
	rw     = api.MemPrivLocalRead | api.MemPrivLocalWrite
	remote = api.MemPrivAll
)

// localErrs are the synchronous errors the post pages allow for a bad local
// IOV (dat_ep_post_send(3DAT) RETURN VALUES).
var localErrs = []*api.Error{api.ErrInvalidParameter, api.ErrProtectionViolation, api.ErrPrivilegesViolation}

// localFault checks a request DTO whose local IOV is bad. The post pages let
// the provider refuse it at once (DAT_INVALID_PARAMETER,
// DAT_PROTECTION_VIOLATION or DAT_PRIVILEGES_VIOLATION), in which case
// nothing is queued and the connection goes on (marker proves it); or
// accept it, in which case the DTO completes with a local protection error
// and the connection breaks (DESIGN §4). Either way no byte of watch
// changes.
func (t *checkT) localFault(p *pair, watch *region, post func(cookie api.Cookie) error, marker func(), ok ...api.DTOStatus) {
	t.T.Helper()
	const bad = 0xBAD
	snap := watch.snapshot()
	if err := post(bad); err != nil {
		if !isOneOf(err, localErrs...) {
			t.Fatalf("the post failed with %v, want one of %s (or success and an error completion)", err, errNames(localErrs))
		}
		t.wantConnected(p.cli.ep, "after the refused post")
		watch.unchanged(snap, "the refused post")
		marker()
		return
	}
	if len(ok) == 0 {
		ok = []api.DTOStatus{api.DTOErrLocalProtection}
	}
	ev := t.expectEvent(p.cli.req, api.DTOCompletionEvent, "the completion of the bad DTO")
	if ev.DTO.Cookie != bad {
		t.Fatalf("got %s, want the completion of the bad DTO (cookie %d)", describe(&ev), bad)
	}
	good := false
	for _, s := range ok {
		good = good || ev.DTO.Status == s
	}
	if !good {
		t.Errorf("the bad DTO completed with status %v, want %v", ev.DTO.Status, ok)
	}
	p.cli.expectConnEnd("the connection after a local protection error", api.ConnectionBrokenEvent)
	watch.unchanged(snap, "the failed DTO")
}

// remoteFault checks an RDMA operation that the target must refuse
// (dat_ep_post_rdma_write(3DAT), dat_ep_post_rdma_read(3DAT), DESIGN §4):
// the requester's DTO completes with DTO_ERR_REMOTE_ACCESS, the connection
// breaks (BROKEN on the requester, and the target's side ends too), and no
// byte of the target memory changes.
func (t *checkT) remoteFault(p *pair, target *region, post func(cookie api.Cookie) error) {
	t.T.Helper()
	const bad = 0xBAD
	snap := target.snapshot()
	t.noErr(post(bad), "posting the RDMA operation (the requester cannot know the remote window)")
	ev := t.expectEvent(p.cli.req, api.DTOCompletionEvent, "the completion of the refused RDMA operation")
	if ev.DTO.Cookie != bad {
		t.Fatalf("got %s, want the completion of the RDMA operation (cookie %d)", describe(&ev), bad)
	}
	if ev.DTO.Status != api.DTOErrRemoteAccess {
		t.Errorf("the refused RDMA operation completed with status %v, want %v", ev.DTO.Status, api.DTOErrRemoteAccess)
	}
	p.cli.expectConnEnd("the requester's connection after a remote access error", api.ConnectionBrokenEvent)
	p.srv.expectConnEnd("the target's connection after the remote access error", api.ConnectionBrokenEvent, api.ConnectionDisconnectedEvent)
	target.unchanged(snap, "the refused RDMA operation")
}

// sendFault is localFault for a send: the server has a receive posted into
// a region that must stay untouched; the marker is a good 8-byte send that
// must be the next thing that receive and the client's request queue see.
func (t *checkT) sendFault(p *pair, post func(cookie api.Cookie) error, ok ...api.DTOStatus) {
	t.T.Helper()
	target := p.srv.region(256, rw)
	p.srv.postRecv(target, 0, 256, 1)
	t.localFault(p, target, post, func() {
		m := p.cli.region(8, rw)
		want := m.fill(0, 8, 0x66)
		p.cli.postSend(m, 0, 8, 2)
		p.cli.expectReq(2, api.DTOSuccess, "the marker send (the refused post must not complete)")
		ev := p.srv.expectRecv(1, api.DTOSuccess, "the receive, filled by the marker")
		if ev.DTO.Length != 8 || !bytes.Equal(target.b[:8], want) {
			t.Fatalf("the receive holds %d bytes %x, want the marker %x", ev.DTO.Length, target.b[:8], want)
		}
	}, ok...)
}

func dtoGroups() []group {
	return []group{
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
				inPlaceDo(func(round int) {
					want := sr.fill(0, n, byte(1+round*37))
					clear(rr.b)
					p.srv.postRecv(rr, 0, n, api.Cookie(round))
					rp := t.poll(p.srv.recv, api.Cookie(round), rr.b[:n], want, fmt.Sprintf("round %d, the receive of %d bytes", round, n))
					sp := t.poll(p.cli.req, api.Cookie(100+round), rr.b[:n], want, fmt.Sprintf("round %d, the send of %d bytes", round, n))
					p.cli.postSend(sr, 0, n, api.Cookie(100+round))
					rp.check()
					sp.check()
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
				sr, rr := p.cli.region(64, rw), p.srv.region(128, rw)
				p.srv.postRecv(rr, 0, 64, 1)
				p.srv.postRecv(rr, 64, 64, 2)
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
				p := t.disconnectedPair()
				r := p.cli.region(8, rw)
				t.noErr(p.cli.ep.PostSend(r.iov(0, 8), 7, api.CompletionSuppress), "PostSend(suppressed) on a DISCONNECTED EP")
				p.cli.expectReq(7, api.DTOErrFlushed, "the flushed suppressed send")
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
				cli := t.node()
				a := cli.epAttr()
				a.RequestCompletionFlags = api.CompletionUnsignalled
				p := t.pairWith(pairCfg{cli: cli, cliAttr: a})
				sr, rr := p.cli.region(8, rw), p.srv.region(128, rw)
				p.srv.postRecv(rr, 0, 64, 1)
				p.srv.postRecv(rr, 64, 64, 2)
				t.noErr(p.cli.ep.PostSend(sr.iov(0, 8), 20, api.CompletionUnsignalled), "PostSend(unsignalled)")
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
				a := cli.epAttr()
				a.RequestCompletionFlags = api.CompletionUnsignalled
				p := t.pairWith(pairCfg{cli: cli, cliAttr: a})
				sr := p.twoReceives()
				t.noErr(p.cli.ep.PostSend(sr.iov(0, 8), 20, api.CompletionUnsignalled), "PostSend(unsignalled)")
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
				a := srv.epAttr()
				a.RecvCompletionFlags = api.CompletionSolicitedWait
				p := t.pairWith(pairCfg{srv: srv, srvAttr: a})
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
				srv := t.serverNode()
				a := srv.epAttr()
				a.RecvCompletionFlags = api.CompletionSolicitedWait
				p := t.pairWith(pairCfg{srv: srv, srvAttr: a})
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
			{"PARAMETERS", "DAT_COMPLETION_BARRIER_FENCE_FLAG: a fenced send starts only after the earlier RDMA read has placed its data", func(t *checkT) {
				// A large read takes a while to land, long enough for a
				// send that does not wait for it to go out without it;
				// several rounds, since how long varies.
				p := t.pair()
				n := min(t.inPlaceLen(p, false), t.inPlaceLen(p, true), 256<<10)
				src := p.srv.region(n, remote)
				l := p.cli.region(n, rw)
				rr := p.srv.region(n, rw)
				for round := range 8 {
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
				p := t.disconnectedPair()
				r := p.cli.region(8, rw)
				t.noErr(p.cli.ep.PostSend(r.iov(0, 8), 7, api.CompletionDefault), "PostSend on a DISCONNECTED EP")
				p.cli.expectReq(7, api.DTOErrFlushed, "the flushed send")
			}},
			{"RETURN VALUES", "more segments than the EP's MaxRequestIOV is DAT_INVALID_PARAMETER; exactly MaxRequestIOV works", func(t *checkT) {
				p := t.pair()
				n := t.queryEP(p.cli.ep).Attr.MaxRequestIOV
				if n <= 0 || n > 4096 {
					t.Skipf("MaxRequestIOV is %d", n)
				}
				r := p.cli.region(n+1, rw)
				iov := make([]api.LMRTriplet, n+1)
				for i := range iov {
					iov[i] = r.tr(i, 1)
				}
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
				pz2, err := p.cli.ia.CreatePZ()
				t.noErr(err, "IA.CreatePZ")
				r, err := p.cli.tryRegion(pz2, 64, rw, api.VATypeVA)
				t.noErr(err, "IA.CreateLMR in a second PZ")
				r.fill(0, 64, 0x14)
				t.sendFault(p, func(c api.Cookie) error {
					return p.cli.ep.PostSend(r.iov(0, 16), c, api.CompletionDefault)
				})
			}},
		}},

		{page: "dat_ep_post_recv", checks: []check{
			{"DESCRIPTION", "a multi-segment receive fills front segments, one partially, and leaves the rest untouched", func(t *checkT) {
				p := t.pair()
				if m := t.queryEP(p.srv.ep).Attr.MaxRecvIOV; m < 3 {
					t.Skipf("MaxRecvIOV is %d", m)
				}
				a, b := p.srv.region(256, rw), p.srv.region(256, rw)
				for i := range a.b {
					a.b[i], b.b[i] = 0xA5, 0xA5
				}
				sa, sb := a.snapshot(), b.snapshot()
				iov := []api.LMRTriplet{a.tr(0, 10), b.tr(100, 20), a.tr(200, 30)}
				t.noErr(p.srv.ep.PostRecv(iov, 1, api.CompletionDefault), "PostRecv with 3 segments")
				sr := p.cli.region(25, rw)
				msg := sr.fill(0, 25, 0x01)
				p.cli.postSend(sr, 0, 25, 2)
				p.cli.expectReq(2, api.DTOSuccess, "the send")
				ev := p.srv.expectRecv(1, api.DTOSuccess, "the scattered receive")
				if ev.DTO.Length != 25 {
					t.Errorf("receive length %d, want 25", ev.DTO.Length)
				}
				if !bytes.Equal(a.b[:10], msg[:10]) || !bytes.Equal(b.b[100:115], msg[10:]) {
					t.Errorf("the message is not scattered in IOV order (10 bytes into segment 1, 15 into segment 2)")
				}
				copy(sa[a.page:], a.b[:10])
				copy(sb[b.page+100:], b.b[100:115])
				a.unchanged(sa, "bytes of segment 3 and around the segments")
				b.unchanged(sb, "the unfilled end of segment 2")
			}},
			{"DESCRIPTION", "a receive too small for the message completes with DTO_ERR_LOCAL_LENGTH and breaks the connection", func(t *checkT) {
				p := t.pair()
				rr := p.srv.region(64, rw)
				sr := p.cli.region(64, rw)
				sr.fill(0, 64, 0x21)
				p.srv.postRecv(rr, 0, 8, 1)
				p.cli.postSend(sr, 0, 16, 2)
				t.expectRecvLengthError(p, 1, "the receive of a 16-byte message into 8 bytes")
			}},
			{"DESCRIPTION", "a message exactly the size of the receive is delivered; one byte longer fails the receive with DTO_ERR_LOCAL_LENGTH, breaks the connection and writes nothing past the receive", func(t *checkT) {
				p := t.pair()
				rr := p.srv.region(128, rw)
				sr := p.cli.region(128, rw)
				want := sr.fill(0, 65, 0x2A)
				p.srv.postRecv(rr, 0, 64, 1)
				p.cli.postSend(sr, 0, 64, 2)
				p.cli.expectReq(2, api.DTOSuccess, "the send of exactly the receive's size")
				ev := p.srv.expectRecv(1, api.DTOSuccess, "the receive of a message of exactly its size")
				if ev.DTO.Length != 64 || !bytes.Equal(rr.b[:64], want[:64]) {
					t.Fatalf("the receive holds %d bytes %x, want the 64 sent", ev.DTO.Length, rr.b[:8])
				}
				snap := rr.snapshot()
				p.srv.postRecv(rr, 0, 64, 3)
				p.cli.postSend(sr, 0, 65, 4)
				t.expectRecvLengthError(p, 3, "the receive of a 65-byte message into 64 bytes")
				all := rr.mem.Bytes()
				for i := range all {
					if off := i - rr.page; (off < 0 || off >= 64) && all[i] != snap[i] {
						t.Fatalf("the failed receive wrote at offset %d, outside its 64 bytes", off)
					}
				}
			}},
			{"RETURN VALUES", "MaxRecvDTOs receives may be posted; one more is DAT_INSUFFICIENT_RESOURCES", func(t *checkT) {
				n := t.node()
				a := n.epAttr()
				a.MaxRecvDTOs = 4
				e := n.end(a)
				m := t.queryEP(e.ep).Attr.MaxRecvDTOs
				if m < 1 || m > 4096 {
					t.Skipf("MaxRecvDTOs is %d", m)
				}
				r := n.region(8*(m+1), rw)
				for i := range m {
					e.postRecv(r, 8*i, 8, api.Cookie(i))
				}
				t.wantErr(e.ep.PostRecv(r.iov(8*m, 8), api.Cookie(m), api.CompletionDefault), api.ErrInsufficientResources, fmt.Sprintf("PostRecv with MaxRecvDTOs (%d) receives posted", m))
			}},
			{"DESCRIPTION", "DAT_COMPLETION_UNSIGNALLED_FLAG on a receive is DAT_INVALID_PARAMETER unless the EP's receive completion flags allow it", func(t *checkT) {
				n := t.node()
				a := n.epAttr()
				a.RecvCompletionFlags &^= api.CompletionUnsignalled
				e := n.end(a)
				r := n.region(8, rw)
				t.wantErr(e.ep.PostRecv(r.iov(0, 8), 1, api.CompletionUnsignalled), api.ErrInvalidParameter, "PostRecv(unsignalled) on an EP without unsignalled receive completions")
			}},
			{"DESCRIPTION", "an unsignalled receive still completes, in order, on an EP configured for it", func(t *checkT) {
				srv := t.serverNode()
				a := srv.epAttr()
				a.RecvCompletionFlags = api.CompletionUnsignalled
				p := t.pairWith(pairCfg{srv: srv, srvAttr: a})
				rr := p.srv.region(128, rw)
				t.noErr(p.srv.ep.PostRecv(rr.iov(0, 64), 1, api.CompletionUnsignalled), "PostRecv(unsignalled)")
				p.srv.postRecv(rr, 64, 64, 2)
				sr := p.cli.region(8, rw)
				p.cli.postSend(sr, 0, 8, 3)
				p.cli.postSend(sr, 0, 8, 4)
				p.cli.expectReq(3, api.DTOSuccess, "the first send")
				p.cli.expectReq(4, api.DTOSuccess, "the second send")
				p.srv.expectRecv(1, api.DTOSuccess, "the unsignalled receive's completion")
				p.srv.expectRecv(2, api.DTOSuccess, "the signalled receive's completion")
			}},
			{"PARAMETERS", "an unsignalled receive's completion does not trigger the receive EVD's CNO (checked for 20 ms); a signalled one's does", func(t *checkT) {
				// The sender's completion shows that the message is placed,
				// without polling for a receive that does not notify.
				srv := t.serverNode()
				c := srv.cnoOn(srv.recv, "the receive EVD")
				a := srv.epAttr()
				a.RecvCompletionFlags = api.CompletionUnsignalled
				p := t.pairWith(pairCfg{srv: srv, srvAttr: a})
				rr := p.srv.region(128, rw)
				t.noErr(p.srv.ep.PostRecv(rr.iov(0, 64), 1, api.CompletionUnsignalled), "PostRecv(unsignalled)")
				p.srv.postRecv(rr, 64, 64, 2)
				sr := p.cli.region(8, rw)
				p.cli.postSend(sr, 0, 8, 3)
				p.cli.expectReq(3, api.DTOSuccess, "the send into the unsignalled receive")
				t.neverTriggered(c, "by an unsignalled receive's completion")
				p.cli.postSend(sr, 0, 8, 4)
				t.eventuallyTriggered(c, p.srv.recv, "by a signalled receive's completion")
				p.srv.expectRecv(1, api.DTOSuccess, "the unsignalled receive's completion")
				p.srv.expectRecv(2, api.DTOSuccess, "the signalled receive's completion")
			}},
			{"DESCRIPTION", "a receive posted on a DISCONNECTED EP is accepted and flushed at once", func(t *checkT) {
				p := t.disconnectedPair()
				r := p.cli.region(8, rw)
				t.noErr(p.cli.ep.PostRecv(r.iov(0, 8), 8, api.CompletionDefault), "PostRecv on a DISCONNECTED EP")
				p.cli.expectRecv(8, api.DTOErrFlushed, "the flushed receive")
			}},
			{"RETURN VALUES", "more segments than the EP's MaxRecvIOV is DAT_INVALID_PARAMETER; exactly MaxRecvIOV works", func(t *checkT) {
				p := t.pair()
				n := t.queryEP(p.srv.ep).Attr.MaxRecvIOV
				if n <= 0 || n > 4096 {
					t.Skipf("MaxRecvIOV is %d", n)
				}
				r := p.srv.region(n+1, rw)
				iov := make([]api.LMRTriplet, n+1)
				for i := range iov {
					iov[i] = r.tr(i, 1)
				}
				t.wantErr(p.srv.ep.PostRecv(iov, 1, api.CompletionDefault), api.ErrInvalidParameter, "PostRecv with MaxRecvIOV+1 segments")
				t.noErr(p.srv.ep.PostRecv(iov[:n], 2, api.CompletionDefault), "PostRecv with MaxRecvIOV segments")
				sr := p.cli.region(n, rw)
				p.cli.postSend(sr, 0, n, 3)
				p.cli.expectReq(3, api.DTOSuccess, "the send")
				p.srv.expectRecv(2, api.DTOSuccess, "the receive with MaxRecvIOV segments (the refused one must not complete)")
			}},
			{"PARAMETERS", "DAT_COMPLETION_SUPPRESS_FLAG on a receive is DAT_INVALID_PARAMETER", func(t *checkT) {
				// dat_ep_modify(3DAT): receive posting does not support the
				// suppress and barrier-fence flags.
				e := t.node().end(nil)
				r := e.region(8, rw)
				t.wantErr(e.ep.PostRecv(r.iov(0, 8), 1, api.CompletionSuppress), api.ErrInvalidParameter, "PostRecv with CompletionSuppress")
			}},
			{"RETURN VALUES", "a receive buffer without local write privilege is refused or fails; the message is not placed in it", func(t *checkT) {
				p := t.pair()
				r := p.srv.region(64, api.MemPrivLocalRead)
				r.fill(0, 64, 0x55)
				snap := r.snapshot()
				sr := p.cli.region(16, rw)
				sr.fill(0, 16, 0x0F)
				if err := p.srv.ep.PostRecv(r.iov(0, 64), 1, api.CompletionDefault); err != nil {
					t.wantOneOf(err, "PostRecv into an LMR without local write", localErrs...)
					t.works(p.cli, p.srv, "after the refused receive")
					r.unchanged(snap, "the refused receive buffer")
					return
				}
				p.cli.postSend(sr, 0, 16, 2)
				ev := t.expectEvent(p.srv.recv, api.DTOCompletionEvent, "the receive into a read-only LMR")
				if ev.DTO.Cookie != 1 || ev.DTO.Status == api.DTOSuccess {
					t.Fatalf("got %s, want a failed completion of cookie 1", describe(&ev))
				}
				r.unchanged(snap, "the receive buffer without local write")
			}},
		}},

		{page: "dat_ep_post_rdma_write", checks: []check{
			{"DESCRIPTION", "an RDMA write places its bytes in the remote window by the time it completes", func(t *checkT) {
				p := t.pair()
				dst := p.srv.region(256, remote)
				src := p.cli.region(100, rw)
				want := src.fill(0, 100, 0x77)
				snap := dst.snapshot()
				t.noErr(p.cli.ep.PostRDMAWrite(src.iov(0, 100), 5, dst.rtr(16, 100), api.CompletionDefault), "PostRDMAWrite")
				ev := p.cli.expectReq(5, api.DTOSuccess, "the RDMA write completion")
				if ev.DTO.Op != api.OpRDMAWrite || ev.DTO.Length != 100 {
					t.Errorf("completion op %v length %d, want %v length 100", ev.DTO.Op, ev.DTO.Length, api.OpRDMAWrite)
				}
				if !bytes.Equal(dst.b[16:116], want) {
					t.Fatalf("the remote window does not hold the written bytes once the write completed")
				}
				copy(snap[dst.page+16:], want)
				dst.unchanged(snap, "bytes outside the written range")
			}},
			{"DESCRIPTION (DESIGN §4)", "a consumer polling the request EVD while an RDMA write runs finds the bytes placed the moment the write's completion is visible", func(t *checkT) {
				p := t.pair()
				n := t.inPlaceLen(p, true)
				src, dst := p.cli.region(n, rw), p.srv.region(n, remote)
				inPlaceDo(func(round int) {
					want := src.fill(0, n, byte(3+round*41))
					clear(dst.b)
					wp := t.poll(p.cli.req, api.Cookie(round), dst.b[:n], want, fmt.Sprintf("round %d, an RDMA write of %d bytes", round, n))
					t.noErr(p.cli.ep.PostRDMAWrite(src.iov(0, n), api.Cookie(round), dst.rtr(0, n), api.CompletionDefault), "PostRDMAWrite")
					wp.check()
				})
			}},
			{"DESCRIPTION", "an RDMA write consumes no receive at the target", func(t *checkT) {
				p := t.pair()
				dst := p.srv.region(64, remote)
				rr := p.srv.region(64, rw)
				p.srv.postRecv(rr, 0, 64, 1)
				src := p.cli.region(64, rw)
				t.noErr(p.cli.ep.PostRDMAWrite(src.iov(0, 32), 2, dst.rtr(0, 32), api.CompletionDefault), "PostRDMAWrite")
				p.cli.expectReq(2, api.DTOSuccess, "the RDMA write")
				p.cli.postSend(src, 0, 5, 3)
				p.cli.expectReq(3, api.DTOSuccess, "the send after it")
				ev := p.srv.expectRecv(1, api.DTOSuccess, "the receive, consumed by the send and not by the write")
				if ev.DTO.Length != 5 || ev.DTO.Op != api.OpReceive {
					t.Fatalf("got %s, want the 5-byte send", describe(&ev))
				}
			}},
			{"DESCRIPTION", "a multi-segment local IOV is written contiguously", func(t *checkT) {
				p := t.pair()
				if m := t.queryEP(p.cli.ep).Attr.MaxRequestIOV; m < 3 {
					t.Skipf("MaxRequestIOV is %d", m)
				}
				a, b := p.cli.region(64, rw), p.cli.region(64, rw)
				x, y, z := a.fill(0, 5, 1), b.fill(10, 9, 2), a.fill(40, 3, 3)
				dst := p.srv.region(64, remote)
				t.noErr(p.cli.ep.PostRDMAWrite([]api.LMRTriplet{a.tr(0, 5), b.tr(10, 9), a.tr(40, 3)}, 1, dst.rtr(8, 17), api.CompletionDefault), "PostRDMAWrite with 3 segments")
				p.cli.expectReq(1, api.DTOSuccess, "the RDMA write")
				want := append(append(append([]byte{}, x...), y...), z...)
				if !bytes.Equal(dst.b[8:25], want) {
					t.Fatalf("remote bytes %x, want %x", dst.b[8:25], want)
				}
			}},
			{"DESCRIPTION", "a zero-length RDMA write completes successfully and changes nothing", func(t *checkT) {
				p := t.pair()
				dst := p.srv.region(64, remote)
				snap := dst.snapshot()
				src := p.cli.region(8, rw)
				src.fill(0, 8, 9)
				t.noErr(p.cli.ep.PostRDMAWrite(src.iov(0, 0), 1, dst.rtr(0, 0), api.CompletionDefault), "zero-length PostRDMAWrite")
				p.cli.expectReq(1, api.DTOSuccess, "the zero-length RDMA write")
				dst.unchanged(snap, "a zero-length RDMA write")
			}},
			{"RETURN VALUES", "a wrong RMR context: REMOTE_ACCESS, BROKEN, and no target byte changes", func(t *checkT) {
				p := t.pair()
				dst := p.srv.region(64, remote)
				src := p.cli.region(64, rw)
				src.fill(0, 64, 0x31)
				t.remoteFault(p, dst, func(c api.Cookie) error {
					rt := dst.rtr(0, 64)
					rt.RMRContext = otherContext(dst.p.RMRContext)
					return p.cli.ep.PostRDMAWrite(src.iov(0, 64), c, rt, api.CompletionDefault)
				})
			}},
			{"RETURN VALUES", "a write running past the end of the remote region: REMOTE_ACCESS, BROKEN, and no byte changes", func(t *checkT) {
				p := t.pair()
				dst := p.srv.region(64, remote)
				src := p.cli.region(64, rw)
				src.fill(0, 64, 0x32)
				t.remoteFault(p, dst, func(c api.Cookie) error {
					return p.cli.ep.PostRDMAWrite(src.iov(0, 16), c, dst.rtr(len(dst.b)-8, 16), api.CompletionDefault)
				})
			}},
			{"RETURN VALUES", "a write reaching one byte past the end of the remote region: REMOTE_ACCESS, BROKEN, and no byte changes", func(t *checkT) {
				p := t.pair()
				dst := p.srv.region(64, remote)
				src := p.cli.region(64, rw)
				src.fill(0, 64, 0x38)
				t.remoteFault(p, dst, func(c api.Cookie) error {
					return p.cli.ep.PostRDMAWrite(src.iov(0, 17), c, dst.rtr(len(dst.b)-16, 17), api.CompletionDefault)
				})
			}},
			{"RETURN VALUES", "a local IOV one byte longer than the remote segment is DAT_LENGTH_ERROR, or fails, and nothing outside the segment is written", func(t *checkT) {
				p := t.pair()
				dst := p.srv.region(64, remote)
				src := p.cli.region(64, rw)
				src.fill(0, 64, 0x39)
				t.lengthFault(p, dst, 8, 24, "an RDMA write of 17 bytes into a 16-byte remote segment at 8", func(c api.Cookie) error {
					return p.cli.ep.PostRDMAWrite(src.iov(0, 17), c, dst.rtr(8, 16), api.CompletionDefault)
				})
			}},
			{"PARAMETERS", "DAT_COMPLETION_SUPPRESS_FLAG: a suppressed write the target refuses still completes: REMOTE_ACCESS, BROKEN, and no byte changes", func(t *checkT) {
				p := t.pair()
				dst := p.srv.region(64, remote)
				src := p.cli.region(64, rw)
				src.fill(0, 64, 0x3A)
				t.remoteFault(p, dst, func(c api.Cookie) error {
					rt := dst.rtr(0, 16)
					rt.RMRContext = otherContext(dst.p.RMRContext)
					return p.cli.ep.PostRDMAWrite(src.iov(0, 16), c, rt, api.CompletionSuppress)
				})
			}},
			{"RETURN VALUES", "a write starting before the remote region: REMOTE_ACCESS, BROKEN, and no byte changes", func(t *checkT) {
				p := t.pair()
				dst := p.srv.region(64, remote)
				src := p.cli.region(64, rw)
				src.fill(0, 64, 0x33)
				t.remoteFault(p, dst, func(c api.Cookie) error {
					rt := dst.rtr(0, 16)
					rt.Addr -= 8
					return p.cli.ep.PostRDMAWrite(src.iov(0, 16), c, rt, api.CompletionDefault)
				})
			}},
			{"RETURN VALUES", "a region without remote write privilege: REMOTE_ACCESS, BROKEN, and no byte changes", func(t *checkT) {
				p := t.pair()
				dst := p.srv.region(64, rw|api.MemPrivRemoteRead)
				src := p.cli.region(64, rw)
				src.fill(0, 64, 0x34)
				t.remoteFault(p, dst, func(c api.Cookie) error {
					return p.cli.ep.PostRDMAWrite(src.iov(0, 16), c, dst.rtr(0, 16), api.CompletionDefault)
				})
			}},
			{"RETURN VALUES", "a region in another PZ than the target EP's: REMOTE_ACCESS, BROKEN, and no byte changes", func(t *checkT) {
				p := t.pair()
				pz2, err := p.srv.ia.CreatePZ()
				t.noErr(err, "IA.CreatePZ")
				dst, err := p.srv.tryRegion(pz2, 64, remote, api.VATypeVA)
				t.noErr(err, "IA.CreateLMR in a second PZ")
				src := p.cli.region(64, rw)
				src.fill(0, 64, 0x35)
				t.remoteFault(p, dst, func(c api.Cookie) error {
					return p.cli.ep.PostRDMAWrite(src.iov(0, 16), c, dst.rtr(0, 16), api.CompletionDefault)
				})
			}},
			{"RETURN VALUES", "a local source outside its LMR is refused or fails locally; the target is untouched", func(t *checkT) {
				p := t.pair()
				dst := p.srv.region(64, remote)
				src := p.cli.region(64, rw)
				src.fill(0, 64, 0x36)
				t.localFault(p, dst, func(c api.Cookie) error {
					return p.cli.ep.PostRDMAWrite([]api.LMRTriplet{src.tr(len(src.b)-8, 16)}, c, dst.rtr(0, 16), api.CompletionDefault)
				}, func() { t.works(p.cli, p.srv, "after the refused RDMA write") }, api.DTOErrLocalProtection, api.DTOErrLocalLength)
			}},
		}},

		{page: "dat_ep_post_rdma_read", checks: []check{
			{"DESCRIPTION", "an RDMA read fetches the remote bytes into the local buffer", func(t *checkT) {
				p := t.pair()
				src := p.srv.region(128, remote)
				want := src.fill(32, 64, 0x5E)
				dst := p.cli.region(64, rw)
				t.noErr(p.cli.ep.PostRDMARead(dst.iov(0, 64), 4, src.rtr(32, 64), api.CompletionDefault), "PostRDMARead")
				ev := p.cli.expectReq(4, api.DTOSuccess, "the RDMA read completion")
				if ev.DTO.Op != api.OpRDMARead || ev.DTO.Length != 64 {
					t.Errorf("completion op %v length %d, want %v length 64", ev.DTO.Op, ev.DTO.Length, api.OpRDMARead)
				}
				if !bytes.Equal(dst.b[:64], want) {
					t.Fatalf("the local buffer does not hold the remote bytes")
				}
			}},
			{"DESCRIPTION (DESIGN §4)", "a consumer polling the request EVD while an RDMA read runs finds the bytes in the local buffer the moment the read's completion is visible", func(t *checkT) {
				p := t.pair()
				n := t.inPlaceLen(p, true)
				src, dst := p.srv.region(n, remote), p.cli.region(n, rw)
				inPlaceDo(func(round int) {
					want := src.fill(0, n, byte(5+round*43))
					clear(dst.b)
					rp := t.poll(p.cli.req, api.Cookie(round), dst.b[:n], want, fmt.Sprintf("round %d, an RDMA read of %d bytes", round, n))
					t.noErr(p.cli.ep.PostRDMARead(dst.iov(0, n), api.Cookie(round), src.rtr(0, n), api.CompletionDefault), "PostRDMARead")
					rp.check()
				})
			}},
			{"DESCRIPTION", "a multi-segment local IOV is filled in IOV order", func(t *checkT) {
				p := t.pair()
				if m := t.queryEP(p.cli.ep).Attr.MaxRequestIOV; m < 2 {
					t.Skipf("MaxRequestIOV is %d", m)
				}
				src := p.srv.region(64, remote)
				want := src.fill(0, 30, 0x61)
				a, b := p.cli.region(64, rw), p.cli.region(64, rw)
				t.noErr(p.cli.ep.PostRDMARead([]api.LMRTriplet{a.tr(4, 12), b.tr(20, 18)}, 1, src.rtr(0, 30), api.CompletionDefault), "PostRDMARead with 2 segments")
				p.cli.expectReq(1, api.DTOSuccess, "the RDMA read")
				if !bytes.Equal(a.b[4:16], want[:12]) || !bytes.Equal(b.b[20:38], want[12:]) {
					t.Fatalf("the read bytes are not scattered in IOV order")
				}
			}},
			{"RETURN VALUES", "a wrong RMR context: REMOTE_ACCESS, BROKEN, target untouched", func(t *checkT) {
				p := t.pair()
				src := p.srv.region(64, remote)
				src.fill(0, 64, 0x62)
				dst := p.cli.region(64, rw)
				t.remoteFault(p, src, func(c api.Cookie) error {
					rt := src.rtr(0, 64)
					rt.RMRContext = otherContext(src.p.RMRContext)
					return p.cli.ep.PostRDMARead(dst.iov(0, 64), c, rt, api.CompletionDefault)
				})
			}},
			{"RETURN VALUES", "a read running past the end of the remote region: REMOTE_ACCESS, BROKEN", func(t *checkT) {
				p := t.pair()
				src := p.srv.region(64, remote)
				dst := p.cli.region(64, rw)
				t.remoteFault(p, src, func(c api.Cookie) error {
					return p.cli.ep.PostRDMARead(dst.iov(0, 16), c, src.rtr(len(src.b)-8, 16), api.CompletionDefault)
				})
			}},
			{"RETURN VALUES", "a region without remote read privilege: REMOTE_ACCESS, BROKEN", func(t *checkT) {
				p := t.pair()
				src := p.srv.region(64, rw|api.MemPrivRemoteWrite)
				src.fill(0, 64, 0x63)
				dst := p.cli.region(64, rw)
				t.remoteFault(p, src, func(c api.Cookie) error {
					return p.cli.ep.PostRDMARead(dst.iov(0, 16), c, src.rtr(0, 16), api.CompletionDefault)
				})
			}},
			{"RETURN VALUES", "a remote segment longer than the local IOV is DAT_LENGTH_ERROR or a local length error, and nothing outside the IOV is written", func(t *checkT) {
				t.readTooShort(16, 64)
			}},
			{"RETURN VALUES", "a local IOV one byte shorter than the remote segment is DAT_LENGTH_ERROR or a local length error, and nothing outside the IOV is written", func(t *checkT) {
				t.readTooShort(63, 64)
			}},
			{"RETURN VALUES", "a read reaching one byte past the end of the remote region: REMOTE_ACCESS, BROKEN", func(t *checkT) {
				p := t.pair()
				src := p.srv.region(64, remote)
				dst := p.cli.region(64, rw)
				t.remoteFault(p, src, func(c api.Cookie) error {
					return p.cli.ep.PostRDMARead(dst.iov(0, 17), c, src.rtr(len(src.b)-16, 17), api.CompletionDefault)
				})
			}},
			{"RETURN VALUES", "a local buffer without local write privilege is refused or fails locally, and is not written", func(t *checkT) {
				p := t.pair()
				src := p.srv.region(64, remote)
				src.fill(0, 64, 0x64)
				dst := p.cli.region(64, api.MemPrivLocalRead)
				t.localFault(p, dst, func(c api.Cookie) error {
					return p.cli.ep.PostRDMARead(dst.iov(0, 16), c, src.rtr(0, 16), api.CompletionDefault)
				}, func() {
					ok := p.cli.region(16, rw)
					t.noErr(p.cli.ep.PostRDMARead(ok.iov(0, 16), 2, src.rtr(0, 16), api.CompletionDefault), "a good PostRDMARead")
					p.cli.expectReq(2, api.DTOSuccess, "the good read, next after the refused one")
				})
			}},
		}},

		{page: "dat_ep_post_rdma_read_to_rmr", checks: []check{
			{"DESCRIPTION (DAT 2.0 dat.h)", "an RDMA read into a local RMR window places the remote bytes there", func(t *checkT) {
				p := t.pair()
				src := p.srv.region(64, remote)
				want := src.fill(0, 48, 0x71)
				l := p.cli.region(128, remote)
				_, lt := p.cli.bind(l, 16, 64, api.MemPrivRemoteRead|api.MemPrivRemoteWrite)
				lt.Length = 48
				t.noErr(p.cli.ep.PostRDMAReadToRMR(lt, 3, src.rtr(0, 48), api.CompletionDefault), "PostRDMAReadToRMR")
				ev := p.cli.expectReq(3, api.DTOSuccess, "the read-to-RMR completion")
				if ev.DTO.Op != api.OpRDMARead {
					t.Errorf("completion op %v, want %v", ev.DTO.Op, api.OpRDMARead)
				}
				if !bytes.Equal(l.b[16:64], want) {
					t.Fatalf("the local RMR window does not hold the remote bytes")
				}
			}},
			{"RETURN VALUES (DAT 2.0 dat.h)", "a local triplet one byte shorter than the remote segment is DAT_LENGTH_ERROR, or fails, and nothing outside the triplet is written", func(t *checkT) {
				p := t.pair()
				src := p.srv.region(64, remote)
				src.fill(0, 64, 0x72)
				l := p.cli.region(128, remote)
				_, lt := p.cli.bind(l, 16, 64, api.MemPrivRemoteRead|api.MemPrivRemoteWrite)
				lt.Length = 47
				t.lengthFault(p, l, 16, 16+47, "an RDMA read of 48 bytes into a 47-byte local triplet at 16", func(c api.Cookie) error {
					return p.cli.ep.PostRDMAReadToRMR(lt, c, src.rtr(0, 48), api.CompletionDefault)
				})
			}},
		}},

		{page: "dat_ep_post_send_with_invalidate", checks: []check{
			{"DESCRIPTION (DAT 2.0 dat.h)", "the receiver's completion is RECEIVE_WITH_INVALIDATE and names the invalidated RMR context", func(t *checkT) {
				p := t.pair()
				win := p.srv.region(64, remote)
				_, rt := p.srv.bind(win, 0, 64, api.MemPrivRemoteWrite|api.MemPrivRemoteRead)
				rr := p.srv.region(64, rw)
				p.srv.postRecv(rr, 0, 64, 1)
				sr := p.cli.region(8, rw)
				t.noErr(p.cli.ep.PostSendWithInvalidate(sr.iov(0, 8), 2, api.CompletionDefault, true, rt.RMRContext), "PostSendWithInvalidate")
				p.cli.expectReq(2, api.DTOSuccess, "the send-with-invalidate completion")
				ev := p.srv.expectRecv(1, api.DTOSuccess, "the receive")
				if ev.DTO.Op != api.OpReceiveWithInvalidate || ev.DTO.RMRContext != rt.RMRContext {
					t.Fatalf("receive completion op %v context %#x, want %v with context %#x", ev.DTO.Op, ev.DTO.RMRContext, api.OpReceiveWithInvalidate, rt.RMRContext)
				}
			}},
			{"DESCRIPTION (DAT 2.0 dat.h)", "after the send-with-invalidate is received, the invalidated RMR context no longer grants access", func(t *checkT) {
				p := t.pair()
				win := p.srv.region(64, remote)
				_, rt := p.srv.bind(win, 0, 64, api.MemPrivRemoteWrite|api.MemPrivRemoteRead)
				rr := p.srv.region(64, rw)
				p.srv.postRecv(rr, 0, 64, 1)
				sr := p.cli.region(64, rw)
				sr.fill(0, 64, 0x5A)
				t.noErr(p.cli.ep.PostSendWithInvalidate(sr.iov(0, 8), 2, api.CompletionDefault, true, rt.RMRContext), "PostSendWithInvalidate")
				p.cli.expectReq(2, api.DTOSuccess, "the send-with-invalidate completion")
				p.srv.expectRecv(1, api.DTOSuccess, "its receive")
				t.remoteFault(p, win, func(c api.Cookie) error {
					return p.cli.ep.PostRDMAWrite(sr.iov(0, 16), c, rt, api.CompletionDefault)
				})
			}},
			{"DESCRIPTION (DAT 2.0 dat.h)", "with invalidate false it is a plain send and the RMR context keeps working", func(t *checkT) {
				p := t.pair()
				win := p.srv.region(64, remote)
				_, rt := p.srv.bind(win, 0, 64, api.MemPrivRemoteWrite|api.MemPrivRemoteRead)
				rr := p.srv.region(64, rw)
				p.srv.postRecv(rr, 0, 64, 1)
				sr := p.cli.region(64, rw)
				want := sr.fill(0, 16, 0x5B)
				t.noErr(p.cli.ep.PostSendWithInvalidate(sr.iov(0, 8), 2, api.CompletionDefault, false, rt.RMRContext), "PostSendWithInvalidate(invalidate=false)")
				p.cli.expectReq(2, api.DTOSuccess, "the send completion")
				ev := p.srv.expectRecv(1, api.DTOSuccess, "the receive")
				if ev.DTO.Op != api.OpReceive {
					t.Errorf("receive completion op %v, want %v", ev.DTO.Op, api.OpReceive)
				}
				t.noErr(p.cli.ep.PostRDMAWrite(sr.iov(0, 16), 3, rt, api.CompletionDefault), "PostRDMAWrite through the context")
				p.cli.expectReq(3, api.DTOSuccess, "the RDMA write through the still valid context")
				if !bytes.Equal(win.b[:16], want) {
					t.Fatalf("the RDMA write did not land")
				}
			}},
		}},
	}
}

// queryEP returns the EP's parameters.
func (t *checkT) queryEP(ep api.EP) api.EPParam {
	t.T.Helper()
	p, err := ep.Query()
	t.noErr(err, "EP.Query")
	return p
}

// disconnectedPair returns a pair whose client EP is DISCONNECTED (after a
// graceful disconnect it asked for) and not reset.
func (t *checkT) disconnectedPair() *pair {
	t.T.Helper()
	p := t.pair()
	t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect")
	p.cli.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED")
	t.eventuallyState(p.cli.ep, "the disconnected EP", api.EPDisconnected)
	return p
}

// expectRecvLengthError waits for the receive of cookie on p's server to
// fail because the message is longer than it (DTO_ERR_LOCAL_LENGTH, or any
// error under DeviationRecvLengthStatus), and for the receiver's
// connection to break.
func (t *checkT) expectRecvLengthError(p *pair, cookie api.Cookie, what string) {
	t.T.Helper()
	if why, ok := p.srv.deviation(DeviationRecvLengthStatus); ok {
		t.Logf("%s: accepting any error status: the provider declares deviation %q: %s", t.ref, DeviationRecvLengthStatus, why)
		ev := t.expectEvent(p.srv.recv, api.DTOCompletionEvent, what)
		if ev.DTO.Cookie != cookie || ev.DTO.Status == api.DTOSuccess || ev.DTO.Status == api.DTOErrFlushed {
			t.Fatalf("%s: got %s, want cookie %d with an error status", what, describe(&ev), cookie)
		}
	} else {
		p.srv.expectRecv(cookie, api.DTOErrLocalLength, what)
	}
	p.srv.expectConnEnd("the receiver's connection after the length error", api.ConnectionBrokenEvent)
}

// readTooShort posts an RDMA read of remote bytes into a local IOV of
// iov < remote bytes (dat_ep_post_rdma_read(3DAT) RETURN VALUES): see
// lengthFault; a read that is posted fails with DTO_ERR_LOCAL_LENGTH.
func (t *checkT) readTooShort(iov, remote int) {
	t.T.Helper()
	p := t.pair()
	src := p.srv.region(remote, api.MemPrivAll)
	src.fill(0, remote, 0x65)
	dst := p.cli.region(remote, rw)
	what := fmt.Sprintf("an RDMA read of %d bytes into %d", remote, iov)
	ev, posted := t.lengthFault(p, dst, 0, iov, what, func(c api.Cookie) error {
		return p.cli.ep.PostRDMARead(dst.iov(0, iov), c, src.rtr(0, remote), api.CompletionDefault)
	})
	if posted && (ev.DTO.Status != api.DTOErrLocalLength || ev.DTO.Op != api.OpRDMARead) {
		t.Errorf("%s completed as %s, want %v with status %v", what, describe(&ev), api.OpRDMARead, api.DTOErrLocalLength)
	}
}

// lengthFault checks an RDMA operation whose local and remote lengths do
// not match (the RETURN VALUES of dat_ep_post_rdma_write(3DAT) and
// dat_ep_post_rdma_read(3DAT), DAT_LENGTH_ERROR): post is refused with
// DAT_LENGTH_ERROR and the connection goes on, or the operation fails and
// the connection breaks; either way no byte of watch outside [lo, hi)
// changes. It returns the failed operation's completion, and whether the
// operation was posted.
func (t *checkT) lengthFault(p *pair, watch *region, lo, hi int, what string, post func(api.Cookie) error) (api.Event, bool) {
	t.T.Helper()
	const cookie = 3
	var ev api.Event
	snap := watch.snapshot()
	err := post(cookie)
	switch {
	case errors.Is(err, api.ErrLength):
		// Refused at post time: nothing queued, the connection goes on.
		t.works(p.cli, p.srv, "after the refused "+what)
	case err != nil:
		t.Fatalf("%s: %v, want success or DAT_LENGTH_ERROR", what, err)
	default:
		ev = t.expectEvent(p.cli.req, api.DTOCompletionEvent, "the completion of "+what)
		if ev.DTO.Cookie != cookie || ev.DTO.Status == api.DTOSuccess {
			t.Fatalf("%s: got %s, want cookie %d failing", what, describe(&ev), cookie)
		}
		p.cli.expectConnEnd("the connection after the failure of "+what, api.ConnectionBrokenEvent)
	}
	all := watch.mem.Bytes()
	for i := range all {
		if off := i - watch.page; (off < lo || off >= hi) && all[i] != snap[i] {
			t.Fatalf("%s changed offset %d, outside [%d, %d)", what, off, lo, hi)
		}
	}
	return ev, err == nil
}
