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
	var a args
	x := a.ia(h)
	a.arg(out != nil, 8)
	pz := a.obj(pzH, api.HandlePZ)
	if a.r != success {
		return a.r
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
	return hand(x, api.HandleLMR, lmr, nil, func(o *obj) {
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
	return query[api.LMR](h, api.HandleLMR, p, func(o *obj, q api.LMRParam, p *C.DAT_LMR_PARAM) bool {
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
		return true
	})
}

//export go_lmr_sync
func go_lmr_sync(h unsafe.Pointer, segs *C.DAT_LMR_TRIPLET, n C.DAT_VLEN, write C.int) C.DAT_RETURN {
	var a args
	x := a.ia(h)
	a.arg(segs != nil || n == 0, 2)
	a.arg(n <= 1<<20, 3)
	if a.r != success {
		return a.r
	}
	t := triplets(segs, C.DAT_COUNT(n))
	if write != 0 {
		return ret(x.ia.SyncRDMAWrite(t))
	}
	return ret(x.ia.SyncRDMARead(t))
}

//export go_rmr_create
func go_rmr_create(pzH unsafe.Pointer, out *C.DAT_RMR_HANDLE) C.DAT_RETURN {
	var a args
	pz := a.obj(pzH, api.HandlePZ)
	a.arg(out != nil, 2)
	if a.r != success {
		return a.r
	}
	rmr, err := pz.v.(api.PZ).CreateRMR()
	return hand(pz.ia, api.HandleRMR, rmr, err, func(o *obj) { *out = C.DAT_RMR_HANDLE(o.h) })
}

//export go_rmr_query
func go_rmr_query(h unsafe.Pointer, mask C.DAT_RMR_PARAM_MASK, p *C.DAT_RMR_PARAM) C.DAT_RETURN {
	return query[api.RMR](h, api.HandleRMR, p, func(o *obj, q api.RMRParam, p *C.DAT_RMR_PARAM) bool {
		p.ia_handle = C.DAT_IA_HANDLE(o.ia.obj.h)
		p.pz_handle = C.DAT_PZ_HANDLE(handleOf(q.PZ))
		*(*api.LMRTriplet)(unsafe.Pointer(&p.lmr_triplet)) = q.LMRTriplet
		p.mem_priv = C.DAT_MEM_PRIV_FLAGS(q.Priv)
		p.rmr_context = C.DAT_RMR_CONTEXT(q.RMRContext)
		p.rmr_scope = C.DAT_RMR_SCOPE(q.Scope)
		p.va_type = C.DAT_VA_TYPE(q.VAType)
		return true
	})
}

//export go_rmr_bind
func go_rmr_bind(h, lmrH unsafe.Pointer, t *C.DAT_LMR_TRIPLET, priv C.DAT_MEM_PRIV_FLAGS, va C.DAT_VA_TYPE, epH unsafe.Pointer,
	cookie C.uint64_t, flags C.DAT_COMPLETION_FLAGS, out *C.DAT_RMR_CONTEXT) C.DAT_RETURN {
	var a args
	o := a.obj(h, api.HandleRMR)
	a.arg(t != nil, 3)
	lmr, ep := a.optLMR(lmrH), a.optEP(epH)
	if a.r != success {
		return a.r
	}
	trip := *(*api.LMRTriplet)(unsafe.Pointer(t))
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
	var a args
	x, pz := a.ia(h), a.obj(pzH, api.HandlePZ)
	a.arg(attr != nil, 3)
	a.arg(out != nil, 4)
	if a.r != success {
		return a.r
	}
	srq, err := x.ia.CreateSRQ(pz.v.(api.PZ),
		api.SRQAttr{MaxRecvDTOs: int(attr.max_recv_dtos), MaxRecvIOV: int(attr.max_recv_iov), LowWatermark: int(attr.low_watermark)})
	return hand(x, api.HandleSRQ, srq, err, func(o *obj) { *out = C.DAT_SRQ_HANDLE(o.h) })
}

//export go_srq_post_recv
func go_srq_post_recv(h unsafe.Pointer, n C.DAT_COUNT, iov *C.DAT_LMR_TRIPLET, cookie C.uint64_t) C.DAT_RETURN {
	var a args
	o := a.obj(h, api.HandleSRQ)
	a.counted(n, unsafe.Pointer(iov), 2)
	if a.r != success {
		return a.r
	}
	return ret(o.v.(api.SRQ).PostRecv(triplets(iov, n), api.Cookie(cookie)))
}

//export go_srq_query
func go_srq_query(h unsafe.Pointer, mask C.DAT_SRQ_PARAM_MASK, p *C.DAT_SRQ_PARAM) C.DAT_RETURN {
	return query[api.SRQ](h, api.HandleSRQ, p, func(o *obj, q api.SRQParam, p *C.DAT_SRQ_PARAM) bool {
		p.ia_handle = C.DAT_IA_HANDLE(o.ia.obj.h)
		p.srq_state = C.DAT_SRQ_STATE(q.State)
		p.pz_handle = C.DAT_PZ_HANDLE(handleOf(q.PZ))
		p.max_recv_dtos = count(q.MaxRecvDTOs)
		p.max_recv_iov = count(q.MaxRecvIOV)
		p.low_watermark = count(q.LowWatermark)
		p.available_dto_count = count(q.AvailableDTOCount)
		p.outstanding_dto_count = count(q.OutstandingDTOCount)
		return true
	})
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
