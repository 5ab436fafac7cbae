//go:build verbs && cgo

package verbs

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
)

// pz is a protection zone: an ibv_pd of the IA's device
// (dat_pz_create(3DAT)).
type pz struct {
	api.ContextSlot
	ia *ia
	pd *C.struct_ibv_pd // nil once destroyed
}

// CreatePZ allocates a protection domain (dat_pz_create(3DAT)).
func (i *ia) CreatePZ() (api.PZ, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if err := i.pzs.Room(); err != nil {
		return nil, err
	}
	pd, err := C.ibv_alloc_pd(i.dev.ctx)
	if pd == nil {
		return nil, api.Errorf(api.InsufficientResources, api.SubResourceProtectionDomain, "ibv_alloc_pd: "+errnoText(err))
	}
	z := &pz{ia: i, pd: pd}
	i.pzs.Add(z)
	return z, nil
}

// HandleType reports HandlePZ (dat_get_handle_type(3DAT)).
func (z *pz) HandleType() api.HandleType { return api.HandlePZ }

// Query returns the PZ's IA (dat_pz_query(3DAT)).
func (z *pz) Query() (api.PZParam, error) { return api.PZParam{IA: z.ia}, nil }

// Free deallocates the protection domain (dat_pz_free(3DAT)); the guard
// refuses while objects use it.
func (z *pz) Free() error {
	z.ia.mu.Lock()
	defer z.ia.mu.Unlock()
	if err := z.destroy(); err != nil {
		return err
	}
	z.ia.pzs.Remove(z)
	return nil
}

// destroy releases the PD. ia.mu is held.
func (z *pz) destroy() error {
	if z.pd == nil {
		return nil
	}
	if rc := C.ibv_dealloc_pd(z.pd); rc != 0 {
		return api.Errorf(api.InvalidState, api.SubStatePZInUse, "ibv_dealloc_pd: "+errnoText(syscallErrno(rc)))
	}
	z.pd = nil
	return nil
}

func pzOf(x api.PZ) *pz {
	z, _ := x.(*pz)
	return z
}

// lmr is a Local Memory Region: an ibv_mr over api.AllocMemory memory
// (dat_lmr_create(3DAT)). Its LMR context is the MR's lkey and its RMR
// context the rkey, when it has a remote privilege.
type lmr struct {
	api.ContextSlot
	ia    *ia
	pz    *pz
	mr    *C.struct_ibv_mr // nil once destroyed
	mem   []byte
	typ   api.MemType
	priv  api.MemPriv
	va    api.VAType
	param api.LMRParam
	rmrs  int // RMRs bound to it
}

// accessFlags maps DAT privileges to verbs access flags. Local read is
// always allowed by verbs; remote write needs local write there, so it
// implies it.
func accessFlags(priv api.MemPriv, mw bool) C.int {
	var a C.int
	if priv&(api.MemPrivLocalWrite|api.MemPrivRemoteWrite) != 0 {
		a |= C.IBV_ACCESS_LOCAL_WRITE
	}
	if priv&api.MemPrivRemoteWrite != 0 {
		a |= C.IBV_ACCESS_REMOTE_WRITE
	}
	if priv&api.MemPrivRemoteRead != 0 {
		a |= C.IBV_ACCESS_REMOTE_READ
	}
	if mw {
		a |= C.IBV_ACCESS_MW_BIND
	}
	return a
}

// CreateLMR registers region in pz (dat_lmr_create(3DAT)). The memory
// must come from api.AllocMemory, or be memory outside the Go heap that
// the caller pins (Region.Pinned): a device writes it on its own, so it
// must never move (ErrInvalidParameter otherwise). MemTypeLMR registers
// another LMR's memory again. With VATypeZB the device addresses the
// region from 0.
func (i *ia) CreateLMR(pzArg api.PZ, region api.Region, priv api.MemPriv, va api.VAType) (api.LMR, error) {
	z, err := kit.PZArg[*pz](pzArg)
	if err != nil {
		return nil, err
	}
	var mem []byte
	switch region.Type {
	case api.MemTypeVirtual, api.MemTypeSharedVirtual:
		mem = region.Bytes
	case api.MemTypeLMR:
		src, _ := region.LMR.(*lmr)
		if src == nil || src.ia != i {
			return nil, api.Errorf(api.InvalidHandle, api.SubHandleLMR, "region LMR is not a live LMR of this IA")
		}
		mem = src.mem
	default:
		return nil, api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("memory type %#x is unknown", uint32(region.Type)))
	}
	if len(mem) == 0 {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg3, "the region to register is empty")
	}
	if _, _, ok := api.MemoryOf(mem); !ok && !(region.Pinned && region.Type != api.MemTypeLMR) {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg3,
			"the verbs provider registers only memory from api.AllocMemory, which never moves and which the device may write at any time; allocate the buffer with api.AllocMemory")
	}
	if uint64(len(mem)) > i.dev.attr.MaxMRSize {
		return nil, api.Errorf(api.LengthError, api.NoSubtype, fmt.Sprintf("region of %d bytes exceeds the device's MR size limit %d", len(mem), i.dev.attr.MaxMRSize))
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if z.ia != i || z.pd == nil {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandlePZ, "PZ is not a live PZ of this IA")
	}
	if err := i.lmrs.Room(); err != nil {
		return nil, err
	}
	addr := api.AddrOf(mem)
	iova := uint64(addr)
	if va == api.VATypeZB {
		iova = 0
	}
	mr, err := C.gd_reg_mr(z.pd, unsafe.Pointer(&mem[0]), C.size_t(len(mem)), C.uint64_t(iova), accessFlags(priv, i.dev.attr.MemWindowType2))
	if mr == nil {
		return nil, api.Errorf(api.InsufficientResources, api.SubResourceMemoryRegion, "ibv_reg_mr: "+errnoText(err))
	}
	l := &lmr{ia: i, pz: z, mr: mr, mem: mem, typ: region.Type, priv: priv, va: va}
	l.param = api.LMRParam{
		IA: i, MemType: region.Type, Length: uint64(len(mem)), PZ: z, Priv: priv, VAType: va,
		LMRContext: api.LMRContext(mr.lkey), RegisteredSize: uint64(len(mem)), RegisteredAddress: api.VAddr(iova),
	}
	if priv&(api.MemPrivRemoteRead|api.MemPrivRemoteWrite) != 0 {
		l.param.RMRContext = api.RMRContext(mr.rkey)
	}
	i.lmrs.Add(l)
	i.lkeys[uint32(mr.lkey)] = l
	return l, nil
}

// HandleType reports HandleLMR (dat_get_handle_type(3DAT)).
func (l *lmr) HandleType() api.HandleType { return api.HandleLMR }

// Query returns the LMR's parameters (dat_lmr_query(3DAT)).
func (l *lmr) Query() (api.LMRParam, error) { return l.param, nil }

// Free deregisters the region (dat_lmr_free(3DAT)); its keys stop working
// at once.
func (l *lmr) Free() error {
	l.ia.mu.Lock()
	defer l.ia.mu.Unlock()
	if l.rmrs > 0 {
		return api.Errorf(api.InvalidState, api.SubStateLMRInUse, fmt.Sprintf("%d RMR(s) are bound to the LMR", l.rmrs))
	}
	if err := l.destroy(); err != nil {
		return err
	}
	l.ia.lmrs.Remove(l)
	return nil
}

// destroy deregisters the MR. ia.mu is held.
func (l *lmr) destroy() error {
	if l.mr == nil {
		return nil
	}
	lkey := uint32(l.mr.lkey)
	if rc := C.ibv_dereg_mr(l.mr); rc != 0 {
		return api.Errorf(api.InvalidState, api.SubStateLMRInUse, "ibv_dereg_mr: "+errnoText(syscallErrno(rc)))
	}
	delete(l.ia.lkeys, lkey)
	l.mr = nil
	return nil
}

var (
	errNoLMR      = api.Errorf(api.ProtectionViolation, api.NoSubtype, "a segment's LMR context names no LMR of the IA")
	errOtherPZ    = api.Errorf(api.ProtectionViolation, api.NoSubtype, "a segment's LMR is in another PZ than the EP")
	errOutside    = api.Errorf(api.InvalidParameter, api.SubArg2, "a segment runs outside its LMR")
	errLocalRead  = api.Errorf(api.PrivilegesViolation, api.NoSubtype, "a segment's LMR lacks local read privilege")
	errLocalWrite = api.Errorf(api.PrivilegesViolation, api.NoSubtype, "a segment's LMR lacks local write privilege")
)

// checkIOV checks the segments of a post against the IA's LMRs: each must
// name a live LMR (in pz, when pz is not nil), lie inside it, and have
// the privileges in need. The device checks the same, but reports some
// failures in ways DAT does not (rxe: a bad lkey as a QP operation
// error), and cannot refuse a send from memory without local read. It
// allocates nothing. ia.mu is held.
//
// byVA reports that every segment's address is a virtual address of the
// process, that is, that none is in a zero-based LMR (whose triplets carry
// offsets, which only the device translates): only such a request may
// carry its bytes inline, since ibv_post_send then reads them itself.
func (i *ia) checkIOV(iov []api.LMRTriplet, z *pz, need api.MemPriv) (byVA bool, err error) {
	byVA = true
	for _, t := range iov {
		if t.Length == 0 {
			continue
		}
		l := i.lkeys[uint32(t.LMRContext)]
		if l == nil {
			return false, errNoLMR
		}
		if z != nil && l.pz != z {
			return false, errOtherPZ
		}
		base, n := l.param.RegisteredAddress, l.param.RegisteredSize
		if t.Addr < base || uint64(t.Addr-base)+uint64(t.Length) > n {
			return false, errOutside
		}
		if l.priv&need != need {
			if need&api.MemPrivLocalWrite != 0 {
				return false, errLocalWrite
			}
			return false, errLocalRead
		}
		if l.va != api.VATypeVA {
			byVA = false
		}
	}
	return byVA, nil
}
