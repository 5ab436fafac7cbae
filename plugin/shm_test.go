package plugin

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/godat/godat/api"
)

func testRings(t testing.TB) (*rings, func()) {
	t.Helper()
	m, err := api.AllocMemory(shmSize)
	if err != nil {
		t.Fatal(err)
	}
	r := newRings(m.Bytes())
	r.sqInit()
	return r, func() { m.Free() }
}

// Submissions come out as they went in, in order, across the wrap of the
// ring, and a full ring refuses rather than waits for ever.
func TestSubmissionRing(t *testing.T) {
	r, done := testRings(t)
	defer done()
	alive := func() bool { return false }
	var got submission
	for i := 0; i < 3*sqEntries; i++ {
		in := submission{kind: subWrite, flags: uint32(i % 7), ep: uint64(i), cookie: uint64(i) * 3,
			remote: api.RMRTriplet{Addr: 0x5000_0000_1000, Length: 64, RMRContext: 7},
			iov:    []api.LMRTriplet{{Addr: api.VAddr(i), Length: 8, LMRContext: 2}, {Addr: 9, Length: uint32(i), LMRContext: 3}}}
		if n, ok := r.submit(&in, alive); !ok || n != uint64(i+1) {
			t.Fatalf("submit %d: %d, %v", i, n, ok)
		}
		if !r.take(&got) {
			t.Fatalf("take %d found nothing", i)
		}
		if got.kind != in.kind || got.flags != in.flags || got.ep != in.ep || got.cookie != in.cookie || got.remote != in.remote ||
			len(got.iov) != 2 || got.iov[0] != in.iov[0] || got.iov[1] != in.iov[1] {
			t.Fatalf("submission %d: got %+v, want %+v", i, got, in)
		}
	}
	if r.take(&got) {
		t.Fatal("take from an empty ring")
	}
	s := submission{kind: subSend}
	for i := 0; i < sqEntries; i++ {
		if _, ok := r.submit(&s, alive); !ok {
			t.Fatalf("submit %d into a ring with room failed", i)
		}
	}
	if _, ok := r.submit(&s, alive); ok {
		t.Fatal("submit into a full ring succeeded")
	}
}

// Records come out as they went in, padding and wrapping included.
func TestCompletionRing(t *testing.T) {
	r, done := testRings(t)
	defer done()
	var got event
	pd := bytes.Repeat([]byte("p"), 3000)
	for i := 0; i < 2000; i++ {
		in := event{seq: uint64(i + 1), evd: 4, number: api.DTOCompletionEvent, ep: 9, cookie: uint64(i), status: api.DTOErrFlushed,
			length: 64, op: api.OpRDMAWrite, rmrContext: 5}
		if i%3 == 0 {
			in = event{seq: uint64(i + 1), evd: 5, number: api.ConnectionEstablishedEvent, ep: 9, privateData: pd[:i%3000],
				hasPrivData: true, hasAddr: true, network: "loopback", addr: "x#1"}
		}
		r.put(&in, func() {}, func() bool { return true })
		ok, err := r.get(&got)
		if !ok || err != nil {
			t.Fatalf("record %d: %v %v", i, ok, err)
		}
		if got.seq != in.seq || got.evd != in.evd || got.number != in.number || got.ep != in.ep || got.cookie != in.cookie ||
			got.status != in.status || got.length != in.length || got.op != in.op || got.rmrContext != in.rmrContext ||
			!bytes.Equal(got.privateData, in.privateData) || got.network != in.network || got.addr != in.addr {
			t.Fatalf("record %d: got %+v, want %+v", i, got, in)
		}
	}
	if ok, err := r.get(&got); ok || err != nil {
		t.Fatalf("get from an empty ring: %v %v", ok, err)
	}
}

// Whatever a plugin writes into the completion ring and its indexes, the
// host reads inside the ring or reports corruption; it never panics.
func FuzzCompletionRing(f *testing.F) {
	f.Add([]byte{}, uint64(0), uint64(0))
	f.Add(bytes.Repeat([]byte{0xff}, 256), uint64(0), uint64(128))
	rec := make([]byte, 128)
	binary.LittleEndian.PutUint32(rec, 128)
	binary.LittleEndian.PutUint32(rec[4:], recEvent)
	f.Add(rec, uint64(0), uint64(128))
	f.Add(rec, uint64(cqBytes-64), uint64(cqBytes+64))
	r, done := testRings(f)
	defer done()
	f.Fuzz(func(t *testing.T, data []byte, head, tail uint64) {
		cq := r.b[offCQ : offCQ+cqBytes]
		clear(cq)
		copy(cq[int(head%cqBytes):], data)
		*r.u64(offCQHead), *r.u64(offCQTail) = head, tail
		var e event
		for i := 0; i < 64; i++ {
			ok, err := r.get(&e)
			if err != nil || !ok {
				return
			}
		}
	})
}
