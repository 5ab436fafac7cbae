// Package memreg is the memory registry of a software provider: the LMRs
// and remotely accessible windows of one IA, looked up by their contexts,
// and the checks every DTO makes against them before it touches a byte
// (dat_lmr_create(3DAT), dat_rmr_bind(3DAT), dat_ep_post_send(3DAT),
// dat_ep_post_rdma_write(3DAT)).
//
// A Table is parameterised by the provider's PZ and EP types, so that the
// protection-zone and EP-binding checks are plain pointer comparisons. It
// is not safe for concurrent use: the provider serialises access.
//
// RMR contexts are unguessable: random 32-bit values from a ChaCha8
// generator seeded from crypto/rand, one generator per table, never 0 and
// never a context in use or reserved in the table. LMR contexts are local
// names and simply unique in the process, so that a context of one IA never
// names an LMR of another.
//
// LMR and RMR are the state of the provider objects of the same names that
// every software provider keeps alike (objects.go): registration,
// deregistration with its in-use rule, the synchronous checks of a bind,
// and binding, rebinding and unbinding with the count of RMRs that hold an
// LMR. The provider keeps one in its own object and calls them under the
// lock it holds for the table.
package memreg

import (
	crand "crypto/rand"
	"math/rand/v2"
	"sync/atomic"

	"github.com/godat/godat/api"
)

// Span returns the n bytes at address addr of mem, whose first byte has
// address base, or false if they do not all lie inside mem. The result's
// capacity is its length.
func Span(mem []byte, base, addr api.VAddr, n uint64) ([]byte, bool) {
	if addr < base {
		return nil, false
	}
	off := uint64(addr - base)
	if off > uint64(len(mem)) || n > uint64(len(mem))-off {
		return nil, false
	}
	return mem[off : off+n : off+n], true
}

var lastLMR atomic.Uint32

// NextLMRContext returns an LMR context not returned before in this
// process (until 2^32 LMRs have been created); never 0.
func NextLMRContext() api.LMRContext {
	for {
		if c := api.LMRContext(lastLMR.Add(1)); c != 0 {
			return c
		}
	}
}

// Region is registered memory: an LMR as the data path sees it.
type Region[PZ comparable] struct {
	Mem  []byte
	Base api.VAddr // the address of Mem[0] in triplets: api.AddrOf(Mem) for VATypeVA, 0 for VATypeZB
	Priv api.MemPriv
	PZ   PZ
}

// Window is remotely accessible memory named by an RMR context: an LMR's
// own context, or a bound RMR.
type Window[PZ, EP comparable] struct {
	Mem   []byte
	Base  api.VAddr // the address of Mem[0] in RMR triplets
	Priv  api.MemPriv
	PZ    PZ
	EP    EP  // the only EP it serves; the zero EP means any EP of the PZ
	Owner any // the provider's object behind it (an RMR), or nil
}

// Table is the memory registry of one IA. It is not safe for concurrent
// use, lookups included (Gather remembers the last LMR it found): its
// owner serializes every call.
type Table[PZ, EP comparable] struct {
	lmrs    map[api.LMRContext]*Region[PZ]
	lastCtx api.LMRContext                     // Gather's last lookup, which DTOs mostly repeat
	lastLMR *Region[PZ]                        // lmrs[lastCtx], or nil
	windows map[api.RMRContext]*Window[PZ, EP] // nil value: reserved context
	rng     *rand.Rand
}

// New returns an empty table with its own context generator.
func New[PZ, EP comparable]() *Table[PZ, EP] {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		panic("memreg: no entropy for RMR contexts: " + err.Error())
	}
	return &Table[PZ, EP]{
		lmrs:    map[api.LMRContext]*Region[PZ]{},
		windows: map[api.RMRContext]*Window[PZ, EP]{},
		rng:     rand.New(rand.NewChaCha8(seed)),
	}
}

// AddLMR registers r under a new LMR context and returns the context.
func (t *Table[PZ, EP]) AddLMR(r *Region[PZ]) api.LMRContext {
	c := NextLMRContext()
	t.lmrs[c] = r
	return c
}

// LMR returns the region registered under c, or nil.
func (t *Table[PZ, EP]) LMR(c api.LMRContext) *Region[PZ] { return t.lmrs[c] }

// RemoveLMR forgets the LMR context c; later DTOs naming it fail.
func (t *Table[PZ, EP]) RemoveLMR(c api.LMRContext) {
	delete(t.lmrs, c)
	if c == t.lastCtx {
		t.lastLMR = nil
	}
}

// LMRs returns the number of registered LMRs.
func (t *Table[PZ, EP]) LMRs() int { return len(t.lmrs) }

// Reserve returns a fresh random RMR context and keeps it from being handed
// out again until Release; it names no window until Publish.
func (t *Table[PZ, EP]) Reserve() api.RMRContext {
	for {
		c := api.RMRContext(t.rng.Uint32())
		if _, used := t.windows[c]; c != 0 && !used {
			t.windows[c] = nil
			return c
		}
	}
}

// Publish makes w reachable under the reserved context c.
func (t *Table[PZ, EP]) Publish(c api.RMRContext, w *Window[PZ, EP]) { t.windows[c] = w }

// Release withdraws context c, published or only reserved: it stops
// working at once.
func (t *Table[PZ, EP]) Release(c api.RMRContext) { delete(t.windows, c) }

// Window returns the window published under c, or nil.
func (t *Table[PZ, EP]) Window(c api.RMRContext) *Window[PZ, EP] { return t.windows[c] }

// Clear forgets every LMR and window.
func (t *Table[PZ, EP]) Clear() {
	clear(t.lmrs)
	clear(t.windows)
	t.lastLMR = nil
}

// Gather resolves local triplets for a DTO of an EP in PZ pz into byte
// slices appended to segs: each triplet must name an LMR of the table in pz
// with all the privileges in need, and lie inside it. Zero-length triplets
// are skipped. It returns the slices, their total length, and whether
// every triplet passed; nothing is copied, so a failure touches no memory.
// A zero pz (an EP without a PZ) matches no LMR.
func (t *Table[PZ, EP]) Gather(segs [][]byte, iov []api.LMRTriplet, pz PZ, need api.MemPriv) ([][]byte, uint64, bool) {
	var zero PZ
	var n uint64
	for k := range iov {
		tr := &iov[k]
		if tr.Length == 0 {
			continue
		}
		r := t.lastLMR
		if r == nil || tr.LMRContext != t.lastCtx {
			r = t.lmrs[tr.LMRContext]
			t.lastCtx, t.lastLMR = tr.LMRContext, r
		}
		if r == nil || pz == zero || r.PZ != pz || r.Priv&need != need {
			return segs, 0, false
		}
		b, ok := Span(r.Mem, r.Base, tr.Addr, uint64(tr.Length))
		if !ok {
			return segs, 0, false
		}
		segs = append(segs, b)
		n += uint64(tr.Length)
	}
	return segs, n, true
}

// Remote resolves n bytes at rt for an access arriving over the connection
// of EP ep in PZ pz: the context must name a published window granting
// need, in pz, serving ep (or any EP), that contains the whole range. A
// zero-length access touches nothing and passes without a check.
func (t *Table[PZ, EP]) Remote(rt api.RMRTriplet, n uint64, need api.MemPriv, pz PZ, ep EP) ([]byte, bool) {
	if n == 0 {
		return nil, true
	}
	var zeroEP EP
	w := t.windows[rt.RMRContext]
	if w == nil || w.Priv&need != need || w.PZ != pz || (w.EP != zeroEP && w.EP != ep) {
		return nil, false
	}
	return Span(w.Mem, w.Base, rt.Addr, n)
}
