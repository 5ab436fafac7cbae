//go:build verbs && cgo

#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include "shim.h"

int gd_device_count(void) {
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);
	if (l == NULL) {
		return -1;
	}
	ibv_free_device_list(l);
	return n;
}

int gd_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a) {
	return ibv_query_port(c, port, a);
}

long gd_query_gid_table(struct ibv_context *c, struct ibv_gid_entry *e, size_t n) {
	return (long)ibv_query_gid_table(c, e, n, 0);
}

int gd_bind_probe(const uint8_t *ip, int iplen, struct ibv_context **ctx, uint8_t *port) {
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof ss);
	if (iplen == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)&ss;
		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, ip, 4);
	} else if (iplen == 16) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, ip, 16);
	} else {
		return EINVAL;
	}
	struct rdma_cm_id *id = NULL;
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP)) {
		return errno ? errno : EIO;
	}
	int rc = 0;
	if (rdma_bind_addr(id, (struct sockaddr *)&ss)) {
		rc = errno ? errno : EIO;
	} else if (id->verbs == NULL) {
		rc = ENODEV;
	} else {
		*ctx = id->verbs;
		*port = id->port_num;
	}
	rdma_destroy_id(id);
	return rc;
}

struct ibv_mr *gd_reg_mr(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova, int access) {
	return ibv_reg_mr_iova2(pd, addr, len, iova, (unsigned int)access);
}

#include <fcntl.h>
#include <arpa/inet.h>

int gd_nonblock(int fd) {
	int f = fcntl(fd, F_GETFL);
	if (f < 0 || fcntl(fd, F_SETFL, f | O_NONBLOCK) < 0) {
		return errno;
	}
	return 0;
}

int gd_cq_create(struct ibv_context *c, int depth, struct ibv_comp_channel **ch, struct ibv_cq **cq) {
	*ch = ibv_create_comp_channel(c);
	if (*ch == NULL) {
		return errno ? errno : EIO;
	}
	int rc = gd_nonblock((*ch)->fd);
	if (rc == 0) {
		*cq = ibv_create_cq(c, depth, NULL, *ch, 0);
		if (*cq == NULL) {
			rc = errno ? errno : EIO;
		}
	}
	if (rc != 0) {
		ibv_destroy_comp_channel(*ch);
		*ch = NULL;
		*cq = NULL;
	}
	return rc;
}

void gd_cq_destroy(struct ibv_comp_channel *ch, struct ibv_cq *cq) {
	// Every notification taken has been acknowledged (gd_cq_event), so
	// the CQ can be destroyed; then its channel.
	ibv_destroy_cq(cq);
	ibv_destroy_comp_channel(ch);
}

int gd_cq_event(struct ibv_comp_channel *ch) {
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx)) {
		return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -(errno ? errno : EIO);
	}
	ibv_ack_cq_events(ev_cq, 1);
	return 1;
}

int gd_cq_arm(struct ibv_cq *cq, int solicited) {
	return ibv_req_notify_cq(cq, solicited);
}

struct ibv_qp *gd_qp_create(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, struct ibv_srq *srq,
                            uint32_t send_wr, uint32_t recv_wr, uint32_t send_sge, uint32_t recv_sge, uint8_t port, int *err,
                            uint32_t *inl) {
	struct ibv_qp_init_attr ia;
	memset(&ia, 0, sizeof ia);
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.srq = srq;
	ia.qp_type = IBV_QPT_RC;
	// Devices differ in how much inline data a QP may carry and none
	// reports it before a QP exists: halve the request until it fits.
	uint32_t want = *inl;
	struct ibv_qp *qp;
	for (;;) {
		ia.cap.max_send_wr = send_wr;
		ia.cap.max_recv_wr = srq ? 0 : recv_wr;
		ia.cap.max_send_sge = send_sge;
		ia.cap.max_recv_sge = srq ? 0 : recv_sge;
		ia.cap.max_inline_data = want;
		qp = ibv_create_qp(pd, &ia);
		if (qp != NULL || want == 0 || (errno != EINVAL && errno != ENOMEM)) {
			break;
		}
		want = want > 16 ? want / 2 : 0;
	}
	if (qp == NULL) {
		*err = errno ? errno : EIO;
		return NULL;
	}
	*inl = ia.cap.max_inline_data;
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc) {
		ibv_destroy_qp(qp);
		*err = rc;
		return NULL;
	}
	return qp;
}

int gd_qp_connect(struct rdma_cm_id *id, struct ibv_qp *qp) {
	struct ibv_qp_attr a;
	int mask;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	if (rdma_init_qp_attr(id, &a, &mask)) {
		return errno ? errno : EIO;
	}
	int rc = ibv_modify_qp(qp, &a, mask);
	if (rc) {
		return rc;
	}
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	if (rdma_init_qp_attr(id, &a, &mask)) {
		return errno ? errno : EIO;
	}
	return ibv_modify_qp(qp, &a, mask);
}

int gd_qp_error(struct ibv_qp *qp) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

/* gd_send_wr zeroes *wr and sets the fields every send work request here
 * has; the post functions add what their opcode needs. */
static inline void gd_send_wr(struct ibv_send_wr *wr, uint64_t wr_id, int opcode, int flags, struct ibv_sge *sg,
                              int n) {
	memset(wr, 0, sizeof *wr);
	wr->wr_id = wr_id;
	wr->opcode = opcode;
	wr->send_flags = flags;
	wr->sg_list = sg;
	wr->num_sge = n;
}

/* gd_recv_wr zeroes *wr and sets a receive's cookie and segments, for a
 * QP's receive queue and an SRQ alike. */
static inline void gd_recv_wr(struct ibv_recv_wr *wr, uint64_t wr_id, struct ibv_sge *sg, int n) {
	memset(wr, 0, sizeof *wr);
	wr->wr_id = wr_id;
	wr->sg_list = sg;
	wr->num_sge = n;
}

int gd_post_send(struct ibv_qp *qp, uint64_t wr_id, int opcode, int flags, struct ibv_sge *sg, int n,
                 uint64_t raddr, uint32_t rkey) {
	struct ibv_send_wr wr, *bad;
	gd_send_wr(&wr, wr_id, opcode, flags, sg, n);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

int gd_post_recv(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sg, int n) {
	struct ibv_recv_wr wr, *bad;
	gd_recv_wr(&wr, wr_id, sg, n);
	return ibv_post_recv(qp, &wr, &bad);
}

static void gd_sockaddr(struct sockaddr_storage *ss, const uint8_t *ip, int iplen, uint16_t port) {
	memset(ss, 0, sizeof *ss);
	if (iplen == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;
		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		memcpy(&s->sin_addr, ip, 4);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
		s->sin6_family = AF_INET6;
		s->sin6_port = htons(port);
		memcpy(&s->sin6_addr, ip, 16);
	}
}

static void gd_addr_out(struct sockaddr *sa, uint8_t *ip, int *iplen, uint16_t *port) {
	*iplen = 0;
	*port = 0;
	if (sa == NULL) {
		return;
	}
	if (sa->sa_family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)sa;
		memcpy(ip, &s->sin_addr, 4);
		*iplen = 4;
		*port = ntohs(s->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)sa;
		memcpy(ip, &s->sin6_addr, 16);
		*iplen = 16;
		*port = ntohs(s->sin6_port);
	}
}

int gd_cm_get(struct rdma_event_channel *ch, struct gd_cm_event *out) {
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev)) {
		return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -(errno ? errno : EIO);
	}
	memset(out, 0, sizeof *out);
	out->event = ev->event;
	out->status = ev->status;
	out->id = ev->id;
	out->listen_id = ev->listen_id;
	if (ev->id && ev->id->ps == RDMA_PS_TCP && ev->param.conn.private_data != NULL) {
		int n = ev->param.conn.private_data_len;
		if (n > GD_PDATA_MAX) {
			n = GD_PDATA_MAX;
		}
		memcpy(out->pdata, ev->param.conn.private_data, n);
		out->pdata_len = n;
	}
	if (ev->id) {
		uint16_t lport;
		gd_addr_out(rdma_get_peer_addr(ev->id), out->peer_ip, &out->peer_ip_len, &out->peer_port);
		uint8_t lip[16];
		int llen;
		gd_addr_out(rdma_get_local_addr(ev->id), lip, &llen, &lport);
		out->local_port = lport;
	}
	rdma_ack_cm_event(ev);
	return 1;
}

int gd_cm_bind(struct rdma_cm_id *id, const uint8_t *ip, int iplen, uint16_t port) {
	struct sockaddr_storage ss;
	gd_sockaddr(&ss, ip, iplen, port);
	return rdma_bind_addr(id, (struct sockaddr *)&ss) ? (errno ? errno : EIO) : 0;
}

int gd_cm_resolve_addr(struct rdma_cm_id *id, const uint8_t *src, const uint8_t *dst, int iplen, uint16_t port, int timeout_ms) {
	struct sockaddr_storage s, d;
	if (src) {
		gd_sockaddr(&s, src, iplen, 0);
	}
	gd_sockaddr(&d, dst, iplen, port);
	return rdma_resolve_addr(id, src ? (struct sockaddr *)&s : NULL, (struct sockaddr *)&d, timeout_ms) ? (errno ? errno : EIO) : 0;
}

static void gd_conn_param(struct rdma_conn_param *p, uint32_t qpn, const uint8_t *pd, int pdlen, int rd_out, int rd_in) {
	memset(p, 0, sizeof *p);
	p->private_data = pd;
	p->private_data_len = (uint8_t)pdlen;
	p->responder_resources = (uint8_t)rd_in;
	p->initiator_depth = (uint8_t)rd_out;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
	p->qp_num = qpn;
}

int gd_cm_connect(struct rdma_cm_id *id, uint32_t qpn, const uint8_t *pd, int pdlen, int rd_out, int rd_in) {
	struct rdma_conn_param p;
	gd_conn_param(&p, qpn, pd, pdlen, rd_out, rd_in);
	return rdma_connect(id, &p) ? (errno ? errno : EIO) : 0;
}

int gd_cm_accept(struct rdma_cm_id *id, uint32_t qpn, const uint8_t *pd, int pdlen, int rd_out, int rd_in) {
	struct rdma_conn_param p;
	gd_conn_param(&p, qpn, pd, pdlen, rd_out, rd_in);
	return rdma_accept(id, &p) ? (errno ? errno : EIO) : 0;
}

uint16_t gd_cm_local_port(struct rdma_cm_id *id) {
	return ntohs(rdma_get_src_port(id));
}

int gd_qp_reset(struct ibv_qp *qp, uint8_t port) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RESET;
	int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (rc) {
		return rc;
	}
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int gd_post_bind(struct ibv_qp *qp, uint64_t wr_id, int flags, struct ibv_mw *mw, uint32_t rkey,
                 struct ibv_mr *mr, uint64_t addr, uint64_t len, int access) {
	struct ibv_send_wr wr, *bad;
	gd_send_wr(&wr, wr_id, IBV_WR_BIND_MW, flags, NULL, 0);
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	return ibv_post_send(qp, &wr, &bad);
}

int gd_post_inv(struct ibv_qp *qp, uint64_t wr_id, int flags, uint32_t rkey) {
	struct ibv_send_wr wr, *bad;
	gd_send_wr(&wr, wr_id, IBV_WR_LOCAL_INV, flags, NULL, 0);
	wr.invalidate_rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

int gd_post_send_inv(struct ibv_qp *qp, uint64_t wr_id, int flags, struct ibv_sge *sg, int n, uint32_t rkey) {
	struct ibv_send_wr wr, *bad;
	gd_send_wr(&wr, wr_id, IBV_WR_SEND_WITH_INV, flags, sg, n);
	wr.invalidate_rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

uint32_t gd_wc_invalidated(struct ibv_wc *wc) {
	return wc->invalidated_rkey;
}

struct ibv_srq *gd_srq_create(struct ibv_pd *pd, uint32_t max_wr, uint32_t max_sge, int *err) {
	struct ibv_srq_init_attr a;
	memset(&a, 0, sizeof a);
	a.attr.max_wr = max_wr;
	a.attr.max_sge = max_sge;
	struct ibv_srq *s = ibv_create_srq(pd, &a);
	if (s == NULL) {
		*err = errno ? errno : EIO;
	}
	return s;
}

int gd_srq_post(struct ibv_srq *srq, uint64_t wr_id, struct ibv_sge *sg, int n) {
	struct ibv_recv_wr wr, *bad;
	gd_recv_wr(&wr, wr_id, sg, n);
	return ibv_post_srq_recv(srq, &wr, &bad);
}

int gd_srq_resize(struct ibv_srq *srq, uint32_t max_wr) {
	struct ibv_srq_attr a;
	memset(&a, 0, sizeof a);
	a.max_wr = max_wr;
	return ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR);
}

int gd_async_begin(struct ibv_context *c) {
	int f = fcntl(c->async_fd, F_GETFL);
	if (f < 0 || fcntl(c->async_fd, F_SETFL, f | O_NONBLOCK) < 0) {
		return -(errno ? errno : EIO);
	}
	return f;
}

void gd_async_end(struct ibv_context *c, int flags) {
	fcntl(c->async_fd, F_SETFL, flags);
}

int gd_async_get(struct ibv_context *c, struct gd_async_event *out) {
	struct ibv_async_event ev;
	if (ibv_get_async_event(c, &ev)) {
		return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -(errno ? errno : EIO);
	}
	memset(out, 0, sizeof *out);
	out->type = ev.event_type;
	switch (ev.event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		out->qp_num = ev.element.qp->qp_num;
		break;
	case IBV_EVENT_CQ_ERR:
		out->obj = ev.element.cq;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		out->obj = ev.element.srq;
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		out->port = (uint8_t)ev.element.port_num;
		break;
	default:
		break;
	}
	ibv_ack_async_event(&ev);
	return 1;
}

void gd_post_send_call(void *p) {
	struct gd_send_call *a = p;
	if (a->inv)
		a->rc = gd_post_send_inv(a->qp, a->wr_id, a->flags, a->sg, a->n, a->rkey);
	else
		a->rc = gd_post_send(a->qp, a->wr_id, a->opcode, a->flags, a->sg, a->n, a->raddr, a->rkey);
}

void gd_post_recv_call(void *p) {
	struct gd_recv_call *a = p;
	if (a->qp)
		a->rc = gd_post_recv(a->qp, a->wr_id, a->sg, a->n);
	else
		a->rc = gd_srq_post(a->srq, a->wr_id, a->sg, a->n);
}

void gd_poll_cq_call(void *p) {
	struct gd_poll_call *a = p;
	a->rc = ibv_poll_cq(a->cq, a->n, a->wc);
}

void gd_call(void (*fn)(void *), void *arg) {
	fn(arg);
}
