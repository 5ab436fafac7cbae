package tcp

import (
	"testing"

	"github.com/godat/godat/api"
)

// BenchmarkRoundTripCPU64 is a 64 B send/recv round trip driven by one
// goroutine through Dequeue (no waiting: each side's data is already there
// when it polls), so its time is the CPU godat spends per round trip;
// BenchmarkRawRoundTripCPU64 is the same with plain sockets.
func BenchmarkRoundTripCPU64(b *testing.B) {
	cli, srv := benchPair(b)
	ciov := []api.LMRTriplet{cli.lmr.Triplet(0, 64)}
	siov := []api.LMRTriplet{srv.lmr.Triplet(0, 64)}
	var ev api.Event
	spin := func(e api.EVD) {
		for e.Dequeue(&ev) != nil {
		}
	}
	round := func() {
		cli.ep.PostRecv(ciov, 2, 0)
		cli.ep.PostSend(ciov, 3, 0)
		spin(srv.recv)
		spin(srv.req)
		srv.ep.PostRecv(siov, 1, 0)
		srv.ep.PostSend(siov, 4, 0)
		spin(cli.recv)
		spin(cli.req)
	}
	srv.ep.PostRecv(siov, 1, 0)
	srv.ep.PostSend(siov, 4, 0)
	cli.ep.PostRecv(ciov, 2, 0)
	spin(cli.recv)
	for range 100 {
		round()
	}
	b.ResetTimer()
	for range b.N {
		round()
	}
}

// BenchmarkRawRoundTripCPU64 is BenchmarkRoundTripCPU64's baseline: the
// same round trip over a plain TCP connection, by one goroutine.
func BenchmarkRawRoundTripCPU64(b *testing.B) {
	c1, c2 := rawPair(b)
	buf := make([]byte, 64)
	for range b.N {
		c1.Write(buf)
		for n := 0; n < 64; {
			k, _ := c2.Read(buf[n:])
			n += k
		}
		c2.Write(buf)
		for n := 0; n < 64; {
			k, _ := c1.Read(buf[n:])
			n += k
		}
	}
}
