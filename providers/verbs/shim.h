// The C side of package verbs: small wrappers around rdma-core calls that
// are macros or inline functions in its headers (cgo cannot call those),
// and helpers that would take several cgo calls each from Go.
#ifndef GODAT_VERBS_SHIM_H
#define GODAT_VERBS_SHIM_H

#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

// gd_device_count returns how many RDMA devices libibverbs finds, or -1
// with errno set when it cannot list them at all.
int gd_device_count(void);

int gd_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a);
long gd_query_gid_table(struct ibv_context *c, struct ibv_gid_entry *e, size_t n);

// gd_bind_probe binds a throw-away rdma_cm id to the IP address ip
// (4 or 16 bytes) and reports the device context and port it landed on.
// It returns 0, or an errno value.
int gd_bind_probe(const uint8_t *ip, int iplen, struct ibv_context **ctx, uint8_t *port);



// gd_reg_mr registers len bytes at addr with access flags access; the
// device addresses them from iova (addr itself, or 0 for zero-based
// LMRs). NULL with errno set on failure.
struct ibv_mr *gd_reg_mr(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova, int access);

// gd_nonblock makes fd non-blocking, for Go's network poller.
int gd_nonblock(int fd);

// Completion queues. gd_cq_create makes a non-blocking completion channel
// and a CQ of at least depth entries on it, not armed.
int gd_cq_create(struct ibv_context *c, int depth, struct ibv_comp_channel **ch, struct ibv_cq **cq);
void gd_cq_destroy(struct ibv_comp_channel *ch, struct ibv_cq *cq);
// gd_cq_event consumes and acknowledges a pending notification of the
// channel ch: 1 if there was one, 0 if none is pending, -errno on error.
// It does not arm the CQ again (gd_cq_arm does).
int gd_cq_event(struct ibv_comp_channel *ch);
// gd_cq_arm asks for a notification of the CQ's next completion, or with
// solicited set of its next solicited or failed one: 0 or an errno value.
int gd_cq_arm(struct ibv_cq *cq, int solicited);

// gd_qp_create creates an RC QP outside rdma_cm and moves it to INIT on
// port, so that receives may be posted before it is connected. *inl is
// the inline data capacity asked for; a device that refuses it is asked
// for less, down to none, and *inl returns what the QP has.
struct ibv_qp *gd_qp_create(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, struct ibv_srq *srq,
                            uint32_t send_wr, uint32_t recv_wr, uint32_t send_sge, uint32_t recv_sge, uint8_t port, int *err,
                            uint32_t *inl);
// gd_qp_connect moves qp to RTR and RTS with the attributes rdma_cm
// computed for id.
int gd_qp_connect(struct rdma_cm_id *id, struct ibv_qp *qp);
int gd_qp_error(struct ibv_qp *qp);

// Posting: one call per work request; sg points to n SGEs.
int gd_post_send(struct ibv_qp *qp, uint64_t wr_id, int opcode, int flags, struct ibv_sge *sg, int n,
                 uint64_t raddr, uint32_t rkey);
int gd_post_recv(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sg, int n);

// The data path's calls with their arguments and result in one block, for
// calls.go: each takes a pointer to its block and stores the result (as
// the calls above return it) in rc.
//
// gd_post_send_call posts a send or RDMA request, or with inv set a
// send-with-invalidate of rkey (opcode and raddr unused).
struct gd_send_call {
	struct ibv_qp *qp;
	struct ibv_sge *sg;
	uint64_t wr_id, raddr;
	int opcode, flags, n, inv;
	uint32_t rkey;
	int rc;
};
void gd_post_send_call(void *a);
// gd_post_recv_call posts a receive on qp, or on srq when qp is NULL.
struct gd_recv_call {
	struct ibv_qp *qp;
	struct ibv_srq *srq;
	struct ibv_sge *sg;
	uint64_t wr_id;
	int n;
	int rc;
};
void gd_post_recv_call(void *a);
// gd_poll_cq_call polls cq for up to n completions into wc.
struct gd_poll_call {
	struct ibv_cq *cq;
	struct ibv_wc *wc;
	int n;
	int rc;
};
void gd_poll_cq_call(void *a);
// gd_call runs fn(arg): the cgo way to run a gd_*_call function.
void gd_call(void (*fn)(void *), void *arg);

// Connection management.
#define GD_PDATA_MAX 256
struct gd_cm_event {
	int event;
	int status;
	struct rdma_cm_id *id;
	struct rdma_cm_id *listen_id;
	int pdata_len;
	uint8_t pdata[GD_PDATA_MAX];
	uint8_t peer_ip[16];
	int peer_ip_len;
	uint16_t peer_port;
	uint16_t local_port;
};
// gd_cm_get takes one event from ch, copies it to out and acknowledges
// it: 1 if there was one, 0 if none is pending, -errno on error.
int gd_cm_get(struct rdma_event_channel *ch, struct gd_cm_event *out);
int gd_cm_bind(struct rdma_cm_id *id, const uint8_t *ip, int iplen, uint16_t port);
// gd_cm_resolve_addr resolves dst from src, or from the address id is
// bound to when src is NULL.
int gd_cm_resolve_addr(struct rdma_cm_id *id, const uint8_t *src, const uint8_t *dst, int iplen, uint16_t port, int timeout_ms);
int gd_cm_connect(struct rdma_cm_id *id, uint32_t qpn, const uint8_t *pd, int pdlen, int rd_out, int rd_in);
int gd_cm_accept(struct rdma_cm_id *id, uint32_t qpn, const uint8_t *pd, int pdlen, int rd_out, int rd_in);
uint16_t gd_cm_local_port(struct rdma_cm_id *id);

// gd_qp_reset takes qp back to RESET and then INIT on port.
int gd_qp_reset(struct ibv_qp *qp, uint8_t port);

// Memory windows: a bind (type 2, through the send queue) and a local
// invalidation of a window's key. flags are ibv_send_flags.
int gd_post_bind(struct ibv_qp *qp, uint64_t wr_id, int flags, struct ibv_mw *mw, uint32_t rkey,
                 struct ibv_mr *mr, uint64_t addr, uint64_t len, int access);
int gd_post_inv(struct ibv_qp *qp, uint64_t wr_id, int flags, uint32_t rkey);
// gd_post_send_inv sends and invalidates the peer's key rkey.
int gd_post_send_inv(struct ibv_qp *qp, uint64_t wr_id, int flags, struct ibv_sge *sg, int n, uint32_t rkey);

// gd_wc_invalidated returns the key a received send-with-invalidate
// invalidated (the union field of ibv_wc).
uint32_t gd_wc_invalidated(struct ibv_wc *wc);

// Shared receive queues.
struct ibv_srq *gd_srq_create(struct ibv_pd *pd, uint32_t max_wr, uint32_t max_sge, int *err);
int gd_srq_post(struct ibv_srq *srq, uint64_t wr_id, struct ibv_sge *sg, int n);
int gd_srq_resize(struct ibv_srq *srq, uint32_t max_wr);

// Device async events. gd_async_begin makes the device's async descriptor
// non-blocking and returns its flags before, or -errno; gd_async_end
// restores them. gd_async_get takes one event, copies what identifies
// its object and acknowledges it at once, so that no destroy call waits
// for godat: 1 if there was one, 0 if none is pending, -errno on error.
struct gd_async_event {
	int type;          // enum ibv_event_type
	uint32_t qp_num;   // QP events
	uint8_t port;      // port events
	void *obj;         // the ibv_cq or ibv_srq of CQ and SRQ events
};
int gd_async_begin(struct ibv_context *c);
void gd_async_end(struct ibv_context *c, int flags);
int gd_async_get(struct ibv_context *c, struct gd_async_event *out);

#endif
