// Package verbs is godat's provider for RDMA hardware: InfiniBand, RoCE and
// iWARP adapters, and soft-RoCE (the kernel's rdma_rxe), driven in-process
// through rdma-core's libibverbs and librdmacm. Import it for its side
// effect: its init registers the provider as "verbs".
//
// # Builds
//
// The provider needs cgo and rdma-core's headers and libraries (Debian:
// apt-get install libibverbs-dev librdmacm-dev) and is compiled in only
// with the build tag verbs:
//
//	go build -tags verbs ./...
//
// Every other build registers the name all the same, so that a dat.conf
// naming it stays valid: its IAs are listed (datinfo) and refused (Open)
// as unavailable with the reason NoSupportReason. A tagged build on a
// machine where rdma-core finds no RDMA device makes them unavailable
// with rdma-core's own answer (for instance ENOSYS from
// ibv_get_device_list when the kernel has no RDMA support).
//
// # What each DAT object is
//
// IA: one port of one RDMA device, reached through one local IP address,
// because rdma_cm (the connection manager) works with IP addresses. The
// ia_params of the IA's configuration entry name it in any of these forms:
//
//	"192.0.2.1"   an IP address of the device's netdev (RoCE) or IPoIB
//	              interface; its device and port are those rdma_cm binds
//	              the address to
//	"rxedummy0"   a netdev; its first address that rdma_cm can bind is used
//	              (a second word, as in the classic "ib0 0", is ignored)
//	"mlx5_0 1"    a device and port, as a classic ofa-v2 dat.conf line names
//	              them (the port defaults to 1); the first local address
//	              that rdma_cm binds to that device and port is used
//	""            the first local address rdma_cm can bind at all
//
// IA.Query reports the device's own limits (ibv_query_device and
// ibv_query_port): max EPs is the device's QP count, the EVD queue length
// its CQ depth, the LMR size its MR size limit, the IOV segments its SGE
// limit, the outstanding RDMA reads its per-QP read limits, the message
// and RDMA sizes the port's message size limit. TransportAttrs name the
// device, port, netdev, link layer, port state, the GID of the address and
// its index and type, and the MTU; VendorAttrs the firmware, GUID and
// vendor, and the raw device limits. The IA's Address is a *net.IPAddr.
//
// PZ: a protection domain (ibv_alloc_pd).
//
// LMR: a memory region (ibv_reg_mr) over memory from api.AllocMemory only.
// A device reads and writes registered memory on its own, at any time, so
// the memory must never move; Go heap memory could. Any other memory is
// ErrInvalidParameter, and the message names AllocMemory. The LMR context
// is the MR's lkey, the RMR context (with a remote privilege) its rkey:
// values the device chooses, not godat. A zero-based LMR (VATypeZB) is
// registered with an I/O virtual address of 0, so that triplets and RMR
// triplets carry offsets. Remote write implies local write (verbs
// requires it). LMRs over another LMR (MemTypeLMR) register the same
// memory again.
//
// RMR (to come): a type 2 memory window (ibv_alloc_mw) bound by a bind
// work request posted on the EP's send queue with the fence flag, so that
// the DTOs posted after the bind see the new window, and completing on the
// EP's request EVD, as dat_rmr_bind(3DAT) requires. A device without type
// 2 windows reports it in the provider attribute "rmr" and refuses
// CreateRMR with ErrNotImplemented rather than emulating them (an
// emulation would need a key per window that the device does not have).
//
// EP (to come): an RC queue pair created through rdma_cm (rdma_create_id,
// rdma_resolve_addr, rdma_resolve_route, rdma_create_qp, rdma_connect),
// whose private data travels in the connect, accept and reject messages
// (MaxPrivateDataSize is the smallest of those: 56 bytes).
//
// PSP and RSP (to come): listening rdma_cm ids bound to the IA's address,
// with the connection qualifier as the port number (rdma_cm's port space
// is RDMA_PS_TCP, like the tcp provider's ports).
//
// EVD: a bounded queue of events in Go memory (package eventq). An EVD for
// DTO completions will own a completion queue (ibv_create_cq) and a
// completion channel; connection events come from the IA's rdma_cm event
// channel. Both channels' descriptors are non-blocking and watched by
// Go's network poller, so a blocked Wait holds no OS thread and spins on
// nothing. Completions are polled many per cgo call into a preallocated
// C array, so the fast path allocates nothing in Go.
//
// SRQ (to come): a shared receive queue (ibv_create_srq); its limit event
// (IBV_EVENT_SRQ_LIMIT_REACHED) is the low-watermark event.
//
// Async EVD: device events of the IA's port (port down, device fatal) and
// of its QPs, CQs and SRQs, read from the device's async event descriptor.
//
// # Resources
//
// Every rdma-core object belongs to exactly one godat object and is
// destroyed when that object is freed, or when its IA is closed: a closed
// IA leaves no PD, MR, CQ, QP, memory window or cm id behind. The device
// contexts are librdmacm's (rdma_get_devices); an IA holds the list while
// it is open.
//
// # Testing on soft-RoCE
//
// No machine of the project has an RDMA NIC; the tests run inside a small
// VM with rdma_rxe (../../shared/tools/rxe-vm). The configuration in
// testdata names the VM's rxe0 device in each ia_params form. rdma_cm
// does not work over 127.0.0.1 in that VM, so everything uses the address
// of the dummy netdev rxe0 sits on ($RXE_VM_IP).
package verbs
