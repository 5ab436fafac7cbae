/* check.h: what the C test programs check with. CHECK prints one line per
 * check and ends the program at the first that fails; OK checks that a
 * DAT call succeeded; name spells a DAT_RETURN as dat_strerror does. */
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

#endif
