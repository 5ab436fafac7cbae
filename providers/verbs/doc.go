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
// memory again. Every post checks its segments against the IA's LMRs
// (context, PZ, bounds, local read or write privilege) before the device
// sees them, and refuses a bad one at once: verbs cannot refuse a send
// from memory without local read, and rxe reports a bad lkey as a QP
// operation error, not a protection error.
//
// RMR: a type 2 memory window (ibv_alloc_mw) bound by a bind work request
// posted on the EP's send queue with the fence flag; the request posted
// next on the EP carries the fence flag too, so nothing posted after the
// bind starts before it is done, as dat_rmr_bind(3DAT) requires. The
// bind completes on the EP's request EVD. The context is the window's
// rkey, whose key byte godat draws at random on every bind. A rebind or
// an unbind replaces the window with a new one (ibv_dealloc_mw and
// ibv_alloc_mw) rather than posting a local invalidate: the old context
// then fails before the call returns, and rxe refused a bind posted after
// an invalidate of the same window. Windows bound to an EP are replaced
// before the EP's QP is destroyed. A device without type 2 windows
// refuses CreateRMR with ErrNotImplemented (no emulation). Send with
// invalidate is IBV_WR_SEND_WITH_INV; an RDMA read into a local RMR is
// translated to the LMR the window is bound to, since a device cannot use
// a window's key locally.
//
// EP: an RC queue pair that godat creates itself (ibv_create_qp) and
// moves to INIT at once, so that receives can be posted before the EP is
// connected, as DAT allows. rdma_cm carries the connection: the active
// side binds a cm id to the IA's address (its port is the EP's local port
// qualifier), resolves address and route, and sends the request with the
// QP's number and the private data; on the response godat moves the QP to
// RTR and RTS with the attributes rdma_cm computes (rdma_init_qp_attr)
// and confirms (rdma_establish). The passive side does the same with the
// request's cm id before rdma_accept. The DAT connect timeout is enforced
// by godat (TIMED_OUT), since the CM's own retries take much longer.
// Disconnect moves the QP to the error state, which flushes outstanding
// DTOs (FLUSHED), and sends the CM disconnect; both sides get
// DISCONNECTED. A DTO that fails for any other reason breaks the
// connection (BROKEN); the peer's disconnect that such a failure causes
// is handled only after the EP's CQs are drained, so the side whose DTO
// failed gets BROKEN even when nobody was taking its completions. DTOs
// posted on a DISCONNECTED EP complete FLUSHED
// at once, without the device. Modify of anything the QP depends on (PZ,
// request or receive EVD, queue sizes) makes a new QP, which is allowed
// only while nothing is posted.
//
// Inline data: each QP is created asking for 256 bytes of inline data
// (less if the device refuses that much, none if it has none). A send or
// RDMA write whose segments add up to no more than the QP was granted,
// none of them in a zero-based LMR (whose offsets only the device can
// translate), is posted with IBV_SEND_INLINE: ibv_post_send copies the
// bytes into the work request, and the device need not fetch them from
// the LMR before it sends. EP.Query reports the granted capacity as the
// transport-specific attribute max_inline_data. rdma-core's own
// ibv_rc_pingpong and perftest post small messages the same way. On an
// adapter it spares a DMA read of the payload before the packet leaves;
// on soft-RoCE, where the post's system call copies the bytes either
// way, it makes no difference (docs/performance.md). The segments are
// checked against the IA's LMRs first all the same (above), so a request
// the device would have refused for its lkey is refused inline too; what
// changes is only when the bytes are read, and DAT already forbids
// touching them until the request completes.
//
// Private data: the InfiniBand CM (used by RoCE too) pads private data to
// its field size, so godat prefixes its own with a marker byte and a
// length byte and strips them on arrival; private data without the marker
// (a peer that is not godat) is delivered whole, padding included. A
// connect request holds 56 bytes of rdma_cm private data, so
// MaxPrivateDataSize is 54, below the 64 of dat_ia_query(3DAT): the
// provider declares that as a conformance deviation (below).
//
// PSP and RSP: listening rdma_cm ids bound to the IA's address, with the
// connection qualifier as the port (rdma_cm's TCP port space, so at most
// 65535). An RSP stops listening after its one request. CR.Handoff can
// only move a request to another PSP of the same IA: rdma_cm cannot pass
// a request to another listener.
//
// EVD: a bounded queue of events in Go memory (package eventq). An EVD
// created for DTO or RMR bind completions owns a completion queue
// (ibv_create_cq, as deep as the EVD) on a completion channel whose
// non-blocking descriptor is read through Go's network poller: a reader
// holds no OS thread while it waits and spins on nothing. Its reader is
// either the EVD's watcher goroutine or a blocked Wait itself.
//
// The watcher: when the device signals, it drains the CQ into the queue,
// up to 32 completions per cgo call into a C array allocated with the
// EVD, and arms the CQ again; Dequeue drains it too when the queue is
// empty, so a consumer that polls needs no wake-up. While a consumer is
// at work (a Dequeue found the queue empty, or it posted a request whose
// completion comes to the EVD, since the last look), the watcher leaves
// the CQ unarmed, so that completions cost no notification, and looks
// again after a millisecond, then twice as late each time up to 16 ms;
// the CQ is armed again once a look finds 16 ms without such work, and
// always while the EVD feeds a CNO or a Wait blocks on it. The posts
// count because a consumer that posts comes for its completions by
// Dequeue or Wait, which drain the CQ themselves; a watcher that drained
// after each completion would mostly wait for ia.mu, which the
// consumer's next post holds through its call into rdma-core.
//
// A Wait that must block reads the channel itself (a driven wait, as the
// tcp provider's waiter drives its sockets): it arms the CQ, drains it,
// and blocks in poll(2), in its own thread, on the channel's descriptor
// and an eventfd that kicks it; the completion's notification wakes that
// thread alone (a goroutine parked in Go's poller is woken by whichever
// thread polls the network, and a C caller's, locked to its own thread,
// is then handed over to it: a second wake-up), which takes and acknowledges
// the channel event (ibv_get_cq_event, ibv_ack_cq_events), drains the CQ
// and returns, leaving the CQ unarmed until the next wait arms it. So a
// completion costs the waiter one wake-up, where a watcher in between
// would add its own and a hand-off (rsocket's blocking calls, too, sleep
// on the channel in the calling thread). One goroutine reads the channel at a
// time: the first Wait takes it from the watcher (a read deadline in the
// past wakes the watcher, which hands it over), and the Waits keep it
// until 20 ms pass without one, or until the EVD comes to feed a CNO,
// when the watcher gets it back and arms the CQ; meanwhile completions
// nobody waits for or dequeues stay in the CQ. Whatever else must end a
// blocked Wait (an event posted to the queue otherwise, PostSE, the end
// of its context, SetUnwaitable, Free, the IA's close) writes the
// eventfd, and the Wait asks the queue again (eventq's BeginWait and
// Check).
//
// An event godat posts to the EVD itself (a connection event, a flush)
// first drains an unarmed CQ, so it stays behind the completions that
// came before it. Connection events come from the IA's rdma_cm
// event channel, watched the same way. Posting and completing allocate
// nothing in Go (TestFastPathAllocatesNothing).
//
// SRQ: an ibv_srq. The device takes its receives in any order, so each
// has a slot found again by the completion's work request id. The low
// watermark is counted by godat, which sees every receive posted and
// completed, rather than armed on the device (IBV_EVENT_SRQ_LIMIT_REACHED
// is one-shot and would have to be re-armed by a modify call after each
// event).
//
// Async EVD: it receives the EVD overflow and SRQ low-watermark events
// godat raises, and the device's own async events. Those arrive on a
// descriptor of librdmacm's device context, which every IA of the process
// on that device shares, and each event is read once; so one reader per
// device and process (async.go), parked in the network poller, starts
// with the first IA on the device and stops with the last, and hands each
// event to every IA the event concerns. The reader makes the descriptor
// non-blocking while it runs: nothing else in the process may read it.
// The mapping: device fatal is ASYNC_ERROR_IA_CATASTROPHIC (reason
// IA_CATASTROPHIC_ERROR) on every IA of the device; a port error (the
// link went down) is ASYNC_ERROR_IA_CATASTROPHIC with reason
// IA_OTHER_ERROR on the IAs of that port; a QP fatal, request or access
// error is ASYNC_ERROR_EP_BROKEN naming the EP; a CQ error (an overrun)
// is ASYNC_ERROR_EVD_OVERFLOW naming the EVD; an SRQ error is reason
// SRQ_TRANSFER_TO_ERROR naming the SRQ. Port active, address, key and
// subnet-manager changes, path migration and the QP events rdma_cm
// already reports have no DAT event and are dropped.
//
// Solicited wait: a work completion carries no solicited bit, so the
// provider learns that a message was solicited from the CQ's
// notification. A CQ that only receive queues of EPs with solicited wait
// use (RecvCompletionFlags) is armed for solicited and failed completions
// alone; its successful receives are queued without notifying, and the
// watcher raises one notification for the EVD once a notification's
// completions are queued (a driven Wait is woken by the same
// notifications). A CQ shared with request queues or with EPs
// without solicited wait is armed for every completion, and there every
// receive notifies, solicited or not (the one case where the provider
// cannot keep the page's rule). The kind of arm is chosen once work may
// complete on the CQ: it is first armed when a receive is first posted
// to a QP that uses it (or when it serves a send queue or an EP on an
// SRQ), so EPs made and freed before, with other attributes, do not fix
// it. A CQ that was armed for every completion when its users became all
// solicited-wait ones may still raise one more notification for an
// unsolicited message: an arm cannot be narrowed until it fires.
//
// Conformance deviations: rules of the conformance suite the device or
// the wire cannot meet are declared in ProviderAttr.ProviderSpecific
// (conformance.DeviationPrefix): private-data-min-64 always, and on
// soft-RoCE (devices named rxe*) recv-length-status (rxe completes a
// receive too small for its message with IBV_WC_LOC_QP_OP_ERR),
// rmr-window-bounds (rxe checks an access through a window against the
// whole MR) and rmr-invalidate-scope (rxe lets a send-with-invalidate on
// any QP of the PD invalidate a window bound to another QP).
//
// # Calls into rdma-core
//
// Most calls into rdma-core are ordinary cgo calls. The data path's are
// not: posting a request (ibv_post_send), a receive (ibv_post_recv,
// ibv_post_srq_recv) and polling a CQ (ibv_poll_cq) run the C function
// directly on the calling thread's system stack (fastcall.go), without
// cgo's passage through the scheduler's system-call state. A cgo call
// that lasts longer than a tick of the runtime's monitor thread (20 µs
// and up) may have its P handed to another thread, and the caller then
// waits for a P on its way back. On soft-RoCE each post is a system call
// that carries the whole exchange, long enough under emulation that
// through cgo nearly every post pays that handoff and a few pay
// milliseconds, which took the 64 B RDMA-write ping-pong to about twice
// the direct calls' time (docs/performance.md). On an RDMA NIC the same
// calls are stores to the device's doorbell and reads of its completion
// ring in user space, where cgo's own cost (tens of nanoseconds) is what
// the direct call saves.
//
// A direct call keeps its P for as long as the C function runs, so it is
// made only for functions that return promptly and never call back into
// Go: rdma-core's posting and polling do neither (on rxe the post's
// system call does not sleep). Meanwhile a stop-the-world of the garbage
// collector waits for the call to return, and no other goroutine runs on
// that P. The race detector models each cgo call as a synchronization
// point, which a direct call is not, so race builds use cgo for these
// calls too (fastcall_cgo.go), as builds with -tags godat_cgocall do:
// that tag is the way around a Go release that no longer provides the
// runtime primitive the direct calls use (the build then fails to link
// runtime.asmcgocall). CI runs the package's tests both ways.
//
// # Resources
//
// Every rdma-core object belongs to exactly one godat object and is
// destroyed when that object is freed, or when its IA is closed: a closed
// IA leaves no PD, MR, CQ, QP, memory window or cm id behind. The device
// contexts are librdmacm's (rdma_get_devices); an IA holds the list while
// it is open. librdmacm keeps each device open, with a PD of its own, from
// first use to the end of the process (TestNothingOutlivesTheIA counts
// the device's resources with `rdma resource show`).
//
// # Testing on soft-RoCE
//
// No machine of the project has an RDMA NIC; the tests run inside a small
// VM with rdma_rxe (../../shared/tools/rxe-vm). The configuration in
// testdata names the VM's rxe0 device in each ia_params form. rdma_cm
// does not work over 127.0.0.1 in that VM, so everything uses the address
// of the dummy netdev rxe0 sits on ($RXE_VM_IP). ../../.ci/verbs builds
// the tagged test binary and runs it, with the conformance suite under
// -race, and datinfo, in one boot of the VM.
package verbs
