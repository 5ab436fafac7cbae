// Package tcp is godat's DAT provider for any IP network: RDMA semantics
// (send/receive, one-sided RDMA read and write, completions, connection
// management with private data) carried over one TCP connection per
// Endpoint. Import it for its side effect: its init registers the
// provider as "tcp" (the embedded default configuration has an IA "tcp"
// on 127.0.0.1). The wire protocol is specified in docs/tcp-wire.md.
//
// The DAT manual pages (dat_ep_connect(3DAT) and the rest) are the
// authority, and the loopback provider is the semantic reference: this
// provider makes the same choices wherever the pages leave one open, so
// that the same conformance suite passes. What follows records what is
// particular to TCP.
//
// # Addresses and connection qualifiers
//
// ia_params names the local address: an IPv4 or IPv6 literal
// ("127.0.0.1", "::1", "[::1]") or an interface name ("eth0", whose first
// IPv4 address is used, else its first non-link-local IPv6 one). An
// address not configured on the host is ErrProviderNotFound. The IA's
// address (IAAttr.Address) is a *net.IPAddr; Connect takes a *net.IPAddr
// or *net.TCPAddr (the port of the latter is ignored).
//
// A connection qualifier is a TCP port: a PSP or RSP listens on it on the
// IA's address, CreatePSPAny lets the kernel choose, a port taken by
// anyone on the host is ErrConnQualInUse, and a qualifier above 65535 is
// ErrInvalidParameter. An active EP's port qualifier is not its TCP source
// port (unknown until the asynchronous dial completes) but a number the
// provider assigns from 2^32 up, carried in the handshake, so that Query
// reports it as soon as Connect returns and CRParam.RemotePortQual
// matches it.
//
// # Connection establishment
//
// Connect dials, sends HELLO (wire version, the EP's limits, its port
// qualifier, the private data) and waits for the answer; the goroutine
// that dials becomes the connection's reader. The listener's accept
// goroutine (one per PSP or RSP, stopped by Free) hands each accepted
// socket to a connection goroutine that reads HELLO (within 10 s) and
// delivers the CONNECTION_REQUEST; a request that finds the EVD full (the
// backlog) is answered NON_PEER at once. CR.Accept moves the EP to
// COMPLETION_PENDING and sends ACCEPT; the requester answers READY and
// both sides are CONNECTED with ESTABLISHED. COMPLETION_PENDING is thus
// observable until READY arrives; if the requester gave up, the EP gets
// ACCEPT_COMPLETION_ERROR. The outcomes on the active side:
//
//	ACCEPT                          ESTABLISHED with the acceptor's private data
//	REJECT                          PEER_REJECTED with the rejector's private data
//	NON_PEER, VERSION, no listener  NON_PEER_REJECTED (ECONNREFUSED, a full backlog,
//	                                a closed IA, a foreign wire version or garbage)
//	timeout                         TIMED_OUT (the timeout covers dial and handshake)
//	any other dial error            UNREACHABLE (no route, another address family)
//
// Handoff moves the request, socket and all, to another service point of
// the same IA. The EP state machine is otherwise the loopback provider's.
//
// # Data transfer
//
// Each side numbers its request frames (SEND, SEND_INV, WRITE, READ_REQ)
// 1, 2, 3... The receiver processes them in order and acknowledges
// cumulatively (ACK n: every request up to n is placed); a READ_RESP
// answers a read and implies that every earlier request is placed. A send
// or RDMA write completes successfully only when the peer's ACK covers it,
// that is, when its data is in the peer's memory; reads complete when
// their response is placed. Requests complete in post order.
//
// Receiver not ready: the receiver grants one credit per receive it posts
// (the credit count rides on ACK frames), and a send is transmitted only
// with a credit in hand. A send without credit waits at its place in the
// request queue and every request posted after it waits behind it, as the
// loopback provider's infinite RNR retry does; a graceful Disconnect waits
// for them in DISCONNECT_PENDING, an abrupt one flushes them. An EP on an
// SRQ cannot grant credits (the SRQ's buffers are shared): it tells its
// peer so in the handshake, the peer sends freely, and a message that
// finds the SRQ empty waits in the reader until a buffer is posted (the
// reader then sees nothing else of that connection, including the peer's
// DISCONNECT, until then; a local Disconnect, Free or Close still ends
// it). RDMA reads in flight are limited to the smaller of the requester's
// MaxRDMAReadOut and the responder's MaxRDMAReadIn; a barrier-fenced
// request waits until every earlier read has completed, and an RMR bind
// takes effect when the queue reaches it, after every earlier request has
// been sent.
//
// Errors follow the loopback provider's table (its package
// documentation); a remote failure travels back as a NAK carrying the
// status the requester completes with:
//
//	invalid local triplet of a request          DTOErrLocalProtection, BROKEN
//	message longer than the negotiated maximum  DTOErrLocalLength, BROKEN
//	invalid receive triplet at the peer         receive: DTOErrLocalProtection, send: DTOErrRemoteResponder (NAK)
//	receive too small                           receive: DTOErrLocalLength, send: DTOErrRemoteResponder (NAK)
//	remote access refused                       DTOErrRemoteAccess (NAK)
//	send-with-invalidate of no usable RMR       receive: DTOErrLocalProtection, send: DTOErrRemoteAccess (NAK)
//
// Every check at the target happens after the frame header is read and
// before any byte of the payload: a refused frame changes no byte of
// target memory, its payload is never read (the connection is closed
// after the NAK), and both sides see BROKEN. Peer-controlled lengths are
// checked against the negotiated limits (the receiver's MaxMessageSize and
// MaxRDMASize, the private data limit, the number of reads it serves)
// before anything is read, and nothing is ever allocated at a size a peer
// chooses. A peer that breaks the protocol (an unknown frame, a sequence
// gap, an ACK of something never sent or behind an earlier ACK, a send
// without a credit) breaks the connection; a lost peer (EOF, reset) gives
// BROKEN; in both cases outstanding DTOs are flushed.
//
// # Zero copy and goroutines
//
// Payloads go from LMR memory to the socket with vectored writes
// (net.Buffers, writev) and come from the socket straight into their
// destination memory, segment by segment: no intermediate buffer on
// either side. Each connection has one reader goroutine (which dialled or
// took the request) and, once connected, one writer goroutine; the writer
// sends queued frames several per writev and adds the ACK and credit
// update when its queue is empty. Frame headers, request and receive
// queues are preallocated rings, so posting and completing allocate
// nothing in steady state.
//
// Disconnect sends DISCONNECT and half-closes; the peer answers by
// closing, and its EP gets DISCONNECTED. A DTO error half-closes without
// DISCONNECT, so the peer sees BROKEN. EP.Free and IA.Close send
// DISCONNECT and then close the socket outright, and return only after
// every goroutine of the EP (or IA) has ended. A connection that is
// closing discards what still arrives for up to 5 seconds, waiting for
// the peer's FIN. Flushed DTOs are completed at once; a payload being
// read at that moment may still be written into its buffer for as long
// as the read system call in progress takes.
//
// # Concurrency
//
// The provider is safe for concurrent use. Each IA has one mutex for the
// state of all its objects, its connections' queues included; each EVD
// has its own lock, taken after it. Payload bytes move without the IA's
// lock. The only goroutines are the per-connection reader and writer, one
// accept goroutine per service point and the CNOs' agent callers.
package tcp
