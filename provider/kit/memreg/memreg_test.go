package memreg

import (
	"testing"

	"github.com/godat/godat/api"
)

type pz struct{ int }
type ep struct{ int }

func TestSpan(t *testing.T) {
	mem := make([]byte, 100)
	for _, tc := range []struct {
		base, addr api.VAddr
		n          uint64
		ok         bool
	}{
		{1000, 1000, 100, true},
		{1000, 1000, 0, true},
		{1000, 1100, 0, true},
		{1000, 1099, 1, true},
		{1000, 1099, 2, false},
		{1000, 999, 1, false},
		{1000, 1101, 0, false},
		{0, 50, 1 << 63, false},
		{0, 1<<64 - 1, 2, false},
	} {
		b, ok := Span(mem, tc.base, tc.addr, tc.n)
		if ok != tc.ok || (ok && (uint64(len(b)) != tc.n || cap(b) != len(b))) {
			t.Errorf("Span(base %d, addr %d, n %d) = len %d, %v; want ok %v", tc.base, tc.addr, tc.n, len(b), ok, tc.ok)
		}
	}
}

func TestGather(t *testing.T) {
	tab := New[*pz, *ep]()
	z1, z2 := &pz{1}, &pz{2}
	mem := make([]byte, 64)
	base := api.AddrOf(mem)
	rw := tab.AddLMR(&Region[*pz]{Mem: mem, Base: base, Priv: api.MemPrivLocalRead | api.MemPrivLocalWrite, PZ: z1})
	ro := tab.AddLMR(&Region[*pz]{Mem: mem, Base: 0, Priv: api.MemPrivLocalRead, PZ: z1})
	if rw == ro || rw == 0 || tab.LMRs() != 2 || tab.LMR(rw) == nil {
		t.Fatalf("contexts %d %d", rw, ro)
	}
	segs, n, ok := tab.Gather(nil, []api.LMRTriplet{
		{Addr: base + 8, Length: 8, LMRContext: rw},
		{Length: 0, LMRContext: 12345}, // skipped
		{Addr: 60, Length: 4, LMRContext: ro},
	}, z1, api.MemPrivLocalRead)
	if !ok || n != 12 || len(segs) != 2 || &segs[1][0] != &mem[60] {
		t.Fatalf("Gather = %d segs, %d, %v", len(segs), n, ok)
	}
	for _, tc := range []struct {
		name string
		tr   api.LMRTriplet
		pz   *pz
		need api.MemPriv
	}{
		{"unknown", api.LMRTriplet{Addr: base, Length: 1, LMRContext: 999999}, z1, api.MemPrivLocalRead},
		{"other PZ", api.LMRTriplet{Addr: base, Length: 1, LMRContext: rw}, z2, api.MemPrivLocalRead},
		{"no PZ", api.LMRTriplet{Addr: base, Length: 1, LMRContext: rw}, nil, api.MemPrivLocalRead},
		{"privilege", api.LMRTriplet{Addr: 0, Length: 1, LMRContext: ro}, z1, api.MemPrivLocalWrite},
		{"bounds", api.LMRTriplet{Addr: base + 60, Length: 5, LMRContext: rw}, z1, api.MemPrivLocalRead},
	} {
		if _, _, ok := tab.Gather(nil, []api.LMRTriplet{tc.tr}, tc.pz, tc.need); ok {
			t.Errorf("%s: Gather passed", tc.name)
		}
	}
	tab.RemoveLMR(rw)
	if _, _, ok := tab.Gather(nil, []api.LMRTriplet{{Addr: base, Length: 1, LMRContext: rw}}, z1, api.MemPrivLocalRead); ok {
		t.Error("a removed LMR still resolves")
	}
	// The last LMR found is remembered: Clear must forget it too.
	if _, _, ok := tab.Gather(nil, []api.LMRTriplet{{Addr: 0, Length: 1, LMRContext: ro}}, z1, api.MemPrivLocalRead); !ok {
		t.Fatal("Gather of the remaining LMR failed")
	}
	tab.Clear()
	if _, _, ok := tab.Gather(nil, []api.LMRTriplet{{Addr: 0, Length: 1, LMRContext: ro}}, z1, api.MemPrivLocalRead); ok {
		t.Error("an LMR still resolves after Clear")
	}
}

func TestRemoteWindows(t *testing.T) {
	tab := New[*pz, *ep]()
	z1, z2 := &pz{1}, &pz{2}
	e1, e2 := &ep{1}, &ep{2}
	mem := make([]byte, 64)
	any1 := tab.Reserve()
	tab.Publish(any1, &Window[*pz, *ep]{Mem: mem, Base: 0, Priv: api.MemPrivRemoteRead, PZ: z1})
	bound := tab.Reserve()
	tab.Publish(bound, &Window[*pz, *ep]{Mem: mem[32:], Base: 4096, Priv: api.MemPrivRemoteWrite, PZ: z1, EP: e1})
	pending := tab.Reserve()
	if pending == any1 || pending == bound || tab.Window(pending) != nil {
		t.Fatal("a reserved context is visible or repeats")
	}
	check := func(name string, rt api.RMRTriplet, n uint64, need api.MemPriv, z *pz, e *ep, want bool) {
		t.Helper()
		if _, ok := tab.Remote(rt, n, need, z, e); ok != want {
			t.Errorf("%s: Remote = %v, want %v", name, ok, want)
		}
	}
	check("read any EP", api.RMRTriplet{Addr: 0, RMRContext: any1}, 64, api.MemPrivRemoteRead, z1, e2, true)
	check("write without privilege", api.RMRTriplet{Addr: 0, RMRContext: any1}, 8, api.MemPrivRemoteWrite, z1, e2, false)
	check("other PZ", api.RMRTriplet{Addr: 0, RMRContext: any1}, 8, api.MemPrivRemoteRead, z2, e2, false)
	check("bound EP", api.RMRTriplet{Addr: 4096, RMRContext: bound}, 32, api.MemPrivRemoteWrite, z1, e1, true)
	check("another EP", api.RMRTriplet{Addr: 4096, RMRContext: bound}, 8, api.MemPrivRemoteWrite, z1, e2, false)
	check("past the window", api.RMRTriplet{Addr: 4096 + 30, RMRContext: bound}, 8, api.MemPrivRemoteWrite, z1, e1, false)
	check("reserved only", api.RMRTriplet{RMRContext: pending}, 1, api.MemPrivRemoteRead, z1, e1, false)
	check("zero length is not checked", api.RMRTriplet{RMRContext: 12345}, 0, api.MemPrivRemoteRead, nil, nil, true)
	tab.Release(bound)
	check("released", api.RMRTriplet{Addr: 4096, RMRContext: bound}, 8, api.MemPrivRemoteWrite, z1, e1, false)
	tab.Clear()
	check("cleared", api.RMRTriplet{Addr: 0, RMRContext: any1}, 8, api.MemPrivRemoteRead, z1, e1, false)
}

func TestContextsAreDistinct(t *testing.T) {
	a, b := New[*pz, *ep](), New[*pz, *ep]()
	seen := map[api.RMRContext]bool{}
	for range 1000 {
		c := a.Reserve()
		if c == 0 || seen[c] {
			t.Fatalf("context %#x repeats", c)
		}
		seen[c] = true
	}
	same := 0
	for range 1000 {
		if seen[b.Reserve()] {
			same++
		}
	}
	if same > 2 {
		t.Fatalf("%d of 1000 contexts of a second table repeat the first's: the generators are not independent", same)
	}
	l1, l2 := NextLMRContext(), NextLMRContext()
	if l1 == l2 || l1 == 0 {
		t.Fatal("LMR contexts repeat")
	}
}

func TestGatherAllocatesNothing(t *testing.T) {
	tab := New[*pz, *ep]()
	z := &pz{}
	mem := make([]byte, 64)
	c := tab.AddLMR(&Region[*pz]{Mem: mem, Priv: api.MemPrivLocalRead, PZ: z})
	iov := []api.LMRTriplet{{Addr: 0, Length: 32, LMRContext: c}, {Addr: 32, Length: 32, LMRContext: c}}
	segs := make([][]byte, 0, 4)
	if a := testing.AllocsPerRun(100, func() { tab.Gather(segs[:0], iov, z, api.MemPrivLocalRead) }); a != 0 {
		t.Fatalf("allocs = %v", a)
	}
}
