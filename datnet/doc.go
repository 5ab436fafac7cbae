// Package datnet carries byte streams over DAT connections: a net.Conn and
// a net.Listener on any IA, so that net/http, gRPC and every library that
// takes a net.Conn run over RDMA hardware (verbs), godat's tcp provider, a
// plugin provider or in process (loopback), chosen by IA name in the
// configuration.
//
//	ia, err := registry.Open(ctx, "tcp")
//	l, err := datnet.Listen(ia, ":4000")          // one side
//	c, err := datnet.Dial(ctx, ia, "10.0.0.2:4000") // the other
//
// An address is host:qualifier: the host in the form of the IA's network
// (an IP address or name for tcp and verbs, name#instance for loopback),
// the qualifier a DAT connection qualifier (the port, on IP transports).
//
// # The stream
//
// Each connection registers one region: Buffers receive buffers, all
// posted before the connection is established, and Buffers send buffers.
// A Write copies into send buffers and posts sends of at most BufferSize
// bytes; Read copies out of received messages and posts each emptied
// buffer again, after the program's next Write has posted its message, at
// the next Read, or before the connection waits, whichever comes first
// (so that an answer is not held up by the post). Every message starts
// with a header (wire.go) that returns credits: the number of receive
// buffers its sender has posted again since its last message. A side
// sends only while it holds a credit for a buffer the peer has posted, so
// a writer never overruns the reader; a slow reader makes Write block, as
// a full socket buffer does.
//
// Credits return on data going the other way, or in a message of their
// own once half the receive buffers are owed. A data message needs two
// credits; the last one is kept for a credit return or the end mark, so
// two sides that both write can never both wait for credits the other
// cannot send. The connection's private data carries a hello: the buffer
// count and size of each side, the first credits.
//
// Data moves in sends, not RDMA writes, at every size. The caller's slice
// is not registered memory, so each side copies every byte once either
// way; a send also tells the reader that bytes arrived, in order, with
// their length, where an RDMA write into the reader's buffers would need a
// second message to say so (DAT has no write with immediate data). A
// zero-copy path for callers that hand over registered memory is where
// RDMA writes would pay; datnet does not offer one yet.
//
// # Progress
//
// A Read or Write that has to wait takes the connection's events itself:
// it polls the EVD (the tcp provider reads its socket inside that poll),
// then blocks in EVD.Wait, so that an arriving message wakes the
// goroutine it is for. After its first polls it polls on for 20 µs, or,
// while its recent waits have averaged less than 1 ms, for sixteen times
// that average, up to 1 ms: on a slow transport (soft-RoCE, an emulated
// machine), where a blocked wait's wake-up costs about as much as the
// round trip, a call whose answer comes within a millisecond waits for
// it spinning. The spin counts its polls and reads the clock only every
// quarter of its length, at what a poll has lately cost, since on such a
// machine a clock read may be a system call. A goroutine
// per connection takes them while the program makes no call, returning
// credits and noticing the peer's end; it stands aside while calls run,
// and looks less often the longer they keep coming (progress.go).
//
// # Guarantees
//
// As net.Conn requires, the methods are safe for concurrent use; calls of
// Read, and of Write, are serialised, each Write's bytes contiguous.
// Deadlines work as in package net: a passed deadline fails a call with an
// error that is os.ErrDeadlineExceeded, and a blocked call returns when
// its deadline is moved into the past or when the connection closes
// (net.ErrClosed). Errors are *net.OpError values with Net "dat". Read
// returns io.EOF after the peer's CloseWrite or Close; an error that is
// syscall.ECONNRESET when the connection ended without it (the peer's
// process died, or it closed with bytes unread); Write after CloseWrite,
// or after the peer left, fails with syscall.EPIPE. A peer that breaks the
// stream's format (a message shorter than its header, credits for buffers
// it was never sent into, bytes after its end of stream) ends the
// connection: the calls that follow fail with an error that says how.
//
// A Conn and a Listener own the DAT objects they make and free them all in
// Close, including the goroutine that takes each connection's events; the
// IA stays the caller's and must be closed after them. Steady-state Read
// and Write allocate nothing.
package datnet
