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
// address not configured on the host is ErrProviderNotFound. A string of
// digits and dots that is not an IPv4 address, or one with a colon that
// is not an IPv6 address, is refused as a mistyped address rather than
// looked up as an interface. The form of ia_params and of platform_params
// is checked without opening anything too (CheckParams, a
// provider.ParamChecker), so that a configuration file reports a
// malformed address or option at its position when it is read. The IA's
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
// backlog) is answered NON_PEER at once. At most 1,024 accepted sockets
// of an IA may be waiting for their HELLO (maxHandshakes): the listener
// closes one beyond that at once, so that connections which say nothing
// cannot use up the process's descriptors. An accept that fails (no file
// descriptor or kernel buffer free) is tried again after a pause that
// doubles from 5 ms up to 1 s while the failures go on; requesters wait
// in the listener's queue meanwhile. CR.Accept moves the EP to
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
// (the credit count travels with the ACK), and a send is transmitted only
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
// before any byte of the payload is placed: a refused frame changes no
// byte of target memory, its payload is never placed (at most part of it
// was read ahead into the connection's fixed buffer; the connection is
// closed after the NAK), and both sides see BROKEN. Peer-controlled lengths are
// checked against the negotiated limits (the receiver's MaxMessageSize and
// MaxRDMASize, the private data limit, the number of reads it serves)
// before anything is read, and nothing is ever allocated at a size a peer
// chooses. A peer that breaks the protocol (an unknown frame, a sequence
// gap, an ACK of something never sent or behind an earlier ACK, a send
// without a credit) breaks the connection; a lost peer (EOF, reset) gives
// BROKEN; in both cases outstanding DTOs are flushed.
//
// # Zero copy, goroutines and the fast paths
//
// Payloads go from LMR memory to the socket with vectored writes (writev)
// and never through an intermediate buffer on the sending side. Each
// connection has one reader goroutine (which dialled or took the request)
// and, once connected, one writer goroutine, but in the common case
// neither is involved in a transfer:
//
//   - Direct posting. Whoever posts (PostSend, PostRDMAWrite, ...) writes
//     the frames itself, with one non-blocking writev from its own
//     goroutine, when no other goroutine is writing to the connection (a
//     flag under the IA's lock makes one goroutine at a time the owner of
//     the sending side; frames queued meanwhile are written by the owner
//     before it lets go). A payload of 512 KiB or more is written by a
//     system call of its own but for its first bytes, which leave with
//     the frames ahead of it, 64 KiB in all (the kernel's send path was
//     much slower per byte for a large payload behind a header in one
//     writev, and a header held back by MSG_MORE slowed a polling
//     receiver's stream: see sock.WritevNB). One such write moves
//     at most 2 MiB (on loopback
//     the kernel otherwise keeps taking bytes for as long as the peer
//     reads, milliseconds for a stream of large DTOs). What the socket
//     does not take at once is finished by the writer goroutine (or, on
//     a quiet connection, by the pollers: pollTx), so a post never waits
//     for the peer. The writer goroutine otherwise only sends what
//     nobody else flushed, and ends the sending side when the connection
//     closes.
//   - ACKs ride on data. The cumulative ACK and credit count owed, if
//     any, go in the header of a batch's first frame (wire version 2),
//     or in an ACK frame ahead of it if its payload is over 4 KiB, or on
//     the last frame if a READ_RESP is queued (an ACK is applied after
//     the frame that carries it, and must not be applied before the
//     response of a read it covers); so a ping-pong costs one frame and
//     one pass of the peer's frame loop each way. The
//     reader sends an owed ACK by itself only when it has consumed
//     everything it read (ACKs are cumulative), and after a receive that
//     notified a consumer it first lets that consumer run (it often
//     answers at once, and its frames then carry the ACK); a polling
//     consumer's receive (below), or an RDMA write a polling consumer
//     placed (it may be watching the memory: an RDMA-write ping-pong),
//     leaves the ACK to the answer for at most credDelay (20 µs), after
//     which a timer sends it, and a driven wait sends it before it
//     blocks (its consumer answers nothing meanwhile). A receive posted
//     while the peer may be out of credits arms the same timer; other
//     credit updates ride on the next frame or ACK.
//   - Quick TCP acknowledgements on streams. A socket that writes soon
//     after it reads looks to Linux like one side of a request-response
//     exchange, and the kernel then delays its TCP acknowledgements to
//     let them ride on its answers; the ACK frames of a stream's
//     receiver make it look so, and the delayed acknowledgements slow the
//     sender. A connection that has received 256 KiB of payload since it
//     last did so sets TCP_QUICKACK after its next write (quickAck): one
//     system call per 256 KiB received at most, none in an exchange of
//     small messages, where riding acknowledgements are what one wants.
//   - One read per small frame. The reader reads into a fixed 16 KiB
//     read-ahead buffer: a header and a small payload (and often the
//     frames after it) arrive with one read system call and are copied
//     out; a payload remainder of 8 KiB or more is read straight into
//     its destination memory.
//
// Frame headers, request and receive queues are preallocated rings and
// the system-call callbacks are made once per connection, so posting and
// completing allocate nothing in steady state.
//
// # Polling
//
// A consumer spinning on EVD.Dequeue drives the connections that feed the
// EVD itself, so that it needs no other goroutine (and no wake-up) to see
// its completions, while a consumer blocked in EVD.Wait costs no CPU: the
// reader goroutine then waits for the socket in Go's netpoller as usual.
//
// Each EVD keeps the list of the connections whose receive or request
// completions it takes (an atomic pointer to an immutable slice, replaced
// when a connection starts or ends: Dequeue reads it without a lock). An
// EP on an SRQ is never polled (its reader may have to wait for an SRQ
// buffer, which Dequeue must not). When Dequeue finds the queue empty it
// calls poll on each of them and looks again.
//
// The receive side of a connection (the stream position, the read-ahead
// buffer, the frame being processed) belongs to whoever holds its receive
// token, an atomic flag taken by compare-and-swap:
//
//   - The reader goroutine holds it while it processes frames. At a frame
//     boundary with nothing buffered it lets go and waits in the
//     netpoller (syscall.RawConn.Read); the callback the runtime calls
//     when the socket is readable first takes the token again, then
//     reads without waiting (EAGAIN: let go, wait again).
//   - poll takes the token only if it is free (the reader keeps it for
//     the whole of a frame it started), reads without waiting
//     (RawConn.Control: a plain recvfrom(2) on the non-blocking socket,
//     outside the netpoller and its read lock), processes every frame
//     whose header is here, reads as much of a payload as the socket
//     holds (buffered bytes first, then straight into the destination
//     memory), and lets go at EAGAIN. A payload it could not finish stays
//     in the connection (its destination and what is left) for the next
//     holder of the token, poller or reader, to go on with: the rest of
//     it, when it arrives, wakes the reader as any data does.
//   - No lost wake-ups: a reader woken by the netpoller while a poller
//     holds the token sets rxMissed, tries once more and otherwise waits
//     again; a poller that lets go checks rxMissed and, if set, takes the
//     token again and reads on. (Either the reader's second attempt
//     succeeds or the poller sees the flag: both are sequentially
//     consistent atomics.)
//   - The end of the stream or a read error seen by a poller is left to
//     the reader: the poller sets rxKick, lets go and sets a read
//     deadline in the past, which wakes the reader out of the netpoller;
//     the reader clears the deadline (under the IA's lock, unless the
//     connection is closing, whose own deadline must stand), reads for
//     itself and reports the error. Pollers keep off while rxKick is
//     set.
//   - A frame a poller processes that ends the connection (a violation, a
//     NAK, DISCONNECT) shuts the connection down as the reader would; the
//     shutdown kicks the reader, which sees the connection closing and
//     drains as usual.
//   - A poller that keeps finding the token taken makes way for its
//     holder every busyYield-th time: it yields its P, and if the
//     reader is inside a frame with its rest already in the socket, it
//     first wakes the reader with a read deadline in the past. With
//     every P spinning, the reader's wait in the netpoller would
//     otherwise end only when the runtime's monitor polls the network
//     (every 10 ms).
//   - The socket's descriptor stays open for the pollers without a
//     reference per read: the connection takes one use of it
//     (sock.Conn.Hold) when it begins and gives it back at the end of the
//     reader's drain, which holds the token from then on, so no poller
//     reads past it. A poll thus costs the two atomic operations of the
//     token, not four.
//
// Quiet mode. A socket in Go's network poller wakes a runtime thread for
// every segment that arrives, whether or not a goroutine waits for it; on
// a small machine those wake-ups preempt the very processes that poll.
// Once connected, a connection's socket therefore leaves the runtime's
// poller (package internal/sock: the runtime watches an epoll instance of
// the connection's own instead, which costs no extra system call), and
// while pollers drive a connection its input is not watched at all:
//
//   - The reader enters quiet mode when it finds pollers at work (they
//     polled since it last looked, or one holds the receive token) at
//     quietAfter (4) of its looks in a row, a look that finds none halving
//     the count, or clearing it when data woke the reader and no poller
//     took it: at a
//     wake-up, or at a frame boundary when it is busy with a stream that
//     never runs dry (it leaves what is buffered and an unfinished
//     payload to them). A consumer that spins on its EVDs is seen at
//     every look; one that polls for the completions of its own writes
//     but spins on its landing area for the peer's (an RDMA-write
//     ping-pong, dtest -W) leaves a write that comes while it watches
//     memory to the reader, and the reader keeps watching; once the
//     ACKs ride on the answers (below), each write comes while the
//     peer's consumer polls for the completion of its own. Input is then
//     unwatched: the socket leaves the connection's input epoll instance (package
//     internal/sock: a registration costs every arriving segment a
//     callback), and the reader does not touch the stream. The end of
//     the stream and errors are seen by the pollers' next read, which
//     leaves them to the reader and wakes it (above), or by the reader
//     once it watches again. It looks whether a poller polled since,
//     holds the token or is writing (a long write may span a look; the
//     writer goroutine's write is no poller's: it may be waiting for
//     room that only the peer's reading makes, while the peer's writer
//     waits for this reader's), 1 ms
//     after it went quiet and then twice as long after each look that
//     found one, up to quietMax (16 ms): each look wakes a runtime
//     thread, which preempts a polling consumer on a small machine.
//     When none did, it watches the socket again; and so it does when
//     input waits in the socket that no poll since the last look has
//     read any of (pollers that come only between messages: a consumer
//     that answers too slowly for its ACKs to ride, say, and watches
//     memory for the next message), which bounds what such a consumer
//     waits to two looks. A look that finds input waiting although the
//     pollers read frames since the last one looks again quietSoon
//     (100 µs; about a millisecond where the runtime's sleeping threads
//     time it) later rather than after the doubled interval: pollers
//     that read the stream have taken it by then, and one that polled
//     for its own completions and then stopped to watch memory (dtest
//     -W before its ACKs ride) has its message read at that second
//     look, not up to quietMax later.
//     The looks are the reader's read deadline, so a quiet connection
//     always has one: whoever makes it quiet (the reader, or a driven
//     Wait) sets it, and a look that ends quiet mode clears it before
//     it does anything that may release the IA's lock, during which a
//     Wait may make the connection quiet again with a deadline of its
//     own.
//   - A post writes its frame itself, without waiting, when nothing is in
//     flight. A consumer that streams (posts while earlier requests are
//     in flight) has its frames written in batches, several per writev:
//     elsewhere by the writer goroutine, on a quiet connection by the
//     consumer's own next poll or wait (pollTx), since a writer
//     goroutine would only take a CPU from pollers that spin anyway.
//     pollTx also goes on with what a direct write left unwritten.
//   - A Wait on an EVD fed by too many connections to drive (below) ends
//     quiet mode at once on them, and so does a Wait on a CNO for the
//     connections of the EVDs that feed it, the reader before it waits
//     inside a frame, and a closing connection. A consumer that stops
//     polling without waiting on the EVD or its CNO (it blocks elsewhere,
//     watches memory, or waits for a CNO's descriptor in poll(2)) may
//     see its next completion up to quietMax late, and the frames it
//     left to its pollers leave up to quietMax late.
//   - A consumer that watches memory for the peer's RDMA write, and
//     neither calls in meanwhile nor polled for a completion of its own
//     as the write came, leaves the write to the reader goroutine, which
//     needs a CPU: where every CPU runs a spinner (two processes in a
//     ping-pong on a two-CPU machine) the kernel may give it one only
//     when a spinner's time slice ends (milliseconds; docs/cabi.md has
//     the numbers). A consumer that watches memory should call
//     EVD.Dequeue between its looks, as dattest's wlat does: the write is
//     then placed by its own call.
//   - An ACK or credit update that would wait for the consumer's answer
//     arms no timer on a quiet connection (arming one wakes a runtime
//     thread): pollers send it once it has waited credDelay, or the
//     reader's quiet check does, or a Wait on the EVD.
//   - Completions wait for the answer too. When a poller reads a message
//     that notifies a consumer and carries an ACK, the requests the ACK
//     covers are marked finished but their completions are posted later
//     (conn.reapLate): after the consumer's next post has written its
//     frame, or at its next poll or wait on an EVD the connection feeds,
//     or at the reader's quiet check, whichever comes first. In a
//     ping-pong the answer then leaves before the send completions of
//     the message it answers are made, which takes them off the
//     consumer's critical path, and no completion is lost or reordered:
//     every path that counts outstanding requests or flushes
//     them (GetStatus, a full request queue, Disconnect, a broken
//     connection) completes the finished ones first, as successes. Only
//     when the ACK lets no queued request start (one that needs the
//     credit it brings starts at once, and so do the completions). A
//     consumer that waits for a CNO's descriptor sees such completions up
//     to quietMax late, as it sees its other completions.
//
// Driven waits. A consumer blocked in EVD.Wait drives the connections
// feeding the EVD itself too, when there are at most maxDriven (8) of
// them: it polls them, and when what it waits for is not there it blocks
// in epoll_wait(2), in its own thread, on an epoll instance of the EVD's,
// in which their sockets are armed one-shot (and from which they are
// removed when the wait ends: see driver.disarm), while their readers
// stay quiet. A message then wakes the waiting thread and nothing else,
// which reads
// it, completes it and returns: one wake-up per message, as a blocking
// read of a plain socket costs, instead of the reader's wake-up followed
// by the consumer's. Anything else the waiter must see kicks it through an
// eventfd in the same epoll instance: an event posted by another goroutine
// (a reader that had the stream, a connection event, PostSE), the rest of
// a write that another goroutine's post left on a quiet connection (the
// waiter armed its socket for input only), the EVD made unwaitable or
// freed, the IA closed, the end of the waiter's context
// (context.AfterFunc, registered once per context, not per wait). A
// connection whose stream another goroutine holds is left to its reader,
// which watches it again. The sockets are armed right before the block,
// and arming a socket that has input queues its event, so input that is
// already there wakes it at once and no read precedes the block. The
// block is an ordinary system call, so the thread gives up its P while
// it lasts; a goroutine locked to its thread (a C program's) is woken in
// that thread, with no hand-over from the thread that polls the network.
//
// System calls that cannot block (reads and writes on the non-blocking
// sockets, epoll calls with a zero timeout) are raw: they skip the
// scheduler's system-call bookkeeping, which costs time and, when the
// runtime's monitor thread sleeps, wakes it (a futex round trip per
// message).
//
// # Broken peers
//
// A peer process that exits or is killed closes its sockets (its kernel
// sends FIN or RST) and the connection breaks at once. A peer that goes
// silent instead (its host is down, the network between is cut) is
// noticed after the IA's peer timeout, set in platform_params as
// "peer_timeout=<duration>": a Go duration, 0 or from 1s to 24h, default
// 30s (an unknown key or a bad value makes Open fail with
// ErrInvalidParameter). It is applied to every connection socket on both
// sides as soon as it is connected, before the handshake: TCP keepalive
// probes an idle connection (after a fifth of the timeout without a word
// from the peer, then every fifth, rounded up to whole seconds) and the
// TCP user timeout (TCP_USER_TIMEOUT) ends one whose data the peer has not
// acknowledged. Either way the kernel ends the connection, the reader's
// read fails (ETIMEDOUT, as a rule) and the EP gets BROKEN with its
// outstanding DTOs FLUSHED, as for a reset; during the handshake the
// attempt fails as any handshake does when its socket fails. An idle
// connection is given up at most one probe interval after the timeout.
// The user timeout also ends a connection whose peer keeps its receive
// window closed that long while data waits to be sent: a peer process
// stopped that long, or one whose reader waits that long for an SRQ
// buffer while this side keeps sending. peer_timeout=0 leaves the
// kernel's defaults: no keepalive and no user timeout, so an idle
// connection to a silent peer is never given up, and one with data in
// flight only when the kernel's retransmissions run out (about 15
// minutes). The TCP connect itself is bounded by Connect's timeout, not by
// peer_timeout.
//
// # Closing
//
// Disconnect sends DISCONNECT and half-closes; the peer answers by
// closing, and its EP gets DISCONNECTED. The acknowledgement owed goes
// out ahead of DISCONNECT, so that the peer's requests whose data this
// side placed complete successfully rather than flushed. A DTO error half-closes without
// DISCONNECT, so the peer sees BROKEN. EP.Free and IA.Close send
// DISCONNECT and then close the socket outright, and return only after
// every goroutine of the EP (or IA) has ended. A connection that is
// closing discards what still arrives for up to 5 seconds, waiting for
// the peer's FIN. Flushed DTOs are completed at once; a payload being
// read at that moment may still be written into its buffer for as long
// as the read system call in progress takes (pollers stop driving a
// connection as soon as it closes).
//
// # Concurrency
//
// The provider is safe for concurrent use. Each IA has one mutex for the
// state of all its objects, its connections' queues included; each EVD
// has its own lock, taken after it. Payload bytes move without the IA's
// lock. The only goroutines are the per-connection reader and writer, one
// accept goroutine per service point, the CNOs' agent callers and the
// per-connection timer that sends a delayed ACK or credit update; the
// consumer's own goroutines write frames when they post and read them when
// they poll (above).
package tcp
