package completion

import (
	"errors"
	"testing"

	"github.com/godat/godat/api"
)

// TestRecvs checks the refusals and the flush of Recvs.Post, that the
// queue keeps copies of the IOVs in order, and that Flush empties it
// first to last.
func TestRecvs(t *testing.T) {
	var q Recvs
	var flushed []api.Cookie
	flush := func(r *Recv) { flushed = append(flushed, r.Cookie) }
	iov := []api.LMRTriplet{{Length: 8}}
	if _, err := q.Post(api.EPConnected, true, 4, Recv{Cookie: 1, IOV: iov}, flush); !errors.Is(err, api.ErrInvalidState) {
		t.Errorf("on an SRQ: %v; want ErrInvalidState", err)
	}
	if ok, err := q.Post(api.EPDisconnected, false, 4, Recv{Cookie: 2, IOV: iov}, flush); ok || err != nil || len(flushed) != 1 || flushed[0] != 2 || q.Len() != 0 {
		t.Errorf("DISCONNECTED: queued %v, %v, flushed %v, %d kept; want flushed at once", ok, err, flushed, q.Len())
	}
	for c := api.Cookie(3); c < 5; c++ {
		if ok, err := q.Post(api.EPUnconnected, false, 2, Recv{Cookie: c, IOV: iov}, flush); !ok || err != nil {
			t.Fatalf("post %d: %v, %v", c, ok, err)
		}
	}
	iov[0].Length = 99
	if q.Front().IOV[0].Length != 8 {
		t.Error("the queue shares the caller's IOV")
	}
	if _, err := q.Post(api.EPConnected, false, 2, Recv{Cookie: 5}, flush); !errors.Is(err, api.ErrInsufficientResources) {
		t.Errorf("full: %v; want ErrInsufficientResources", err)
	}
	if r := q.Take(); r.Cookie != 3 || q.Len() != 1 {
		t.Errorf("Take = %d with %d left; want 3 with 1", r.Cookie, q.Len())
	}
	flushed = nil
	q.Flush(flush)
	if len(flushed) != 1 || flushed[0] != 4 || q.Len() != 0 {
		t.Errorf("Flush gave %v, %d left; want [4], none", flushed, q.Len())
	}
	if n := testing.AllocsPerRun(100, func() {
		q.Post(api.EPConnected, false, 2, Recv{Cookie: 6, IOV: iov}, flush)
		q.Take()
	}); n != 0 {
		t.Errorf("Post and Take allocate %v times; want 0", n)
	}
}
