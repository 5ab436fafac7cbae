package loopback

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/godat/godat/api"
)

// TestConcurrentConnections runs several connections at once, each with a
// sender, a receiver re-posting receives and waiters on both EVDs, and
// checks that every message arrives once, in order.
func TestConcurrentConnections(t *testing.T) {
	const conns, msgs, window = 4, 300, 8
	a, b := newNode(t), newNode(t)
	var wg sync.WaitGroup
	for c := range conns {
		recv := b.evd(window*2, api.EVDDTO)
		req := a.evd(window*2, api.EVDDTO)
		ea, err := a.ia.CreateEP(a.pz, a.recv, req, a.connEVD, nil)
		must(t, err, "CreateEP")
		eb, err := b.ia.CreateEP(b.pz, recv, b.req, b.connEVD, nil)
		must(t, err, "CreateEP")
		rsp, err := b.ia.CreateRSP(api.ConnQual(9000+c), eb, b.connEVD)
		must(t, err, "CreateRSP")
		must(t, ea.Connect(b.addr, api.ConnQual(9000+c), -1, nil, 0, 0), "Connect")
		must(t, b.expect(b.connEVD, api.ConnectionRequestEvent).CR.CR.Accept(nil, nil), "Accept")
		b.expect(b.connEVD, api.ConnectionEstablishedEvent)
		a.expect(a.connEVD, api.ConnectionEstablishedEvent)
		must(t, rsp.Free(), "RSP.Free")

		sbuf := a.region(window*8, api.MemPrivAll)
		rbuf := b.region(window*8, api.MemPrivAll)
		for i := range window {
			must(t, eb.PostRecv(rbuf.iov(i*8, 8), api.Cookie(i), 0), "PostRecv")
		}
		wg.Add(2)
		go func() { // sender: keeps at most window sends outstanding
			defer wg.Done()
			var ev api.Event
			for i := range msgs {
				if i >= window {
					if _, err := req.Wait(context.Background(), 1, &ev); err != nil || ev.DTO.Status != api.DTOSuccess {
						t.Errorf("send completion: %v %v", err, ev.DTO.Status)
						return
					}
				}
				slot := i % window
				binary.LittleEndian.PutUint64(sbuf.b[slot*8:], uint64(i))
				if err := ea.PostSend(sbuf.iov(slot*8, 8), api.Cookie(i), 0); err != nil {
					t.Errorf("PostSend: %v", err)
					return
				}
			}
		}()
		go func() { // receiver: checks order and re-posts
			defer wg.Done()
			var ev api.Event
			for i := range msgs {
				if _, err := recv.Wait(context.Background(), 1, &ev); err != nil || ev.DTO.Status != api.DTOSuccess {
					t.Errorf("receive completion: %v %v", err, ev.DTO.Status)
					return
				}
				slot := int(ev.DTO.Cookie)
				if got := binary.LittleEndian.Uint64(rbuf.b[slot*8:]); got != uint64(i) {
					t.Errorf("connection %d: message %d carried %d", c, i, got)
					return
				}
				if err := eb.PostRecv(rbuf.iov(slot*8, 8), api.Cookie(slot), 0); err != nil {
					t.Errorf("PostRecv: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestConcurrentObjectChurn creates and frees objects, connects and
// disconnects from several goroutines at once, for the race detector.
func TestConcurrentObjectChurn(t *testing.T) {
	a, b := newNode(t), newNode(t)
	q := b.listen(api.PSPConsumer)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // acceptor
		defer wg.Done()
		var ev api.Event
		for range 40 {
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			_, err := b.connEVD.Wait(ctx, 1, &ev)
			cancel()
			if err != nil {
				t.Errorf("acceptor: %v", err)
				return
			}
			if ev.Number != api.ConnectionRequestEvent {
				continue
			}
			ep, err := b.ia.CreateEP(b.pz, b.recv, b.req, nil, nil)
			if err != nil {
				t.Errorf("CreateEP: %v", err)
				return
			}
			if err := ev.CR.CR.Accept(ep, nil); err != nil {
				t.Errorf("Accept: %v", err)
			}
			ep.Free()
		}
	}()
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := a.evd(64, api.EVDConnection)
			for range 10 {
				r := a.region(64, api.MemPrivAll)
				ep, err := a.ia.CreateEP(a.pz, a.recv, a.req, conn, nil)
				if err != nil {
					t.Errorf("goroutine %d: CreateEP: %v", g, err)
					return
				}
				ep.PostRecv(r.iov(0, 64), 1, 0)
				ep.Connect(b.addr, q, -1, nil, 0, 0)
				ep.Disconnect(api.CloseAbrupt)
				ep.Free()
				r.lmr.Free()
			}
		}()
	}
	wg.Wait()
}

func TestHotPathsDoNotAllocate(t *testing.T) {
	p := newPair(t)
	src := p.a.region(64, api.MemPrivAll)
	dst := p.b.region(64, api.MemPrivAll)
	siov, riov, rt := src.iov(0, 64), dst.iov(0, 64), dst.rtr(0, 64)
	var ev api.Event
	// Warm up the receive ring.
	must(t, p.eb.PostRecv(riov, 1, 0), "PostRecv")
	must(t, p.ea.PostSend(siov, 1, 0), "PostSend")
	must(t, p.a.req.Dequeue(&ev), "Dequeue")
	must(t, p.b.recv.Dequeue(&ev), "Dequeue")
	if n := testing.AllocsPerRun(500, func() {
		p.ea.PostRDMAWrite(siov, 2, rt, 0)
		p.a.req.Dequeue(&ev)
	}); n != 0 {
		t.Errorf("RDMA write post+dequeue: %v allocs/op", n)
	}
	if n := testing.AllocsPerRun(500, func() {
		p.eb.PostRecv(riov, 3, 0)
		p.ea.PostSend(siov, 4, 0)
		p.a.req.Dequeue(&ev)
		p.b.recv.Dequeue(&ev)
	}); n != 0 {
		t.Errorf("send/recv post+dequeue: %v allocs/op", n)
	}
	if n := testing.AllocsPerRun(500, func() {
		p.ea.PostRDMARead(siov, 5, rt, 0)
		p.a.req.Dequeue(&ev)
	}); n != 0 {
		t.Errorf("RDMA read post+dequeue: %v allocs/op", n)
	}
}
