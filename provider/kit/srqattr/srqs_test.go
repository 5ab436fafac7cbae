package srqattr

import (
	"errors"
	"sync"
	"testing"

	"github.com/godat/godat/api"
)

type testIA struct{ api.IA }
type testPZ struct{ api.PZ }

// testSRQ is a provider's SRQ type: the base and what the provider keeps.
type testSRQ struct {
	SRQ[*testIA, *testPZ]
	eps int
}

// lockCount is a mutex that counts how often it was taken.
type lockCount struct {
	sync.Mutex
	n int
}

func (c *lockCount) Lock() { c.Mutex.Lock(); c.n++ }

func (s *testSRQ) PostRecv(iov []api.LMRTriplet, cookie api.Cookie) error { return s.Post(iov, cookie) }
func (s *testSRQ) Free() error                                            { return CheckFree(s.eps) }

func TestSRQs(t *testing.T) {
	ia, z, mu := &testIA{}, &testPZ{}, &lockCount{}
	var low []api.SRQ
	srqs := NewSRQs[*testIA, *testPZ, *testSRQ](ia, mu, 1, 8, 2, func(s api.SRQ) {
		if !mu.TryLock() {
			low = append(low, s)
			return
		}
		mu.Unlock()
		t.Error("lowWater ran without the lock")
	})
	attr := api.SRQAttr{MaxRecvDTOs: 4, MaxRecvIOV: 2}

	if _, err := srqs.Create(z, api.SRQAttr{MaxRecvDTOs: 9, MaxRecvIOV: 1}, &testSRQ{}); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("more receives than the provider's largest SRQ: %v", err)
	}
	if _, err := srqs.Create(nil, attr, &testSRQ{}); !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("nil PZ: %v", err)
	}
	if mu.n != 0 || srqs.Len() != 0 {
		t.Fatalf("refused calls took the lock %d times and left %d SRQs", mu.n, srqs.Len())
	}

	attr.LowWatermark = 1
	s := &testSRQ{}
	x, err := srqs.Create(z, attr, s)
	if err != nil {
		t.Fatal(err)
	}
	if x != api.SRQ(s) || !srqs.Has(s) || mu.n != 1 {
		t.Fatalf("Create returned %v, set has it %v, lock taken %d times", x, srqs.Has(s), mu.n)
	}
	if len(low) != 1 || low[0] != api.SRQ(s) {
		t.Fatalf("an armed watermark on the empty SRQ posted %v, want the SRQ once", low)
	}
	if x.HandleType() != api.HandleSRQ {
		t.Fatalf("HandleType = %v", x.HandleType())
	}
	prm, err := x.Query()
	if err != nil || prm.IA != api.IA(ia) || prm.PZ != api.PZ(z) || prm.MaxRecvDTOs != 4 || prm.LowWatermark != 1 {
		t.Fatalf("Query = %+v, %v", prm, err)
	}
	if err := x.Resize(9); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("Resize above the provider's largest SRQ: %v", err)
	}
	if err := x.SetLW(3); err != nil || len(low) != 2 {
		t.Fatalf("SetLW(3) on an empty SRQ: %v, %d events", err, len(low))
	}
	if p, _ := x.Query(); p.LowWatermark != 3 {
		t.Fatalf("Query after SetLW: %+v", p)
	}
	if _, err := srqs.Create(z, attr, &testSRQ{}); !errors.Is(err, api.ErrInsufficientResources) {
		t.Fatalf("an SRQ beyond the set's limit: %v", err)
	}
	if srqs.Len() != 1 {
		t.Fatalf("the set holds %d SRQs", srqs.Len())
	}
	if mu.TryLock() {
		mu.Unlock()
	} else {
		t.Fatal("a call left the lock held")
	}

	own := &testPZ{}
	if got := RecvPZ(s, own); got != z {
		t.Fatal("RecvPZ of an EP on an SRQ is not the SRQ's PZ")
	}
	if got := RecvPZ((*testSRQ)(nil), own); got != own {
		t.Fatal("RecvPZ of an EP without an SRQ is not its own PZ")
	}
}
