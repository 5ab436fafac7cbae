/* cabipp: a 64-byte send/recv ping-pong through libdat2, both sides
 * polling dat_evd_dequeue, timed per round trip; bench/cabi.sh runs it
 * beside dattest doing the same work natively.
 *
 *   cabipp -s IA PORT N WARM    answer N+WARM pings on PORT
 *   cabipp -c IA PORT N WARM [HOST]
 *                               connect to HOST:PORT (127.0.0.1), ping
 *
 * The client prints one line: the mean, median and 90th percentile of
 * the one-way latency (half a round trip, µs) over the N round trips
 * after WARM untimed ones. Unlike dtest's ping-pong (100 round trips
 * after a second asleep), this is the C ABI in steady state. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dat2/udat.h>

#define SIZE 64

static void must(DAT_RETURN r, const char *what)
{
	if (r != DAT_SUCCESS) {
		const char *maj = "?", *min = "?";
		dat_strerror(r, &maj, &min);
		fprintf(stderr, "cabipp: %s: %s %s\n", what, maj, min);
		exit(1);
	}
}

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static DAT_EVENT wait_event(DAT_EVD_HANDLE evd, const char *what)
{
	DAT_EVENT ev;
	DAT_COUNT more;
	must(dat_evd_wait(evd, 10 * 1000 * 1000, 1, &ev, &more), what);
	return ev;
}

/* dto checks that ev is a successful DTO completion. */
static void dto(const DAT_EVENT *ev)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev->event_data.dto_completion_event_data;
	if (ev->event_number != DAT_DTO_COMPLETION_EVENT || d->status != DAT_DTO_SUCCESS) {
		fprintf(stderr, "cabipp: unexpected event %#x (status %#x, operation %#x)\n", ev->event_number, d->status,
			d->operation);
		exit(1);
	}
}

/* next_recv dequeues from rcv until a receive completes, and between
 * tries takes from req the send completions that have come. */
static void next_recv(DAT_EVD_HANDLE rcv, DAT_EVD_HANDLE req)
{
	for (;;) {
		DAT_EVENT ev;
		DAT_RETURN r = dat_evd_dequeue(rcv, &ev);
		if (r == DAT_SUCCESS) {
			dto(&ev);
			return;
		}
		if (DAT_GET_TYPE(r) != DAT_QUEUE_EMPTY)
			must(r, "dat_evd_dequeue");
		r = dat_evd_dequeue(req, &ev);
		if (r == DAT_SUCCESS)
			dto(&ev);
		else if (DAT_GET_TYPE(r) != DAT_QUEUE_EMPTY)
			must(r, "dat_evd_dequeue");
	}
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 6 || argc > 7 || (strcmp(argv[1], "-s") && strcmp(argv[1], "-c"))) {
		fprintf(stderr, "usage: cabipp -s|-c IA PORT N WARM [HOST]\n");
		return 2;
	}
	int server = !strcmp(argv[1], "-s");
	DAT_CONN_QUAL port = strtoul(argv[3], NULL, 10);
	int n = atoi(argv[4]), warm = atoi(argv[5]);
	if (n < 1 || warm < 0) {
		fprintf(stderr, "cabipp: N must be at least 1 and WARM at least 0\n");
		return 2;
	}

	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL, req, rcv, conn, cr;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE ep;
	must(dat_ia_open(argv[2], 8, &async, &ia), "dat_ia_open");
	must(dat_pz_create(ia, &pz), "dat_pz_create");
	must(dat_evd_create(ia, 8, NULL, DAT_EVD_DTO_FLAG, &req), "dat_evd_create");
	must(dat_evd_create(ia, 8, NULL, DAT_EVD_DTO_FLAG, &rcv), "dat_evd_create");
	must(dat_evd_create(ia, 8, NULL, DAT_EVD_CONNECTION_FLAG, &conn), "dat_evd_create");
	must(dat_evd_create(ia, 8, NULL, DAT_EVD_CR_FLAG, &cr), "dat_evd_create");
	must(dat_ep_create(ia, pz, rcv, req, conn, NULL, &ep), "dat_ep_create");

	static char buf[2 * SIZE];
	DAT_REGION_DESCRIPTION region = {.for_va = buf};
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT rctx;
	DAT_VLEN rlen;
	DAT_VADDR raddr;
	must(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof buf, pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
			    DAT_VA_TYPE_VA, &lmr, &lctx, &rctx, &rlen, &raddr),
	     "dat_lmr_create");
	DAT_LMR_TRIPLET out = {.lmr_context = lctx, .virtual_address = (DAT_VADDR)(uintptr_t)buf, .segment_length = SIZE};
	DAT_LMR_TRIPLET in = {.lmr_context = lctx, .virtual_address = (DAT_VADDR)(uintptr_t)(buf + SIZE), .segment_length = SIZE};
	DAT_DTO_COOKIE cookie = {.as_64 = 1};

	for (int k = 0; k < 2; k++)
		must(dat_ep_post_recv(ep, 1, &in, cookie, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	if (server) {
		DAT_PSP_HANDLE psp;
		must(dat_psp_create(ia, port, cr, DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create");
		printf("listening\n");
		fflush(stdout);
		DAT_EVENT ev = wait_event(cr, "waiting for a connection request");
		must(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, ep, 0, NULL), "dat_cr_accept");
	} else {
		struct sockaddr_in to = {.sin_family = AF_INET};
		if (inet_pton(AF_INET, argc == 7 ? argv[6] : "127.0.0.1", &to.sin_addr) != 1) {
			fprintf(stderr, "cabipp: bad IPv4 address %s\n", argv[6]);
			return 2;
		}
		must(dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&to, port, 10 * 1000 * 1000, 0, NULL, DAT_QOS_BEST_EFFORT,
				    DAT_CONNECT_DEFAULT_FLAG),
		     "dat_ep_connect");
	}
	DAT_EVENT ev = wait_event(conn, "waiting for the connection");
	if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
		fprintf(stderr, "cabipp: connection event %#x\n", ev.event_number);
		return 1;
	}

	/* As dattest does: receives stay posted ahead (two here), each
	 * replaced after the send that answers or asks for the next message,
	 * off the critical path, and send completions are taken as they
	 * come. */
	double *t = malloc(n * sizeof *t);
	if (t == NULL) {
		fprintf(stderr, "cabipp: no memory for %d timings\n", n);
		return 1;
	}
	for (int i = 0; i < warm + n; i++) {
		double t0 = now_us();
		if (server)
			next_recv(rcv, req); /* the ping */
		must(dat_ep_post_send(ep, 1, &out, cookie, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_send");
		if (i + 2 < warm + n)
			must(dat_ep_post_recv(ep, 1, &in, cookie, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
		if (!server)
			next_recv(rcv, req); /* the pong */
		if (i >= warm)
			t[i - warm] = (now_us() - t0) / 2;
	}
	if (!server) {
		double sum = 0;
		for (int i = 0; i < n; i++)
			sum += t[i];
		qsort(t, n, sizeof *t, by_value);
		printf("mean %.2f median %.2f p90 %.2f\n", sum / n, t[n / 2], t[n * 9 / 10]);
	}
	/* The client closes; the server sees it as a connection event. */
	if (!server)
		must(dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG), "dat_ep_disconnect");
	wait_event(conn, "waiting for the disconnection");
	return 0;
}
