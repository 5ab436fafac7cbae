package conformance

import (
	"bytes"
	"fmt"
	"time"

	"github.com/godat/godat/api"
)

// lwQuiet bounds the checks that a low-watermark event does not come.
const lwQuiet = 100 * time.Millisecond

// srq creates an SRQ in the node's PZ, skipping the check when the provider
// has no SRQ support.
func (n *node) srq(maxRecv, maxIOV int) api.SRQ {
	n.t.T.Helper()
	n.needSRQ()
	s, err := n.ia.CreateSRQ(n.pz, api.SRQAttr{MaxRecvDTOs: maxRecv, MaxRecvIOV: maxIOV})
	n.t.noErr(err, "IA.CreateSRQ")
	return s
}

// srqPosted creates an SRQ of 8 one-segment receives on n and posts k
// buffers of srqSlot bytes to it (cookies 0 to k-1).
func (n *node) srqPosted(k int) api.SRQ {
	n.t.T.Helper()
	s := n.srq(8, 1)
	r := n.region(k*srqSlot, rw)
	for i := range k {
		n.t.noErr(s.PostRecv(r.iov(i*srqSlot, srqSlot), api.Cookie(i)), "SRQ.PostRecv")
	}
	return s
}

func (n *node) needSRQ() {
	n.t.T.Helper()
	if !n.pattr.SRQSupported {
		n.t.Skipf("the provider does not support SRQs (ProviderAttr.SRQSupported)")
	}
}

// srqEnd creates an EP on srq with the node's PZ and EVDs.
func (n *node) srqEnd(s api.SRQ) *end {
	n.t.T.Helper()
	ep, err := n.ia.CreateEPWithSRQ(n.pz, n.recv, n.req, n.conn, s, n.epAttr())
	n.t.noErr(err, "IA.CreateEPWithSRQ")
	return &end{node: n, ep: ep}
}

// srqSetup connects k client EPs to k server EPs that share one SRQ of
// maxRecv receives.
type srqSetup struct {
	srv, cli *node
	srq      api.SRQ
	c, s     []*end
	buf      *region // the server's receive buffers
}

const srqSlot = 64 // bytes per SRQ receive buffer

func (t *checkT) srqSetup(k, maxRecv int) *srqSetup {
	t.T.Helper()
	x := &srqSetup{srv: t.node(), cli: t.node()}
	x.srq = x.srv.srq(maxRecv, 1)
	x.buf = x.srv.region(maxRecv*srqSlot, rw)
	_, q := x.srv.listen(api.PSPConsumer)
	for range k {
		s := x.srv.srqEnd(x.srq)
		c := x.cli.end(nil)
		c.connect(x.srv, q, nil)
		ev := x.srv.expectCR("the CONNECTION_REQUEST")
		t.noErr(ev.CR.CR.Accept(s.ep, nil), "CR.Accept on the SRQ EP")
		c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the active side")
		s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the SRQ EP")
		x.c, x.s = append(x.c, c), append(x.s, s)
	}
	return x
}

// post posts receive buffer i (cookie 1000+i) to the SRQ.
func (x *srqSetup) post(i int) {
	x.srv.t.T.Helper()
	x.srv.t.noErr(x.srq.PostRecv(x.buf.iov(i*srqSlot, srqSlot), api.Cookie(1000+i)), "SRQ.PostRecv")
}

// send sends data from client i and waits for its send completion.
func (x *srqSetup) send(i int, data []byte, cookie api.Cookie) {
	t := x.srv.t
	t.T.Helper()
	r := x.c[i].region(len(data), rw)
	copy(r.b, data)
	x.c[i].postSend(r, 0, len(data), cookie)
	x.c[i].expectReq(cookie, api.DTOSuccess, "the send to an SRQ EP")
}

// expectAsync waits for an async event about obj with reason.
func (n *node) expectAsync(obj api.Object, reason int, what string) api.Event {
	n.t.T.Helper()
	ev := n.t.wait(n.async, what)
	if ev.Number.Stream() != api.EVDAsync || ev.Async.Object != obj || ev.Async.Reason != reason {
		n.t.Fatalf("%s: got %s about %v, want an asynchronous event with reason %d about the object", what, describe(&ev), ev.Async.Object, reason)
	}
	return ev
}

func (t *checkT) querySRQ(s api.SRQ) api.SRQParam {
	t.T.Helper()
	p, err := s.Query()
	t.noErr(err, "SRQ.Query")
	return p
}

var srqGroups = []group{
	{page: "dat_srq_create", checks: []check{
		{"RETURN VALUES", "a provider without SRQ support answers DAT_MODEL_NOT_SUPPORTED", func(t *checkT) {
			n := t.node()
			if n.pattr.SRQSupported {
				t.Skipf("the provider supports SRQs")
			}
			_, err := n.ia.CreateSRQ(n.pz, api.SRQAttr{MaxRecvDTOs: 4, MaxRecvIOV: 1})
			t.wantErr(err, api.ErrModelNotSupported, "CreateSRQ without SRQ support")
		}},
		{"DESCRIPTION", "Query reports at least the requested sizes, the OPERATIONAL state, the PZ and the IA", func(t *checkT) {
			n := t.node()
			s := n.srq(8, 2)
			p := t.querySRQ(s)
			if p.MaxRecvDTOs < 8 || p.MaxRecvIOV < 2 || p.State != api.SRQStateOperational || p.PZ != n.pz || p.IA != n.ia {
				t.Fatalf("SRQ.Query = {max recv %d, max IOV %d, state %d, same PZ %v, same IA %v}, want {>=8, >=2, OPERATIONAL, true, true}",
					p.MaxRecvDTOs, p.MaxRecvIOV, p.State, p.PZ == n.pz, p.IA == n.ia)
			}
		}},
		{"DESCRIPTION", "the low watermark given at create is the SRQ's: Query reports it", func(t *checkT) {
			n := t.node()
			n.needSRQ()
			s, err := n.ia.CreateSRQ(n.pz, api.SRQAttr{MaxRecvDTOs: 8, MaxRecvIOV: 1, LowWatermark: 2})
			t.noErr(err, "IA.CreateSRQ with low watermark 2")
			if p := t.querySRQ(s); p.LowWatermark != 2 {
				t.Fatalf("SRQ.Query low watermark %d, want the 2 it was created with", p.LowWatermark)
			}
		}},
		{"RETURN VALUES", "a nil PZ is DAT_INVALID_HANDLE", func(t *checkT) {
			n := t.node()
			n.needSRQ()
			_, err := n.ia.CreateSRQ(nil, api.SRQAttr{MaxRecvDTOs: 4, MaxRecvIOV: 1})
			t.wantErr(err, api.ErrInvalidHandle, "CreateSRQ with a nil PZ")
		}},
		{"RETURN VALUES", "a PZ of another IA is DAT_INVALID_HANDLE", func(t *checkT) {
			a, b := t.node(), t.node()
			a.needSRQ()
			_, err := a.ia.CreateSRQ(b.pz, api.SRQAttr{MaxRecvDTOs: 4, MaxRecvIOV: 1})
			t.wantErr(err, api.ErrInvalidHandle, "CreateSRQ with a PZ of another IA")
		}},
	}},

	{page: "dat_ep_create_with_srq", checks: []check{
		{"DESCRIPTION", "an EP on an SRQ takes its receive buffers from the SRQ", func(t *checkT) {
			x := t.srqSetup(1, 4)
			x.post(0)
			data := pattern(20, 0x81)
			x.send(0, data, 1)
			ev := x.s[0].expectRecv(1000, api.DTOSuccess, "the receive from the SRQ")
			if ev.DTO.Length != 20 || !bytes.Equal(x.buf.b[:20], data) {
				t.Fatalf("the SRQ buffer holds %d bytes that are not the message", ev.DTO.Length)
			}
		}},
		{"USAGE", "the SRQ's receives are shared by all its EPs, each buffer used once", func(t *checkT) {
			x := t.srqSetup(2, 8)
			for i := range 4 {
				x.post(i)
			}
			msgs := [][]byte{pattern(10, 0x10), pattern(11, 0x20), pattern(12, 0x30)}
			from := []int{0, 1, 0}
			for i, m := range msgs {
				x.send(from[i], m, api.Cookie(i))
			}
			used := map[api.Cookie]bool{}
			for range msgs {
				// Per connection the order is that of the sends; across
				// connections there is none, so match by length.
				ev := t.expectEvent(x.srv.recv, api.DTOCompletionEvent, "a receive from the SRQ")
				if ev.DTO.Status != api.DTOSuccess {
					t.Fatalf("got %s, want a successful receive", describe(&ev))
				}
				slot := int(ev.DTO.Cookie) - 1000
				if slot < 0 || slot >= 4 || used[ev.DTO.Cookie] {
					t.Fatalf("receive completion with cookie %d: not one of the posted buffers, or used twice", ev.DTO.Cookie)
				}
				used[ev.DTO.Cookie] = true
				j := int(ev.DTO.Length) - 10
				if j < 0 || j >= len(msgs) {
					t.Fatalf("receive of %d bytes matches no message", ev.DTO.Length)
				}
				if ev.DTO.EP != x.s[from[j]].ep {
					t.Errorf("message %d completed on another EP than the one it was sent to", j)
				}
				if !bytes.Equal(x.buf.b[slot*srqSlot:slot*srqSlot+len(msgs[j])], msgs[j]) {
					t.Errorf("buffer %d does not hold message %d", slot, j)
				}
			}
		}},
		{"DESCRIPTION", "receives cannot be posted to an EP on an SRQ", func(t *checkT) {
			n := t.node()
			s := n.srq(4, 1)
			e := n.srqEnd(s)
			r := n.region(64, rw)
			t.wantOneOf(e.ep.PostRecv(r.iov(0, 64), 1, api.CompletionDefault), "EP.PostRecv on an EP that uses an SRQ",
				api.ErrInvalidState, api.ErrInvalidParameter, api.ErrModelNotSupported)
		}},
		{"PARAMETERS", "nil EP attributes are DAT_INVALID_PARAMETER", func(t *checkT) {
			n := t.node()
			s := n.srq(4, 1)
			_, err := n.ia.CreateEPWithSRQ(n.pz, n.recv, n.req, n.conn, s, nil)
			t.wantErr(err, api.ErrInvalidParameter, "CreateEPWithSRQ with nil attributes")
		}},
		{"RETURN VALUES", "a nil SRQ is DAT_INVALID_HANDLE", func(t *checkT) {
			n := t.node()
			n.needSRQ()
			_, err := n.ia.CreateEPWithSRQ(n.pz, n.recv, n.req, n.conn, nil, n.epAttr())
			t.wantErr(err, api.ErrInvalidHandle, "CreateEPWithSRQ with a nil SRQ")
		}},
		{"RETURN VALUES", "an SRQ of another IA is DAT_INVALID_HANDLE", func(t *checkT) {
			a, b := t.node(), t.node()
			s := b.srq(4, 1)
			_, err := a.ia.CreateEPWithSRQ(a.pz, a.recv, a.req, a.conn, s, a.epAttr())
			t.wantErr(err, api.ErrInvalidHandle, "CreateEPWithSRQ with an SRQ of another IA")
		}},
		{"RETURN VALUES", "a PZ other than the SRQ's is DAT_INVALID_PARAMETER when the provider does not support the difference", func(t *checkT) {
			n := t.node()
			if n.pattr.SRQEPPZDifferenceSupported {
				t.Skipf("the provider supports EPs in another PZ than their SRQ")
			}
			s := n.srq(4, 1)
			pz2, err := n.ia.CreatePZ()
			t.noErr(err, "IA.CreatePZ")
			_, err = n.ia.CreateEPWithSRQ(pz2, n.recv, n.req, n.conn, s, n.epAttr())
			t.wantErr(err, api.ErrInvalidParameter, "CreateEPWithSRQ in another PZ than the SRQ")
		}},
		{"DESCRIPTION", "Query reports the SRQ, also after the EP was disconnected and reset", func(t *checkT) {
			x := t.srqSetup(1, 4)
			if p := t.queryEP(x.s[0].ep); p.SRQ != x.srq {
				t.Fatalf("EP.Query does not report the SRQ the EP was created with")
			}
			t.noErr(x.s[0].ep.Disconnect(api.CloseGraceful), "EP.Disconnect")
			x.s[0].expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED")
			t.eventuallyState(x.s[0].ep, "the disconnected EP", api.EPDisconnected)
			t.noErr(x.s[0].ep.Reset(), "EP.Reset")
			if p := t.queryEP(x.s[0].ep); p.SRQ != x.srq {
				t.Fatalf("after Reset EP.Query does not report the SRQ any more")
			}
		}},
	}},

	{page: "dat_srq_post_recv", checks: []check{
		{"RETURN VALUES", "a segment outside its LMR is refused, or the receive that uses it fails and writes nothing outside the LMR", func(t *checkT) {
			x := t.srqSetup(1, 4)
			snap := x.buf.snapshot()
			bad := []api.LMRTriplet{x.buf.tr(len(x.buf.b)-8, 16)} // 8 bytes past the LMR
			err := x.srq.PostRecv(bad, 1)
			if err != nil {
				t.wantOneOf(err, "SRQ.PostRecv of a segment running past its LMR", localErrs...)
				return
			}
			sr := x.cli.region(16, rw)
			sr.fill(0, 16, 0x83)
			x.c[0].postSend(sr, 0, 16, 2) // its status depends on the receiver's failure
			ev := t.expectEvent(x.srv.recv, api.DTOCompletionEvent, "the receive into the bad segment")
			if ev.DTO.Cookie != 1 || (ev.DTO.Status != api.DTOErrLocalProtection && ev.DTO.Status != api.DTOErrLocalLength) {
				t.Errorf("got %s, want cookie 1 completing with a local protection or length error", describe(&ev))
			}
			if off, ok := x.buf.changed(snap); ok && off >= len(x.buf.b) {
				t.Errorf("the receive wrote past the LMR (offset %d)", off)
			}
		}},
		{"DESCRIPTION", "a message sent while the SRQ holds no receive is placed once one is posted", func(t *checkT) {
			x := t.srqSetup(1, 4)
			sr := x.c[0].region(16, rw)
			want := sr.fill(0, 16, 0x5C)
			x.c[0].postSend(sr, 0, 16, 2) // the SRQ is empty: the message waits
			t.quiet(x.srv.recv, 20*time.Millisecond, "the SRQ EP's receive EVD while the SRQ is empty")
			x.post(0)
			x.s[0].expectRecv(1000, api.DTOSuccess, "the receive posted after the message arrived")
			x.c[0].expectReq(2, api.DTOSuccess, "the send that waited for the SRQ")
			if !bytes.Equal(x.buf.b[:16], want) {
				t.Fatalf("the receive holds other bytes than were sent")
			}
		}},
		{"RETURN VALUES", "an SRQ takes MaxRecvDTOs receives; one more is DAT_INSUFFICIENT_RESOURCES", func(t *checkT) {
			n := t.node()
			s := n.srq(4, 1)
			m := t.querySRQ(s).MaxRecvDTOs
			t.skipUnlessIn("the SRQ's MaxRecvDTOs", m, 4096)
			r := n.region(8*(m+1), rw)
			for i := range m {
				t.noErr(s.PostRecv(r.iov(8*i, 8), api.Cookie(i)), "SRQ.PostRecv")
			}
			t.wantErr(s.PostRecv(r.iov(8*m, 8), api.Cookie(m)), api.ErrInsufficientResources, fmt.Sprintf("SRQ.PostRecv with MaxRecvDTOs (%d) receives posted", m))
		}},
		{"RETURN VALUES", "more segments than the SRQ's MaxRecvIOV is DAT_INVALID_PARAMETER; exactly MaxRecvIOV works", func(t *checkT) {
			n := t.node()
			s := n.srq(4, 2)
			k := t.querySRQ(s).MaxRecvIOV
			iov := n.segsPast("the SRQ's MaxRecvIOV", k, 64)
			t.wantErr(s.PostRecv(iov, 1), api.ErrInvalidParameter, fmt.Sprintf("SRQ.PostRecv with MaxRecvIOV+1 (%d) segments", k+1))
			t.noErr(s.PostRecv(iov[:k], 2), fmt.Sprintf("SRQ.PostRecv with MaxRecvIOV (%d) segments", k))
		}},
		{"DESCRIPTION", "receives posted to the SRQ before any EP uses it serve EPs connected later", func(t *checkT) {
			srv, cli := t.node(), t.node()
			s := srv.srq(4, 1)
			buf := srv.region(64, rw)
			t.noErr(s.PostRecv(buf.iov(0, 64), 7), "SRQ.PostRecv")
			se := srv.srqEnd(s)
			c := t.acceptInto(cli, se)
			c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED")
			se.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the SRQ EP")
			sr := cli.region(16, rw)
			want := sr.fill(0, 16, 0x82)
			c.postSend(sr, 0, 16, 8)
			c.expectReq(8, api.DTOSuccess, "the send")
			ev := se.expectRecv(7, api.DTOSuccess, "the receive from the SRQ")
			if ev.DTO.Length != 16 || !bytes.Equal(buf.b[:16], want) {
				t.Fatalf("the SRQ buffer holds %d bytes that are not the message", ev.DTO.Length)
			}
		}},
	}},

	{page: "dat_srq_query", checks: []check{
		// The page's USAGE example, at the points where godat's providers
		// and the page agree: between a message's arrival and the dequeue
		// of its completion the page still counts the buffer as
		// outstanding, godat's providers no longer (api.SRQParam).
		{"USAGE", "AvailableDTOCount counts the buffers posted and not yet taken by an EP, OutstandingDTOCount those whose completions the consumer has not dequeued", func(t *checkT) {
			x := t.srqSetup(1, 8)
			for i := range 3 {
				x.post(i)
			}
			p := t.querySRQ(x.srq)
			if p.AvailableDTOCount < 0 && p.OutstandingDTOCount < 0 {
				t.Skipf("the provider reports neither count (%d, %d)", p.AvailableDTOCount, p.OutstandingDTOCount)
			}
			counts := func(when string, want int) {
				t.T.Helper()
				q := t.querySRQ(x.srq)
				if p.AvailableDTOCount >= 0 && q.AvailableDTOCount != want {
					t.Fatalf("AvailableDTOCount %d %s, want %d", q.AvailableDTOCount, when, want)
				}
				if p.OutstandingDTOCount >= 0 && q.OutstandingDTOCount != want {
					t.Fatalf("OutstandingDTOCount %d %s, want %d", q.OutstandingDTOCount, when, want)
				}
			}
			counts("with 3 buffers posted", 3)
			x.send(0, pattern(8, 1), 1)
			x.s[0].expectRecv(1000, api.DTOSuccess, "the receive")
			counts("after one of 3 buffers was used and its completion dequeued", 2)
		}},
	}},

	{page: "dat_ep_recv_query", checks: []check{
		{"DESCRIPTION", "an EP without SRQ counts each posted receive as allocated, and the span is never below the count", func(t *checkT) {
			n := t.node()
			e := n.end(nil)
			r := n.region(3*64, rw)
			for i := range 3 {
				e.postRecv(r, i*64, 64, api.Cookie(i))
			}
			nb, span, err := e.ep.RecvQuery()
			if err != nil && isOneOf(err, api.ErrModelNotSupported) {
				t.Skipf("the provider does not support EP.RecvQuery (%v)", err)
			}
			t.noErr(err, "EP.RecvQuery")
			if nb < 0 {
				t.Skipf("the provider reports the count as unknown (%d)", nb)
			}
			if nb != 3 {
				t.Errorf("nbufs_allocated %d with 3 receives posted to an EP without SRQ", nb)
			}
			if span >= 0 && span < nb {
				t.Errorf("bufs_alloc_span %d is below nbufs_allocated %d", span, nb)
			}
		}},
	}},

	{page: "dat_ep_set_watermark", checks: []check{
		{"DESCRIPTION", "EP.Query reports the soft high watermark set as the EP's srq_soft_hw", func(t *checkT) {
			n := t.node()
			e := n.end(nil)
			t.noErr(e.ep.SetWatermark(5, api.WatermarkInfinite), "EP.SetWatermark(5, infinite)")
			if got := t.queryEP(e.ep).Attr.SRQSoftHighWatermark; got != 5 {
				t.Errorf("EP.Query reports srq_soft_hw %d after SetWatermark(5, infinite), want 5", got)
			}
			t.noErr(e.ep.SetWatermark(api.WatermarkInfinite, 3), "EP.SetWatermark(infinite, 3)")
			if got := t.queryEP(e.ep).Attr.SRQSoftHighWatermark; got != api.WatermarkInfinite {
				t.Errorf("EP.Query reports srq_soft_hw %d after SetWatermark(infinite, 3), want DAT_WATERMARK_INFINITE", got)
			}
		}},
		{"DESCRIPTION", "receive buffers at an EP without SRQ above the soft high watermark raise one asynchronous event naming the EP per setting", func(t *checkT) {
			n := t.node()
			e := n.end(nil)
			r := n.region(4*64, rw)
			t.noErr(e.ep.SetWatermark(2, api.WatermarkInfinite), "EP.SetWatermark(2, infinite)")
			e.postRecv(r, 0, 64, 0)
			e.postRecv(r, 64, 64, 1)
			t.expectEmpty(n.async, "two receives posted, soft high watermark 2")
			e.postRecv(r, 128, 64, 2)
			ev := n.expectAsync(e.ep, api.ReasonEPSoftHighWater, "the soft high watermark event after the third receive")
			if ev.Number != api.AsyncProviderInternalErrorEvent {
				t.Errorf("the soft high watermark event is %v, want %v (DAT 2.0 gives it no number of its own; see docs/decisions.md)", ev.Number, api.AsyncProviderInternalErrorEvent)
			}
			e.postRecv(r, 192, 64, 3)
			t.expectEmpty(n.async, "a fourth receive after the soft high watermark event")
			t.noErr(e.ep.SetWatermark(2, api.WatermarkInfinite), "EP.SetWatermark(2, infinite) again, with 4 receives posted")
			n.expectAsync(e.ep, api.ReasonEPSoftHighWater, "the soft high watermark event of the second setting, during the call")
		}},
		{"DESCRIPTION", "receive buffers above the hard high watermark break the connection: BROKEN on the connect EVD, the receives flushed", func(t *checkT) {
			p := t.pair()
			r := p.srv.region(2*64, rw)
			t.noErr(p.srv.ep.SetWatermark(api.WatermarkInfinite, 1), "EP.SetWatermark(infinite, 1)")
			p.srv.postRecv(r, 0, 64, 0)
			t.expectEmpty(p.srv.conn, "one receive posted, hard high watermark 1")
			p.srv.postRecv(r, 64, 64, 1)
			p.srv.expectConn(api.ConnectionBrokenEvent, "BROKEN after a second receive above hard high watermark 1")
			p.srv.expectRecv(0, api.DTOErrFlushed, "the first receive, flushed")
			p.srv.expectRecv(1, api.DTOErrFlushed, "the second receive, flushed")
			p.cli.expectConnEnd("the peer's end of the connection", api.ConnectionBrokenEvent, api.ConnectionDisconnectedEvent)
		}},
		{"USAGE", "a hard high watermark already exceeded breaks the connection as soon as it is established", func(t *checkT) {
			srv, cli := t.serverNode(), t.node()
			s := srv.end(nil)
			r := srv.region(64, rw)
			t.noErr(s.ep.SetWatermark(api.WatermarkInfinite, 0), "EP.SetWatermark(infinite, 0)")
			s.postRecv(r, 0, 64, 0)
			t.expectEmpty(srv.conn, "a receive above hard high watermark 0 before any connection")
			t.acceptInto(cli, s)
			s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED")
			s.expectConn(api.ConnectionBrokenEvent, "BROKEN once the connection is up, above hard high watermark 0")
			s.expectRecv(0, api.DTOErrFlushed, "the receive, flushed")
		}},
		{"DESCRIPTION", "an EP on an SRQ counts the buffer it takes for a message: soft high watermark 0 raises the event when one arrives", func(t *checkT) {
			x := t.srqSetup(1, 4)
			x.post(0)
			s := x.s[0]
			t.noErr(s.ep.SetWatermark(0, api.WatermarkInfinite), "EP.SetWatermark(0, infinite) on the SRQ EP")
			t.expectEmpty(x.srv.async, "soft high watermark 0 before any message")
			x.send(0, pattern(8, 3), 1)
			s.expectRecv(1000, api.DTOSuccess, "the message, through the SRQ")
			x.srv.expectAsync(s.ep, api.ReasonEPSoftHighWater, "the soft high watermark event")
		}},
		{"DESCRIPTION", "an EP on an SRQ above hard high watermark 0 completes the message it took, then its connection breaks", func(t *checkT) {
			x := t.srqSetup(1, 4)
			x.post(0)
			x.post(1)
			s, c := x.s[0], x.c[0]
			t.noErr(s.ep.SetWatermark(api.WatermarkInfinite, 0), "EP.SetWatermark(infinite, 0) on the SRQ EP")
			t.expectEmpty(s.conn, "hard high watermark 0 before any message")
			r := c.region(8, rw)
			copy(r.b, pattern(8, 4))
			c.postSend(r, 0, 8, 1)
			s.expectRecv(1000, api.DTOSuccess, "the message that went above the hard high watermark")
			s.expectConn(api.ConnectionBrokenEvent, "BROKEN after the message, above hard high watermark 0")
			c.expectConnEnd("the peer's end of the connection", api.ConnectionBrokenEvent, api.ConnectionDisconnectedEvent)
		}},
		{"RETURN VALUES", "a negative watermark other than DAT_WATERMARK_INFINITE is DAT_INVALID_PARAMETER", func(t *checkT) {
			n := t.node()
			e := n.end(nil)
			t.wantErr(e.ep.SetWatermark(-2, api.WatermarkInfinite), api.ErrInvalidParameter, "EP.SetWatermark(-2, infinite)")
			t.wantErr(e.ep.SetWatermark(api.WatermarkInfinite, -7), api.ErrInvalidParameter, "EP.SetWatermark(infinite, -7)")
		}},
	}},

	{page: "dat_srq_set_lw", checks: []check{
		{"DESCRIPTION", "an asynchronous event names the SRQ when its available buffers fall below the low watermark", func(t *checkT) {
			x := t.srqSetup(1, 8)
			for i := range 3 {
				x.post(i)
			}
			t.noErr(x.srq.SetLW(2), "SRQ.SetLW(2) with 3 buffers")
			x.send(0, pattern(8, 1), 1)
			x.s[0].expectRecv(1000, api.DTOSuccess, "the first receive")
			x.send(0, pattern(8, 2), 2)
			x.s[0].expectRecv(1001, api.DTOSuccess, "the second receive")
			x.srv.expectAsync(x.srq, api.ReasonSRQLowWatermark, "the low-watermark event")
		}},
		{"DESCRIPTION", "the low-watermark event waits until fewer buffers than the watermark are available: not when SetLW finds exactly that many, nor when they fall to it (each checked for 100 ms)", func(t *checkT) {
			x := t.srqSetup(1, 8)
			for i := range 3 {
				x.post(i)
			}
			t.noErr(x.srq.SetLW(3), "SRQ.SetLW(3) with 3 buffers")
			t.quiet(x.srv.async, lwQuiet, "the async EVD after SetLW(3) with 3 buffers available")
			t.noErr(x.srq.SetLW(2), "SRQ.SetLW(2) with 3 buffers")
			x.send(0, pattern(8, 1), 1)
			x.s[0].expectRecv(1000, api.DTOSuccess, "the first receive")
			t.quiet(x.srv.async, lwQuiet, "the async EVD with 2 buffers left, low watermark 2")
			x.send(0, pattern(8, 2), 2)
			x.s[0].expectRecv(1001, api.DTOSuccess, "the second receive")
			x.srv.expectAsync(x.srq, api.ReasonSRQLowWatermark, "the low-watermark event with 1 buffer left, low watermark 2")
		}},
		{"DESCRIPTION", "the event fires once per setting: buffers taken after it fired bring no second one until SetLW arms it again (each checked for 100 ms)", func(t *checkT) {
			x := t.srqSetup(1, 8)
			for i := range 4 {
				x.post(i)
			}
			t.noErr(x.srq.SetLW(3), "SRQ.SetLW(3) with 4 buffers")
			x.send(0, pattern(8, 1), 1)
			x.s[0].expectRecv(1000, api.DTOSuccess, "the first receive")
			t.quiet(x.srv.async, lwQuiet, "the async EVD with 3 buffers left, low watermark 3")
			x.send(0, pattern(8, 2), 2)
			x.s[0].expectRecv(1001, api.DTOSuccess, "the second receive")
			x.srv.expectAsync(x.srq, api.ReasonSRQLowWatermark, "the low-watermark event with 2 buffers left")
			x.send(0, pattern(8, 3), 3)
			x.s[0].expectRecv(1002, api.DTOSuccess, "the third receive")
			t.quiet(x.srv.async, lwQuiet, "the async EVD after a second buffer below the watermark was taken")
			t.noErr(x.srq.SetLW(3), "SRQ.SetLW(3) again with 1 buffer")
			x.srv.expectAsync(x.srq, api.ReasonSRQLowWatermark, "the low-watermark event of the new setting")
		}},
		{"DESCRIPTION", "a low watermark above the current number of buffers fires during the call", func(t *checkT) {
			n := t.node()
			s := n.srqPosted(2)
			t.noErr(s.SetLW(5), "SRQ.SetLW(5) with 2 buffers")
			n.expectAsync(s, api.ReasonSRQLowWatermark, "the low-watermark event")
		}},
		{"RETURN VALUES", "a low watermark above MaxRecvDTOs is DAT_INVALID_PARAMETER", func(t *checkT) {
			n := t.node()
			s := n.srq(4, 1)
			m := t.querySRQ(s).MaxRecvDTOs
			t.wantErr(s.SetLW(m+1), api.ErrInvalidParameter, "SRQ.SetLW(MaxRecvDTOs+1)")
		}},
	}},

	{page: "dat_srq_resize", checks: []check{
		{"DESCRIPTION", "growing the SRQ is reported by Query", func(t *checkT) {
			n := t.node()
			s := n.srq(4, 1)
			t.noErr(s.Resize(16), "SRQ.Resize(16)")
			if m := t.querySRQ(s).MaxRecvDTOs; m < 16 {
				t.Fatalf("MaxRecvDTOs %d after Resize(16)", m)
			}
		}},
		{"DESCRIPTION", "resizing below the outstanding buffers is DAT_INVALID_STATE and changes nothing", func(t *checkT) {
			s := t.node().srqPosted(4)
			before := t.querySRQ(s).MaxRecvDTOs
			t.wantErr(s.Resize(2), api.ErrInvalidState, "SRQ.Resize(2) with 4 buffers posted")
			if m := t.querySRQ(s).MaxRecvDTOs; m != before {
				t.Fatalf("MaxRecvDTOs changed from %d to %d by the refused Resize", before, m)
			}
		}},
		{"DESCRIPTION", "resizing to one below the posted buffers is DAT_INVALID_STATE; to exactly their number succeeds", func(t *checkT) {
			s := t.node().srqPosted(4)
			t.wantErr(s.Resize(3), api.ErrInvalidState, "SRQ.Resize(3) with 4 buffers posted")
			t.noErr(s.Resize(4), "SRQ.Resize(4) with 4 buffers posted")
		}},
		{"DESCRIPTION", "resizing below the low watermark is DAT_INVALID_STATE", func(t *checkT) {
			n := t.node()
			s := n.srq(8, 1)
			t.noErr(s.SetLW(4), "SRQ.SetLW(4)")
			t.wantErr(s.Resize(3), api.ErrInvalidState, "SRQ.Resize(3) below the low watermark 4")
		}},
	}},

	{page: "dat_srq_free", checks: []check{
		{"RETURN VALUES", "an SRQ used by an EP cannot be freed (DAT_INVALID_STATE_SRQ_IN_USE) until the EP is freed", func(t *checkT) {
			n := t.node()
			s := n.srq(4, 1)
			e := n.srqEnd(s)
			t.wantErr(s.Free(), sub(api.InvalidState, api.SubStateSRQInUse), "SRQ.Free with an EP")
			t.noErr(e.ep.Free(), "EP.Free")
			t.noErr(s.Free(), "SRQ.Free once unused")
		}},
		{"DESCRIPTION", "every call on a freed SRQ, and every call that passes it, is DAT_INVALID_HANDLE", freedSRQ},
	}},
}
