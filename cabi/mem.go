//go:build cabi

package main

/*
#include "cabi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/godat/godat/api"
)

//export go_lmr_create
func go_lmr_create(h unsafe.Pointer, typ C.DAT_MEM_TYPE, p unsafe.Pointer, length C.DAT_VLEN, pzH unsafe.Pointer, priv C.DAT_MEM_PRIV_FLAGS,
	va C.DAT_VA_TYPE, out *C.DAT_LMR_HANDLE, lctx *C.DAT_LMR_CONTEXT, rctx *C.DAT_RMR_CONTEXT, rlen *C.DAT_VLEN, raddr *C.DAT_VADDR) C.DAT_RETURN {
	x := iaOf(h)
	if x == nil {
		return badHandle(api.HandleIA)
	}
	if out == nil {
		return badArg(8)
	}
	pz := lookup(pzH, api.HandlePZ)
	if pz == nil {
		return badHandle(api.HandlePZ)
	}
	region := api.Region{Type: api.MemType(typ)}
	switch region.Type {
	case api.MemTypeVirtual, api.MemTypeSharedVirtual:
		if p == nil {
			return badArg(3)
		}
		if length == 0 || uint64(length) > 1<<47 {
			return badArg(4)
		}
		region.Bytes = unsafe.Slice((*byte)(p), int(length))
		region.Pinned = true // the C program's memory: it stays where it is while registered
	case api.MemTypeLMR:
		l := lookup(p, api.HandleLMR)
		if l == nil {
			return badHandle(api.HandleLMR)
		}
		region.LMR = l.v.(api.LMR)
	default:
		return badArg(2)
	}
	// IB grants local read with every registration, and programs send
	// from buffers registered for local write only (docs/cabi.md).
	mp := api.MemPriv(priv) | api.MemPrivLocalRead
	lmr, err := x.ia.CreateLMR(pz.v.(api.PZ), region, mp, api.VAType(va))
	if err != nil {
		return ret(err)
	}
	q, err := lmr.Query()
	if err != nil {
		lmr.Free()
		return ret(err)
	}
	return hand(x, api.HandleLMR, lmr, func(o *obj) {
		*out = C.DAT_LMR_HANDLE(o.h)
		if lctx != nil {
			*lctx = C.DAT_LMR_CONTEXT(q.LMRContext)
		}
		if rctx != nil {
			*rctx = C.DAT_RMR_CONTEXT(q.RMRContext)
		}
		if rlen != nil {
			*rlen = C.DAT_VLEN(q.RegisteredSize)
		}
		if raddr != nil {
			*raddr = C.DAT_VADDR(q.RegisteredAddress)
		}
	})
}

//export go_lmr_query
func go_lmr_query(h unsafe.Pointer, mask C.DAT_LMR_PARAM_MASK, p *C.DAT_LMR_PARAM) C.DAT_RETURN {
	o := lookup(h, api.HandleLMR)
	if o == nil {
		return badHandle(api.HandleLMR)
	}
	if p == nil {
		return badArg(3)
	}
	q, err := o.v.(api.LMR).Query()
	if err != nil {
		return ret(err)
	}
	p.ia_handle = C.DAT_IA_HANDLE(o.ia.obj.h)
	p.mem_type = C.DAT_MEM_TYPE(q.MemType)
	*(*uint64)(unsafe.Pointer(&p.region_desc)) = uint64(q.RegisteredAddress) // for_va
	p.length = C.DAT_VLEN(q.Length)
	p.pz_handle = C.DAT_PZ_HANDLE(handleOf(q.PZ))
	p.mem_priv = C.DAT_MEM_PRIV_FLAGS(q.Priv)
	p.va_type = C.DAT_VA_TYPE(q.VAType)
	p.lmr_context = C.DAT_LMR_CONTEXT(q.LMRContext)
	p.rmr_context = C.DAT_RMR_CONTEXT(q.RMRContext)
	p.registered_size = C.DAT_VLEN(q.RegisteredSize)
	p.registered_address = C.DAT_VADDR(q.RegisteredAddress)
	return success
}

//export go_lmr_sync
func go_lmr_sync(h unsafe.Pointer, segs *C.DAT_LMR_TRIPLET, n C.DAT_VLEN, write C.int) C.DAT_RETURN {
	x := iaOf(h)
	if x == nil {
		return badHandle(api.HandleIA)
	}
	if segs == nil && n > 0 {
		return badArg(2)
	}
	if n > 1<<20 {
		return badArg(3)
	}
	t := triplets(segs, C.DAT_COUNT(n))
	if write != 0 {
		return ret(x.ia.SyncRDMAWrite(t))
	}
	return ret(x.ia.SyncRDMARead(t))
}

//export go_rmr_create
func go_rmr_create(pzH unsafe.Pointer, out *C.DAT_RMR_HANDLE) C.DAT_RETURN {
	pz := lookup(pzH, api.HandlePZ)
	if pz == nil {
		return badHandle(api.HandlePZ)
	}
	if out == nil {
		return badArg(2)
	}
	rmr, err := pz.v.(api.PZ).CreateRMR()
	if err != nil {
		return ret(err)
	}
	return hand(pz.ia, api.HandleRMR, rmr, func(o *obj) { *out = C.DAT_RMR_HANDLE(o.h) })
}

//export go_rmr_query
func go_rmr_query(h unsafe.Pointer, mask C.DAT_RMR_PARAM_MASK, p *C.DAT_RMR_PARAM) C.DAT_RETURN {
	o := lookup(h, api.HandleRMR)
	if o == nil {
		return badHandle(api.HandleRMR)
	}
	if p == nil {
		return badArg(3)
	}
	q, err := o.v.(api.RMR).Query()
	if err != nil {
		return ret(err)
	}
	p.ia_handle = C.DAT_IA_HANDLE(o.ia.obj.h)
	p.pz_handle = C.DAT_PZ_HANDLE(handleOf(q.PZ))
	*(*api.LMRTriplet)(unsafe.Pointer(&p.lmr_triplet)) = q.LMRTriplet
	p.mem_priv = C.DAT_MEM_PRIV_FLAGS(q.Priv)
	p.rmr_context = C.DAT_RMR_CONTEXT(q.RMRContext)
	p.rmr_scope = C.DAT_RMR_SCOPE(q.Scope)
	p.va_type = C.DAT_VA_TYPE(q.VAType)
	return success
}

//export go_rmr_bind
func go_rmr_bind(h, lmrH unsafe.Pointer, t *C.DAT_LMR_TRIPLET, priv C.DAT_MEM_PRIV_FLAGS, va C.DAT_VA_TYPE, epH unsafe.Pointer,
	cookie C.uint64_t, flags C.DAT_COMPLETION_FLAGS, out *C.DAT_RMR_CONTEXT) C.DAT_RETURN {
	o := lookup(h, api.HandleRMR)
	if o == nil {
		return badHandle(api.HandleRMR)
	}
	if t == nil {
		return badArg(3)
	}
	trip := *(*api.LMRTriplet)(unsafe.Pointer(t))
	var lmr api.LMR
	if lmrH != nil {
		l := lookup(lmrH, api.HandleLMR)
		if l == nil {
			return badHandle(api.HandleLMR)
		}
		lmr = l.v.(api.LMR)
	}
	var ep api.EP
	if epH != nil {
		e := lookup(epH, api.HandleEP)
		if e == nil {
			return badHandle(api.HandleEP)
		}
		ep = e.v.(api.EP)
	}
	ctx, err := o.v.(api.RMR).Bind(lmr, trip, api.MemPriv(priv), api.VAType(va), ep, api.Cookie(cookie), api.CompletionFlags(flags))
	if err != nil {
		return ret(err)
	}
	if out != nil {
		*out = C.DAT_RMR_CONTEXT(ctx)
	}
	return success
}

//export go_srq_create
func go_srq_create(h, pzH unsafe.Pointer, attr *C.DAT_SRQ_ATTR, out *C.DAT_SRQ_HANDLE) C.DAT_RETURN {
	x := iaOf(h)
	if x == nil {
		return badHandle(api.HandleIA)
	}
	pz := lookup(pzH, api.HandlePZ)
	if pz == nil {
		return badHandle(api.HandlePZ)
	}
	if attr == nil {
		return badArg(3)
	}
	if out == nil {
		return badArg(4)
	}
	a := api.SRQAttr{MaxRecvDTOs: int(attr.max_recv_dtos), MaxRecvIOV: int(attr.max_recv_iov), LowWatermark: int(attr.low_watermark)}
	srq, err := x.ia.CreateSRQ(pz.v.(api.PZ), a)
	if err != nil {
		return ret(err)
	}
	return hand(x, api.HandleSRQ, srq, func(o *obj) { *out = C.DAT_SRQ_HANDLE(o.h) })
}

//export go_srq_post_recv
func go_srq_post_recv(h unsafe.Pointer, n C.DAT_COUNT, iov *C.DAT_LMR_TRIPLET, cookie C.uint64_t) C.DAT_RETURN {
	o := lookup(h, api.HandleSRQ)
	if o == nil {
		return badHandle(api.HandleSRQ)
	}
	if n < 0 || (n > 0 && iov == nil) {
		return badArg(2)
	}
	return ret(o.v.(api.SRQ).PostRecv(triplets(iov, n), api.Cookie(cookie)))
}

//export go_srq_query
func go_srq_query(h unsafe.Pointer, mask C.DAT_SRQ_PARAM_MASK, p *C.DAT_SRQ_PARAM) C.DAT_RETURN {
	o := lookup(h, api.HandleSRQ)
	if o == nil {
		return badHandle(api.HandleSRQ)
	}
	if p == nil {
		return badArg(3)
	}
	q, err := o.v.(api.SRQ).Query()
	if err != nil {
		return ret(err)
	}
	p.ia_handle = C.DAT_IA_HANDLE(o.ia.obj.h)
	p.srq_state = C.DAT_SRQ_STATE(q.State)
	p.pz_handle = C.DAT_PZ_HANDLE(handleOf(q.PZ))
	p.max_recv_dtos = count(q.MaxRecvDTOs)
	p.max_recv_iov = count(q.MaxRecvIOV)
	p.low_watermark = count(q.LowWatermark)
	p.available_dto_count = count(q.AvailableDTOCount)
	p.outstanding_dto_count = count(q.OutstandingDTOCount)
	return success
}

//export go_srq_resize
func go_srq_resize(h unsafe.Pointer, n C.DAT_COUNT, lw C.int) C.DAT_RETURN {
	o := lookup(h, api.HandleSRQ)
	if o == nil {
		return badHandle(api.HandleSRQ)
	}
	if lw != 0 {
		return ret(o.v.(api.SRQ).SetLW(int(n)))
	}
	return ret(o.v.(api.SRQ).Resize(int(n)))
}
