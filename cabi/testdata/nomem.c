/* nomem.c: checks that godat's libdat2.so.2 answers a C allocation it
 * cannot make with DAT_INSUFFICIENT_RESOURCES and loses nothing. While
 * GODAT_CMEM_FAIL is set in the environment (setenv here, between calls)
 * every C allocation of the library fails as a failing calloc would: the
 * IA's address at dat_ia_open, the named attributes at the first
 * dat_ia_query, an EP's addresses at its first dat_ep_query, a CR's
 * address and private data at dat_cr_query, and the private data of a
 * connection event when it is dequeued. Each call must fail cleanly and
 * succeed once the switch is off; the connection event must then come
 * with its private data. Run by TestCProgramNoMemory with the IA to use
 * as its argument; prints one line per check and exits non-zero at the
 * first failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dat2/udat.h>

#include "check.h"

/* NOMEM checks that call fails for want of memory while allocations fail,
 * and succeeds when they no longer do. */
#define NOMEM(call)                                                                          \
	do {                                                                                 \
		setenv("GODAT_CMEM_FAIL", "1", 1);                                           \
		DAT_RETURN r_ = (call);                                                      \
		unsetenv("GODAT_CMEM_FAIL");                                                 \
		CHECK(r_ == (DAT_CLASS_ERROR | DAT_INSUFFICIENT_RESOURCES | DAT_RESOURCE_MEMORY), \
		      "while C allocations fail: %s", name(r_));                            \
		OK(call);                                                                    \
	} while (0)

int main(int argc, char **argv)
{
	char *ia_name = argc > 1 ? argv[1] : "loopback";
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
	DAT_EVENT ev;
	DAT_COUNT nmore;

	NOMEM(dat_ia_open(ia_name, 8, &async, &ia));

	DAT_IA_ATTR ia_attr;
	DAT_PROVIDER_ATTR pr_attr;
	NOMEM(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, &pr_attr));
	CHECK(pr_attr.num_provider_specific_attr > 0 && pr_attr.provider_specific_attr[0].name != NULL,
	      "%d provider attributes", pr_attr.num_provider_specific_attr);

	DAT_PZ_HANDLE pz;
	DAT_EVD_HANDLE cr_evd, conn_evd, dto_evd;
	OK(dat_pz_create(ia, &pz));
	OK(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd));
	OK(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd));
	OK(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd));
	DAT_EP_ATTR attr;
	memset(&attr, 0, sizeof attr);
	attr.max_message_size = 4096;
	attr.max_rdma_size = 4096;
	attr.max_recv_dtos = attr.max_request_dtos = 4;
	attr.max_recv_iov = attr.max_request_iov = 1;
	DAT_EP_HANDLE a, b;
	OK(dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, &attr, &a));
	OK(dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, &attr, &b));
	DAT_EP_PARAM epp;
	NOMEM(dat_ep_query(a, DAT_EP_FIELD_ALL, &epp));
	CHECK(epp.local_ia_address_ptr != NULL, "no local address");

	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL q;
	unsigned char pdata[32];
	connect_any(ia, ia_attr.ia_address_ptr, cr_evd, a, pdata, 32, &psp, &q);
	OK(dat_evd_wait(cr_evd, 5000000, 1, &ev, &nmore));
	CHECK(ev.event_number == DAT_CONNECTION_REQUEST_EVENT, "event 0x%x", ev.event_number);
	DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
	DAT_CR_PARAM crp;
	NOMEM(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp));
	CHECK(crp.private_data_size >= 32 && memcmp(crp.private_data, pdata, 32) == 0, "request private data of %d bytes",
	      crp.private_data_size);
	for (int i = 0; i < 32; i++)
		pdata[i] += 100;
	OK(dat_cr_accept(cr, b, 32, pdata));

	/* Both ESTABLISHED events arrive; the active EP's carries the accept's
	 * private data, which is C memory. While allocations fail, it is
	 * refused and kept, by dequeue and by wait alike, and comes intact
	 * once they do not. */
	int seen_a = 0, seen_b = 0, refused = 0;
	for (int i = 0; i < 8 && !(seen_a && seen_b); i++) {
		setenv("GODAT_CMEM_FAIL", "1", 1);
		DAT_RETURN r = i % 2 ? dat_evd_dequeue(conn_evd, &ev) : dat_evd_wait(conn_evd, 5000000, 1, &ev, &nmore);
		unsetenv("GODAT_CMEM_FAIL");
		if (r == (DAT_CLASS_ERROR | DAT_INSUFFICIENT_RESOURCES | DAT_RESOURCE_MEMORY)) {
			refused++;
			r = i % 2 ? dat_evd_dequeue(conn_evd, &ev) : dat_evd_wait(conn_evd, 5000000, 1, &ev, &nmore);
		}
		if (r == 0x000D0000) /* the queue is empty for now (dequeue) */
			continue;
		CHECK(r == DAT_SUCCESS, "%s", name(r));
		CHECK(ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED, "event 0x%x", ev.event_number);
		DAT_CONNECTION_EVENT_DATA *ce = &ev.event_data.connect_event_data;
		if (ce->ep_handle == a) {
			CHECK(ce->private_data_size >= 32 && memcmp(ce->private_data, pdata, 32) == 0,
			      "accept private data of %d bytes", ce->private_data_size);
			seen_a = 1;
		} else {
			CHECK(ce->ep_handle == b, "ESTABLISHED for %p", ce->ep_handle);
			seen_b = 1;
		}
	}
	CHECK(seen_a && seen_b && refused >= 1, "ESTABLISHED seen for the active EP %d, the passive %d; refused %d",
	      seen_a, seen_b, refused);

	OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	printf("PASSED\n");
	return 0;
}
