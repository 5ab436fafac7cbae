//go:build cabi

package main

/*
#include "cabi.h"
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/godat/godat/api"
)

//export go_psp_create
func go_psp_create(h unsafe.Pointer, q C.DAT_CONN_QUAL, anyQ *C.DAT_CONN_QUAL, evdH unsafe.Pointer, flags C.DAT_PSP_FLAGS, out *C.DAT_PSP_HANDLE) C.DAT_RETURN {
	var a args
	x := a.ia(h)
	a.arg(out != nil, 5)
	evd := a.evd(evdH, api.SubHandleEVDCR)
	if a.r != success {
		return a.r
	}
	var psp api.PSP
	var err error
	if anyQ != nil {
		var got api.ConnQual
		psp, got, err = x.ia.CreatePSPAny(evd, api.PSPFlags(flags))
		if err == nil {
			*anyQ = C.DAT_CONN_QUAL(got)
		}
	} else {
		err = withQual(q, func(q api.ConnQual) (err error) {
			psp, err = x.ia.CreatePSP(q, evd, api.PSPFlags(flags))
			return err
		})
	}
	return hand(x, api.HandlePSP, psp, err, func(o *obj) { *out = C.DAT_PSP_HANDLE(o.h) })
}

//export go_psp_query
func go_psp_query(h unsafe.Pointer, mask C.DAT_PSP_PARAM_MASK, p *C.DAT_PSP_PARAM) C.DAT_RETURN {
	return query[api.PSP](h, api.HandlePSP, p, func(o *obj, q api.PSPParam, p *C.DAT_PSP_PARAM) bool {
		p.ia_handle = C.DAT_IA_HANDLE(o.ia.obj.h)
		p.conn_qual = C.DAT_CONN_QUAL(q.ConnQual)
		p.evd_handle = C.DAT_EVD_HANDLE(handleOf(q.EVD))
		p.psp_flags = C.DAT_PSP_FLAGS(q.Flags)
		return true
	})
}

//export go_rsp_create
func go_rsp_create(h unsafe.Pointer, q C.DAT_CONN_QUAL, epH, evdH unsafe.Pointer, out *C.DAT_RSP_HANDLE) C.DAT_RETURN {
	var a args
	x := a.ia(h)
	a.arg(out != nil, 5)
	ep, evd := a.obj(epH, api.HandleEP), a.evd(evdH, api.SubHandleEVDCR)
	if a.r != success {
		return a.r
	}
	var rsp api.RSP
	err := withQual(q, func(q api.ConnQual) (err error) {
		rsp, err = x.ia.CreateRSP(q, ep.v.(api.EP), evd)
		return err
	})
	return hand(x, api.HandleRSP, rsp, err, func(o *obj) { *out = C.DAT_RSP_HANDLE(o.h) })
}

//export go_rsp_query
func go_rsp_query(h unsafe.Pointer, mask C.DAT_RSP_PARAM_MASK, p *C.DAT_RSP_PARAM) C.DAT_RETURN {
	return query[api.RSP](h, api.HandleRSP, p, func(o *obj, q api.RSPParam, p *C.DAT_RSP_PARAM) bool {
		p.ia_handle = C.DAT_IA_HANDLE(o.ia.obj.h)
		p.conn_qual = C.DAT_CONN_QUAL(q.ConnQual)
		p.evd_handle = C.DAT_EVD_HANDLE(handleOf(q.EVD))
		p.ep_handle = C.DAT_EP_HANDLE(handleOf(q.EP))
		return true
	})
}

// withQual calls f with the connection qualifier q and, if a provider
// that maps qualifiers to 16-bit ports refuses one above 65535, again with
// its low 16 bits: OFA's providers keep only those bits of a qualifier (an
// IB service ID's port space), and dapltest's limit test uses qualifiers
// beyond them (docs/cabi.md).
func withQual(q C.DAT_CONN_QUAL, f func(api.ConnQual) error) error {
	err := f(api.ConnQual(q))
	if err != nil && q > 0xffff && errors.Is(err, api.ErrInvalidParameter) {
		return f(api.ConnQual(q & 0xffff))
	}
	return err
}

// crData is what dat_cr_query hands out for one connection request. The
// private data is writable C memory: dtest edits it in place and passes it
// back to dat_cr_accept.
type crData struct {
	addr unsafe.Pointer
	pd   unsafe.Pointer
	n    int
}

// crHandle returns the handle of a connection request, made when its
// arrival event is first read.
func crHandle(x *iaObj, cr api.CR) unsafe.Pointer {
	if cr == nil {
		return nil
	}
	if h := handleOf(cr); h != nil {
		return h
	}
	o, ok := register(api.HandleCR, cr, x, nil)
	if !ok {
		return nil
	}
	return o.h
}

//export go_cr_query
func go_cr_query(h unsafe.Pointer, mask C.DAT_CR_PARAM_MASK, p *C.DAT_CR_PARAM) C.DAT_RETURN {
	return query[api.CR](h, api.HandleCR, p, func(o *obj, q api.CRParam, p *C.DAT_CR_PARAM) bool {
		d := o.crData(&q)
		if d == nil {
			return false
		}
		p.remote_ia_address_ptr = C.DAT_IA_ADDRESS_PTR(d.addr)
		p.remote_port_qual = C.DAT_PORT_QUAL(q.RemotePortQual)
		p.private_data_size = C.DAT_COUNT(d.n)
		p.private_data = C.DAT_PVOID(d.pd)
		p.local_ep_handle = C.DAT_EP_HANDLE(handleOf(q.LocalEP))
		return true
	})
}

// crData returns the C memory of the CR o, made at its first query, or
// nil if it could not be allocated.
func (o *obj) crData(q *api.CRParam) *crData {
	o.mu.Lock()
	d := o.cr
	o.mu.Unlock()
	if d == nil {
		var b cbatch
		d = &crData{addr: b.alloc(addrSize), n: len(q.PrivateData)}
		if d.n > 0 {
			d.pd = b.alloc(d.n)
		}
		if !b.keep(o) {
			return nil
		}
		putAddr(d.addr, q.RemoteAddr)
		copy(unsafe.Slice((*byte)(d.pd), d.n), q.PrivateData)
		o.mu.Lock()
		if o.cr == nil {
			o.cr = d
		}
		d = o.cr
		o.mu.Unlock()
	}
	return d
}

//export go_cr_accept
func go_cr_accept(h, epH unsafe.Pointer, n C.DAT_COUNT, pd unsafe.Pointer) C.DAT_RETURN {
	var a args
	o, ep := a.obj(h, api.HandleCR), a.optEP(epH)
	a.counted(n, pd, 3)
	if a.r != success {
		return a.r
	}
	return crEnded(o, o.v.(api.CR).Accept(ep, cbytes(pd, n)))
}

//export go_cr_reject
func go_cr_reject(h unsafe.Pointer, n C.DAT_COUNT, pd unsafe.Pointer) C.DAT_RETURN {
	var a args
	o := a.obj(h, api.HandleCR)
	a.counted(n, pd, 2)
	if a.r != success {
		return a.r
	}
	return crEnded(o, o.v.(api.CR).Reject(cbytes(pd, n)))
}

//export go_cr_handoff
func go_cr_handoff(h unsafe.Pointer, q C.DAT_CONN_QUAL) C.DAT_RETURN {
	o := lookup(h, api.HandleCR)
	if o == nil {
		return badHandle(api.HandleCR)
	}
	return crEnded(o, withQual(q, o.v.(api.CR).Handoff))
}

// crEnded answers a call that accepted, rejected or handed off the CR o
// with err: the CR's handle ends with it, unless the call failed.
func crEnded(o *obj, err error) C.DAT_RETURN {
	if err != nil {
		return ret(err)
	}
	release(o)
	return success
}
