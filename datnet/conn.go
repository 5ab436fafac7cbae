package datnet

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godat/godat/api"
)

// Conn is one end of a stream over a DAT connection. It implements
// net.Conn; its methods are safe for concurrent use.
//
// Write copies into a registered send buffer and posts it; it returns once
// every byte is posted, blocking while the peer has no free receive buffer
// (so a writer never overruns a reader). Read returns the bytes of received
// messages in order. Close sends an end-of-stream mark after the data
// written, waits up to the linger time for the peer to take it, and
// disconnects; with unread data on its side it disconnects at once, and the
// peer's Read reports a reset, as TCP does.
type Conn struct {
	ia    api.IA
	pz    api.PZ
	evd   api.EVD // completions and connection events of ep
	ep    api.EP
	mem   *api.Memory
	lmr   api.LMR
	reg   api.LMRParam
	local *Addr
	peer  *Addr

	nrecv, nsend int // buffers: receive ones first in mem, then send ones
	size         int // bytes per buffer
	payload      int // payload bytes per message: the smaller side's, less the header
	linger       time.Duration

	rlock, wlock chan struct{} // one reader, one writer at a time; a channel so that waiting for it honours deadlines
	rdl, wdl     *deadline
	readable     chan struct{} // signalled (capacity 1) when Read may proceed
	writable     chan struct{} // signalled when Write may proceed
	changed      chan struct{} // signalled on any change Close waits for
	closed       chan struct{} // closed by Close: blocked calls return
	closeOnce    sync.Once
	closeErr     error
	runCtx       context.Context // ends at Close: every EVD wait of the connection
	cancelRun    context.CancelFunc
	runDone      chan struct{}
	waitTok      chan struct{}     // held by the one goroutine in EVD.Wait (progress.go)
	calls        atomic.Uint64     // Reads, Writes and their blocks so far
	active       atomic.Int32      // blocking calls under way
	idle         chan struct{}     // signalled when active drops to 0
	loops        atomic.Uint64     // turns of the event loop (tests count them)
	runWaiting   atomic.Bool       // the event loop holds waitTok
	inWait       atomic.Bool       // a goroutine is in EVD.Wait
	kicked       atomic.Bool       // a kick is queued
	kickEv       api.Event         // the software event of a kick
	rdSpin       spinner           // how long Reads wait (progress.go)
	wrSpin       spinner           // how long Writes wait
	wev          api.Event         // the event the waitTok holder takes
	wiov         [1]api.LMRTriplet // the writer's (under wlock)

	mu         sync.Mutex
	credits    int      // messages the peer has receive buffers for
	peerBufs   int      // the peer's receive buffers (its hello): credits never exceed it
	owed       int      // receive buffers posted again but not yet reported to the peer
	held       []int    // receive buffers Read emptied, posted again once the call's answer is on its way (flushHeld)
	freeSend   []int    // send buffers not in flight
	inflight   int      // sends posted and not completed
	writing    bool     // a writer holds a send buffer it has not posted yet
	posted     []posted // receive buffers in the order posted: a ring from pHead, pLen long
	pHead      int
	pLen       int
	seqOf      []int     // a receive buffer's place in the post order (pHead counts up)
	discSeen   bool      // DISCONNECTED or BROKEN has arrived
	rq         []message // received messages not yet read, in order
	rqHead     int
	rqLen      int
	peerFIN    bool  // the peer will send no more
	peerGone   bool  // the connection ended (DISCONNECTED, BROKEN, an error)
	err        error // why the connection failed, if it did
	wrShut     bool  // CloseWrite or Close: no more writes
	finPending bool  // the end mark waits for a credit or a send buffer
	finSent    bool
	closing    bool
	ciov       [1]api.LMRTriplet // control messages and receive reposts (under mu)
	ev         api.Event         // the event being applied (under mu)
}

// message is a received message's unread payload: bytes [off, end) of
// buffer idx.
type message struct{ idx, off, end int }

// posted is a posted receive buffer, and once it has completed, what
// arrived in it.
type posted struct {
	idx           int
	done, flushed bool
	length        int
	flags         uint8
}

var (
	errReset = syscall.ECONNRESET // the connection ended without an end mark
	errPipe  = syscall.EPIPE      // writing after CloseWrite or after the peer left
)

// LocalAddr returns the local IA's address and the connection qualifier
// of the local end.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr returns the peer IA's address and connection qualifier.
func (c *Conn) RemoteAddr() net.Addr { return c.peer }

// SetDeadline sets both the read and the write deadline.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.setDeadlineCheck("set deadline"); err != nil {
		return err
	}
	c.rdl.set(t)
	c.wdl.set(t)
	return nil
}

// SetReadDeadline sets the time after which Read fails with an error
// that is os.ErrDeadlineExceeded; a blocked Read returns then too.
func (c *Conn) SetReadDeadline(t time.Time) error {
	if err := c.setDeadlineCheck("set read deadline"); err != nil {
		return err
	}
	c.rdl.set(t)
	return nil
}

// SetWriteDeadline sets the time after which Write fails with an error
// that is os.ErrDeadlineExceeded. A Write that times out may have posted
// part of its bytes; it reports how many.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	if err := c.setDeadlineCheck("set write deadline"); err != nil {
		return err
	}
	c.wdl.set(t)
	return nil
}

func (c *Conn) setDeadlineCheck(op string) error {
	if isClosed(c.closed) {
		return c.opErr(op, net.ErrClosed)
	}
	return nil
}

// acquire takes a direction's lock, or fails when the deadline passes or
// the connection closes first.
func (c *Conn) acquire(lock chan struct{}, dl *deadline) error {
	select {
	case lock <- struct{}{}:
		return nil
	default:
	}
	select {
	case lock <- struct{}{}:
		return nil
	case <-c.closed:
		return net.ErrClosed
	case <-dl.wait():
		return os.ErrDeadlineExceeded
	}
}

// Read reads the next bytes of the stream. It returns io.EOF after the
// peer's CloseWrite or Close once every byte before it is read, and an
// error that is syscall.ECONNRESET when the connection ended otherwise.
func (c *Conn) Read(p []byte) (int, error) {
	if err := c.acquire(c.rlock, c.rdl); err != nil {
		return 0, c.opErr("read", err)
	}
	defer func() { <-c.rlock }()
	c.calls.Add(1)
	dl := c.rdl.wait()
	for {
		if isClosed(dl) {
			return 0, c.opErr("read", os.ErrDeadlineExceeded)
		}
		c.mu.Lock()
		switch {
		case c.closing:
			c.mu.Unlock()
			return 0, c.opErr("read", net.ErrClosed)
		case c.rqLen > 0:
			n := c.copyOut(p)
			c.mu.Unlock()
			return n, nil
		case c.peerFIN:
			c.mu.Unlock()
			return 0, io.EOF
		case c.peerGone:
			err := c.err
			c.mu.Unlock()
			return 0, c.opErr("read", err)
		}
		c.mu.Unlock()
		if len(p) == 0 {
			return 0, nil
		}
		c.block(c.canRead, c.readable, c.rdl, &c.rdSpin)
		dl = c.rdl.wait()
	}
}

// canRead reports whether Read has something to return. c.mu is held.
func (c *Conn) canRead() bool { return c.rqLen > 0 || c.peerFIN || c.peerGone || c.closing }

// canWrite reports whether Write can go on. c.mu is held.
func (c *Conn) canWrite() bool {
	return (c.credits >= 2 && len(c.freeSend) > 0) || c.peerGone || c.closing || c.wrShut
}

// copyOut moves received payload into p. Each emptied buffer is posted
// again later (flushHeld): a reader that answers at once posts its
// answer first. c.mu is held.
func (c *Conn) copyOut(p []byte) int {
	c.flushHeld()
	n := 0
	for c.rqLen > 0 && n < len(p) {
		m := &c.rq[c.rqHead]
		k := copy(p[n:], c.buffer(m.idx)[m.off:m.end])
		n += k
		m.off += k
		if m.off < m.end {
			break
		}
		c.rqHead = (c.rqHead + 1) % len(c.rq)
		c.rqLen--
		c.held = append(c.held, m.idx)
	}
	c.pump()
	return n
}

// Write writes p to the stream. It returns once all of p is posted, or
// with the count posted and an error when the deadline passes or the
// connection ends first.
func (c *Conn) Write(p []byte) (int, error) {
	if err := c.acquire(c.wlock, c.wdl); err != nil {
		return 0, c.opErr("write", err)
	}
	defer func() { <-c.wlock }()
	c.calls.Add(1) // (the event loop stands aside while calls come: progress.go)
	dl := c.wdl.wait()
	n := 0
	for {
		if isClosed(dl) {
			return n, c.opErr("write", os.ErrDeadlineExceeded)
		}
		c.mu.Lock()
		switch {
		case c.closing:
			c.mu.Unlock()
			return n, c.opErr("write", net.ErrClosed)
		case c.wrShut:
			c.mu.Unlock()
			return n, c.opErr("write", errPipe)
		case c.peerGone:
			err := c.err
			if err == nil || errors.Is(err, errReset) {
				err = errPipe
			}
			c.mu.Unlock()
			return n, c.opErr("write", err)
		}
		if n == len(p) {
			c.mu.Unlock()
			return n, nil
		}
		if c.credits < 2 || len(c.freeSend) == 0 {
			// The last credit stays for a credit return or the end
			// mark (see doc.go), so data needs two.
			c.mu.Unlock()
			c.block(c.canWrite, c.writable, c.wdl, &c.wrSpin)
			dl = c.wdl.wait()
			continue
		}
		idx := c.freeSend[len(c.freeSend)-1]
		c.freeSend = c.freeSend[:len(c.freeSend)-1]
		c.credits--
		owed := c.owed
		c.owed = 0
		c.writing = true
		c.mu.Unlock()

		// The copy runs outside c.mu so that completions and reads
		// go on meanwhile; c.writing holds the end mark back.
		k := min(len(p)-n, c.payload)
		b := c.buffer(idx)
		putHeader(b, uint32(owed), 0)
		copy(b[headerLen:], p[n:n+k])
		c.wiov[0] = c.reg.Triplet(uint64(idx*c.size), uint32(headerLen+k))
		err := c.ep.PostSend(c.wiov[:], api.Cookie(idx), api.CompletionDefault)

		c.mu.Lock()
		c.writing = false
		c.flushHeld()
		if err != nil {
			c.freeSend = append(c.freeSend, idx)
			c.fail(err)
		} else {
			c.inflight++
			n += k
		}
		c.pump()
		c.mu.Unlock()
	}
}

// CloseWrite ends the stream in this direction: the peer reads io.EOF
// after the bytes already written, and Write fails from now on. Reading
// goes on.
func (c *Conn) CloseWrite() error {
	if isClosed(c.closed) {
		return c.opErr("close", net.ErrClosed)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.wrShut && !c.peerGone {
		c.wrShut = true
		c.finPending = true
		c.pump()
	}
	return nil
}

// Close ends the connection and frees its DAT objects; blocked Read and
// Write calls return an error that is net.ErrClosed.
func (c *Conn) Close() error {
	first := false
	c.closeOnce.Do(func() {
		first = true
		c.closeErr = c.close()
	})
	if !first {
		return c.opErr("close", net.ErrClosed)
	}
	if c.closeErr != nil {
		return c.opErr("close", c.closeErr)
	}
	return nil
}

func (c *Conn) close() error {
	c.mu.Lock()
	c.closing = true
	abort := c.rqLen > 0 || c.peerGone
	if !abort && !c.wrShut {
		c.wrShut = true
		c.finPending = true
		c.pump()
	}
	c.mu.Unlock()
	close(c.closed)
	c.kick()

	// Linger: the end mark and the data before it leave.
	flags := api.CloseAbrupt
	if !abort {
		if c.await(c.linger, func() bool { return c.peerGone || (c.finSent && c.inflight == 0 && !c.writing) }) {
			flags = api.CloseGraceful
		}
	}
	c.mu.Lock()
	gone := c.peerGone
	c.mu.Unlock()
	if !gone {
		if err := c.ep.Disconnect(flags); err == nil {
			c.await(c.linger, func() bool { return c.peerGone })
		}
	}
	// Read and Write copy in and out of the registered buffers outside
	// c.mu: wait for the calls in progress (closing ends them, and the
	// kick above woke those that wait) and keep their locks, so that
	// none touches the memory release frees. Later calls find the locks
	// taken and c.closed closed: net.ErrClosed.
	c.rlock <- struct{}{}
	c.wlock <- struct{}{}
	return c.release()
}

// await waits until cond, evaluated under c.mu, holds or d passes, and
// reports whether it held.
func (c *Conn) await(d time.Duration, cond func() bool) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		c.mu.Lock()
		ok := cond()
		c.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-c.changed:
		case <-c.runDone:
			c.mu.Lock()
			ok := cond()
			c.mu.Unlock()
			return ok
		case <-t.C:
			return false
		}
	}
}

// release stops the event loop and frees every object the connection
// made, in dependency order. It is also the cleanup of a connection that
// never started.
func (c *Conn) release() error {
	if c.cancelRun != nil {
		c.cancelRun()
		<-c.runDone
	}
	c.rdl.stop()
	c.wdl.stop()
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if c.ep != nil {
		keep(c.ep.Free())
	}
	if c.lmr != nil {
		keep(c.lmr.Free())
	}
	if c.mem != nil {
		keep(c.mem.Free())
	}
	if c.evd != nil {
		keep(c.evd.Free())
	}
	if c.pz != nil {
		keep(c.pz.Free())
	}
	return first
}

func (c *Conn) opErr(op string, err error) error {
	if err == nil {
		err = errReset
	}
	var src, dst net.Addr
	if c.local != nil {
		src = c.local
	}
	if c.peer != nil {
		dst = c.peer
	}
	return &net.OpError{Op: op, Net: "dat", Source: src, Addr: dst, Err: err}
}

func (c *Conn) buffer(idx int) []byte {
	return c.mem.Bytes()[idx*c.size : (idx+1)*c.size]
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
