// Package loopback is godat's in-process DAT provider: EPs of one process
// connect to each other and move data by memory copy. It is the semantic
// reference for the other providers and the speed ceiling for them. Import
// it for its side effect: its init registers the provider as "loopback"
// (the embedded default configuration has an IA of that name).
//
// The DAT manual pages (dat_ep_connect(3DAT) and the rest) are the
// authority; this comment records the choices the pages leave to a
// provider, and the behaviour a consumer may rely on.
//
// Like any provider it is reached through the registry's guard and leaves
// to it what package api says the guard checks: freed, foreign and
// missing handles, calls after Free or Close, and freeing a PZ, EVD or SRQ
// still in use. It checks what only it knows (attributes against its
// limits, privileges, addresses, states) and resolves memory itself.
//
// # Addresses and connection qualifiers
//
// Every IA that Open opens has its own Addr (IA name and instance number),
// reported by IA.Query. Connection qualifiers live in one process-wide
// table, the way ports live on a host: a PSP or RSP on q makes q busy for
// every loopback IA, and Connect(addr, q) reaches it whichever open IA addr
// names. An addr that names no open IA gives UNREACHABLE; a q nobody
// listens on gives NON_PEER_REJECTED; an address that is not an Addr is
// ErrInvalidAddress. CreatePSPAny picks qualifiers from 0xC000 up. An
// active EP gets a fresh port qualifier of its own, which the passive side
// sees in CRParam.RemotePortQual.
//
// A service point's backlog is the free space of its EVD: a request that
// finds the EVD full is refused (the requester gets NON_PEER_REJECTED) and
// nothing is queued. Requests are delivered while Connect runs, so the
// CONNECTION_REQUEST can precede Connect's return.
//
// # The EP state machine
//
//	UNCONNECTED --Connect/DupConnect--> ACTIVE_CONNECTION_PENDING
//	ACTIVE_CONNECTION_PENDING --accepted--> CONNECTED (ESTABLISHED, with the acceptor's private data)
//	ACTIVE_CONNECTION_PENDING --rejected/unreachable/no listener/timeout/Disconnect--> DISCONNECTED
//	UNCONNECTED --CreateRSP--> RESERVED --request arrives--> PASSIVE_CONNECTION_PENDING
//	RESERVED --RSP.Free--> UNCONNECTED;  PASSIVE_CONNECTION_PENDING --Reject--> UNCONNECTED
//	(provider-created EP) TENTATIVE_CONNECTION_PENDING --Reject/Handoff--> destroyed
//	UNCONNECTED, PASSIVE or TENTATIVE pending --Accept--> COMPLETION_PENDING --> CONNECTED
//	                                                       (or DISCONNECTED with ACCEPT_COMPLETION_ERROR)
//	CONNECTED --graceful Disconnect with requests waiting--> DISCONNECT_PENDING --> DISCONNECTED
//	CONNECTED, DISCONNECT_PENDING --Disconnect, peer's Disconnect or Free, DTO error--> DISCONNECTED
//	DISCONNECTED --Reset--> UNCONNECTED
//
// Accept completes at once, so COMPLETION_PENDING is never observed.
// Entering DISCONNECTED flushes every outstanding request and receive of
// the EP (DTOErrFlushed, in post order, requests first) before the
// connection event is posted. A call the state does not allow returns
// ErrInvalidState with the subtype of the state (api.EPState.StateSubtype)
// and changes nothing. Receives may be posted in every state (they wait for
// a connection; in DISCONNECTED they are flushed at once); sends, RDMA and
// binds need CONNECTED (in DISCONNECTED they are flushed at once).
//
// The peer of an EP that is disconnected, freed or whose IA is closed gets
// DISCONNECTED; a DTO error breaks the connection with BROKEN on both
// sides. A requester that gives up (timeout, Disconnect, Free) leaves its
// request pending: accepting it then gives ACCEPT_COMPLETION_ERROR,
// rejecting it does nothing more, handing it off just destroys it. Handoff
// fails with ErrInsufficientResources, changing nothing, when the target's
// EVD is full. Closing the IA of a pending request rejects the requester
// with NON_PEER_REJECTED.
//
// A PSPProvider service point creates, for each request, an EP with no PZ,
// no EVDs and the requester's attributes (CRParam.LocalEP); the consumer sets them
// with EP.Modify before Accept(nil). After Reject or Handoff the provider
// destroys that EP: calls on it return ErrInvalidHandle.
//
// # Data transfer
//
// A DTO runs while it is posted: the bytes are copied and its completions
// (and the peer's) are on the EVDs before the post returns. Requests and
// receives therefore complete in post order, and DAT_COMPLETION_BARRIER_FENCE
// and the fencing of RMR binds hold by construction.
//
// Receiver not ready: a send that finds no receive at the peer waits, as on
// a reliable connection with infinite RNR retry (what DAPL asks of
// InfiniBand by default). It stays at the head of the EP's request queue;
// every request posted after it waits behind it, in order, and the queue
// runs again as soon as the peer, or its SRQ, gets a receive. Its bytes are
// copied then, not at post time; as the pages require, the consumer leaves
// the buffers alone until the completion. A queued request keeps a copy of
// its IOV. At most MaxRequestDTOs requests can wait
// (ErrInsufficientResources beyond). A graceful Disconnect waits for the
// queue in DISCONNECT_PENDING; an abrupt one flushes it.
//
// Local triplets are checked when the DTO runs (for a receive, when a
// message arrives): the LMR context must name an LMR of the EP's IA, in the
// EP's PZ (for an EP on an SRQ, receives use the SRQ's PZ), with local read
// (sources) or local write (sinks), and the range must lie inside it.
// Zero-length triplets are skipped. Every check happens before the first
// byte moves. Failures complete the DTO with an error and break the
// connection:
//
//	invalid local triplet of a request          DTOErrLocalProtection
//	message longer than MaxMessageSize          DTOErrLocalLength (RDMA: MaxRDMASize)
//	invalid triplet of the receive at the peer  receive: DTOErrLocalProtection, send: DTOErrRemoteResponder
//	receive too small for the message           receive: DTOErrLocalLength, send: DTOErrRemoteResponder
//	remote access refused                       DTOErrRemoteAccess
//	send-with-invalidate naming no usable RMR   receive: DTOErrLocalProtection, send: DTOErrRemoteAccess
//
// A remote access (RDMA read or write arriving at an EP) is allowed when
// its RMR context names a window of the target EP's IA (an LMR's own
// context, or a bound RMR) that grants the remote privilege, is in the
// target EP's PZ, is not bound to another EP, and contains the whole range.
// A zero-length access touches nothing and is not checked. An RDMA write
// longer than its RMR triplet, or an RDMA read longer than its local IOV,
// is ErrLength at post time. PostRDMAReadToRMR's local window must be one
// of the EP's own IA that the EP could reach remotely with write access.
//
// # Memory
//
// LMRs register Go slices (MemTypeVirtual), memory inside api.AllocMemory
// regions (MemTypeSharedVirtual) or another LMR's memory (MemTypeLMR). With
// VATypeVA triplets carry process addresses (api.AddrOf); with VATypeZB
// offsets. LMR contexts are unique in the process. An LMR with a remote
// privilege has an RMR context valid until the LMR is freed.
//
// RMR contexts are random 32-bit values, fresh for every bind and every
// LMR, from a ChaCha8 generator per IA seeded from crypto/rand (package
// provider/kit/memreg, which also does the lookups and checks of triplets and
// remote accesses). RMRs have EP scope:
// a bound RMR is reachable only over the connection of the EP it was bound
// on. Bind withdraws the previous context at once; the new one works from
// the bind's completion, which comes at once unless a waiting send is ahead
// of it in the queue. Binding remote read needs the LMR's local read,
// remote write its local write (ErrPrivilegesViolation). LMR.Free fails
// with ErrInvalidState (SubStateLMRInUse) while an RMR is bound to the LMR
// or a bind to it is queued.
//
// # Events
//
// EVDs are provider/kit/eventq.Queue rings: posting and dequeuing allocate
// nothing, and a blocked Wait uses no CPU. When a DTO, connection or async event finds
// its EVD full, the event is discarded and, once per overflow episode (until
// a dequeue or resize makes room), an ASYNC_ERROR_EVD_OVERFLOW event naming
// the EVD goes to the IA's async EVD; an overflow of the async EVD itself is
// only counted. PostSE on a full EVD is ErrQueueFull and no overflow.
// PostSE needs an EVD created with api.EVDSoftware.
//
// A completion notifies (wakes a waiter or triggers the CNO) unless it is a
// success posted with CompletionUnsignalled, or a receive of an EP whose
// receive completion flags include CompletionSolicitedWait and whose
// matching send was not solicited. Errors always notify.
//
// A CNO trigger that finds no CNO waiter is latched for the next Wait. The
// wait agent is called for every trigger, on a goroutine of the CNO's that
// exists only while calls are pending; CNO.Free and IA.Close wait for it.
// Detaching the last EVD from a CNO releases its waiters with a nil EVD.
//
// The SRQ low-watermark event is AsyncErrorData{Object: the SRQ, Reason:
// api.ReasonSRQLowWatermark} on the async EVD, with event number
// api.AsyncProviderInternalErrorEvent (DAT 2.0 gives the reason but no
// event number of its own).
//
// # Concurrency
//
// The provider is safe for concurrent use. One process-wide mutex guards
// every object's state; DTOs copy their data under it. Each EVD has its
// own lock, taken after it, so reaping completions never waits for a copy.
// The only goroutines the provider starts are connection-timeout timers
// and CNO agent callers; EP.Free, CNO.Free and IA.Close return only after
// the goroutines they own have ended.
package loopback
