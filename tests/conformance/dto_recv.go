package conformance

import (
	"bytes"
	"fmt"

	"github.com/godat/godat/api"
)

// postRecvGroups checks dat_ep_post_recv(3DAT): scattering a message over the
// receive IOV, the receive queue limits and receives too small for a message.
var postRecvGroups = []group{
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
			p, sr := t.unsignalledRecvs(srv)
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
			p, sr := t.unsignalledRecvs(srv)
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
			iov := p.srv.segsPast("MaxRecvIOV", n, 4096)
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
}

// unsignalledRecvs connects a pair whose server, srv, is configured for
// unsignalled receive completions, posts an unsignalled receive (cookie 1)
// and then a signalled one (cookie 2) there, and returns the pair and an
// 8-byte region for the client's sends.
func (t *checkT) unsignalledRecvs(srv *node) (*pair, *region) {
	t.T.Helper()
	a := srv.epAttr()
	a.RecvCompletionFlags = api.CompletionUnsignalled
	p := t.pairWith(pairCfg{srv: srv, srvAttr: a})
	rr := p.srv.region(128, rw)
	t.noErr(p.srv.ep.PostRecv(rr.iov(0, 64), 1, api.CompletionUnsignalled), "PostRecv(unsignalled)")
	p.srv.postRecv(rr, 64, 64, 2)
	return p, p.cli.region(8, rw)
}
