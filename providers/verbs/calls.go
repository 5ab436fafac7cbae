//go:build verbs && cgo

package verbs

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"
)

// The data path's calls into rdma-core (posting a request or a receive,
// polling a CQ) each fill an argument block for a gd_*_call function of
// shim.c and run it through callC: a direct call in ordinary builds
// (fastcall.go), a cgo call in race builds and with -tags godat_cgocall
// (fastcall_cgo.go). See "Calls into rdma-core" in the package
// documentation.

// postSend posts a send or RDMA request, or with inv a send-with-invalidate
// of rkey; it returns ibv_post_send's result.
func postSend(qp *C.struct_ibv_qp, wrID C.uint64_t, opcode, flags C.int, sg *C.struct_ibv_sge, n C.int, raddr C.uint64_t, rkey C.uint32_t, inv bool) C.int {
	a := C.struct_gd_send_call{qp: qp, sg: sg, wr_id: wrID, raddr: raddr, opcode: opcode, flags: flags, n: n, rkey: rkey}
	if inv {
		a.inv = 1
	}
	callC(C.gd_post_send_call, unsafe.Pointer(&a))
	return a.rc
}

// postRecv posts a receive on qp, or on srq if qp is nil; it returns
// ibv_post_recv's or ibv_post_srq_recv's result.
func postRecv(qp *C.struct_ibv_qp, srq *C.struct_ibv_srq, wrID C.uint64_t, sg *C.struct_ibv_sge, n C.int) C.int {
	a := C.struct_gd_recv_call{qp: qp, srq: srq, sg: sg, wr_id: wrID, n: n}
	callC(C.gd_post_recv_call, unsafe.Pointer(&a))
	return a.rc
}

// pollCQ takes up to n completions of cq into wc (C memory); it returns
// ibv_poll_cq's result.
func pollCQ(cq *C.struct_ibv_cq, n C.int, wc *C.struct_ibv_wc) C.int {
	a := C.struct_gd_poll_call{cq: cq, wc: wc, n: n}
	callC(C.gd_poll_cq_call, unsafe.Pointer(&a))
	return a.rc
}
