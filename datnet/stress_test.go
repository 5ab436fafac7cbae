package datnet_test

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/godat/godat/datnet"
)

// Both directions of several connections at once carry a pseudo-random
// byte stream in writes of random sizes, read with buffers of random
// sizes under read deadlines that often pass (and are retried), so that
// events are taken by spinning calls, blocked calls and the event loop
// in every order. Every byte must arrive, in order, exactly once.
func TestStressStreams(t *testing.T) {
	eachProvider(t, func(t *testing.T, open opener) {
		const conns = 3
		total := 3 << 20
		if testing.Short() {
			total = 256 << 10
		}
		var wg sync.WaitGroup
		var pipes []*pipe
		for i := range conns {
			p := mustPipe(t, open, datnet.Options{Buffers: 4 + i*6, BufferSize: 1000 + i*20000})
			pipes = append(pipes, p)
			for dir := range 2 {
				w, r := p.c1, p.c2
				if dir == 1 {
					w, r = p.c2, p.c1
				}
				seed := uint64(i*2 + dir)
				wg.Add(2)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(seed, 1))
					src := rand.New(rand.NewPCG(seed, 2))
					buf := make([]byte, 200<<10)
					for sent := 0; sent < total; {
						n := min(1+rng.IntN(len(buf)), total-sent)
						for k := range n {
							buf[k] = byte(src.Uint32())
						}
						if _, err := w.Write(buf[:n]); err != nil {
							t.Errorf("write: %v", err)
							return
						}
						sent += n
					}
				}()
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(seed, 3))
					src := rand.New(rand.NewPCG(seed, 2))
					buf := make([]byte, 100<<10)
					for got := 0; got < total; {
						if rng.IntN(4) == 0 {
							r.SetReadDeadline(time.Now().Add(time.Duration(rng.IntN(200)) * time.Microsecond))
						} else {
							r.SetReadDeadline(time.Time{})
						}
						n, err := r.Read(buf[:1+rng.IntN(len(buf))])
						for k := range n {
							if want := byte(src.Uint32()); buf[k] != want {
								t.Errorf("byte %d: %#x, want %#x", got+k, buf[k], want)
								return
							}
						}
						got += n
						if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
							t.Errorf("read after %d bytes: %v", got, err)
							return
						}
					}
					r.SetReadDeadline(time.Time{})
				}()
			}
		}
		wg.Wait()
		// Nothing beyond the stream: after CloseWrite the peer reads
		// the end at once.
		for _, p := range pipes {
			p.c1.(*datnet.Conn).CloseWrite()
			if n, err := p.c2.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Errorf("read past the stream: %d, %v", n, err)
			}
		}
	})
}
