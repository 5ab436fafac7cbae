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

int gd_query_gid_ex(struct ibv_context *c, uint32_t port, uint32_t index, struct ibv_gid_entry *e) {
	return ibv_query_gid_ex(c, port, index, e, 0);
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
