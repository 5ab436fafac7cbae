package tcp

import (
	"syscall"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/sock"
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

// BenchmarkEmptyPoll is one Dequeue on the receive EVD of a connected EP
// with nothing to receive: the step a busy-polling consumer repeats while
// it waits, whose length bounds how soon it sees a message.
// BenchmarkRawEmptyPoll is its baseline, a non-blocking read(2) that finds
// nothing on a plain TCP socket, made as dattest's raw baseline and the
// peers' rawtcp tool make it (a raw system call on the descriptor).
func BenchmarkEmptyPoll(b *testing.B) {
	cli, _ := benchPair(b)
	var ev api.Event
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if cli.recv.Dequeue(&ev) == nil {
			b.Fatalf("unexpected event %+v", ev)
		}
	}
}

// BenchmarkRawEmptyPoll is BenchmarkEmptyPoll's baseline.
func BenchmarkRawEmptyPoll(b *testing.B) {
	c1, _ := rawPair(b)
	fd := rawFD(b, c1)
	buf := make([]byte, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, e := sock.ReadNB(fd, buf); e != syscall.EAGAIN {
			b.Fatalf("read: %v", e)
		}
	}
}
