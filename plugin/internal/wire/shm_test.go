package wire

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/godat/godat/api"
)

func testRings(t testing.TB) (*Rings, func()) {
	t.Helper()
	m, err := api.AllocMemory(ShmSize)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRings(m.Bytes())
	r.SQInit()
	return r, func() { m.Free() }
}

// Submissions come out as they went in, in order, across the wrap of the
// ring, and a full ring refuses rather than waits for ever.
func TestSubmissionRing(t *testing.T) {
	r, done := testRings(t)
	defer done()
	alive := func() bool { return false }
	var got Submission
	for i := 0; i < 3*sqEntries; i++ {
		in := Submission{Kind: SubWrite, Flags: uint32(i % 7), EP: uint64(i), Cookie: uint64(i) * 3,
			Remote: api.RMRTriplet{Addr: 0x5000_0000_1000, Length: 64, RMRContext: 7},
			IOV:    []api.LMRTriplet{{Addr: api.VAddr(i), Length: 8, LMRContext: 2}, {Addr: 9, Length: uint32(i), LMRContext: 3}}}
		if n, ok := r.Submit(&in, alive); !ok || n != uint64(i+1) {
			t.Fatalf("submit %d: %d, %v", i, n, ok)
		}
		if !r.Take(&got) {
			t.Fatalf("take %d found nothing", i)
		}
		if got.Kind != in.Kind || got.Flags != in.Flags || got.EP != in.EP || got.Cookie != in.Cookie || got.Remote != in.Remote ||
			len(got.IOV) != 2 || got.IOV[0] != in.IOV[0] || got.IOV[1] != in.IOV[1] {
			t.Fatalf("submission %d: got %+v, want %+v", i, got, in)
		}
	}
	if r.Take(&got) {
		t.Fatal("take from an empty ring")
	}
	s := Submission{Kind: SubSend}
	for i := 0; i < sqEntries; i++ {
		if _, ok := r.Submit(&s, alive); !ok {
			t.Fatalf("submit %d into a ring with room failed", i)
		}
	}
	if _, ok := r.Submit(&s, alive); ok {
		t.Fatal("submit into a full ring succeeded")
	}
}

// Records come out as they went in, padding and wrapping included.
func TestCompletionRing(t *testing.T) {
	r, done := testRings(t)
	defer done()
	var got Event
	pd := bytes.Repeat([]byte("p"), 3000)
	for i := 0; i < 2000; i++ {
		in := Event{Seq: uint64(i + 1), EVD: 4, Number: api.DTOCompletionEvent, EP: 9, Cookie: uint64(i), Status: api.DTOErrFlushed,
			Length: 64, Op: api.OpRDMAWrite, RMRContext: 5}
		if i%3 == 0 {
			in = Event{Seq: uint64(i + 1), EVD: 5, Number: api.ConnectionEstablishedEvent, EP: 9, PrivateData: pd[:i%3000],
				HasPrivData: true, HasAddr: true, Network: "loopback", Addr: "x#1"}
		}
		r.Put(&in, func() {}, func() bool { return true })
		ok, err := r.Get(&got)
		if !ok || err != nil {
			t.Fatalf("record %d: %v %v", i, ok, err)
		}
		if got.Seq != in.Seq || got.EVD != in.EVD || got.Number != in.Number || got.EP != in.EP || got.Cookie != in.Cookie ||
			got.Status != in.Status || got.Length != in.Length || got.Op != in.Op || got.RMRContext != in.RMRContext ||
			!bytes.Equal(got.PrivateData, in.PrivateData) || got.Network != in.Network || got.Addr != in.Addr {
			t.Fatalf("record %d: got %+v, want %+v", i, got, in)
		}
	}
	if ok, err := r.Get(&got); ok || err != nil {
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
		var e Event
		for i := 0; i < 64; i++ {
			ok, err := r.Get(&e)
			if err != nil || !ok {
				return
			}
		}
	})
}
