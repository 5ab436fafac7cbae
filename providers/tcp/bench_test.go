package tcp

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// benchPair connects two EPs of two IAs on 127.0.0.1 for the benchmarks.
func benchPair(b *testing.B) (cli, srv *client) {
	b.Helper()
	ctx := context.Background()
	ia1, err := registry.Open(ctx, "tcp")
	if err != nil {
		b.Fatal(err)
	}
	ia2, err := registry.Open(ctx, "tcp")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ia1.Close(api.CloseAbrupt); ia2.Close(api.CloseAbrupt) })
	cli, srv = newClient(b, ia1), newClient(b, ia2)
	cr, err := ia2.CreateEVD(4, nil, api.EVDCR)
	if err != nil {
		b.Fatal(err)
	}
	_, q, err := ia2.CreatePSPAny(cr, api.PSPConsumer)
	if err != nil {
		b.Fatal(err)
	}
	a, _, _ := ia2.Query()
	if err := cli.ep.Connect(a.Address, q, api.TimeoutInfinite, nil, 0, 0); err != nil {
		b.Fatal(err)
	}
	var ev api.Event
	if _, err := cr.Wait(ctx, 1, &ev); err != nil {
		b.Fatal(err)
	}
	if err := ev.CR.CR.Accept(srv.ep, nil); err != nil {
		b.Fatal(err)
	}
	for _, e := range []api.EVD{cli.conn, srv.conn} {
		if _, err := e.Wait(ctx, 1, &ev); err != nil || ev.Number != api.ConnectionEstablishedEvent {
			b.Fatal(err, ev.Number)
		}
	}
	return cli, srv
}

// benchWrite posts RDMA writes of n bytes one at a time and waits for each
// completion (Wait: latency) over b.N iterations.
func benchWrite(b *testing.B, n int) {
	cli, srv := benchPair(b)
	lp, err := srv.ia.CreateLMR(srv.pz, api.Region{Type: api.MemTypeVirtual, Bytes: make([]byte, n)}, api.MemPrivAll, api.VATypeVA)
	if err != nil {
		b.Fatal(err)
	}
	prm, _ := lp.Query()
	src := make([]byte, n)
	sl, err := cli.ia.CreateLMR(cli.pz, api.Region{Type: api.MemTypeVirtual, Bytes: src}, api.MemPrivAll, api.VATypeVA)
	if err != nil {
		b.Fatal(err)
	}
	sp, _ := sl.Query()
	iov := []api.LMRTriplet{sp.Triplet(0, uint32(n))}
	rt := api.RMRTriplet{Addr: prm.RegisteredAddress, Length: uint32(n), RMRContext: prm.RMRContext}
	ctx := context.Background()
	var ev api.Event
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := cli.ep.PostRDMAWrite(iov, 1, rt, api.CompletionDefault); err != nil {
			b.Fatal(err)
		}
		if _, err := cli.req.Wait(ctx, 1, &ev); err != nil || ev.DTO.Status != api.DTOSuccess {
			b.Fatal(err, ev.DTO.Status)
		}
	}
}

// BenchmarkRDMAWrite64 is the latency of a 64-byte RDMA write until its
// completion (the peer's ACK).
func BenchmarkRDMAWrite64(b *testing.B) { benchWrite(b, 64) }

// BenchmarkRDMAWrite1M is the throughput of 1 MiB RDMA writes, one at a
// time.
func BenchmarkRDMAWrite1M(b *testing.B) { benchWrite(b, 1<<20) }

// rawPair is two connected raw TCP sockets on 127.0.0.1.
func rawPair(b *testing.B) (net.Conn, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c1, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	c2, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c1.Close(); c2.Close() })
	return c1, c2
}

// rawPingPong sends n bytes and waits for a 32-byte answer, the same
// exchange an RDMA write and its ACK make, over plain TCP: the baseline.
func rawPingPong(b *testing.B, n int) {
	c1, c2 := rawPair(b)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf, ack := make([]byte, n), make([]byte, frameLen)
		for {
			if _, err := io.ReadFull(c2, buf); err != nil {
				return
			}
			if _, err := c2.Write(ack); err != nil {
				return
			}
		}
	}()
	msg, ack := make([]byte, n), make([]byte, frameLen)
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c1.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c1, ack); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	c1.Close()
	<-done
}

// BenchmarkRawTCP64 is the plain-TCP baseline of BenchmarkRDMAWrite64.
func BenchmarkRawTCP64(b *testing.B) { rawPingPong(b, 64) }

// BenchmarkRawTCP1M is the plain-TCP baseline of BenchmarkRDMAWrite1M.
func BenchmarkRawTCP1M(b *testing.B) { rawPingPong(b, 1<<20) }
