//go:build cabi

package main

/*
#include "cabi.h"
*/
import "C"

import (
	"context"
	"strconv"
	"sync"
	"unsafe"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
	_ "github.com/godat/godat/registry/all" // the built-in providers
)

// iaObj is an open IA with what the C program was given for it.
type iaObj struct {
	obj     *obj
	ia      api.IA
	async   *obj
	prov    *C.DAT_PROVIDER // the provider table its handles point at
	addr    unsafe.Pointer  // the IA's address (sockaddr), valid until close
	maxRDMA uint32
	maxMsg  uint32
	attrMu  sync.Mutex             // guards named once made
	lastWQE firsts[unsafe.Pointer] // EPs whose last-WQE event is due (takeLastWQE)
	named   struct {
		transport, vendor, provider []C.DAT_NAMED_ATTR
		tp, vp, pp                  *C.DAT_NAMED_ATTR
		made                        bool
	}
}

//export go_ia_open
func go_ia_open(name *C.char, qlen C.DAT_COUNT, asyncEVD *C.DAT_EVD_HANDLE, iaOut *C.DAT_IA_HANDLE, prov *C.DAT_PROVIDER) C.DAT_RETURN {
	if name == nil {
		return badArg(1)
	}
	if asyncEVD == nil {
		return badArg(3)
	}
	if iaOut == nil {
		return badArg(4)
	}
	var opts []registry.OpenOption
	if qlen > 0 {
		opts = append(opts, registry.WithAsyncEVDQLen(int(qlen)))
	}
	ia, err := registry.Open(context.Background(), C.GoString(name), opts...)
	if err != nil {
		return ret(err)
	}
	o, ok := register(api.HandleIA, ia, nil, prov)
	if !ok {
		ia.Close(api.CloseAbrupt)
		return noCMem
	}
	x := &iaObj{obj: o, ia: ia, prov: prov}
	o.ia = x
	if x.addr = o.alloc(addrSize); x.addr == nil {
		ia.Close(api.CloseAbrupt)
		release(o)
		return noCMem
	}
	if ev, err := ia.AsyncEVD(); err == nil {
		if x.async, ok = register(api.HandleEVD, ev, x, nil); !ok {
			ia.Close(api.CloseAbrupt)
			release(o)
			return noCMem
		}
	}
	attr, _, err := ia.Query()
	if err == nil {
		x.maxRDMA, x.maxMsg = attr.MaxRDMASize, attr.MaxMessageSize
		putAddr(x.addr, attr.Address)
	}
	if x.async != nil {
		*asyncEVD = C.DAT_EVD_HANDLE(x.async.h)
	}
	*iaOut = C.DAT_IA_HANDLE(o.h)
	return success
}

func iaOf(h unsafe.Pointer) *iaObj {
	var a args
	return a.ia(h)
}

//export go_ia_close
func go_ia_close(h unsafe.Pointer, flags C.DAT_CLOSE_FLAGS) C.DAT_RETURN {
	x := iaOf(h)
	if x == nil {
		return badHandle(api.HandleIA)
	}
	if err := x.ia.Close(api.CloseFlags(flags)); err != nil {
		return ret(err)
	}
	x.obj.mu.Lock()
	kids := make([]*obj, 0, len(x.obj.kids))
	for k := range x.obj.kids {
		kids = append(kids, k)
	}
	x.obj.mu.Unlock()
	for _, k := range kids {
		release(k)
	}
	release(x.obj)
	return success
}

//export go_ia_query
func go_ia_query(h unsafe.Pointer, asyncEVD *C.DAT_EVD_HANDLE, iaMask C.DAT_IA_ATTR_MASK, ia *C.DAT_IA_ATTR,
	prMask C.DAT_PROVIDER_ATTR_MASK, pr *C.DAT_PROVIDER_ATTR) C.DAT_RETURN {
	x := iaOf(h)
	if x == nil {
		return badHandle(api.HandleIA)
	}
	a, p, err := x.ia.Query()
	if err != nil {
		return ret(err)
	}
	if asyncEVD != nil && x.async != nil {
		*asyncEVD = C.DAT_EVD_HANDLE(x.async.h)
	}
	if !x.namedAttrs(a, p) {
		return noCMem
	}
	if ia != nil && iaMask != 0 {
		fillIAAttr(x, ia, a)
	}
	if pr != nil && prMask != 0 {
		fillProviderAttr(x, pr, p)
	}
	return success
}

// ofaProviderAttrs are provider attributes OFA's providers report and
// dapl2-utils programs test before they run a phase (docs/cabi.md).
var ofaProviderAttrs = []api.NamedAttr{
	{Name: "DAT_IB_RDMA_READ", Value: "TRUE"},
	{Name: "DAT_IB_TRANSPORT_MTU", Value: "4096"},
}

// namedAttrs makes the C copies of the IA's named attributes at the first
// query that asks, and reports false, with nothing made, when their C
// memory could not be allocated.
func (x *iaObj) namedAttrs(a api.IAAttr, p api.ProviderAttr) bool {
	x.attrMu.Lock()
	defer x.attrMu.Unlock()
	if x.named.made {
		return true
	}
	var b cbatch
	mk := func(list []api.NamedAttr) (*C.DAT_NAMED_ATTR, int) {
		if len(list) == 0 {
			return nil, 0
		}
		arr := (*C.DAT_NAMED_ATTR)(b.alloc(len(list) * int(unsafe.Sizeof(C.DAT_NAMED_ATTR{}))))
		if arr == nil {
			return nil, 0
		}
		s := unsafe.Slice(arr, len(list))
		for i, na := range list {
			n := b.alloc(len(na.Name) + 1)
			v := b.alloc(len(na.Value) + 1)
			if n == nil || v == nil {
				return nil, 0
			}
			copy(unsafe.Slice((*byte)(n), len(na.Name)), na.Name)
			copy(unsafe.Slice((*byte)(v), len(na.Value)), na.Value)
			s[i].name, s[i].value = (*C.char)(n), (*C.char)(v)
		}
		return arr, len(list)
	}
	var n int
	x.named.tp, n = mk(a.TransportAttrs)
	x.named.transport = unsafe.Slice(x.named.tp, n)
	x.named.vp, n = mk(a.VendorAttrs)
	x.named.vendor = unsafe.Slice(x.named.vp, n)
	pa := append([]api.NamedAttr(nil), p.ProviderSpecific...)
	for _, extra := range ofaProviderAttrs {
		found := false
		for _, have := range pa {
			found = found || have.Name == extra.Name
		}
		if !found {
			pa = append(pa, extra)
		}
	}
	x.named.pp, n = mk(pa)
	x.named.provider = unsafe.Slice(x.named.pp, n)
	if !b.keep(x.obj) {
		x.named.transport, x.named.vendor, x.named.provider = nil, nil, nil
		x.named.tp, x.named.vp, x.named.pp = nil, nil, nil
		return false
	}
	x.named.made = true
	return true
}

func count(n int) C.DAT_COUNT {
	if n > 1<<31-1 {
		return 1<<31 - 1
	}
	return C.DAT_COUNT(n)
}

func fillIAAttr(x *iaObj, c *C.DAT_IA_ATTR, a api.IAAttr) {
	*c = C.DAT_IA_ATTR{}
	putName(&c.adapter_name[0], a.AdapterName)
	putName(&c.vendor_name[0], a.VendorName)
	c.hardware_version_major = C.DAT_UINT32(a.HardwareVersionMajor)
	c.hardware_version_minor = C.DAT_UINT32(a.HardwareVersionMinor)
	c.firmware_version_major = C.DAT_UINT32(a.FirmwareVersionMajor)
	c.firmware_version_minor = C.DAT_UINT32(a.FirmwareVersionMinor)
	c.ia_address_ptr = C.DAT_IA_ADDRESS_PTR(x.addr)
	c.max_eps = count(a.MaxEPs)
	c.max_dto_per_ep = count(a.MaxDTOPerEP)
	c.max_rdma_read_per_ep_in = count(a.MaxRDMAReadPerEPIn)
	c.max_rdma_read_per_ep_out = count(a.MaxRDMAReadPerEPOut)
	c.max_evds = count(a.MaxEVDs)
	c.max_evd_qlen = count(a.MaxEVDQLen)
	c.max_iov_segments_per_dto = count(a.MaxIOVSegmentsPerDTO)
	c.max_lmrs = count(a.MaxLMRs)
	blk := a.MaxLMRBlockSize
	if blk > 1<<32-1 {
		blk = 1<<32 - 1
	}
	c.max_lmr_block_size = C.DAT_SEG_LENGTH(blk)
	c.max_lmr_virtual_address = C.DAT_VADDR(a.MaxLMRVirtualAddress)
	c.max_pzs = count(a.MaxPZs)
	c.max_message_size = C.DAT_SEG_LENGTH(a.MaxMessageSize)
	c.max_rdma_size = C.DAT_SEG_LENGTH(a.MaxRDMASize)
	c.max_rmrs = count(a.MaxRMRs)
	c.max_rmr_target_address = C.DAT_VADDR(a.MaxRMRTargetAddress)
	c.max_srqs = count(a.MaxSRQs)
	c.max_ep_per_srq = count(a.MaxEPPerSRQ)
	c.max_recv_per_srq = count(a.MaxRecvPerSRQ)
	c.max_iov_segments_per_rdma_read = count(a.MaxIOVSegmentsPerRDMARead)
	c.max_iov_segments_per_rdma_write = count(a.MaxIOVSegmentsPerRDMAWrite)
	c.max_rdma_read_in = count(a.MaxRDMAReadIn)
	c.max_rdma_read_out = count(a.MaxRDMAReadOut)
	c.max_rdma_read_per_ep_in_guaranteed = boolean(a.MaxRDMAReadPerEPInGuaranteed)
	c.max_rdma_read_per_ep_out_guaranteed = boolean(a.MaxRDMAReadPerEPOutGuaranteed)
	c.zb_supported = boolean(a.ZBSupported)
	c.extension_supported = C.DAT_EXTENSION_NONE
	c.num_transport_attr = C.DAT_COUNT(len(x.named.transport))
	c.transport_attr = x.named.tp
	c.num_vendor_attr = C.DAT_COUNT(len(x.named.vendor))
	c.vendor_attr = x.named.vp
}

func fillProviderAttr(x *iaObj, c *C.DAT_PROVIDER_ATTR, p api.ProviderAttr) {
	*c = C.DAT_PROVIDER_ATTR{}
	putName(&c.provider_name[0], p.ProviderName)
	c.provider_version_major = C.DAT_UINT32(p.ProviderVersionMajor)
	c.provider_version_minor = C.DAT_UINT32(p.ProviderVersionMinor)
	c.dapl_version_major = C.DAT_UINT32(p.DAPLVersionMajor)
	c.dapl_version_minor = C.DAT_UINT32(p.DAPLVersionMinor)
	c.lmr_mem_types_supported = C.DAT_MEM_TYPE(p.LMRMemTypesSupported)
	c.iov_ownership_on_return = C.DAT_IOV_OWNERSHIP(p.IOVOwnershipOnReturn)
	c.dat_qos_supported = C.DAT_QOS(p.QOSSupported)
	c.completion_flags_supported = C.DAT_COMPLETION_FLAGS(p.CompletionFlagsSupported)
	c.is_thread_safe = boolean(p.ThreadSafe)
	c.max_private_data_size = count(p.MaxPrivateDataSize)
	c.supports_multipath = boolean(p.SupportsMultipath)
	c.ep_creator = C.DAT_EP_CREATOR_FOR_PSP(p.EPCreator)
	c.pz_support = C.DAT_PZ_SUPPORT(p.PZSupport)
	c.optimal_buffer_alignment = C.DAT_UINT32(p.OptimalBufferAlignment)
	// Every stream may share an EVD with every other in godat.
	merge := (*[6][6]C.DAT_BOOLEAN)(unsafe.Pointer(&c.evd_stream_merging_supported))
	for i := range merge {
		for j := range merge[i] {
			merge[i][j] = C.DAT_TRUE
		}
	}
	c.srq_supported = boolean(p.SRQSupported)
	c.srq_watermarks_supported = C.DAT_COUNT(p.SRQWatermarksSupported)
	c.srq_ep_pz_difference_supported = boolean(p.SRQEPPZDifferenceSupported)
	c.srq_info_supported = C.DAT_COUNT(p.SRQInfoSupported)
	c.ep_recv_info_supported = C.DAT_COUNT(p.EPRecvInfoSupported)
	c.lmr_sync_req = boolean(p.LMRSyncRequired)
	c.dto_async_return_guaranteed = boolean(p.DTOAsyncReturnGuaranteed)
	c.rdma_write_for_rdma_read_req = boolean(p.RDMAWriteForRDMAReadRequired)
	c.rdma_read_lmr_rmr_context_exposure = boolean(p.RDMAReadLMRRMRContextExposure)
	c.rmr_scope_supported = C.DAT_RMR_SCOPE(p.RMRScopeSupported)
	c.is_signal_safe = boolean(p.SignalSafe)
	c.ha_supported = boolean(p.HASupported)
	c.num_provider_specific_attr = C.DAT_COUNT(len(x.named.provider))
	c.provider_specific_attr = x.named.pp
}

//export go_pz_create
func go_pz_create(h unsafe.Pointer, out *C.DAT_PZ_HANDLE) C.DAT_RETURN {
	var a args
	x := a.ia(h)
	a.arg(out != nil, 2)
	if a.r != success {
		return a.r
	}
	pz, err := x.ia.CreatePZ()
	return hand(x, api.HandlePZ, pz, err, func(o *obj) { *out = C.DAT_PZ_HANDLE(o.h) })
}

// hand answers a call that made v, an object of kind k in x, or failed to
// with err: it registers v and gives its handle to the caller; if no handle
// is left the object is freed again.
func hand(x *iaObj, k api.HandleType, v api.Object, err error, give func(*obj)) C.DAT_RETURN {
	if err != nil {
		return ret(err)
	}
	o, ok := register(k, v, x, nil)
	if !ok {
		if f, ok := v.(interface{ Free() error }); ok {
			f.Free()
		}
		return noCMem
	}
	give(o)
	return success
}

//export go_pz_query
func go_pz_query(h unsafe.Pointer, mask C.DAT_PZ_PARAM_MASK, p *C.DAT_PZ_PARAM) C.DAT_RETURN {
	var a args
	o := a.obj(h, api.HandlePZ)
	a.arg(p != nil, 3)
	if a.r != success {
		return a.r
	}
	p.ia_handle = C.DAT_IA_HANDLE(o.ia.obj.h)
	return success
}

// go_free frees the object h names if it is of kind k
// (dat_{cno,evd,ep,lmr,rmr,psp,rsp,pz,srq}_free).
//
//export go_free
func go_free(h unsafe.Pointer, k C.uint32_t) C.DAT_RETURN {
	kind := api.HandleType(k)
	o := lookup(h, kind)
	if o == nil {
		return badHandle(kind)
	}
	f, ok := o.v.(interface{ Free() error })
	if !ok {
		return badHandle(kind)
	}
	if err := f.Free(); err != nil {
		return ret(err)
	}
	release(o)
	return success
}

//export go_set_consumer_context
func go_set_consumer_context(h unsafe.Pointer, v C.uint64_t) C.DAT_RETURN {
	o := lookupAny(h)
	if o == nil {
		return code(api.InvalidHandle, api.NoSubtype)
	}
	return ret(o.v.SetConsumerContext(uint64(v)))
}

//export go_get_consumer_context
func go_get_consumer_context(h unsafe.Pointer, out *C.uint64_t) C.DAT_RETURN {
	var a args
	o := a.anyObj(h)
	a.arg(out != nil, 2)
	if a.r != success {
		return a.r
	}
	v, err := o.v.ConsumerContext()
	if err != nil {
		return ret(err)
	}
	u, _ := v.(uint64)
	*out = C.uint64_t(u)
	return success
}

//export go_get_handle_type
func go_get_handle_type(h unsafe.Pointer, out *C.uint32_t) C.DAT_RETURN {
	var a args
	o := a.anyObj(h)
	a.arg(out != nil, 2)
	if a.r != success {
		return a.r
	}
	*out = C.uint32_t(o.kind)
	return success
}

//export go_registry_list
func go_registry_list(max C.DAT_COUNT, n *C.DAT_COUNT, list **C.DAT_PROVIDER_INFO) C.DAT_RETURN {
	if n == nil {
		return badArg(2)
	}
	infos, err := registry.ListProviders()
	if err != nil {
		return ret(err)
	}
	// A list too small for the registry fails, and says how many entries
	// it would take (dat_registry_list_providers(3DAT)).
	if list == nil || int(max) < len(infos) {
		*n = C.DAT_COUNT(len(infos))
		if list == nil {
			return badArg(3)
		}
		return badArg(1)
	}
	out := unsafe.Slice(list, int(max))
	k := 0
	for _, in := range infos {
		if k == int(max) {
			break
		}
		if out[k] == nil {
			continue
		}
		putName(&out[k].ia_name[0], in.IAName)
		maj, min := 2, 0
		if v := in.APIVersion; len(v) >= 4 && v[0] == 'u' {
			if d, err := strconv.Atoi(v[1:2]); err == nil {
				maj = d
			}
			if d, err := strconv.Atoi(v[3:]); err == nil {
				min = d
			}
		}
		out[k].dapl_version_major = C.DAT_UINT32(maj)
		out[k].dapl_version_minor = C.DAT_UINT32(min)
		out[k].is_thread_safe = boolean(in.ThreadSafe)
		k++
	}
	*n = C.DAT_COUNT(k)
	return success
}

//export go_extension_op
func go_extension_op(h unsafe.Pointer, op C.DAT_EXTENDED_OP) C.DAT_RETURN {
	if lookupAny(h) == nil {
		return code(api.InvalidHandle, api.NoSubtype)
	}
	return code(api.NotImplemented, api.NoSubtype)
}
