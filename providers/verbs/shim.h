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
int gd_query_gid_ex(struct ibv_context *c, uint32_t port, uint32_t index, struct ibv_gid_entry *e);

// gd_bind_probe binds a throw-away rdma_cm id to the IP address ip
// (4 or 16 bytes) and reports the device context and port it landed on.
// It returns 0, or an errno value.
int gd_bind_probe(const uint8_t *ip, int iplen, struct ibv_context **ctx, uint8_t *port);



// gd_reg_mr registers len bytes at addr with access flags access; the
// device addresses them from iova (addr itself, or 0 for zero-based
// LMRs). NULL with errno set on failure.
struct ibv_mr *gd_reg_mr(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova, int access);
#endif
