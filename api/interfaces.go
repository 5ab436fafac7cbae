package api

import (
	"context"
	"net"
	"sync/atomic"
)

// Provider is the entry point of a DAT provider: the registry calls Open
// for each IA the configuration maps to it (dat_provider_init(3DAT),
// dat_ia_open(3DAT)). A provider registers itself with the registry from
// its package init.
type Provider interface {
	// Open opens the IA described by p. It fails with ErrProviderNotFound
	// (with a reason) when the device or address p names does not exist,
	// and honours ctx for any blocking set-up.
	Open(ctx context.Context, p OpenParams) (IA, error)
}

// Object is what every DAT object offers: its handle type and the
// consumer's context value (dat_get_handle_type(3DAT),
// dat_get_consumer_context(3DAT), dat_set_consumer_context(3DAT)).
type Object interface {
	// HandleType reports the kind of the object.
	HandleType() HandleType
	// ConsumerContext returns the value last set with SetConsumerContext,
	// or nil. It fails with ErrInvalidHandle once the object is freed.
	ConsumerContext() (any, error)
	// SetConsumerContext stores one value of the consumer's choosing.
	SetConsumerContext(v any) error
}

// ContextSlot implements the consumer-context half of Object. Providers
// embed it in their objects; it is safe for concurrent use.
type ContextSlot struct{ v atomic.Pointer[any] }

// ConsumerContext returns the stored value, or nil.
func (s *ContextSlot) ConsumerContext() (any, error) {
	if p := s.v.Load(); p != nil {
		return *p, nil
	}
	return nil, nil
}

// SetConsumerContext stores v.
func (s *ContextSlot) SetConsumerContext(v any) error {
	s.v.Store(&v)
	return nil
}

// Region describes the memory an LMR registers (DAT_REGION_DESCRIPTION with
// its DAT_MEM_TYPE); see dat_lmr_create(3DAT).
type Region struct {
	Type MemType
	// Bytes is the memory for MemTypeVirtual and MemTypeSharedVirtual. For
	// MemTypeSharedVirtual (and for providers that need shareable memory)
	// it must lie inside memory from AllocMemory.
	Bytes []byte
	// LMR is the existing LMR whose memory MemTypeLMR registers again.
	LMR LMR
	// Pinned says Bytes is memory the Go runtime does not manage (a C
	// program's, say, through godat's C ABI) and that stays in place while
	// it is registered: providers that refuse Go heap memory because a
	// device writes it on its own (verbs) accept it as they accept
	// AllocMemory memory. Memory shared with another process still has to
	// come from AllocMemory.
	Pinned bool
}

// IA is an open Interface Adapter: the root of all other objects of one
// provider instance (dat_ia_open(3DAT)).
type IA interface {
	Object
	// Query returns the IA and provider attributes (dat_ia_query(3DAT)).
	Query() (IAAttr, ProviderAttr, error)
	// AsyncEVD returns the EVD that receives the IA's asynchronous events;
	// it is created by Open and freed by Close.
	AsyncEVD() (EVD, error)
	// Close closes the IA (dat_ia_close(3DAT)). CloseGraceful fails with
	// ErrInvalidState (SubStateIAInUse) while objects other than the async
	// EVD exist; CloseAbrupt destroys them all, flushing outstanding work.
	Close(flags CloseFlags) error

	// CreatePZ creates a protection zone (dat_pz_create(3DAT)).
	CreatePZ() (PZ, error)
	// CreateEVD creates an EVD with a queue of at least qlen events that
	// accepts the streams flags names, optionally feeding cno.
	CreateEVD(qlen int, cno CNO, flags EVDFlags) (EVD, error)
	// CreateCNO creates a consumer notification object (dat_cno_create(3DAT)).
	CreateCNO(agent WaitAgent) (CNO, error)
	// CreateCNOFD creates a CNO without wait agent that owns a file
	// descriptor (dat_cno_fd_create, DAT 2.0): the descriptor is readable
	// while the CNO holds a trigger nobody has collected, so a consumer can
	// wait for it in poll(2), epoll(7) or select(2) among descriptors of
	// its own, then collect the trigger with CNO.Triggered (or Wait). The
	// descriptor belongs to the CNO and is closed by its Free (or the IA's
	// Close); the consumer must not close it. Every CNO call works on it.
	CreateCNOFD() (cno CNO, fd int, err error)
	// CreateEP creates an Endpoint in pz (dat_ep_create(3DAT)). Any EVD may be
	// nil; attr nil means the provider's defaults.
	CreateEP(pz PZ, recvEVD, requestEVD, connectEVD EVD, attr *EPAttr) (EP, error)
	// CreateEPWithSRQ creates an Endpoint that takes its receive buffers from
	// srq (dat_ep_create_with_srq(3DAT)).
	CreateEPWithSRQ(pz PZ, recvEVD, requestEVD, connectEVD EVD, srq SRQ, attr *EPAttr) (EP, error)
	// CreatePSP creates a public service point listening on q
	// (dat_psp_create(3DAT)); ErrConnQualInUse if q is taken.
	CreatePSP(q ConnQual, evd EVD, flags PSPFlags) (PSP, error)
	// CreatePSPAny creates a PSP on a free connection qualifier the provider
	// chooses and returns it (dat_psp_create_any(3DAT)).
	CreatePSPAny(evd EVD, flags PSPFlags) (PSP, ConnQual, error)
	// CreateRSP creates a reserved service point on q for ep, which moves to
	// the RESERVED state (dat_rsp_create(3DAT)).
	CreateRSP(q ConnQual, ep EP, evd EVD) (RSP, error)
	// CreateLMR registers region in pz with privileges priv
	// (dat_lmr_create(3DAT)).
	CreateLMR(pz PZ, region Region, priv MemPriv, va VAType) (LMR, error)
	// CreateSRQ creates a shared receive queue in pz (dat_srq_create(3DAT)).
	CreateSRQ(pz PZ, attr SRQAttr) (SRQ, error)
	// SyncRDMARead makes the consumer's own writes to segs visible to
	// RDMA reads that peers will issue against them: call it after
	// modifying memory and before an incoming RDMA read may begin
	// (dat_lmr_sync_rdma_read(3DAT)). A no-op on coherent memory; it
	// still checks that every segment lies inside an LMR of the IA.
	SyncRDMARead(segs []LMRTriplet) error
	// SyncRDMAWrite makes what incoming RDMA writes placed in segs visible
	// to the consumer: call it after such a write completes and before
	// reading the range. It is also the call that orders the consumer's
	// own writes to a range against incoming RDMA writes to it, before
	// and after them (dat_lmr_sync_rdma_write(3DAT)). A no-op on coherent
	// memory; it still checks the segments as SyncRDMARead does.
	SyncRDMAWrite(segs []LMRTriplet) error
}

// PZ is a protection zone: LMRs, RMRs, EPs and SRQs in one PZ may be used
// together (dat_pz_create(3DAT)).
type PZ interface {
	Object
	// Query returns the PZ parameters (dat_pz_query(3DAT)).
	Query() (PZParam, error)
	// CreateRMR creates an unbound RMR in the PZ (dat_rmr_create(3DAT)).
	CreateRMR() (RMR, error)
	// Free destroys the PZ (dat_pz_free(3DAT)); ErrInvalidState
	// (SubStatePZInUse) while any object uses it.
	Free() error
}

// EVD is an Event Dispatcher: a bounded queue of events from the streams it
// was created for (dat_evd_wait(3DAT)).
type EVD interface {
	Object
	// Query returns the EVD parameters (dat_evd_query(3DAT)).
	Query() (EVDParam, error)
	// Resize changes the queue length (dat_evd_resize(3DAT)); it fails with
	// ErrInvalidState if qlen is below the number of queued events.
	Resize(qlen int) error
	// PostSE queues a software event (dat_evd_post_se(3DAT)); ErrQueueFull
	// if the queue is full (no overflow event is generated).
	PostSE(ev *Event) error
	// Dequeue removes the first event into ev without blocking
	// (dat_evd_dequeue(3DAT)); ErrQueueEmpty if there is none.
	Dequeue(ev *Event) error
	// Wait blocks until at least threshold events are queued, then removes
	// the first into ev and reports how many remain (dat_evd_wait(3DAT)).
	// The end of ctx ends the wait with ErrTimeoutExpired (deadline) or
	// ErrInterruptedCall (cancel), dequeuing nothing.
	Wait(ctx context.Context, threshold int, ev *Event) (nmore int, err error)
	// Enable and Disable switch event delivery to waiters and the CNO
	// (dat_evd_enable(3DAT), dat_evd_disable(3DAT)).
	Enable() error
	Disable() error
	// SetUnwaitable wakes all waiters with ErrInvalidState and refuses new
	// ones until ClearUnwaitable (dat_evd_set_unwaitable(3DAT)).
	SetUnwaitable() error
	ClearUnwaitable() error
	// ModifyCNO changes the CNO the EVD feeds; nil detaches it
	// (dat_evd_modify_cno(3DAT)).
	ModifyCNO(cno CNO) error
	// Free destroys the EVD (dat_evd_free(3DAT)); ErrInvalidState
	// (SubStateEVDInUse) while an EP, PSP, RSP or the IA uses it.
	Free() error
}

// CNO is a Consumer Notification Object: one waiting point for several EVDs
// (dat_cno_create(3DAT)).
type CNO interface {
	Object
	// Query returns the CNO parameters (dat_cno_query(3DAT)).
	Query() (CNOParam, error)
	// ModifyAgent replaces the wait proxy agent (dat_cno_modify_agent(3DAT)).
	ModifyAgent(agent WaitAgent) error
	// Wait blocks until an EVD attached to the CNO receives a notification
	// event and returns that EVD (dat_cno_wait(3DAT)).
	Wait(ctx context.Context) (EVD, error)
	// Triggered collects the CNO's trigger without waiting (dat_cno_trigger,
	// DAT 2.0): the EVD whose notification triggered the CNO last since the
	// trigger was last collected (by Triggered or Wait), or nil if none
	// has. Afterwards the descriptor of a CNO made by CreateCNOFD is not
	// readable until the next trigger.
	Triggered() (EVD, error)
	// Free destroys the CNO (dat_cno_free(3DAT)); ErrInvalidState while an
	// EVD is attached.
	Free() error
}

// EP is an Endpoint: one end of a reliable connection, with a request queue
// (sends, RDMA, binds) and a receive queue (dat_ep_create(3DAT)).
//
// Every posted DTO completes exactly once, in post order per queue, on the
// EVD named at creation, unless CompletionSuppress hides a successful one.
// When the EP leaves CONNECTED its outstanding DTOs complete with
// DTOErrFlushed.
type EP interface {
	Object
	// Query returns the EP parameters (dat_ep_query(3DAT)).
	Query() (EPParam, error)
	// Modify changes the fields mask selects (dat_ep_modify(3DAT)); only in
	// states where the page allows it.
	Modify(mask EPParamMask, p *EPParam) error
	// GetStatus returns the state and whether each queue is idle
	// (dat_ep_get_status(3DAT)).
	GetStatus() (state EPState, recvIdle, requestIdle bool, err error)

	// Connect starts an active connection to the service point q at remote
	// (dat_ep_connect(3DAT)). The result arrives as a connection event.
	Connect(remote net.Addr, q ConnQual, timeout Timeout, privateData []byte, qos QOS, flags ConnectFlags) error
	// DupConnect connects to the same remote end as the connected EP dup
	// (dat_ep_dup_connect(3DAT)).
	DupConnect(dup EP, timeout Timeout, privateData []byte, qos QOS) error
	// Disconnect ends the connection or the connection attempt
	// (dat_ep_disconnect(3DAT)); a DISCONNECTED event follows.
	Disconnect(flags CloseFlags) error
	// Reset returns a DISCONNECTED EP to UNCONNECTED (dat_ep_reset(3DAT)).
	Reset() error
	// Free destroys the EP, breaking any connection (dat_ep_free(3DAT)).
	Free() error

	// PostSend sends the bytes iov names (dat_ep_post_send(3DAT)).
	PostSend(iov []LMRTriplet, cookie Cookie, flags CompletionFlags) error
	// PostSendWithInvalidate sends and, if invalidate is set, invalidates
	// the peer's RMR rmr on delivery (dat_ep_post_send_with_invalidate).
	PostSendWithInvalidate(iov []LMRTriplet, cookie Cookie, flags CompletionFlags, invalidate bool, rmr RMRContext) error
	// PostRecv posts a receive buffer (dat_ep_post_recv(3DAT)).
	PostRecv(iov []LMRTriplet, cookie Cookie, flags CompletionFlags) error
	// PostRDMAWrite writes iov into the peer's remote window
	// (dat_ep_post_rdma_write(3DAT)).
	PostRDMAWrite(iov []LMRTriplet, cookie Cookie, remote RMRTriplet, flags CompletionFlags) error
	// PostRDMARead reads the peer's remote window into iov
	// (dat_ep_post_rdma_read(3DAT)).
	PostRDMARead(iov []LMRTriplet, cookie Cookie, remote RMRTriplet, flags CompletionFlags) error
	// PostRDMAReadToRMR reads the peer's window into a local RMR window
	// (dat_ep_post_rdma_read_to_rmr, DAT 2.0).
	PostRDMAReadToRMR(local RMRTriplet, cookie Cookie, remote RMRTriplet, flags CompletionFlags) error

	// RecvQuery reports receive buffer use of an EP on an SRQ
	// (dat_ep_recv_query(3DAT)).
	RecvQuery() (nbufsAllocated, bufsAllocSpan int, err error)
	// SetWatermark sets and arms the soft and hard high watermarks on the
	// receive buffers the EP holds (dat_ep_set_watermark(3DAT)); either
	// may be WatermarkInfinite. Above the soft one the async EVD gets one
	// event naming the EP (reason ReasonEPSoftHighWater) per call; above
	// the hard one the connection breaks. See docs/decisions.md.
	SetWatermark(soft, hard int) error
}

// PSP is a Public Service Point: a connection qualifier on which connection
// requests arrive as CONNECTION_REQUEST events (dat_psp_create(3DAT)).
type PSP interface {
	Object
	// Query returns the PSP parameters (dat_psp_query(3DAT)).
	Query() (PSPParam, error)
	// Free stops listening (dat_psp_free(3DAT)).
	Free() error
}

// RSP is a Reserved Service Point: a connection qualifier that accepts one
// connection request for one reserved EP (dat_rsp_create(3DAT)).
type RSP interface {
	Object
	// Query returns the RSP parameters (dat_rsp_query(3DAT)).
	Query() (RSPParam, error)
	// Free destroys the RSP (dat_rsp_free(3DAT)).
	Free() error
}

// CR is a Connection Request delivered by a service point; it lives until
// it is accepted, rejected or handed off (dat_cr_query(3DAT)).
type CR interface {
	Object
	// Query returns the request's parameters (dat_cr_query(3DAT)).
	Query() (CRParam, error)
	// Accept accepts the request on ep (dat_cr_accept(3DAT)); ep may be nil
	// when the CR carries a local EP.
	Accept(ep EP, privateData []byte) error
	// Reject rejects it; the requester sees PEER_REJECTED with privateData
	// (dat_cr_reject(3DAT)).
	Reject(privateData []byte) error
	// Handoff passes it to the service point on q (dat_cr_handoff(3DAT)).
	Handoff(q ConnQual) error
}

// LMR is a Local Memory Region: registered memory with local privileges
// and an RMR context for remote access (dat_lmr_create(3DAT)).
type LMR interface {
	Object
	// Query returns the LMR parameters (dat_lmr_query(3DAT)).
	Query() (LMRParam, error)
	// Free deregisters the region (dat_lmr_free(3DAT)); ErrInvalidState
	// (SubStateLMRInUse) while an RMR is bound to it.
	Free() error
}

// RMR is a Remote Memory Region: a window of an LMR that a peer may access
// with its RMR context while it is bound (dat_rmr_create(3DAT)).
type RMR interface {
	Object
	// Query returns the RMR parameters (dat_rmr_query(3DAT)).
	Query() (RMRParam, error)
	// Bind binds the RMR to the window t of lmr with privileges priv for
	// the connection of ep, and returns the new RMR context; a zero-length
	// t unbinds. The bind is posted on ep's request queue, fences later
	// DTOs and completes on its request EVD (dat_rmr_bind(3DAT)).
	Bind(lmr LMR, t LMRTriplet, priv MemPriv, va VAType, ep EP, cookie Cookie, flags CompletionFlags) (RMRContext, error)
	// Free destroys the RMR, invalidating its context (dat_rmr_free(3DAT)).
	Free() error
}

// SRQ is a Shared Receive Queue whose buffers serve many EPs
// (dat_srq_create(3DAT)).
type SRQ interface {
	Object
	// Query returns the SRQ parameters (dat_srq_query(3DAT)).
	Query() (SRQParam, error)
	// PostRecv posts a receive buffer (dat_srq_post_recv(3DAT)).
	PostRecv(iov []LMRTriplet, cookie Cookie) error
	// Resize changes the maximum number of receives (dat_srq_resize(3DAT)).
	Resize(maxRecvDTOs int) error
	// SetLW arms the low-watermark event (dat_srq_set_lw(3DAT)).
	SetLW(lowWatermark int) error
	// Free destroys the SRQ (dat_srq_free(3DAT)); ErrInvalidState
	// (SubStateSRQInUse) while an EP uses it.
	Free() error
}
