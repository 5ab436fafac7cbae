/* check.h: what the C test programs check with. CHECK prints one line per
 * check and ends the program at the first that fails; OK checks that a
 * DAT call succeeded; name spells a DAT_RETURN as dat_strerror does;
 * connect_any starts the connection each program makes to a PSP. */
#ifndef GODAT_TESTDATA_CHECK_H
#define GODAT_TESTDATA_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <dat2/udat.h>

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (cond) {                                                 \
			printf("ok   %s\n", #cond);                             \
		} else {                                                    \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                                \
			printf("\n");                                       \
			exit(1);                                            \
		}                                                           \
	} while (0)

static inline const char *name(DAT_RETURN r)
{
	static char buf[256];
	const char *maj = "?", *min = "?";
	dat_strerror(r, &maj, &min);
	snprintf(buf, sizeof buf, "0x%08x %s %s", r, maj, min);
	return buf;
}

#define OK(call)                                          \
	do {                                              \
		DAT_RETURN r_ = (call);                   \
		CHECK(r_ == DAT_SUCCESS, "%s", name(r_)); \
	} while (0)

/* connect_any starts the connection of ep to a new PSP of ia, on a free
 * qualifier and with cr_evd for its requests, with n bytes of private data
 * numbered from 1 (written to pdata); it returns the PSP and its qualifier. */
static inline void connect_any(DAT_IA_HANDLE ia, DAT_IA_ADDRESS_PTR addr, DAT_EVD_HANDLE cr_evd, DAT_EP_HANDLE ep,
			       unsigned char *pdata, int n, DAT_PSP_HANDLE *psp, DAT_CONN_QUAL *q)
{
	*q = 0;
	OK(dat_psp_create_any(ia, q, cr_evd, DAT_PSP_CONSUMER_FLAG, psp));
	for (int i = 0; i < n; i++)
		pdata[i] = i + 1;
	OK(dat_ep_connect(ep, addr, *q, 5000000, n, pdata, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
}

#endif
