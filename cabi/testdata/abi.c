/* abi.c: checks godat's libdat2.so.2 from C, as a uDAPL program sees it:
 * error codes, bad and stale handles, timeouts, private data, and a
 * connection with sends (one that invalidates an RMR), an RMR bind, an
 * RDMA write, an EP's attributes, status and soft watermark, flushed work
 * and software events through a CNO. Run by TestCProgram with the IA to
 * use as its argument (and "ofa" when OFA's libdat2 is the registry);
 * prints one line per check and exits non-zero at the first failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <dat2/udat.h>
#include <dat2/dat_redirection.h> /* DAT_EP_POST_SEND_WITH_INVALIDATE */
#include <dat2/udat_redirection.h>

#include "check.h"

static DAT_EVENT wait1(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER want)
{
	DAT_EVENT ev;
	DAT_COUNT nmore;
	DAT_RETURN r = dat_evd_wait(evd, 5 * 1000 * 1000, 1, &ev, &nmore);
	CHECK(r == DAT_SUCCESS, "wait for 0x%x: %s", want, name(r));
	CHECK(ev.event_number == want, "got event 0x%x, want 0x%x", ev.event_number, want);
	CHECK(ev.evd_handle == evd, "event names EVD %p, want %p", ev.evd_handle, evd);
	return ev;
}

/* send_recv waits for the completions of a send and of the receive it
 * landed in, posted on recv_ep, in either order; both must succeed. */
static void send_recv(DAT_EVD_HANDLE evd, DAT_EP_HANDLE recv_ep, DAT_DTO_COMPLETION_EVENT_DATA *send,
		      DAT_DTO_COMPLETION_EVENT_DATA *recv)
{
	int got_send = 0, got_recv = 0;
	for (int i = 0; i < 2; i++) {
		DAT_EVENT ev = wait1(evd, DAT_DTO_COMPLETION_EVENT);
		DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
		CHECK(d->status == DAT_DTO_SUCCESS, "status %d", d->status);
		if (d->ep_handle == recv_ep) {
			*recv = *d;
			got_recv = 1;
		} else {
			*send = *d;
			got_send = 1;
		}
	}
	CHECK(got_send && got_recv, "completions of a send and its receive: %d and %d", got_send, got_recv);
}

int main(int argc, char **argv)
{
	char *ia_name = argc > 1 ? argv[1] : "loopback";
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
	DAT_RETURN r;
	const char *maj, *min;

	/* Error codes print as the headers name them. */
	OK(dat_strerror((DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP), &maj, &min));
	CHECK(strcmp(maj, "DAT_INVALID_HANDLE") == 0 && strcmp(min, "DAT_INVALID_HANDLE_EP") == 0, "%s %s", maj, min);

	/* An unknown IA name. */
	r = dat_ia_open("no-such-ia", 8, &async, &ia);
	CHECK(DAT_GET_TYPE(r) == DAT_PROVIDER_NOT_FOUND, "%s", name(r));

	/* The registry lists the configured IAs. */
	DAT_COUNT n = 0;
	r = dat_registry_list_providers(0, &n, NULL);
	CHECK(DAT_GET_TYPE(r) == DAT_INVALID_PARAMETER, "a list too small: %s", name(r));
	DAT_PROVIDER_INFO infos[64], *list[64];
	for (int i = 0; i < 64; i++)
		list[i] = &infos[i];
	OK(dat_registry_list_providers(64, &n, list));
	int found = 0;
	for (int i = 0; i < n; i++)
		found |= strcmp(infos[i].ia_name, ia_name) == 0;
	/* OFA's registry lists an IA only once its library is loaded, and the
	 * IA handles it gives out are its own: a provider's queries return the
	 * provider's. */
	int lazy = argc > 2 && strcmp(argv[2], "ofa") == 0;
	CHECK(found || lazy, "%s not among %d listed IAs", ia_name, n);

	async = DAT_HANDLE_NULL;
	OK(dat_ia_open(ia_name, 8, &async, &ia));
	CHECK(async != DAT_HANDLE_NULL, "no async EVD");

	DAT_IA_ATTR ia_attr;
	DAT_PROVIDER_ATTR pr_attr;
	OK(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, &pr_attr));
	CHECK(strcmp(ia_attr.adapter_name, ia_name) == 0, "adapter name %s", ia_attr.adapter_name);
	CHECK(ia_attr.ia_address_ptr != NULL, "no IA address");
	CHECK(ia_attr.max_eps > 0 && ia_attr.max_evd_qlen > 0, "limits %d %d", ia_attr.max_eps, ia_attr.max_evd_qlen);
	int rdma_read = 0;
	for (int i = 0; i < pr_attr.num_provider_specific_attr; i++)
		rdma_read |= strcmp(pr_attr.provider_specific_attr[i].name, "DAT_IB_RDMA_READ") == 0 &&
			     strcmp(pr_attr.provider_specific_attr[i].value, "TRUE") == 0;
	CHECK(rdma_read, "no DAT_IB_RDMA_READ=TRUE among %d provider attributes", pr_attr.num_provider_specific_attr);

	/* Handles that are not handles, or of another kind. (OFA's libdat2
	 * dispatches through the first word of whatever it is given, so only
	 * godat's own can be shown garbage.) */
	DAT_PZ_HANDLE pz;
	DAT_EVENT ev;
	if (!lazy) {
		r = dat_pz_create((DAT_IA_HANDLE)0x1234, &pz);
		CHECK(DAT_GET_TYPE(r) == DAT_INVALID_HANDLE, "%s", name(r));
		r = dat_evd_dequeue((DAT_EVD_HANDLE)&ev, &ev);
		CHECK(DAT_GET_TYPE(r) == DAT_INVALID_HANDLE, "%s", name(r));
	}
	OK(dat_pz_create(ia, &pz));
	r = dat_evd_free(pz);
	CHECK(DAT_GET_TYPE(r) == DAT_INVALID_HANDLE, "freeing a PZ as an EVD: %s", name(r));
	DAT_HANDLE_TYPE ht;
	OK(dat_get_handle_type(pz, &ht));
	CHECK(ht == DAT_HANDLE_TYPE_PZ, "handle type %d", ht);
	DAT_CONTEXT ctx = {.as_64 = 0xfeedface12345678ULL}, back;
	OK(dat_set_consumer_context(pz, ctx));
	OK(dat_get_consumer_context(pz, &back));
	CHECK(back.as_64 == ctx.as_64, "context %llx", (unsigned long long)back.as_64);

	/* Extensions are not implemented: a clean error. */
	r = dat_extension_op(ia, 1, 2, 3);
	CHECK(DAT_GET_TYPE(r) == DAT_NOT_IMPLEMENTED, "%s", name(r));

	/* EVDs: the empty DTO queue answers OFA's bare DAT_QUEUE_EMPTY; a
	 * wait times out in microseconds. */
	DAT_EVD_HANDLE cr_evd, conn_evd, dto_evd;
	DAT_CNO_HANDLE cno;
	OK(dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno));
	OK(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd));
	OK(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd));
	OK(dat_evd_create(ia, 16, cno, DAT_EVD_DTO_FLAG | DAT_EVD_SOFTWARE_FLAG, &dto_evd));
	r = dat_evd_dequeue(dto_evd, &ev);
	CHECK(r == 0x000D0000, "empty dequeue: %s", name(r));
	DAT_COUNT nmore;
	r = dat_evd_wait(dto_evd, 2000, 1, &ev, &nmore);
	CHECK(DAT_GET_TYPE(r) == DAT_TIMEOUT_EXPIRED, "%s", name(r));
	DAT_EVD_PARAM evd_param;
	OK(dat_evd_query(dto_evd, DAT_EVD_FIELD_ALL, &evd_param));
	CHECK(evd_param.evd_qlen >= 16 && evd_param.cno_handle == cno && (lazy || evd_param.ia_handle == ia), "qlen %d", evd_param.evd_qlen);

	/* A software event reaches the CNO, and returns its pointer. */
	DAT_EVENT se = {.event_number = DAT_SOFTWARE_EVENT};
	se.event_data.software_event_data.pointer = &se;
	OK(dat_evd_post_se(dto_evd, &se));
	DAT_EVD_HANDLE woke = NULL;
	OK(dat_cno_wait(cno, 1000000, &woke));
	CHECK(woke == dto_evd, "CNO woke with %p", woke);
	ev = wait1(dto_evd, DAT_SOFTWARE_EVENT);
	CHECK(ev.event_data.software_event_data.pointer == &se, "pointer %p", ev.event_data.software_event_data.pointer);
	OK(dat_evd_post_se(dto_evd, &se));
	OK(dat_evd_post_se(dto_evd, &se));
	OK(dat_evd_wait(dto_evd, 1000000, 1, &ev, &nmore));
	CHECK(ev.event_number == DAT_SOFTWARE_EVENT && nmore == 1, "a wait with one more event queued counts %d", nmore);
	ev = wait1(dto_evd, DAT_SOFTWARE_EVENT);

	/* Memory: a buffer registered for local write only can be sent from. */
	enum { N = 8192 };
	char *buf = calloc(4, N);
	DAT_REGION_DESCRIPTION region = {.for_va = buf};
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT rctx;
	DAT_VLEN rlen;
	DAT_VADDR raddr;
	OK(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, 4 * N, pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG,
			  DAT_VA_TYPE_VA, &lmr, &lctx, &rctx, &rlen, &raddr));
	CHECK(raddr == (DAT_VADDR)(uintptr_t)buf && rlen >= 4 * N, "registered %llx+%llu", (unsigned long long)raddr,
	      (unsigned long long)rlen);

	/* A connection with private data both ways. */
	DAT_EP_ATTR attr;
	memset(&attr, 0, sizeof attr);
	attr.max_message_size = N;
	attr.max_rdma_size = 64; /* OFA does not enforce it; programs rely on that */
	attr.max_recv_dtos = 8;
	attr.max_request_dtos = 6;
	attr.max_recv_iov = 2;
	attr.max_request_iov = 3;
	attr.srq_soft_hw = DAT_HW_DEFAULT;
	/* A call with several bad arguments answers for the first of them, in
	 * the order the call takes them. */
	if (!lazy) {
		DAT_EP_HANDLE bad_ep;
		DAT_PSP_HANDLE bad_psp;
		r = dat_ep_create(ia, pz, dto_evd, (DAT_EVD_HANDLE)pz, (DAT_EVD_HANDLE)pz, &attr, &bad_ep);
		CHECK(r == (DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EVD_REQUEST), "a PZ as request and connect EVD: %s", name(r));
		r = dat_ep_create(ia, (DAT_PZ_HANDLE)cr_evd, (DAT_EVD_HANDLE)pz, dto_evd, conn_evd, &attr, NULL);
		CHECK(r == (DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG7), "no EP pointer, an EVD as PZ: %s", name(r));
		r = dat_ep_create(ia, (DAT_PZ_HANDLE)cr_evd, (DAT_EVD_HANDLE)pz, dto_evd, conn_evd, &attr, &bad_ep);
		CHECK(r == (DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_PZ), "an EVD as PZ, a PZ as recv EVD: %s", name(r));
		r = dat_psp_create(ia, 1234, (DAT_EVD_HANDLE)pz, DAT_PSP_CONSUMER_FLAG, NULL);
		CHECK(r == (DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG5), "no PSP pointer, a PZ as EVD: %s", name(r));
		r = dat_psp_create(ia, 1234, (DAT_EVD_HANDLE)pz, DAT_PSP_CONSUMER_FLAG, &bad_psp);
		CHECK(r == (DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EVD_CR), "a PZ as CR EVD: %s", name(r));
		r = dat_evd_wait(dto_evd, 0, 1, NULL, NULL);
		CHECK(r == (DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG4), "no event, no count: %s", name(r));
		r = dat_evd_wait((DAT_EVD_HANDLE)pz, 0, 1, NULL, NULL);
		CHECK(r == (DAT_CLASS_ERROR | DAT_INVALID_HANDLE), "a PZ as EVD, no event: %s", name(r));
	}
	DAT_EP_HANDLE a, b;
	OK(dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, &attr, &a));
	OK(dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, &attr, &b));
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL q;
	unsigned char pdata[48];
	connect_any(ia, ia_attr.ia_address_ptr, cr_evd, a, pdata, 48, &psp, &q);
	ev = wait1(cr_evd, DAT_CONNECTION_REQUEST_EVENT);
	DAT_CR_ARRIVAL_EVENT_DATA *cra = &ev.event_data.cr_arrival_event_data;
	CHECK(cra->sp_handle.psp_handle == psp && cra->conn_qual == q, "sp %p qual %llu", cra->sp_handle.psp_handle,
	      (unsigned long long)cra->conn_qual);
	CHECK(cra->local_ia_address_ptr != NULL && cra->local_ia_address_ptr->sa_family == ia_attr.ia_address_ptr->sa_family,
	      "the request names no local IA address");
	DAT_CR_PARAM crp;
	OK(dat_cr_query(cra->cr_handle, DAT_CR_FIELD_ALL, &crp));
	CHECK(crp.private_data_size >= 48 && memcmp(crp.private_data, pdata, 48) == 0, "private data of %d bytes", crp.private_data_size);
	CHECK(crp.remote_ia_address_ptr != NULL, "no remote address");
	for (int i = 0; i < 48; i++)
		((unsigned char *)crp.private_data)[i]++; /* edited in place, as dtest does */
	OK(dat_cr_accept(cra->cr_handle, b, 48, crp.private_data));
	r = dat_cr_query(cra->cr_handle, DAT_CR_FIELD_ALL, &crp);
	CHECK(DAT_GET_TYPE(r) == DAT_INVALID_HANDLE, "a CR after its accept: %s", name(r));
	DAT_EVENT e1 = wait1(conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED);
	DAT_EVENT e2 = wait1(conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED);
	DAT_CONNECTION_EVENT_DATA *ce = e1.event_data.connect_event_data.ep_handle == a ? &e1.event_data.connect_event_data
											  : &e2.event_data.connect_event_data;
	CHECK(ce->ep_handle == a, "no ESTABLISHED for the active EP");
	CHECK(ce->private_data_size >= 48 && ((unsigned char *)ce->private_data)[0] == 2 &&
		      ((unsigned char *)ce->private_data)[47] == 49,
	      "accept private data of %d bytes", ce->private_data_size);

	DAT_EP_PARAM epp;
	OK(dat_ep_query(a, DAT_EP_FIELD_ALL, &epp));
	CHECK(epp.ep_state == DAT_EP_STATE_CONNECTED && epp.remote_ia_address_ptr != NULL && (lazy || epp.ia_handle == ia),
	      "state %d", epp.ep_state);
	CHECK(epp.ep_attr.max_recv_dtos == 8 && epp.ep_attr.max_request_dtos == 6 && epp.ep_attr.max_recv_iov == 2 &&
		      epp.ep_attr.max_request_iov == 3,
	      "EP attributes: %d %d receives and requests, %d %d IOV", epp.ep_attr.max_recv_dtos, epp.ep_attr.max_request_dtos,
	      epp.ep_attr.max_recv_iov, epp.ep_attr.max_request_iov);

	/* A send into a posted receive. */
	DAT_LMR_TRIPLET rv = {.virtual_address = (DAT_VADDR)(uintptr_t)buf, .segment_length = N, .lmr_context = lctx};
	DAT_LMR_TRIPLET sd = {.virtual_address = (DAT_VADDR)(uintptr_t)(buf + N), .segment_length = 100, .lmr_context = lctx};
	memset(buf + N, 'x', 100);
	DAT_DTO_COOKIE c1 = {.as_64 = 11}, c2 = {.as_64 = 22};
	r = dat_ep_post_send(a, 1, NULL, c2, DAT_COMPLETION_DEFAULT_FLAG);
	CHECK(DAT_GET_TYPE(r) == DAT_INVALID_PARAMETER, "a send of one segment with no segments: %s", name(r));
	OK(dat_ep_post_recv(b, 1, &rv, c1, DAT_COMPLETION_DEFAULT_FLAG));
	OK(dat_ep_post_send(a, 1, &sd, c2, DAT_COMPLETION_DEFAULT_FLAG));
	DAT_DTO_COMPLETION_EVENT_DATA ds, dr;
	send_recv(dto_evd, b, &ds, &dr);
	CHECK(ds.user_cookie.as_64 == 22 && ds.ep_handle == a && ds.operation == DAT_DTO_SEND, "send completion cookie %llu on %p op %d",
	      (unsigned long long)ds.user_cookie.as_64, ds.ep_handle, ds.operation);
	CHECK(dr.user_cookie.as_64 == 11 && dr.operation == DAT_DTO_RECEIVE && dr.transfered_length == 100,
	      "receive completion cookie %llu op %d length %u", (unsigned long long)dr.user_cookie.as_64, dr.operation,
	      dr.transfered_length);
	CHECK(memcmp(buf, buf + N, 100) == 0, "data not received");
	DAT_EP_STATE st;
	DAT_BOOLEAN recv_idle, req_idle;
	OK(dat_ep_get_status(b, &st, &recv_idle, &req_idle));
	CHECK(st == DAT_EP_STATE_CONNECTED && recv_idle == DAT_TRUE && req_idle == DAT_TRUE, "status %d, idle %d %d", st, recv_idle,
	      req_idle);
	OK(dat_ep_post_recv(b, 1, &rv, c1, DAT_COMPLETION_DEFAULT_FLAG));
	OK(dat_ep_get_status(b, &st, &recv_idle, &req_idle));
	CHECK(recv_idle == DAT_FALSE && req_idle == DAT_TRUE, "a receive posted, idle %d %d", recv_idle, req_idle);
	/* A soft high watermark below the receives it holds: the IA's async
	 * EVD names the EP and the reason. */
	OK(dat_ep_set_watermark(b, 0, DAT_WATERMARK_INFINITE));
	ev = wait1(async, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR);
	CHECK(ev.event_data.asynch_error_event_data.dat_handle == b &&
		      ev.event_data.asynch_error_event_data.reason == DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT,
	      "watermark event on %p, reason %d", ev.event_data.asynch_error_event_data.dat_handle,
	      ev.event_data.asynch_error_event_data.reason);

	/* The receiver binds an RMR; a send that invalidates it names it in
	 * the receive's completion. */
	DAT_RMR_HANDLE rmr;
	DAT_RMR_CONTEXT bound;
	DAT_LMR_TRIPLET win = {.virtual_address = (DAT_VADDR)(uintptr_t)(buf + 3 * N), .segment_length = N, .lmr_context = lctx};
	DAT_RMR_COOKIE bc = {.as_64 = 44};
	OK(dat_rmr_create(pz, &rmr));
	OK(dat_rmr_bind(rmr, lmr, &win, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, DAT_VA_TYPE_VA, b, bc, DAT_COMPLETION_DEFAULT_FLAG, &bound));
	ev = wait1(dto_evd, DAT_RMR_BIND_COMPLETION_EVENT);
	DAT_RMR_BIND_COMPLETION_EVENT_DATA *bd = &ev.event_data.rmr_completion_event_data;
	CHECK(bd->status == DAT_DTO_SUCCESS && bd->rmr_handle == rmr && bd->user_cookie.as_64 == 44, "bind status %d cookie %llu",
	      bd->status, (unsigned long long)bd->user_cookie.as_64);
	/* OFA's libdat2 exports no dat_ep_post_send_with_invalidate: programs go
	 * through the handle's provider table. */
	OK(DAT_EP_POST_SEND_WITH_INVALIDATE(a, 1, &sd, c2, DAT_COMPLETION_DEFAULT_FLAG, DAT_TRUE, bound));
	send_recv(dto_evd, b, &ds, &dr);
	CHECK(dr.operation == DAT_DTO_RECEIVE_WITH_INVALIDATE && dr.rmr_context == bound, "receive with invalidate: op %d context %x, want %x",
	      dr.operation, dr.rmr_context, bound);

	/* An RDMA write larger than the EP's max_rdma_size. */
	DAT_RMR_TRIPLET rt = {.virtual_address = (DAT_VADDR)(uintptr_t)(buf + 2 * N), .segment_length = N, .rmr_context = rctx};
	DAT_LMR_TRIPLET wsrc = {.virtual_address = (DAT_VADDR)(uintptr_t)(buf + N), .segment_length = N, .lmr_context = lctx};
	memset(buf + N, 'w', N);
	DAT_DTO_COOKIE c3 = {.as_64 = 33};
	OK(dat_ep_post_rdma_write(a, 1, &wsrc, c3, &rt, DAT_COMPLETION_DEFAULT_FLAG));
	ev = wait1(dto_evd, DAT_DTO_COMPLETION_EVENT);
	CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS &&
		      ev.event_data.dto_completion_event_data.user_cookie.as_64 == 33,
	      "RDMA write status %d", ev.event_data.dto_completion_event_data.status);
	CHECK(memcmp(buf + N, buf + 2 * N, N) == 0, "RDMA write data not placed");

	/* Objects in use: graceful close refuses, freeing an EVD in use too. */
	r = dat_evd_free(conn_evd);
	CHECK(DAT_GET_TYPE(r) == DAT_INVALID_STATE, "%s", name(r));
	r = dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG);
	CHECK(DAT_GET_TYPE(r) == DAT_INVALID_STATE, "%s", name(r));

	OK(dat_ep_disconnect(a, DAT_CLOSE_GRACEFUL_FLAG));
	wait1(conn_evd, DAT_CONNECTION_EVENT_DISCONNECTED);
	wait1(conn_evd, DAT_CONNECTION_EVENT_DISCONNECTED);
	/* On a disconnected EP a receive and a bind are flushed: their
	 * completions say so. */
	OK(dat_ep_post_recv(b, 1, &rv, c1, DAT_COMPLETION_DEFAULT_FLAG));
	ev = wait1(dto_evd, DAT_DTO_COMPLETION_EVENT);
	CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_ERR_FLUSHED &&
		      ev.event_data.dto_completion_event_data.user_cookie.as_64 == 11,
	      "a receive on a disconnected EP: status %d", ev.event_data.dto_completion_event_data.status);
	bc.as_64 = 55;
	OK(dat_rmr_bind(rmr, lmr, &win, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, DAT_VA_TYPE_VA, b, bc, DAT_COMPLETION_DEFAULT_FLAG, &bound));
	ev = wait1(dto_evd, DAT_RMR_BIND_COMPLETION_EVENT);
	bd = &ev.event_data.rmr_completion_event_data;
	CHECK(bd->status == DAT_DTO_ERR_FLUSHED && bd->user_cookie.as_64 == 55, "a bind on a disconnected EP: status %d",
	      bd->status);
	OK(dat_rmr_free(rmr));
	OK(dat_ep_free(a));
	r = dat_ep_post_send(a, 1, &sd, c2, DAT_COMPLETION_DEFAULT_FLAG);
	CHECK(DAT_GET_TYPE(r) == DAT_INVALID_HANDLE, "post on a freed EP: %s", name(r));

	/* An abrupt close frees everything; the handles die with the IA. */
	OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	r = dat_ep_post_send(b, 1, &sd, c2, DAT_COMPLETION_DEFAULT_FLAG);
	CHECK(DAT_GET_TYPE(r) == DAT_INVALID_HANDLE, "post after close: %s", name(r));
	r = dat_evd_dequeue(dto_evd, &ev);
	CHECK(DAT_GET_TYPE(r) == DAT_INVALID_HANDLE, "dequeue after close: %s", name(r));
	free(buf);
	printf("PASSED\n");
	return 0;
}
