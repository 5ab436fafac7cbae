//go:build verbs && cgo && !race && !godat_cgocall

package verbs

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"
)

// The data path's calls into rdma-core (posting a request or a receive,
// polling a CQ) are direct calls: they run the C function on the calling
// thread's system stack without cgo's entry into and exit from the
// scheduler's system-call state. See "Calls into rdma-core" in the
// package documentation for why and for what it requires of the
// functions; fastcall_cgo.go has the same calls through cgo, for the race
// detector and for the godat_cgocall build tag.

// asmcgocall runs fn(arg) on the current thread's system stack and
// returns when fn does; the goroutine keeps its P meanwhile. It is the Go
// runtime's own primitive under cgo calls (runtime/asm_amd64.s and the
// other ports), not an exported API: a Go release that drops it breaks
// this build at link time, and -tags godat_cgocall is the way around.
//
//go:linkname asmcgocall runtime.asmcgocall
//go:noescape
func asmcgocall(fn, arg unsafe.Pointer) int32

// postSend posts a send or RDMA request, or with inv a send-with-invalidate
// of rkey; it returns ibv_post_send's result.
func postSend(qp *C.struct_ibv_qp, wrID C.uint64_t, opcode, flags C.int, sg *C.struct_ibv_sge, n C.int, raddr C.uint64_t, rkey C.uint32_t, inv bool) C.int {
	a := C.struct_gd_send_call{qp: qp, sg: sg, wr_id: wrID, raddr: raddr, opcode: opcode, flags: flags, n: n, rkey: rkey}
	if inv {
		a.inv = 1
	}
	asmcgocall(unsafe.Pointer(C.gd_post_send_call), unsafe.Pointer(&a))
	return a.rc
}

// postRecv posts a receive on qp, or on srq if qp is nil; it returns
// ibv_post_recv's or ibv_post_srq_recv's result.
func postRecv(qp *C.struct_ibv_qp, srq *C.struct_ibv_srq, wrID C.uint64_t, sg *C.struct_ibv_sge, n C.int) C.int {
	a := C.struct_gd_recv_call{qp: qp, srq: srq, sg: sg, wr_id: wrID, n: n}
	asmcgocall(unsafe.Pointer(C.gd_post_recv_call), unsafe.Pointer(&a))
	return a.rc
}

// pollCQ takes up to n completions of cq into wc (C memory); it returns
// ibv_poll_cq's result.
func pollCQ(cq *C.struct_ibv_cq, n C.int, wc *C.struct_ibv_wc) C.int {
	a := C.struct_gd_poll_call{cq: cq, wc: wc, n: n}
	asmcgocall(unsafe.Pointer(C.gd_poll_cq_call), unsafe.Pointer(&a))
	return a.rc
}
