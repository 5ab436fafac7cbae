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

func epAttrFromC(x *iaObj, c *C.DAT_EP_ATTR) *api.EPAttr {
	if c == nil {
		return nil
	}
	a := &api.EPAttr{
		ServiceType:            api.ServiceType(c.service_type),
		MaxMessageSize:         uint32(c.max_message_size),
		MaxRDMASize:            uint32(c.max_rdma_size),
		QOS:                    api.QOS(c.qos),
		RecvCompletionFlags:    api.CompletionFlags(c.recv_completion_flags),
		RequestCompletionFlags: api.CompletionFlags(c.request_completion_flags),
		MaxRecvDTOs:            int(c.max_recv_dtos),
		MaxRequestDTOs:         int(c.max_request_dtos),
		MaxRecvIOV:             int(c.max_recv_iov),
		MaxRequestIOV:          int(c.max_request_iov),
		MaxRDMAReadIn:          int(c.max_rdma_read_in),
		MaxRDMAReadOut:         int(c.max_rdma_read_out),
		SRQSoftHighWatermark:   int(c.srq_soft_hw),
		MaxRDMAReadIOV:         int(c.max_rdma_read_iov),
		MaxRDMAWriteIOV:        int(c.max_rdma_write_iov),
	}
	// OFA DAPL does not enforce the sizes an EP asks for and programs
	// rely on it (dtest asks for 64 KiB RDMA and writes 4 MiB): the EP
	// gets the IA's limits (docs/cabi.md).
	if x.maxRDMA > a.MaxRDMASize {
		a.MaxRDMASize = x.maxRDMA
	}
	if x.maxMsg > a.MaxMessageSize {
		a.MaxMessageSize = x.maxMsg
	}
	if c.srq_soft_hw == C.DAT_COUNT(C.DAT_HW_DEFAULT) {
		a.SRQSoftHighWatermark = api.WatermarkInfinite
	}
	return a
}

func epAttrToC(a *api.EPAttr, c *C.DAT_EP_ATTR) {
	c.service_type = C.DAT_SERVICE_TYPE(a.ServiceType)
	c.max_message_size = C.DAT_SEG_LENGTH(a.MaxMessageSize)
	c.max_rdma_size = C.DAT_SEG_LENGTH(a.MaxRDMASize)
	c.qos = C.DAT_QOS(a.QOS)
	c.recv_completion_flags = C.DAT_COMPLETION_FLAGS(a.RecvCompletionFlags)
	c.request_completion_flags = C.DAT_COMPLETION_FLAGS(a.RequestCompletionFlags)
	c.max_recv_dtos = count(a.MaxRecvDTOs)
	c.max_request_dtos = count(a.MaxRequestDTOs)
	c.max_recv_iov = count(a.MaxRecvIOV)
	c.max_request_iov = count(a.MaxRequestIOV)
	c.max_rdma_read_in = count(a.MaxRDMAReadIn)
	c.max_rdma_read_out = count(a.MaxRDMAReadOut)
	c.srq_soft_hw = C.DAT_COUNT(a.SRQSoftHighWatermark)
	c.max_rdma_read_iov = count(a.MaxRDMAReadIOV)
	c.max_rdma_write_iov = count(a.MaxRDMAWriteIOV)
	c.ep_transport_specific_count = 0
	c.ep_transport_specific = nil
	c.ep_provider_specific_count = 0
	c.ep_provider_specific = nil
}

//export go_ep_create
func go_ep_create(h, pzH, recvH, reqH, connH, srqH unsafe.Pointer, attr *C.DAT_EP_ATTR, out *C.DAT_EP_HANDLE) C.DAT_RETURN {
	var a args
	x := a.ia(h)
	a.arg(out != nil, 7)
	pz := a.obj(pzH, api.HandlePZ)
	recv, req, conn := a.optEVD(recvH, api.SubHandleEVDRecv), a.optEVD(reqH, api.SubHandleEVDRequest), a.optEVD(connH, api.SubHandleEVDConn)
	var srq *obj
	if srqH != nil {
		srq = a.obj(srqH, api.HandleSRQ)
	}
	if a.r != success {
		return a.r
	}
	ea := epAttrFromC(x, attr)
	var ep api.EP
	var err error
	if srq != nil {
		ep, err = x.ia.CreateEPWithSRQ(pz.v.(api.PZ), recv, req, conn, srq.v.(api.SRQ), ea)
	} else {
		ep, err = x.ia.CreateEP(pz.v.(api.PZ), recv, req, conn, ea)
	}
	return hand(x, api.HandleEP, ep, err, func(o *obj) { o.srq = srqH != nil; *out = C.DAT_EP_HANDLE(o.h) })
}

func epOf(h unsafe.Pointer) (*obj, api.EP) {
	o := lookup(h, api.HandleEP)
	if o == nil {
		return nil, nil
	}
	return o, o.v.(api.EP)
}

// epAddrs is the C memory of an EP's local and remote addresses, made at
// its first query and kept until it is freed.
type epAddrs struct{ local, remote unsafe.Pointer }

//export go_ep_query
func go_ep_query(h unsafe.Pointer, mask C.DAT_EP_PARAM_MASK, p *C.DAT_EP_PARAM) C.DAT_RETURN {
	return query[api.EP](h, api.HandleEP, p, func(o *obj, q api.EPParam, p *C.DAT_EP_PARAM) bool {
		a := o.epAddrs()
		if a == nil {
			return false
		}
		putAddr(a.local, q.LocalAddr)
		putAddr(a.remote, q.RemoteAddr)
		p.ia_handle = C.DAT_IA_HANDLE(o.ia.obj.h)
		p.ep_state = C.DAT_EP_STATE(q.State)
		p.local_ia_address_ptr = C.DAT_IA_ADDRESS_PTR(a.local)
		p.local_port_qual = C.DAT_PORT_QUAL(q.LocalPortQual)
		p.remote_ia_address_ptr = C.DAT_IA_ADDRESS_PTR(a.remote)
		p.remote_port_qual = C.DAT_PORT_QUAL(q.RemotePortQual)
		p.pz_handle = C.DAT_PZ_HANDLE(handleOf(q.PZ))
		p.recv_evd_handle = C.DAT_EVD_HANDLE(handleOf(q.RecvEVD))
		p.request_evd_handle = C.DAT_EVD_HANDLE(handleOf(q.RequestEVD))
		p.connect_evd_handle = C.DAT_EVD_HANDLE(handleOf(q.ConnectEVD))
		p.srq_handle = C.DAT_SRQ_HANDLE(handleOf(q.SRQ))
		epAttrToC(&q.Attr, &p.ep_attr)
		return true
	})
}

// epAddrs returns the C memory of the addresses of the EP o, made at its
// first query, or nil if it could not be allocated.
func (o *obj) epAddrs() *epAddrs {
	o.mu.Lock()
	if o.addrs == nil {
		o.mu.Unlock()
		var b cbatch
		a := &epAddrs{local: b.alloc(addrSize), remote: b.alloc(addrSize)}
		if !b.keep(o) {
			return nil
		}
		o.mu.Lock()
		if o.addrs == nil {
			o.addrs = a
		}
	}
	a := o.addrs
	o.mu.Unlock()
	return a
}

//export go_ep_modify
func go_ep_modify(h unsafe.Pointer, mask C.DAT_EP_PARAM_MASK, p *C.DAT_EP_PARAM) C.DAT_RETURN {
	var a args
	o := a.obj(h, api.HandleEP)
	a.arg(p != nil, 3)
	if a.r != success {
		return a.r
	}
	m := api.EPParamMask(mask)
	var q api.EPParam
	if m&api.EPFieldPZ != 0 {
		if z := a.obj(unsafe.Pointer(p.pz_handle), api.HandlePZ); z != nil {
			q.PZ = z.v.(api.PZ)
		}
	}
	if m&api.EPFieldRecvEVD != 0 {
		q.RecvEVD = a.optEVD(unsafe.Pointer(p.recv_evd_handle), api.SubHandleEVDRecv)
	}
	if m&api.EPFieldRequestEVD != 0 {
		q.RequestEVD = a.optEVD(unsafe.Pointer(p.request_evd_handle), api.SubHandleEVDRequest)
	}
	if m&api.EPFieldConnectEVD != 0 {
		q.ConnectEVD = a.optEVD(unsafe.Pointer(p.connect_evd_handle), api.SubHandleEVDConn)
	}
	if a.r != success {
		return a.r
	}
	q.LocalPortQual = api.ConnQual(p.local_port_qual)
	q.RemotePortQual = api.ConnQual(p.remote_port_qual)
	q.Attr = *epAttrFromC(o.ia, &p.ep_attr)
	if m&api.EPFieldMaxRDMASize != 0 {
		q.Attr.MaxRDMASize = uint32(p.ep_attr.max_rdma_size)
	}
	if m&api.EPFieldMaxMessageSize != 0 {
		q.Attr.MaxMessageSize = uint32(p.ep_attr.max_message_size)
	}
	return ret(o.v.(api.EP).Modify(m, &q))
}

//export go_ep_connect
func go_ep_connect(h unsafe.Pointer, sa *C.struct_sockaddr, q C.DAT_CONN_QUAL, t C.DAT_TIMEOUT, n C.DAT_COUNT, pd unsafe.Pointer,
	qos C.DAT_QOS, flags C.DAT_CONNECT_FLAGS) C.DAT_RETURN {
	o, ep := epOf(h)
	if o == nil {
		return badHandle(api.HandleEP)
	}
	addr, ok := goAddr(sa)
	if !ok {
		return code(api.InvalidAddress, api.SubAddressUnsupported)
	}
	if n < 0 || (n > 0 && pd == nil) {
		return badArg(5)
	}
	data := cbytes(pd, n)
	return ret(withQual(q, func(q api.ConnQual) error {
		return ep.Connect(addr, q, timeout(t), data, api.QOS(qos), api.ConnectFlags(flags))
	}))
}

//export go_ep_dup_connect
func go_ep_dup_connect(h, dupH unsafe.Pointer, t C.DAT_TIMEOUT, n C.DAT_COUNT, pd unsafe.Pointer, qos C.DAT_QOS) C.DAT_RETURN {
	var a args
	o, dup := a.obj(h, api.HandleEP), a.obj(dupH, api.HandleEP)
	a.counted(n, pd, 4)
	if a.r != success {
		return a.r
	}
	return ret(o.v.(api.EP).DupConnect(dup.v.(api.EP), timeout(t), cbytes(pd, n), api.QOS(qos)))
}

//export go_ep_disconnect
func go_ep_disconnect(h unsafe.Pointer, flags C.DAT_CLOSE_FLAGS) C.DAT_RETURN {
	o, ep := epOf(h)
	if o == nil {
		return badHandle(api.HandleEP)
	}
	return ret(ep.Disconnect(api.CloseFlags(flags)))
}

//export go_ep_reset
func go_ep_reset(h unsafe.Pointer) C.DAT_RETURN {
	o, ep := epOf(h)
	if o == nil {
		return badHandle(api.HandleEP)
	}
	return ret(ep.Reset())
}

//export go_ep_get_status
func go_ep_get_status(h unsafe.Pointer, state, recvIdle, reqIdle *C.uint32_t) C.DAT_RETURN {
	o, ep := epOf(h)
	if o == nil {
		return badHandle(api.HandleEP)
	}
	s, ri, qi, err := ep.GetStatus()
	if err != nil {
		return ret(err)
	}
	if state != nil {
		*state = C.uint32_t(s)
	}
	if recvIdle != nil {
		*recvIdle = C.uint32_t(boolean(ri))
	}
	if reqIdle != nil {
		*reqIdle = C.uint32_t(boolean(qi))
	}
	return success
}

//export go_ep_recv_query
func go_ep_recv_query(h unsafe.Pointer, n, span *C.DAT_COUNT) C.DAT_RETURN {
	o, ep := epOf(h)
	if o == nil {
		return badHandle(api.HandleEP)
	}
	a, b, err := ep.RecvQuery()
	if err != nil {
		return ret(err)
	}
	if n != nil {
		*n = count(a)
	}
	if span != nil {
		*span = count(b)
	}
	return success
}

//export go_ep_set_watermark
func go_ep_set_watermark(h unsafe.Pointer, soft, hard C.DAT_COUNT) C.DAT_RETURN {
	o, ep := epOf(h)
	if o == nil {
		return badHandle(api.HandleEP)
	}
	return ret(ep.SetWatermark(int(soft), int(hard)))
}

// triplets views a C DAT_LMR_TRIPLET array as godat triplets: the two
// layouts are the same (checked by TestLayouts), and providers copy the
// slice before a post returns.
func triplets(iov *C.DAT_LMR_TRIPLET, n C.DAT_COUNT) []api.LMRTriplet {
	if iov == nil || n <= 0 {
		return nil
	}
	return unsafe.Slice((*api.LMRTriplet)(unsafe.Pointer(iov)), int(n))
}

// post kinds, as shim.c passes them.
const (
	postSend = iota
	postWrite
	postRead
	postRecv
)

// postArgs checks the arguments of a post: h, an EP handle, and its I/O
// vector of n entries at iov (argument 2).
func postArgs(h unsafe.Pointer, n C.DAT_COUNT, iov *C.DAT_LMR_TRIPLET) (api.EP, C.DAT_RETURN) {
	var a args
	o := a.obj(h, api.HandleEP)
	a.counted(n, unsafe.Pointer(iov), 2)
	if a.r != success {
		return nil, a.r
	}
	return o.v.(api.EP), success
}

//export go_ep_post
func go_ep_post(h unsafe.Pointer, kind C.int, n C.DAT_COUNT, iov *C.DAT_LMR_TRIPLET, cookie C.uint64_t,
	remote *C.DAT_RMR_TRIPLET, flags C.DAT_COMPLETION_FLAGS) C.DAT_RETURN {
	ep, rc := postArgs(h, n, iov)
	if rc != success {
		return rc
	}
	segs := triplets(iov, n)
	f := api.CompletionFlags(flags)
	switch kind {
	case postSend:
		return ret(ep.PostSend(segs, api.Cookie(cookie), f))
	case postRecv:
		return ret(ep.PostRecv(segs, api.Cookie(cookie), f))
	}
	if remote == nil {
		return badArg(5)
	}
	r := *(*api.RMRTriplet)(unsafe.Pointer(remote))
	if kind == postWrite {
		return ret(ep.PostRDMAWrite(segs, api.Cookie(cookie), r, f))
	}
	return ret(ep.PostRDMARead(segs, api.Cookie(cookie), r, f))
}

//export go_ep_post_send_inv
func go_ep_post_send_inv(h unsafe.Pointer, n C.DAT_COUNT, iov *C.DAT_LMR_TRIPLET, cookie C.uint64_t, flags C.DAT_COMPLETION_FLAGS,
	inv C.DAT_BOOLEAN, rmr C.DAT_RMR_CONTEXT) C.DAT_RETURN {
	ep, rc := postArgs(h, n, iov)
	if rc != success {
		return rc
	}
	return ret(ep.PostSendWithInvalidate(triplets(iov, n), api.Cookie(cookie), api.CompletionFlags(flags), inv != 0, api.RMRContext(rmr)))
}

//export go_ep_post_read_to_rmr
func go_ep_post_read_to_rmr(h unsafe.Pointer, local *C.DAT_RMR_TRIPLET, cookie C.uint64_t, remote *C.DAT_RMR_TRIPLET, flags C.DAT_COMPLETION_FLAGS) C.DAT_RETURN {
	var a args
	o := a.obj(h, api.HandleEP)
	a.arg(local != nil, 2)
	a.arg(remote != nil, 4)
	if a.r != success {
		return a.r
	}
	l := *(*api.RMRTriplet)(unsafe.Pointer(local))
	r := *(*api.RMRTriplet)(unsafe.Pointer(remote))
	return ret(o.v.(api.EP).PostRDMAReadToRMR(l, api.Cookie(cookie), r, api.CompletionFlags(flags)))
}
