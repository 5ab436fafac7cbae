//go:build verbs && cgo && (race || godat_cgocall)

package verbs

/*
#include "shim.h"
*/
import "C"

// The data path's calls into rdma-core as ordinary cgo calls (see
// fastcall.go): for the race detector, which models a cgo call as a
// synchronization point and would not see the direct calls as one, and
// for builds with -tags godat_cgocall.

func postSend(qp *C.struct_ibv_qp, wrID C.uint64_t, opcode, flags C.int, sg *C.struct_ibv_sge, n C.int, raddr C.uint64_t, rkey C.uint32_t, inv bool) C.int {
	if inv {
		return C.gd_post_send_inv(qp, wrID, flags, sg, n, rkey)
	}
	return C.gd_post_send(qp, wrID, opcode, flags, sg, n, raddr, rkey)
}

func postRecv(qp *C.struct_ibv_qp, srq *C.struct_ibv_srq, wrID C.uint64_t, sg *C.struct_ibv_sge, n C.int) C.int {
	if qp == nil {
		return C.gd_srq_post(srq, wrID, sg, n)
	}
	return C.gd_post_recv(qp, wrID, sg, n)
}

func pollCQ(cq *C.struct_ibv_cq, n C.int, wc *C.struct_ibv_wc) C.int {
	return C.gd_poll_cq(cq, n, wc)
}
