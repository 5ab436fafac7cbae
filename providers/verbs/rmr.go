//go:build verbs && cgo

package verbs

/*
#include "shim.h"
*/
import "C"

import (
	"math/rand/v2"

	"github.com/godat/godat/api"
)

// rmr is a Remote Memory Region: a type 2 memory window, bound to a
// window of an LMR for the QP of one EP by a bind work request on that
// EP's send queue (dat_rmr_create(3DAT), dat_rmr_bind(3DAT)). Its context
// is the window's current rkey: the device's window index with a key byte
// godat draws at random on every bind, so that an old context fails once
// the window is invalidated or bound again. Its fields are guarded by
// ia.mu.
type rmr struct {
	api.ContextSlot
	ia    *ia
	pz    *pz
	mw    *C.struct_ibv_mw // nil once freed
	key   uint32           // the context of the current binding; 0 when unbound
	lmr   *lmr             // the LMR bound to, or nil
	ep    *ep              // the EP whose QP the window is bound to, or nil
	t     api.LMRTriplet
	priv  api.MemPriv
	va    api.VAType
	bound bool
}

// CreateRMR allocates an unbound type 2 memory window in the PZ
// (dat_rmr_create(3DAT)); ErrNotImplemented on a device without them.
func (z *pz) CreateRMR() (api.RMR, error) {
	i := z.ia
	if !i.dev.attr.MemWindowType2 {
		return nil, api.Errorf(api.NotImplemented, api.NoSubtype, "device "+i.dev.name+" has no type 2 memory windows, which verbs RMRs are")
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if z.pd == nil {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandlePZ, "PZ is freed")
	}
	if err := i.rmrs.Room(); err != nil {
		return nil, err
	}
	mw, err := C.ibv_alloc_mw(z.pd, C.IBV_MW_TYPE_2)
	if mw == nil {
		return nil, api.Errorf(api.InsufficientResources, api.SubResourceMemoryRegion, "ibv_alloc_mw: "+errnoText(err))
	}
	r := &rmr{ia: i, pz: z, mw: mw}
	i.rmrs.Add(r)
	return r, nil
}

// HandleType reports HandleRMR (dat_get_handle_type(3DAT)).
func (r *rmr) HandleType() api.HandleType { return api.HandleRMR }

// Query returns the RMR's binding (dat_rmr_query(3DAT)); an unbound RMR
// reports a zero-length triplet.
func (r *rmr) Query() (api.RMRParam, error) {
	r.ia.mu.Lock()
	defer r.ia.mu.Unlock()
	p := api.RMRParam{IA: r.ia, PZ: r.pz, Scope: api.RMRScopeEP, VAType: r.va}
	if r.bound {
		p.LMRTriplet, p.Priv, p.RMRContext = r.t, r.priv, api.RMRContext(r.key)
	}
	return p, nil
}

// Bind binds the window to t of lmr for ep's connection, or unbinds it
// when t is empty (dat_rmr_bind(3DAT)). The bind is posted on ep's send
// queue with the fence flag, and the request posted next on ep is fenced
// too, so that nothing posted after the bind starts before it is done. A
// bound window is replaced by a new one before it is bound again or
// unbound, so the old context fails as soon as Bind returns. A window
// granting remote read (write) of an LMR registered with neither local
// nor remote read (write) is ErrPrivilegesViolation.
func (r *rmr) Bind(lmrArg api.LMR, t api.LMRTriplet, priv api.MemPriv, va api.VAType, epArg api.EP, cookie api.Cookie, flags api.CompletionFlags) (api.RMRContext, error) {
	p, _ := epArg.(*ep)
	if p == nil {
		return 0, api.Errorf(api.InvalidHandle, api.SubHandleEP, "EP handle is nil")
	}
	l, _ := lmrArg.(*lmr)
	i := r.ia
	i.mu.Lock()
	defer i.mu.Unlock()
	if r.mw == nil {
		return 0, api.Errorf(api.InvalidHandle, api.SubHandleRMR, "RMR is freed")
	}
	if p.qp == nil {
		return 0, errEPGone
	}
	if t.Length > 0 {
		if l == nil || l.mr == nil {
			return 0, api.Errorf(api.InvalidHandle, api.SubHandleLMR, "LMR handle is nil or freed")
		}
		base, n := l.param.RegisteredAddress, l.param.RegisteredSize
		if t.Addr < base || uint64(t.Addr-base)+uint64(t.Length) > n {
			return 0, api.Errorf(api.InvalidParameter, api.SubArg2, "the RMR window runs outside its LMR")
		}
		if priv&api.MemPrivRemoteWrite != 0 && l.priv&(api.MemPrivLocalWrite|api.MemPrivRemoteWrite) == 0 {
			return 0, api.Errorf(api.PrivilegesViolation, api.SubPrivilegesRDMAWrite, "remote write to a window of an LMR without local write")
		}
		if priv&api.MemPrivRemoteRead != 0 && l.priv&(api.MemPrivLocalRead|api.MemPrivRemoteRead) == 0 {
			return 0, api.Errorf(api.PrivilegesViolation, api.SubPrivilegesRDMARead, "remote read from a window of an LMR without local read")
		}
	}
	switch p.State {
	case api.EPConnected:
	case api.EPDisconnected:
		ev := api.Event{Number: api.RMRBindCompletionEvent, RMRBind: api.RMRBindCompletionData{RMR: r, Cookie: cookie, Status: api.DTOErrFlushed}}
		p.RequestEVD.post(&ev, flags&api.CompletionUnsignalled == 0)
		return 0, nil
	default:
		return 0, p.StateErr("RMR Bind")
	}
	if p.reqs.Len()+2 > p.Attr.MaxRequestDTOs {
		return 0, api.Errorf(api.InsufficientResources, api.SubResourceTEP, "the request queue is full")
	}
	if r.bound || t.Length == 0 {
		// A bound window is replaced by a fresh one: deallocating it
		// invalidates its context at once, before the call returns. (rxe
		// refuses to bind a type 2 window again after a local
		// invalidate posted just before the bind.)
		if err := r.renew(); err != nil {
			return 0, err
		}
	}
	if t.Length == 0 {
		if flags&api.CompletionSuppress == 0 {
			ev := api.Event{Number: api.RMRBindCompletionEvent, RMRBind: api.RMRBindCompletionData{RMR: r, Cookie: cookie, Status: api.DTOSuccess}}
			p.RequestEVD.post(&ev, flags&api.CompletionUnsignalled == 0)
		}
		return 0, nil
	}
	sig := p.signal(flags) | C.IBV_SEND_FENCE
	p.fenceNext = true
	key := newKey(uint32(r.mw.rkey), r.key)
	access := C.int(0)
	if priv&api.MemPrivRemoteRead != 0 {
		access |= C.IBV_ACCESS_REMOTE_READ
	}
	if priv&api.MemPrivRemoteWrite != 0 {
		access |= C.IBV_ACCESS_REMOTE_WRITE
	}
	if va == api.VATypeZB {
		access |= C.IBV_ACCESS_ZERO_BASED
	}
	p.reqSeq++
	if rc := C.gd_post_bind(p.qp, C.uint64_t(p.reqSeq), sig, r.mw, C.uint32_t(key), l.mr, C.uint64_t(t.Addr), C.uint64_t(t.Length), access); rc != 0 {
		return 0, api.Errorf(api.InsufficientResources, api.SubResourceTEP, "posting the bind: "+errnoText(syscallErrno(rc)))
	}
	w := p.reqs.PushBack()
	*w = reqWR{seq: p.reqSeq, cookie: cookie, op: api.OpBindMW, flags: flags, rmr: r}
	r.key, r.lmr, r.t, r.priv, r.va, r.bound, r.ep = key, l, t, priv, va, true, p
	l.rmrs++
	i.rkeys[key] = r
	return api.RMRContext(key), nil
}

// newKey returns the window index of rkey with a random key byte that
// differs from old's.
func newKey(rkey, old uint32) uint32 {
	for {
		k := rkey&^0xff | uint32(rand.IntN(256))
		if k != old && k != rkey&^0xff|old&0xff {
			return k
		}
	}
}

// renew unbinds the RMR by replacing its window with a new one. ia.mu is
// held.
func (r *rmr) renew() error {
	if !r.bound {
		return nil
	}
	r.unbind()
	mw, err := C.ibv_alloc_mw(r.pz.pd, C.IBV_MW_TYPE_2)
	if mw == nil {
		return api.Errorf(api.InsufficientResources, api.SubResourceMemoryRegion, "ibv_alloc_mw: "+errnoText(err))
	}
	C.ibv_dealloc_mw(r.mw)
	r.mw = mw
	return nil
}

// unbind forgets the binding. ia.mu is held.
func (r *rmr) unbind() {
	if !r.bound {
		return
	}
	delete(r.ia.rkeys, r.key)
	if r.lmr != nil {
		r.lmr.rmrs--
	}
	r.key, r.lmr, r.t, r.priv, r.bound, r.ep = 0, nil, api.LMRTriplet{}, 0, false, nil
}

// Free destroys the window, invalidating its context (dat_rmr_free(3DAT)).
func (r *rmr) Free() error {
	r.ia.mu.Lock()
	defer r.ia.mu.Unlock()
	r.destroy()
	r.ia.rmrs.Remove(r)
	return nil
}

// destroy deallocates the window. ia.mu is held.
func (r *rmr) destroy() {
	if r.mw == nil {
		return
	}
	r.unbind()
	C.ibv_dealloc_mw(r.mw)
	r.mw = nil
}

// releaseEP replaces the windows bound to p's QP, before the QP is
// destroyed: a type 2 window holds its QP, and rxe's QP destruction waits
// for the window (for tens of seconds) otherwise. Their contexts stop
// working, as the connection they were bound for is gone. ia.mu is held.
func (i *ia) releaseEP(p *ep) {
	for r := range i.rmrs.All() {
		if r.bound && r.ep == p {
			if r.renew() != nil {
				r.destroy() // no new window: the RMR is left without one
			}
		}
	}
}

// invalidated records that a peer's send-with-invalidate ended the
// binding of key. ia.mu is held.
func (i *ia) invalidated(key uint32) {
	if r := i.rkeys[key]; r != nil {
		r.unbind()
	}
}
