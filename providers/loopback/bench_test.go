package loopback

import (
	"strconv"
	"testing"

	"github.com/godat/godat/api"
)

// The benchmarks go through registry.Open, so the guard layer is measured
// too. Each size has a "copy" sub-benchmark doing a plain copy() of the
// same bytes in the same run, so results compare as ratios.

var benchSizes = []int{64, 4 << 10, 1 << 20}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return strconv.Itoa(n>>20) + "MiB"
	case n >= 1<<10:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}

// benchVsCopy runs, for each of benchSizes, dat as the "dat"
// sub-benchmark on a new pair with n-byte regions src of p.a and dst of
// p.b, and a copy() from src to dst as the "copy" sub-benchmark.
func benchVsCopy(b *testing.B, dat func(b *testing.B, p *pair, src, dst *region, n int)) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			p := newPair(b)
			src := p.a.region(n, api.MemPrivAll)
			dst := p.b.region(n, api.MemPrivAll)
			b.Run("dat", func(b *testing.B) {
				b.SetBytes(int64(n))
				b.ReportAllocs()
				dat(b, p, src, dst, n)
			})
			b.Run("copy", func(b *testing.B) {
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					copy(dst.b, src.b)
				}
			})
		})
	}
}

func BenchmarkRDMAWrite(b *testing.B) {
	benchVsCopy(b, func(b *testing.B, p *pair, src, dst *region, n int) {
		iov, rt := src.iov(0, n), dst.rtr(0, n)
		var ev api.Event
		for b.Loop() {
			if err := p.ea.PostRDMAWrite(iov, 1, rt, 0); err != nil {
				b.Fatal(err)
			}
			if err := p.a.req.Dequeue(&ev); err != nil || ev.DTO.Status != api.DTOSuccess {
				b.Fatal(err, ev.DTO.Status)
			}
		}
	})
}

func BenchmarkSendRecv(b *testing.B) {
	benchVsCopy(b, func(b *testing.B, p *pair, src, dst *region, n int) {
		siov, riov := src.iov(0, n), dst.iov(0, n)
		var ev api.Event
		for b.Loop() {
			if err := p.eb.PostRecv(riov, 1, 0); err != nil {
				b.Fatal(err)
			}
			if err := p.ea.PostSend(siov, 2, 0); err != nil {
				b.Fatal(err)
			}
			if err := p.a.req.Dequeue(&ev); err != nil || ev.DTO.Status != api.DTOSuccess {
				b.Fatal(err, ev.DTO.Status)
			}
			if err := p.b.recv.Dequeue(&ev); err != nil || ev.DTO.Status != api.DTOSuccess {
				b.Fatal(err, ev.DTO.Status)
			}
		}
	})
}
