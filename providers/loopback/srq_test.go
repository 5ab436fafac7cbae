package loopback

import (
	"errors"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/srqattr"
)

// srqPair connects k EPs of a to k EPs of b that share one SRQ.
func srqPair(t *testing.T, k int, attr api.SRQAttr) (a, b *node, srq api.SRQ, ca, cb []api.EP) {
	a, b = newNode(t), newNode(t)
	srq, err := b.ia.CreateSRQ(b.pz, attr)
	must(t, err, "CreateSRQ")
	q := b.listen(api.PSPConsumer)
	for range k {
		eb, err := b.ia.CreateEPWithSRQ(b.pz, b.recv, b.req, b.connEVD, srq, &api.EPAttr{})
		must(t, err, "CreateEPWithSRQ")
		ea := a.ep(nil)
		must(t, b.request(ea, q).Accept(eb, nil), "Accept")
		b.expect(b.connEVD, api.ConnectionEstablishedEvent)
		a.expect(a.connEVD, api.ConnectionEstablishedEvent)
		ca, cb = append(ca, ea), append(cb, eb)
	}
	return
}

func TestSRQSharedByEPs(t *testing.T) {
	a, b, srq, ca, cb := srqPair(t, 2, api.SRQAttr{MaxRecvDTOs: 4, MaxRecvIOV: 1})
	buf := b.region(4*16, api.MemPrivAll)
	for i := range 3 {
		must(t, srq.PostRecv(buf.iov(i*16, 16), api.Cookie(100+i)), "SRQ.PostRecv")
	}
	prm, err := srq.Query()
	must(t, err, "SRQ.Query")
	if prm.AvailableDTOCount != 3 || prm.MaxRecvDTOs != 4 || prm.State != api.SRQStateOperational {
		t.Fatalf("SRQ params %+v", prm)
	}
	if err := cb[0].PostRecv(buf.iov(0, 16), 1, 0); err == nil {
		t.Fatal("PostRecv on an EP with an SRQ succeeded")
	}
	s := a.region(16, api.MemPrivAll)
	copy(s.b, "from the 2nd EP.")
	must(t, ca[1].PostSend(s.iov(0, 16), 1, 0), "PostSend")
	r := b.expectDTO(b.recv, 100, api.DTOSuccess)
	if r.EP != cb[1] || string(buf.b[:16]) != "from the 2nd EP." {
		t.Fatalf("receive %+v, data %q", r, buf.b[:16])
	}
	copy(s.b, "from the 1st EP.")
	must(t, ca[0].PostSend(s.iov(0, 16), 2, 0), "PostSend")
	if r := b.expectDTO(b.recv, 101, api.DTOSuccess); r.EP != cb[0] {
		t.Fatalf("receive on %v", r.EP)
	}
	prm, _ = srq.Query()
	if prm.AvailableDTOCount != 1 {
		t.Fatalf("available %d, want 1", prm.AvailableDTOCount)
	}
	wantErr(t, srq.Free(), api.InvalidState, api.SubStateSRQInUse, "SRQ.Free with EPs")
	if n, _, err := cb[0].RecvQuery(); err != nil || n != 0 {
		t.Fatalf("RecvQuery on an SRQ EP = %d %v", n, err)
	}
	must(t, cb[0].SetWatermark(2, api.WatermarkInfinite), "SetWatermark")
}

func TestSRQSendWaitsForSRQReceive(t *testing.T) {
	a, b, srq, ca, _ := srqPair(t, 2, api.SRQAttr{MaxRecvDTOs: 4, MaxRecvIOV: 1})
	s := a.region(8, api.MemPrivAll)
	copy(s.b, "waiting!")
	must(t, ca[0].PostSend(s.iov(0, 8), 1, 0), "PostSend")
	must(t, ca[1].PostSend(s.iov(0, 8), 2, 0), "PostSend")
	a.none(a.req, "sends without SRQ receives wait")
	buf := b.region(16, api.MemPrivAll)
	must(t, srq.PostRecv(buf.iov(0, 8), 10), "SRQ.PostRecv")
	a.expectDTO(a.req, 1, api.DTOSuccess)
	a.none(a.req, "one receive releases one send")
	must(t, srq.PostRecv(buf.iov(8, 8), 11), "SRQ.PostRecv")
	a.expectDTO(a.req, 2, api.DTOSuccess)
	b.expectDTO(b.recv, 10, api.DTOSuccess)
	b.expectDTO(b.recv, 11, api.DTOSuccess)
	if string(buf.b) != "waiting!waiting!" {
		t.Fatalf("SRQ buffers hold %q", buf.b)
	}
}

func TestSRQLowWatermark(t *testing.T) {
	a, b, srq, ca, _ := srqPair(t, 1, api.SRQAttr{MaxRecvDTOs: 8, MaxRecvIOV: 1})
	buf := b.region(8*8, api.MemPrivAll)
	for i := range 4 {
		must(t, srq.PostRecv(buf.iov(i*8, 8), api.Cookie(i)), "SRQ.PostRecv")
	}
	must(t, srq.SetLW(3), "SetLW")
	b.none(b.async, "4 available, watermark 3")
	s := a.region(8, api.MemPrivAll)
	must(t, ca[0].PostSend(s.iov(0, 8), 1, api.CompletionSuppress), "PostSend")
	b.none(b.async, "3 available is not below 3")
	must(t, ca[0].PostSend(s.iov(0, 8), 2, api.CompletionSuppress), "PostSend")
	ev := b.expect(b.async, srqattr.LowWatermarkEvent)
	if ev.Async.Object != srq || ev.Async.Reason != api.ReasonSRQLowWatermark {
		t.Fatalf("low-watermark event %+v", ev.Async)
	}
	must(t, ca[0].PostSend(s.iov(0, 8), 3, api.CompletionSuppress), "PostSend")
	b.none(b.async, "the event is one-shot")
	must(t, srq.SetLW(2), "SetLW re-arms; 1 available fires at once")
	b.expect(b.async, srqattr.LowWatermarkEvent)
	if err := srq.SetLW(9); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("SetLW above MaxRecvDTOs: %v", err)
	}
	prm, _ := srq.Query()
	if prm.LowWatermark != 2 {
		t.Fatalf("low watermark %d", prm.LowWatermark)
	}
}

func TestSRQResize(t *testing.T) {
	_, b, srq, _, _ := srqPair(t, 0, api.SRQAttr{MaxRecvDTOs: 4, MaxRecvIOV: 1, LowWatermark: 0})
	buf := b.region(64, api.MemPrivAll)
	for i := range 4 {
		must(t, srq.PostRecv(buf.iov(i*8, 8), api.Cookie(i)), "SRQ.PostRecv")
	}
	if err := srq.PostRecv(buf.iov(0, 8), 9); !errors.Is(err, api.ErrInsufficientResources) {
		t.Fatalf("PostRecv on a full SRQ: %v", err)
	}
	wantErr(t, srq.Resize(3), api.InvalidState, api.NoSubtype, "Resize below the posted receives")
	must(t, srq.Resize(6), "Resize")
	must(t, srq.SetLW(5), "SetLW")
	wantErr(t, srq.Resize(4), api.InvalidState, api.NoSubtype, "Resize below the low watermark")
	prm, _ := srq.Query()
	if prm.MaxRecvDTOs != 6 {
		t.Fatalf("MaxRecvDTOs %d", prm.MaxRecvDTOs)
	}
	b.expect(b.async, srqattr.LowWatermarkEvent) // 4 < 5 at SetLW
}

func TestSRQCreateFiresWatermarkAtOnce(t *testing.T) {
	n := newNode(t)
	s, err := n.ia.CreateSRQ(n.pz, api.SRQAttr{MaxRecvDTOs: 4, MaxRecvIOV: 1, LowWatermark: 1})
	must(t, err, "CreateSRQ")
	if ev := n.expect(n.async, srqattr.LowWatermarkEvent); ev.Async.Object != s {
		t.Fatalf("event names %v", ev.Async.Object)
	}
	must(t, s.Free(), "SRQ.Free")
}
