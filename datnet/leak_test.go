package datnet_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/godat/godat/datnet"
	"github.com/godat/godat/internal/openfds"
)

// Steady-state Read and Write allocate nothing, on every provider.
func TestReadWriteAllocateNothing(t *testing.T) {
	eachProvider(t, func(t *testing.T, open opener) {
		p := mustPipe(t, open, datnet.Options{})
		msg := make([]byte, 64)
		buf := make([]byte, 64)
		round := func() { pass(t, p.c1, p.c2, msg, buf) }
		for range 100 {
			round()
		}
		if n := testing.AllocsPerRun(1000, round); n != 0 {
			t.Errorf("a 64-byte Write and its Read allocate %v times", n)
		}
	})
}

// Connections opened and closed leave no goroutine and no descriptor
// behind (the IAs' graceful Close in stop also proves no DAT object is
// left).
func TestConnectionsLeaveNothing(t *testing.T) {
	eachProvider(t, func(t *testing.T, open opener) {
		before := openfds.Count(t)
		ignore := goleak.IgnoreCurrent()
		for range 10 {
			p, err := newPipe(t, open, datnet.Options{Buffers: 4, BufferSize: 256})
			if err != nil {
				t.Fatal(err)
			}
			pass(t, p.c1, p.c2, []byte("ping"), make([]byte, 4))
			if err := p.stop(); err != nil {
				t.Fatal(err)
			}
		}
		if err := goleak.Find(ignore); err != nil {
			t.Error(err)
		}
		if after := openfds.Count(t); after != before {
			t.Errorf("%d descriptors open before, %d after", before, after)
			t.Log("open now:", openfds.List(t))
		}
	})
}
