/* The C face of godat's libdat2.so.2: every call of the DAT 2.0 API as
 * OFA's libdat2 exports it, and the provider table OFA's registry uses
 * when it loads this library as a provider. Each gd_* function has the
 * exact signature of its provider-table slot; the exported dat_* names
 * are aliases of them. The work is done in Go (the go_* functions); this
 * file only unpacks what Go cannot take: unions passed by value and the
 * variadic extension call. */
#include "cabi.h"
#include <stdarg.h>
#include <dlfcn.h>
#include <pthread.h>
#include "_cgo_export.h"

#define EXPORT(name, impl) __typeof__(impl) name __attribute__((alias(#impl), visibility("default")))

static DAT_RETURN gd_ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen, DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia)
{
	return go_ia_open((char *)name, qlen, async_evd, ia, (DAT_PROVIDER *)gd_provider_for(name));
}

static DAT_RETURN gd_ia_openv(const DAT_NAME_PTR name, DAT_COUNT qlen, DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia,
			      DAT_UINT32 major, DAT_UINT32 minor, DAT_BOOLEAN thread_safe)
{
	(void)thread_safe;
	if (major != DAT_VERSION_MAJOR)
		return GD_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	(void)minor;
	return go_ia_open((char *)name, qlen, async_evd, ia, &gd_provider);
}
EXPORT(dat_ia_openv, gd_ia_openv);

static const DAT_PROVIDER_INFO *gd_registered_info(const DAT_PROVIDER *p);

static DAT_RETURN gd_ia_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *async_evd, DAT_IA_ATTR_MASK ia_mask, DAT_IA_ATTR *ia_attr,
			      DAT_PROVIDER_ATTR_MASK pr_mask, DAT_PROVIDER_ATTR *pr_attr)
{
	DAT_RETURN r = go_ia_query(ia, async_evd, ia_mask, ia_attr, pr_mask, pr_attr);
	/* OFA's dat_ia_close finds the IA's registry entry by the version
	 * and thread safety the provider attributes report: they must be
	 * those of the dat.conf line the IA was registered for. */
	const DAT_PROVIDER_INFO *info;
	if (r == DAT_SUCCESS && pr_attr != NULL && (info = gd_registered_info(*(DAT_PROVIDER **)ia)) != NULL) {
		pr_attr->dapl_version_major = info->dapl_version_major;
		pr_attr->dapl_version_minor = info->dapl_version_minor;
		pr_attr->is_thread_safe = info->is_thread_safe;
	}
	return r;
}
EXPORT(dat_ia_query, gd_ia_query);

static DAT_RETURN gd_ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags) { return go_ia_close(ia, flags); }
EXPORT(dat_ia_close, gd_ia_close);

static DAT_RETURN gd_set_consumer_context(DAT_HANDLE h, DAT_CONTEXT ctx) { return go_set_consumer_context(h, ctx.as_64); }
EXPORT(dat_set_consumer_context, gd_set_consumer_context);
static DAT_RETURN gd_get_consumer_context(DAT_HANDLE h, DAT_CONTEXT *ctx) { return go_get_consumer_context(h, ctx ? &ctx->as_64 : NULL); }
EXPORT(dat_get_consumer_context, gd_get_consumer_context);
static DAT_RETURN gd_get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE *t) { return go_get_handle_type(h, (uint32_t *)t); }
EXPORT(dat_get_handle_type, gd_get_handle_type);

static DAT_RETURN gd_cno_create(DAT_IA_HANDLE ia, DAT_OS_WAIT_PROXY_AGENT agent, DAT_CNO_HANDLE *cno)
{
	return go_cno_create(ia, agent.instance_data, (void *)agent.proxy_agent_func, cno);
}
EXPORT(dat_cno_create, gd_cno_create);
static DAT_RETURN gd_cno_modify_agent(DAT_CNO_HANDLE cno, DAT_OS_WAIT_PROXY_AGENT agent)
{
	return go_cno_modify_agent(cno, agent.instance_data, (void *)agent.proxy_agent_func);
}
EXPORT(dat_cno_modify_agent, gd_cno_modify_agent);
static DAT_RETURN gd_cno_query(DAT_CNO_HANDLE cno, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM *p) { return go_cno_query(cno, mask, p); }
EXPORT(dat_cno_query, gd_cno_query);
static DAT_RETURN gd_cno_free(DAT_CNO_HANDLE cno) { return go_free(cno, DAT_HANDLE_TYPE_CNO); }
EXPORT(dat_cno_free, gd_cno_free);
static DAT_RETURN gd_cno_wait(DAT_CNO_HANDLE cno, DAT_TIMEOUT t, DAT_EVD_HANDLE *evd) { return go_cno_wait(cno, t, evd); }
EXPORT(dat_cno_wait, gd_cno_wait);
static DAT_RETURN gd_cno_fd_create(DAT_IA_HANDLE ia, DAT_FD *fd, DAT_CNO_HANDLE *cno) { return go_cno_fd_create(ia, fd, cno); }
static DAT_RETURN gd_cno_trigger(DAT_CNO_HANDLE cno, DAT_EVD_HANDLE *evd) { return go_cno_trigger(cno, evd); }

static DAT_RETURN gd_cr_query(DAT_CR_HANDLE cr, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM *p) { return go_cr_query(cr, mask, p); }
EXPORT(dat_cr_query, gd_cr_query);
static DAT_RETURN gd_cr_accept(DAT_CR_HANDLE cr, DAT_EP_HANDLE ep, DAT_COUNT n, const DAT_PVOID pd) { return go_cr_accept(cr, ep, n, pd); }
EXPORT(dat_cr_accept, gd_cr_accept);
static DAT_RETURN gd_cr_reject(DAT_CR_HANDLE cr, DAT_COUNT n, const DAT_PVOID pd) { return go_cr_reject(cr, n, pd); }
EXPORT(dat_cr_reject, gd_cr_reject);
static DAT_RETURN gd_cr_handoff(DAT_CR_HANDLE cr, DAT_CONN_QUAL q) { return go_cr_handoff(cr, q); }
EXPORT(dat_cr_handoff, gd_cr_handoff);

static DAT_RETURN gd_evd_create(DAT_IA_HANDLE ia, DAT_COUNT qlen, DAT_CNO_HANDLE cno, DAT_EVD_FLAGS flags, DAT_EVD_HANDLE *evd)
{
	return go_evd_create(ia, qlen, cno, flags, evd);
}
EXPORT(dat_evd_create, gd_evd_create);
static DAT_RETURN gd_evd_query(DAT_EVD_HANDLE evd, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM *p) { return go_evd_query(evd, mask, p); }
EXPORT(dat_evd_query, gd_evd_query);
static DAT_RETURN gd_evd_modify_cno(DAT_EVD_HANDLE evd, DAT_CNO_HANDLE cno) { return go_evd_modify_cno(evd, cno); }
EXPORT(dat_evd_modify_cno, gd_evd_modify_cno);
static DAT_RETURN gd_evd_enable(DAT_EVD_HANDLE evd) { return go_evd_switch(evd, 0); }
EXPORT(dat_evd_enable, gd_evd_enable);
static DAT_RETURN gd_evd_disable(DAT_EVD_HANDLE evd) { return go_evd_switch(evd, 1); }
EXPORT(dat_evd_disable, gd_evd_disable);
static DAT_RETURN gd_evd_set_unwaitable(DAT_EVD_HANDLE evd) { return go_evd_switch(evd, 2); }
EXPORT(dat_evd_set_unwaitable, gd_evd_set_unwaitable);
static DAT_RETURN gd_evd_clear_unwaitable(DAT_EVD_HANDLE evd) { return go_evd_switch(evd, 3); }
EXPORT(dat_evd_clear_unwaitable, gd_evd_clear_unwaitable);
static DAT_RETURN gd_evd_wait(DAT_EVD_HANDLE evd, DAT_TIMEOUT t, DAT_COUNT threshold, DAT_EVENT *ev, DAT_COUNT *nmore)
{
	return go_evd_wait(evd, t, threshold, ev, nmore);
}
EXPORT(dat_evd_wait, gd_evd_wait);
static DAT_RETURN gd_evd_resize(DAT_EVD_HANDLE evd, DAT_COUNT qlen) { return go_evd_resize(evd, qlen); }
EXPORT(dat_evd_resize, gd_evd_resize);
static DAT_RETURN gd_evd_post_se(DAT_EVD_HANDLE evd, const DAT_EVENT *ev) { return go_evd_post_se(evd, (DAT_EVENT *)ev); }
EXPORT(dat_evd_post_se, gd_evd_post_se);
static DAT_RETURN gd_evd_dequeue(DAT_EVD_HANDLE evd, DAT_EVENT *ev) { return go_evd_dequeue(evd, ev); }
EXPORT(dat_evd_dequeue, gd_evd_dequeue);
static DAT_RETURN gd_evd_free(DAT_EVD_HANDLE evd) { return go_free(evd, DAT_HANDLE_TYPE_EVD); }
EXPORT(dat_evd_free, gd_evd_free);

static DAT_RETURN gd_ep_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv, DAT_EVD_HANDLE req, DAT_EVD_HANDLE conn,
			       const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep)
{
	return go_ep_create(ia, pz, recv, req, conn, NULL, (DAT_EP_ATTR *)attr, ep);
}
EXPORT(dat_ep_create, gd_ep_create);
static DAT_RETURN gd_ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv, DAT_EVD_HANDLE req,
					DAT_EVD_HANDLE conn, DAT_SRQ_HANDLE srq, const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep)
{
	if (srq == DAT_HANDLE_NULL)
		return GD_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
	return go_ep_create(ia, pz, recv, req, conn, srq, (DAT_EP_ATTR *)attr, ep);
}
EXPORT(dat_ep_create_with_srq, gd_ep_create_with_srq);
static DAT_RETURN gd_ep_query(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM *p) { return go_ep_query(ep, mask, p); }
EXPORT(dat_ep_query, gd_ep_query);
static DAT_RETURN gd_ep_modify(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM *p) { return go_ep_modify(ep, mask, (DAT_EP_PARAM *)p); }
EXPORT(dat_ep_modify, gd_ep_modify);
static DAT_RETURN gd_ep_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR addr, DAT_CONN_QUAL q, DAT_TIMEOUT t, DAT_COUNT n,
				const DAT_PVOID pd, DAT_QOS qos, DAT_CONNECT_FLAGS flags)
{
	return go_ep_connect(ep, addr, q, t, n, pd, qos, flags);
}
EXPORT(dat_ep_connect, gd_ep_connect);
static DAT_RETURN gd_ep_dup_connect(DAT_EP_HANDLE ep, DAT_EP_HANDLE dup, DAT_TIMEOUT t, DAT_COUNT n, const DAT_PVOID pd, DAT_QOS qos)
{
	return go_ep_dup_connect(ep, dup, t, n, pd, qos);
}
EXPORT(dat_ep_dup_connect, gd_ep_dup_connect);
static DAT_RETURN gd_ep_disconnect(DAT_EP_HANDLE ep, DAT_CLOSE_FLAGS flags) { return go_ep_disconnect(ep, flags); }
EXPORT(dat_ep_disconnect, gd_ep_disconnect);
static DAT_RETURN gd_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE c, DAT_COMPLETION_FLAGS f)
{
	return go_ep_post(ep, 0, n, iov, c.as_64, NULL, f);
}
EXPORT(dat_ep_post_send, gd_ep_post_send);
static DAT_RETURN gd_ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE c, DAT_COMPLETION_FLAGS f)
{
	return go_ep_post(ep, 3, n, iov, c.as_64, NULL, f);
}
EXPORT(dat_ep_post_recv, gd_ep_post_recv);
static DAT_RETURN gd_ep_post_rdma_read(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE c,
				       const DAT_RMR_TRIPLET *r, DAT_COMPLETION_FLAGS f)
{
	return go_ep_post(ep, 2, n, iov, c.as_64, (DAT_RMR_TRIPLET *)r, f);
}
EXPORT(dat_ep_post_rdma_read, gd_ep_post_rdma_read);
static DAT_RETURN gd_ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE c,
					const DAT_RMR_TRIPLET *r, DAT_COMPLETION_FLAGS f)
{
	return go_ep_post(ep, 1, n, iov, c.as_64, (DAT_RMR_TRIPLET *)r, f);
}
EXPORT(dat_ep_post_rdma_write, gd_ep_post_rdma_write);
static DAT_RETURN gd_ep_post_send_with_invalidate(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE c,
						  DAT_COMPLETION_FLAGS f, DAT_BOOLEAN inv, DAT_RMR_CONTEXT rmr)
{
	return go_ep_post_send_inv(ep, n, iov, c.as_64, f, inv, rmr);
}
static DAT_RETURN gd_ep_post_rdma_read_to_rmr(DAT_EP_HANDLE ep, const DAT_RMR_TRIPLET *local, DAT_DTO_COOKIE c,
					      const DAT_RMR_TRIPLET *remote, DAT_COMPLETION_FLAGS f)
{
	return go_ep_post_read_to_rmr(ep, (DAT_RMR_TRIPLET *)local, c.as_64, (DAT_RMR_TRIPLET *)remote, f);
}
static DAT_RETURN gd_ep_get_status(DAT_EP_HANDLE ep, DAT_EP_STATE *s, DAT_BOOLEAN *ri, DAT_BOOLEAN *qi)
{
	return go_ep_get_status(ep, (uint32_t *)s, (uint32_t *)ri, (uint32_t *)qi);
}
EXPORT(dat_ep_get_status, gd_ep_get_status);
static DAT_RETURN gd_ep_free(DAT_EP_HANDLE ep) { return go_free(ep, DAT_HANDLE_TYPE_EP); }
EXPORT(dat_ep_free, gd_ep_free);
static DAT_RETURN gd_ep_reset(DAT_EP_HANDLE ep) { return go_ep_reset(ep); }
EXPORT(dat_ep_reset, gd_ep_reset);
static DAT_RETURN gd_ep_recv_query(DAT_EP_HANDLE ep, DAT_COUNT *n, DAT_COUNT *span) { return go_ep_recv_query(ep, n, span); }
EXPORT(dat_ep_recv_query, gd_ep_recv_query);
static DAT_RETURN gd_ep_set_watermark(DAT_EP_HANDLE ep, DAT_COUNT soft, DAT_COUNT hard) { return go_ep_set_watermark(ep, soft, hard); }
EXPORT(dat_ep_set_watermark, gd_ep_set_watermark);

static DAT_RETURN gd_lmr_create(DAT_IA_HANDLE ia, DAT_MEM_TYPE type, DAT_REGION_DESCRIPTION region, DAT_VLEN len, DAT_PZ_HANDLE pz,
				DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va, DAT_LMR_HANDLE *lmr, DAT_LMR_CONTEXT *lctx,
				DAT_RMR_CONTEXT *rctx, DAT_VLEN *rlen, DAT_VADDR *raddr)
{
	void *p = type == DAT_MEM_TYPE_LMR ? region.for_lmr_handle : region.for_va;
	if (type == DAT_MEM_TYPE_SHARED_VIRTUAL)
		p = region.for_shared_memory.virtual_address;
	return go_lmr_create(ia, type, p, len, pz, priv, va, lmr, lctx, rctx, rlen, raddr);
}
EXPORT(dat_lmr_create, gd_lmr_create);
static DAT_RETURN gd_lmr_query(DAT_LMR_HANDLE lmr, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM *p) { return go_lmr_query(lmr, mask, p); }
EXPORT(dat_lmr_query, gd_lmr_query);
static DAT_RETURN gd_lmr_free(DAT_LMR_HANDLE lmr) { return go_free(lmr, DAT_HANDLE_TYPE_LMR); }
EXPORT(dat_lmr_free, gd_lmr_free);
static DAT_RETURN gd_lmr_sync_rdma_read(DAT_IA_HANDLE ia, const DAT_LMR_TRIPLET *segs, DAT_VLEN n)
{
	return go_lmr_sync(ia, (DAT_LMR_TRIPLET *)segs, n, 0);
}
EXPORT(dat_lmr_sync_rdma_read, gd_lmr_sync_rdma_read);
static DAT_RETURN gd_lmr_sync_rdma_write(DAT_IA_HANDLE ia, const DAT_LMR_TRIPLET *segs, DAT_VLEN n)
{
	return go_lmr_sync(ia, (DAT_LMR_TRIPLET *)segs, n, 1);
}
EXPORT(dat_lmr_sync_rdma_write, gd_lmr_sync_rdma_write);

static DAT_RETURN gd_rmr_create(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr) { return go_rmr_create(pz, rmr); }
EXPORT(dat_rmr_create, gd_rmr_create);
static DAT_RETURN gd_rmr_query(DAT_RMR_HANDLE rmr, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM *p) { return go_rmr_query(rmr, mask, p); }
EXPORT(dat_rmr_query, gd_rmr_query);
static DAT_RETURN gd_rmr_bind(DAT_RMR_HANDLE rmr, DAT_LMR_HANDLE lmr, const DAT_LMR_TRIPLET *t, DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va,
			      DAT_EP_HANDLE ep, DAT_RMR_COOKIE c, DAT_COMPLETION_FLAGS f, DAT_RMR_CONTEXT *ctx)
{
	return go_rmr_bind(rmr, lmr, (DAT_LMR_TRIPLET *)t, priv, va, ep, c.as_64, f, ctx);
}
EXPORT(dat_rmr_bind, gd_rmr_bind);
static DAT_RETURN gd_rmr_free(DAT_RMR_HANDLE rmr) { return go_free(rmr, DAT_HANDLE_TYPE_RMR); }
EXPORT(dat_rmr_free, gd_rmr_free);

static DAT_RETURN gd_psp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL q, DAT_EVD_HANDLE evd, DAT_PSP_FLAGS f, DAT_PSP_HANDLE *psp)
{
	return go_psp_create(ia, q, NULL, evd, f, psp);
}
EXPORT(dat_psp_create, gd_psp_create);
static DAT_RETURN gd_psp_create_any(DAT_IA_HANDLE ia, DAT_CONN_QUAL *q, DAT_EVD_HANDLE evd, DAT_PSP_FLAGS f, DAT_PSP_HANDLE *psp)
{
	if (q == NULL)
		return GD_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	return go_psp_create(ia, 0, q, evd, f, psp);
}
EXPORT(dat_psp_create_any, gd_psp_create_any);
static DAT_RETURN gd_psp_query(DAT_PSP_HANDLE psp, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM *p) { return go_psp_query(psp, mask, p); }
EXPORT(dat_psp_query, gd_psp_query);
static DAT_RETURN gd_psp_free(DAT_PSP_HANDLE psp) { return go_free(psp, DAT_HANDLE_TYPE_PSP); }
EXPORT(dat_psp_free, gd_psp_free);
static DAT_RETURN gd_rsp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL q, DAT_EP_HANDLE ep, DAT_EVD_HANDLE evd, DAT_RSP_HANDLE *rsp)
{
	return go_rsp_create(ia, q, ep, evd, rsp);
}
EXPORT(dat_rsp_create, gd_rsp_create);
static DAT_RETURN gd_rsp_query(DAT_RSP_HANDLE rsp, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM *p) { return go_rsp_query(rsp, mask, p); }
EXPORT(dat_rsp_query, gd_rsp_query);
static DAT_RETURN gd_rsp_free(DAT_RSP_HANDLE rsp) { return go_free(rsp, DAT_HANDLE_TYPE_RSP); }
EXPORT(dat_rsp_free, gd_rsp_free);

static DAT_RETURN gd_pz_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE *pz) { return go_pz_create(ia, pz); }
EXPORT(dat_pz_create, gd_pz_create);
static DAT_RETURN gd_pz_query(DAT_PZ_HANDLE pz, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM *p) { return go_pz_query(pz, mask, p); }
EXPORT(dat_pz_query, gd_pz_query);
static DAT_RETURN gd_pz_free(DAT_PZ_HANDLE pz) { return go_free(pz, DAT_HANDLE_TYPE_PZ); }
EXPORT(dat_pz_free, gd_pz_free);

static DAT_RETURN gd_srq_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_SRQ_ATTR *attr, DAT_SRQ_HANDLE *srq)
{
	return go_srq_create(ia, pz, attr, srq);
}
EXPORT(dat_srq_create, gd_srq_create);
static DAT_RETURN gd_srq_free(DAT_SRQ_HANDLE srq) { return go_free(srq, DAT_HANDLE_TYPE_SRQ); }
EXPORT(dat_srq_free, gd_srq_free);
static DAT_RETURN gd_srq_post_recv(DAT_SRQ_HANDLE srq, DAT_COUNT n, DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE c)
{
	return go_srq_post_recv(srq, n, iov, c.as_64);
}
EXPORT(dat_srq_post_recv, gd_srq_post_recv);
static DAT_RETURN gd_srq_query(DAT_SRQ_HANDLE srq, DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM *p) { return go_srq_query(srq, mask, p); }
EXPORT(dat_srq_query, gd_srq_query);
static DAT_RETURN gd_srq_resize(DAT_SRQ_HANDLE srq, DAT_COUNT n) { return go_srq_resize(srq, n, 0); }
EXPORT(dat_srq_resize, gd_srq_resize);
static DAT_RETURN gd_srq_set_lw(DAT_SRQ_HANDLE srq, DAT_COUNT n) { return go_srq_resize(srq, n, 1); }
EXPORT(dat_srq_set_lw, gd_srq_set_lw);

/* What godat does not implement (docs/decisions.md): the connection
 * service points and common connect of DAT 2.0, EP-scoped RMR creation,
 * HA relations, and every extension operation. */
static DAT_RETURN gd_csp_create(DAT_IA_HANDLE ia, DAT_COMM *comm, DAT_IA_ADDRESS_PTR a, DAT_EVD_HANDLE evd, DAT_CSP_HANDLE *csp)
{
	(void)ia, (void)comm, (void)a, (void)evd, (void)csp;
	return GD_ERROR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE);
}
static DAT_RETURN gd_csp_query(DAT_CSP_HANDLE csp, DAT_CSP_PARAM_MASK mask, DAT_CSP_PARAM *p)
{
	(void)csp, (void)mask, (void)p;
	return GD_ERROR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE);
}
static DAT_RETURN gd_csp_free(DAT_CSP_HANDLE csp)
{
	(void)csp;
	return GD_ERROR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE);
}
static DAT_RETURN gd_ep_common_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR a, DAT_TIMEOUT t, DAT_COUNT n, const DAT_PVOID pd)
{
	(void)ep, (void)a, (void)t, (void)n, (void)pd;
	return GD_ERROR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE);
}
static DAT_RETURN gd_rmr_create_for_ep(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr)
{
	(void)pz, (void)rmr;
	return GD_ERROR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE);
}
static DAT_RETURN gd_ia_ha_related(DAT_IA_HANDLE ia, const DAT_NAME_PTR name, DAT_BOOLEAN *ans)
{
	(void)ia, (void)name, (void)ans;
	return GD_ERROR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE);
}
static DAT_RETURN gd_handle_extendedop(DAT_HANDLE h, DAT_EXTENDED_OP op, va_list args)
{
	(void)args;
	return go_extension_op(h, op);
}

DAT_RETURN dat_extension_op(DAT_HANDLE h, DAT_EXTENDED_OP op, ...) __attribute__((visibility("default")));
DAT_RETURN dat_extension_op(DAT_HANDLE h, DAT_EXTENDED_OP op, ...)
{
	return go_extension_op(h, op);
}

DAT_RETURN dat_strerror(DAT_RETURN v, const char **major, const char **minor) __attribute__((visibility("default")));
DAT_RETURN dat_strerror(DAT_RETURN v, const char **major, const char **minor)
{
	return go_strerror(v, (char **)major, (char **)minor);
}

DAT_RETURN dat_registry_list_providers(DAT_COUNT max, DAT_COUNT *n, DAT_PROVIDER_INFO *list[]) __attribute__((visibility("default")));
DAT_RETURN dat_registry_list_providers(DAT_COUNT max, DAT_COUNT *n, DAT_PROVIDER_INFO *list[])
{
	return go_registry_list(max, n, list);
}

/* godat's registry is its configuration file; C providers cannot join it. */
static DAT_RETURN gd_registry_add_provider(const DAT_PROVIDER *p, const DAT_PROVIDER_INFO *info)
{
	(void)p, (void)info;
	return GD_ERROR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE);
}
EXPORT(dat_registry_add_provider, gd_registry_add_provider);
static DAT_RETURN gd_registry_remove_provider(const DAT_PROVIDER *p, const DAT_PROVIDER_INFO *info)
{
	(void)p, (void)info;
	return GD_ERROR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE);
}
EXPORT(dat_registry_remove_provider, gd_registry_remove_provider);

/* The provider side: OFA's libdat2 loads this library for a dat.conf line
 * that names it and calls dat_provider_init for that line's IA. The IA is
 * registered with OFA's registry under its name, with a copy of the
 * provider table; OFA then calls ia_open_func with the name, which godat's
 * registry resolves (a classic line naming this library is an alias of the
 * godat IA its ia_params name). Handles point at gd_provider, whose
 * functions are the same. */
typedef DAT_RETURN (*gd_registry_fn)(const DAT_PROVIDER *, const DAT_PROVIDER_INFO *);

struct gd_registration {
	DAT_PROVIDER provider;
	DAT_PROVIDER_INFO info;
	struct gd_registration *next;
};

static pthread_mutex_t gd_registrations_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gd_registration *gd_registrations;

/* The registry entry of an IA whose handles point at p, or NULL when this
 * library is the process's libdat2. */
static const DAT_PROVIDER_INFO *gd_registered_info(const DAT_PROVIDER *p)
{
	if (p == &gd_provider)
		return NULL;
	return &((const struct gd_registration *)p)->info;
}

/* The provider table OFA's registry knows the IA name by; the handles of
 * that IA point at it, because OFA's dat_ia_close finds the IA's registry
 * entry by the table's device_name. */
const DAT_PROVIDER *gd_provider_for(const char *name)
{
	const DAT_PROVIDER *p = &gd_provider;
	pthread_mutex_lock(&gd_registrations_mu);
	for (struct gd_registration *r = gd_registrations; r != NULL; r = r->next)
		if (name != NULL && strncmp(r->info.ia_name, name, DAT_NAME_MAX_LENGTH) == 0) {
			p = &r->provider;
			break;
		}
	pthread_mutex_unlock(&gd_registrations_mu);
	return p;
}

/* OFA's registry function of that name, or NULL when this library is the
 * process's libdat2 (then there is no other registry to join). It is
 * looked up from the program down: Go links shared libraries with
 * -Bsymbolic, so a lookup from here (RTLD_DEFAULT) finds this library's
 * own function of the same name first. */
static gd_registry_fn gd_ofa_registry(const char *name, gd_registry_fn own)
{
	void *prog = dlopen(NULL, RTLD_LAZY);
	if (prog == NULL)
		return NULL;
	gd_registry_fn f = (gd_registry_fn)dlsym(prog, name);
	dlclose(prog);
	return f == own ? NULL : f;
}

void dat_provider_init(const DAT_PROVIDER_INFO *info, const char *instance_data) __attribute__((visibility("default")));
void dat_provider_init(const DAT_PROVIDER_INFO *info, const char *instance_data)
{
	(void)instance_data;
	gd_registry_fn add = gd_ofa_registry("dat_registry_add_provider", gd_registry_add_provider);
	if (info == NULL || add == NULL)
		return;
	struct gd_registration *r = calloc(1, sizeof *r);
	if (r == NULL)
		return;
	r->info = *info;
	r->provider = gd_provider;
	r->provider.device_name = r->info.ia_name;
	if (add(&r->provider, &r->info) != DAT_SUCCESS) {
		free(r);
		return;
	}
	pthread_mutex_lock(&gd_registrations_mu);
	r->next = gd_registrations;
	gd_registrations = r;
	pthread_mutex_unlock(&gd_registrations_mu);
}

void dat_provider_fini(const DAT_PROVIDER_INFO *info) __attribute__((visibility("default")));
void dat_provider_fini(const DAT_PROVIDER_INFO *info)
{
	gd_registry_fn remove = gd_ofa_registry("dat_registry_remove_provider", gd_registry_remove_provider);
	if (info == NULL)
		return;
	pthread_mutex_lock(&gd_registrations_mu);
	for (struct gd_registration **p = &gd_registrations; *p != NULL; p = &(*p)->next) {
		struct gd_registration *r = *p;
		if (strncmp(r->info.ia_name, info->ia_name, DAT_NAME_MAX_LENGTH) == 0) {
			*p = r->next;
			pthread_mutex_unlock(&gd_registrations_mu);
			if (remove != NULL)
				remove(&r->provider, &r->info);
			free(r);
			return;
		}
	}
	pthread_mutex_unlock(&gd_registrations_mu);
}

/* OFA's registry maps its own IA handles to providers' with this; godat's
 * IA handles are already provider handles. */
DAT_RETURN dats_get_ia_handle(DAT_IA_HANDLE ia, DAT_IA_HANDLE *out) __attribute__((visibility("default")));
DAT_RETURN dats_get_ia_handle(DAT_IA_HANDLE ia, DAT_IA_HANDLE *out)
{
	if (out == NULL)
		return GD_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	*out = ia;
	return DAT_SUCCESS;
}

void gd_call_agent(DAT_AGENT_FUNC fn, DAT_PVOID instance, DAT_EVD_HANDLE evd) { fn(instance, evd); }

DAT_PROVIDER gd_provider = {
	.device_name = "godat",
	.ia_open_func = gd_ia_open,
	.ia_query_func = gd_ia_query,
	.ia_close_func = gd_ia_close,
	.set_consumer_context_func = gd_set_consumer_context,
	.get_consumer_context_func = gd_get_consumer_context,
	.get_handle_type_func = gd_get_handle_type,
	.cno_create_func = gd_cno_create,
	.cno_modify_agent_func = gd_cno_modify_agent,
	.cno_query_func = gd_cno_query,
	.cno_free_func = gd_cno_free,
	.cno_wait_func = gd_cno_wait,
	.cr_query_func = gd_cr_query,
	.cr_accept_func = gd_cr_accept,
	.cr_reject_func = gd_cr_reject,
	.cr_handoff_func = gd_cr_handoff,
	.evd_create_func = gd_evd_create,
	.evd_query_func = gd_evd_query,
	.evd_modify_cno_func = gd_evd_modify_cno,
	.evd_enable_func = gd_evd_enable,
	.evd_disable_func = gd_evd_disable,
	.evd_wait_func = gd_evd_wait,
	.evd_resize_func = gd_evd_resize,
	.evd_post_se_func = gd_evd_post_se,
	.evd_dequeue_func = gd_evd_dequeue,
	.evd_free_func = gd_evd_free,
	.ep_create_func = gd_ep_create,
	.ep_query_func = gd_ep_query,
	.ep_modify_func = gd_ep_modify,
	.ep_connect_func = gd_ep_connect,
	.ep_dup_connect_func = gd_ep_dup_connect,
	.ep_disconnect_func = gd_ep_disconnect,
	.ep_post_send_func = gd_ep_post_send,
	.ep_post_recv_func = gd_ep_post_recv,
	.ep_post_rdma_read_func = gd_ep_post_rdma_read,
	.ep_post_rdma_write_func = gd_ep_post_rdma_write,
	.ep_get_status_func = gd_ep_get_status,
	.ep_free_func = gd_ep_free,
	.lmr_create_func = gd_lmr_create,
	.lmr_query_func = gd_lmr_query,
	.lmr_free_func = gd_lmr_free,
	.rmr_create_func = gd_rmr_create,
	.rmr_query_func = gd_rmr_query,
	.rmr_bind_func = gd_rmr_bind,
	.rmr_free_func = gd_rmr_free,
	.psp_create_func = gd_psp_create,
	.psp_query_func = gd_psp_query,
	.psp_free_func = gd_psp_free,
	.rsp_create_func = gd_rsp_create,
	.rsp_query_func = gd_rsp_query,
	.rsp_free_func = gd_rsp_free,
	.pz_create_func = gd_pz_create,
	.pz_query_func = gd_pz_query,
	.pz_free_func = gd_pz_free,
	.psp_create_any_func = gd_psp_create_any,
	.ep_reset_func = gd_ep_reset,
	.evd_set_unwaitable_func = gd_evd_set_unwaitable,
	.evd_clear_unwaitable_func = gd_evd_clear_unwaitable,
	.lmr_sync_rdma_read_func = gd_lmr_sync_rdma_read,
	.lmr_sync_rdma_write_func = gd_lmr_sync_rdma_write,
	.ep_create_with_srq_func = gd_ep_create_with_srq,
	.ep_recv_query_func = gd_ep_recv_query,
	.ep_set_watermark_func = gd_ep_set_watermark,
	.srq_create_func = gd_srq_create,
	.srq_free_func = gd_srq_free,
	.srq_post_recv_func = gd_srq_post_recv,
	.srq_query_func = gd_srq_query,
	.srq_resize_func = gd_srq_resize,
	.srq_set_lw_func = gd_srq_set_lw,
	.csp_create_func = gd_csp_create,
	.csp_query_func = gd_csp_query,
	.csp_free_func = gd_csp_free,
	.ep_common_connect_func = gd_ep_common_connect,
	.rmr_create_for_ep_func = gd_rmr_create_for_ep,
	.ep_post_send_with_invalidate_func = gd_ep_post_send_with_invalidate,
	.ep_post_rdma_read_to_rmr_func = gd_ep_post_rdma_read_to_rmr,
	.cno_fd_create_func = gd_cno_fd_create,
	.cno_trigger_func = gd_cno_trigger,
	.ia_ha_related_func = gd_ia_ha_related,
	.handle_extendedop_func = gd_handle_extendedop,
};
