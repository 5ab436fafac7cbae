//go:build cabi

package main

/*
#include "cabi.h"
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/godat/godat/api"
	"golang.org/x/sys/unix"
)

const (
	slotSize   = unsafe.Sizeof(C.gd_slot{})
	chunkBits  = 12
	chunkSlots = 1 << chunkBits
	maxSlots   = 1 << 20
	freeKind   = ^uint32(0)
)

// obj is what a handle names: one godat object and the C memory handed
// out for it.
type obj struct {
	kind api.HandleType
	slot uint32
	h    unsafe.Pointer
	ia   *iaObj // the IA the object belongs to
	v    api.Object

	mu    sync.Mutex
	cmem  []unsafe.Pointer // C allocations freed with the object
	kids  map[*obj]struct{}
	addrs *epAddrs           // EP: its addresses, once queried
	cr    *crData            // CR: what dat_cr_query hands out
	srq   bool               // EP: created with an SRQ
	held  firsts[*api.Event] // EVD: events dequeued but not handed out for want of C memory
}

// alloc returns n bytes of zeroed C memory that lives as long as o, or
// nil when there is none to be had: the call that wanted it then answers
// noCMem.
func (o *obj) alloc(n int) unsafe.Pointer {
	var b cbatch
	p := b.alloc(n)
	b.keep(o)
	return p
}

// cbatch is C memory that serves one purpose together: all of it is kept,
// or, when one allocation fails, none.
type cbatch struct {
	ps     []unsafe.Pointer
	failed bool
}

// alloc returns n bytes of zeroed C memory, or nil once an allocation of
// the batch has failed.
func (b *cbatch) alloc(n int) unsafe.Pointer {
	if b.failed {
		return nil
	}
	var p unsafe.Pointer
	if !cmemFail() {
		p = C.calloc(1, C.size_t(n))
	}
	if p == nil {
		b.failed = true
		return nil
	}
	b.ps = append(b.ps, p)
	return p
}

// keep gives the batch's memory to o, to be freed with it, and reports
// true; after a failed allocation it frees the batch and reports false.
func (b *cbatch) keep(o *obj) bool {
	if b.failed {
		for _, p := range b.ps {
			C.free(p)
		}
		b.ps = nil
		return false
	}
	o.mu.Lock()
	o.cmem = append(o.cmem, b.ps...)
	o.mu.Unlock()
	b.ps = nil
	return true
}

// noCMem is the answer of a call whose C memory, or a handle (the
// handles' mapping is C memory too), could not be had.
var noCMem = code(api.InsufficientResources, api.SubResourceMemory)

func (o *obj) freeC() {
	o.mu.Lock()
	for _, p := range o.cmem {
		C.free(p)
	}
	o.cmem = nil
	o.mu.Unlock()
}

var handles struct {
	once   sync.Once
	base   uintptr
	mem    []byte
	chunks [maxSlots / chunkSlots]atomic.Pointer[[chunkSlots]atomic.Pointer[obj]]

	mu   sync.Mutex
	free []uint32 // FIFO of released slots
	next uint32

	byObj sync.Map // api.Object -> *obj
}

func initHandles() {
	m, err := unix.Mmap(-1, 0, int(maxSlots*slotSize), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		panic("cabi: cannot map the handle table: " + err.Error())
	}
	handles.mem = m
	handles.base = uintptr(unsafe.Pointer(&m[0]))
}

func slotAt(i uint32) *C.gd_slot {
	return (*C.gd_slot)(unsafe.Pointer(&handles.mem[uintptr(i)*slotSize]))
}

// register gives v a handle of kind k in ia, whose slot points at prov
// (for an IA itself, ia is nil; every other object takes its IA's table).
func register(k api.HandleType, v api.Object, ia *iaObj, prov *C.DAT_PROVIDER) (*obj, bool) {
	handles.once.Do(initHandles)
	handles.mu.Lock()
	var i uint32
	switch {
	case len(handles.free) > 0 && (handles.next >= maxSlots || len(handles.free) > 4096):
		i, handles.free = handles.free[0], handles.free[1:]
	case handles.next < maxSlots:
		i = handles.next
		handles.next++
	default:
		handles.mu.Unlock()
		return nil, false
	}
	c := handles.chunks[i>>chunkBits].Load()
	if c == nil {
		c = new([chunkSlots]atomic.Pointer[obj])
		handles.chunks[i>>chunkBits].Store(c)
	}
	handles.mu.Unlock()

	s := slotAt(i)
	if ia != nil {
		prov = ia.prov
	}
	s.provider = prov
	s.kind = C.uint32_t(k)
	o := &obj{kind: k, slot: i, h: unsafe.Pointer(s), ia: ia, v: v}
	c[i&(chunkSlots-1)].Store(o)
	if v != nil {
		handles.byObj.Store(v, o)
	}
	if ia != nil {
		ia.obj.mu.Lock()
		if ia.obj.kids == nil {
			ia.obj.kids = make(map[*obj]struct{})
		}
		ia.obj.kids[o] = struct{}{}
		ia.obj.mu.Unlock()
	}
	return o, true
}

// release retires o's handle and frees the C memory it owns.
func release(o *obj) {
	c := handles.chunks[o.slot>>chunkBits].Load()
	if !c[o.slot&(chunkSlots-1)].CompareAndSwap(o, nil) {
		return
	}
	if o.v != nil {
		handles.byObj.CompareAndDelete(o.v, o)
	}
	slotAt(o.slot).kind = C.uint32_t(freeKind)
	if o.ia != nil {
		o.ia.obj.mu.Lock()
		delete(o.ia.obj.kids, o)
		o.ia.obj.mu.Unlock()
	}
	o.freeC()
	handles.mu.Lock()
	handles.free = append(handles.free, o.slot)
	handles.mu.Unlock()
}

// lookup returns the live object h names, or nil if h is not a handle of
// kind k. It never dereferences memory outside the handle mapping.
func lookup(h unsafe.Pointer, k api.HandleType) *obj {
	o := lookupAny(h)
	if o == nil || o.kind != k {
		return nil
	}
	return o
}

func lookupAny(h unsafe.Pointer) *obj {
	handles.once.Do(initHandles) // (an atomic load once done: orders the reads of base after its write)
	off := uintptr(h) - handles.base
	if off >= maxSlots*slotSize || off%slotSize != 0 {
		return nil
	}
	i := uint32(off / slotSize)
	c := handles.chunks[i>>chunkBits].Load()
	if c == nil {
		return nil
	}
	return c[i&(chunkSlots-1)].Load()
}

// handleOf returns the handle of a godat object, or nil if it has none.
func handleOf(v api.Object) unsafe.Pointer {
	if v == nil {
		return nil
	}
	if o, ok := handles.byObj.Load(v); ok {
		return o.(*obj).h
	}
	return nil
}

func objOf(v api.Object) *obj {
	if v == nil {
		return nil
	}
	if o, ok := handles.byObj.Load(v); ok {
		return o.(*obj)
	}
	return nil
}
