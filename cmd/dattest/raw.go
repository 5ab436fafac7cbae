package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"syscall"
	"time"

	"github.com/godat/godat/internal/sock"
)

// The raw TCP baseline: the same work as a benchmark row, done with plain
// TCP between the same two processes. A connection starts with a request
// header (rawHdrLen bytes):
//
//	0  "GDTR"
//	4  op      u8   rawLat, rawBW or rawRead
//	5  poll    u8   1: both sides busy-poll reads
//	6  (zero)  u16
//	8  size    u32  message size
//	12 count   u64  messages, warm-up included
//
// rawLat: count times, the client writes size bytes and the server writes
// size bytes back. rawBW: the client writes count messages of size bytes
// back to back; the server reads them all and answers one byte. rawRead:
// the client asks for count messages of size bytes, one request
// (rawReadReqLen bytes: the message's index, u64) per message, and the
// server answers each request with a message; a request whose index is
// not the next one ends the connection.
//
// The server refuses (closes) a connection whose header is not one of
// these, or declares a size above maxBenchSize or a count above
// rawMaxCount (parseRawReq), before it allocates anything for it.

const (
	rawHdrLen = 20
	rawLat    = 1
	rawBW     = 2
	rawRead   = 3
	// rawReadReqLen is the length of one rawRead request.
	rawReadReqLen = 8
	// rawMaxCount bounds a peer-supplied count of messages (the raw
	// header's, BENCH_LAT's and BENCH_WLAT's).
	rawMaxCount = 1 << 40
)

var rawMagic = [4]byte{'G', 'D', 'T', 'R'}

// rawBuf returns a message buffer of size bytes that holds data, as the
// godat side's registered memory does (AllocMemory's pages are real pages
// of a memfd). A Go buffer never written may still be backed by the
// kernel's shared zero page, which stays in cache however large the
// buffer, so a copy from it is much faster than from memory that holds
// data (docs/performance.md) and a baseline sending from it would do less
// work than godat.
func rawBuf(size int) []byte {
	b := make([]byte, size)
	fillPattern(b, uint64(size))
	return b
}

type rawReq struct {
	op    uint8
	poll  bool
	size  uint32
	count uint64
}

func (r rawReq) marshal() []byte {
	b := make([]byte, rawHdrLen)
	copy(b, rawMagic[:])
	b[4] = r.op
	if r.poll {
		b[5] = 1
	}
	binary.LittleEndian.PutUint32(b[8:], r.size)
	binary.LittleEndian.PutUint64(b[12:], r.count)
	return b
}

// rawConn moves bytes over one TCP connection: with plain blocking Go
// reads and writes (wait), or busy-polling non-blocking read(2) and
// write(2) (poll). In poll mode the socket is taken out of Go's netpoller
// (internal/sock, input unwatched) and read and written with raw system
// calls, as godat's tcp provider does for a polling consumer and as a C
// program would: otherwise every arriving segment would wake a runtime
// thread, and every system call the runtime's monitor, for nothing.
type rawConn struct {
	c    *net.TCPConn
	sk   *sock.Conn // poll mode: the socket, outside the netpoller
	rc   syscall.RawConn
	poll bool
	done <-chan struct{}

	// The spinning loops' state (method values made once: no allocation
	// per message).
	buf             []byte
	n               int
	err             error
	readFn, writeFn func(uintptr)
}

var errRawStopped = errors.New("raw TCP: stopped")

func newRawConn(c *net.TCPConn, poll bool, done <-chan struct{}) (*rawConn, error) {
	r := &rawConn{c: c, poll: poll, done: done}
	if poll {
		sk, err := sock.FromTCP(c)
		if err != nil {
			return nil, err
		}
		if _, err := sk.Watch(false); err != nil {
			sk.Close()
			return nil, err
		}
		r.sk = sk
		r.rc, _ = sk.SyscallConn()
		r.readFn, r.writeFn = r.spinRead, r.spinWrite
	}
	return r, nil
}

// close closes the connection.
func (r *rawConn) close() {
	if r.sk != nil {
		r.sk.Close()
		return
	}
	r.c.Close()
}

// spin loops over op (sock.ReadNB or sock.WriteNB) until r.buf is done,
// the peer is gone, or r.done is closed; it never parks.
func (r *rawConn) spin(op func(uintptr, []byte) (int, syscall.Errno), fd uintptr) {
	for spins := 0; r.n < len(r.buf); {
		k, e := op(fd, r.buf[r.n:])
		switch {
		case e == 0 && k > 0:
			r.n += k
		case e == syscall.EAGAIN || e == syscall.EINTR:
			if spins++; spins&63 == 0 {
				// Let another goroutine of this process run (the
				// peer, when both ends share one P); never park.
				runtime.Gosched()
				if r.stopped() {
					r.err = errRawStopped
					return
				}
			}
		case e == 0:
			r.err = io.ErrUnexpectedEOF
			return
		default:
			r.err = e
			return
		}
	}
}

func (r *rawConn) spinRead(fd uintptr)  { r.spin(sock.ReadNB, fd) }
func (r *rawConn) spinWrite(fd uintptr) { r.spin(sock.WriteNB, fd) }

func (r *rawConn) readFull(p []byte) error {
	if !r.poll {
		_, err := io.ReadFull(r.c, p)
		return err
	}
	r.buf, r.n, r.err = p, 0, nil
	cerr := r.rc.Control(r.readFn)
	r.buf = nil
	return errors.Join(cerr, r.err)
}

func (r *rawConn) write(p []byte) error {
	if !r.poll {
		_, err := r.c.Write(p)
		return err
	}
	r.buf, r.n, r.err = p, 0, nil
	cerr := r.rc.Control(r.writeFn)
	r.buf = nil
	return errors.Join(cerr, r.err)
}

func (r *rawConn) stopped() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// parseRawReq decodes a request header and checks every value the peer
// declares against the server's limits.
func parseRawReq(hdr []byte) (rawReq, error) {
	if len(hdr) != rawHdrLen || [4]byte(hdr[:4]) != rawMagic {
		return rawReq{}, errors.New("not a raw baseline header")
	}
	req := rawReq{op: hdr[4], poll: hdr[5] == 1, size: binary.LittleEndian.Uint32(hdr[8:]), count: binary.LittleEndian.Uint64(hdr[12:])}
	switch {
	case req.op < rawLat || req.op > rawRead:
		return rawReq{}, fmt.Errorf("unknown op %d", req.op)
	case req.size == 0 || req.size > maxBenchSize:
		return rawReq{}, fmt.Errorf("message size %d out of range (1 to %d)", req.size, maxBenchSize)
	case req.count > rawMaxCount:
		return rawReq{}, fmt.Errorf("count %d exceeds %d", req.count, uint64(rawMaxCount))
	}
	return req, nil
}

// serveRaw answers one raw baseline connection until the client leaves or
// ctx ends, ticking w at every message. It returns an error only for a
// header it refuses. (Closing c alone would not end a poll loop: the
// runtime defers the close of a descriptor that a RawConn callback is
// using; ctx does.)
func serveRaw(ctx context.Context, c *net.TCPConn, w *idleWatch) error {
	c.SetNoDelay(true)
	hdr := make([]byte, rawHdrLen)
	if _, err := io.ReadFull(c, hdr); err != nil {
		return nil // gone before it asked for anything
	}
	req, err := parseRawReq(hdr)
	if err != nil {
		return err
	}
	w.tick()
	rc, err := newRawConn(c, req.poll, ctx.Done())
	if err != nil {
		return nil
	}
	defer rc.close()
	b := rawBuf(int(req.size))
	switch req.op {
	case rawLat:
		for i := uint64(0); i < req.count; i++ {
			if rc.readFull(b) != nil || rc.write(b) != nil {
				return nil
			}
			w.tick()
		}
	case rawBW:
		for i := uint64(0); i < req.count; i++ {
			if rc.readFull(b) != nil {
				return nil
			}
			w.tick()
		}
		rc.write(b[:1])
	case rawRead:
		q := make([]byte, rawReadReqLen)
		for i := uint64(0); i < req.count; i++ {
			if rc.readFull(q) != nil || binary.LittleEndian.Uint64(q) != i || rc.write(b) != nil {
				return nil
			}
			w.tick()
		}
	}
	return nil
}

// rawClient runs one raw baseline row.
type rawClient struct {
	addr string
	prog *progress
}

// dial connects and sends the request header.
func (rc rawClient) dial(ctx context.Context, req rawReq) (*rawConn, func(), error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", rc.addr)
	if err != nil {
		return nil, nil, fmt.Errorf("raw TCP baseline: %w", err)
	}
	tc := c.(*net.TCPConn)
	tc.SetNoDelay(true)
	if _, err := tc.Write(req.marshal()); err != nil {
		tc.Close()
		return nil, nil, fmt.Errorf("raw TCP baseline: %w", err)
	}
	// ctx ends the run: closing the connection ends blocking calls, done
	// ends poll loops.
	stop := context.AfterFunc(ctx, func() { tc.SetDeadline(time.Unix(1, 0)) })
	r, err := newRawConn(tc, req.poll, ctx.Done())
	if err != nil {
		stop()
		tc.Close()
		return nil, nil, err
	}
	return r, func() { stop(); r.close() }, nil
}

// lat runs a ping-pong of warm+iters round trips and returns the one-way
// latency of the timed ones.
func (rc rawClient) lat(ctx context.Context, size, warm, iters int, poll bool) (time.Duration, error) {
	d, err := rc.timed(ctx, rawLat, size, warm, iters, poll)
	if err != nil {
		return 0, err
	}
	return d / time.Duration(2*iters), nil
}

// bw streams warm+iters messages and returns the throughput of the timed
// ones in bytes per second. The warm-up messages are not timed; the
// server's one-byte answer ends the run.
func (rc rawClient) bw(ctx context.Context, size, warm, iters int, poll bool) (float64, error) {
	d, err := rc.timed(ctx, rawBW, size, warm, iters, poll)
	if err != nil {
		return 0, err
	}
	return float64(size) * float64(iters) / d.Seconds(), nil
}

// timed is the client side of a rawLat or rawBW run: it sends warm+iters
// messages of size bytes, reading each one back for rawLat and the
// server's one-byte answer after the last for rawBW, and returns how long
// that took from the first timed message on.
func (rc rawClient) timed(ctx context.Context, op uint8, size, warm, iters int, poll bool) (time.Duration, error) {
	r, closeFn, err := rc.dial(ctx, rawReq{op: op, poll: poll, size: uint32(size), count: uint64(warm + iters)})
	if err != nil {
		return 0, err
	}
	defer closeFn()
	b := rawBuf(size)
	var t0 time.Time
	for i := 0; i < warm+iters; i++ {
		if i == warm {
			t0 = time.Now()
			rc.prog.start()
		}
		if err := r.write(b); err != nil {
			return 0, fmt.Errorf("raw TCP baseline: %w", err)
		}
		if op == rawLat {
			if err := r.readFull(b); err != nil {
				return 0, fmt.Errorf("raw TCP baseline: %w", err)
			}
		}
		rc.prog.add(1)
	}
	if op == rawBW {
		if err := r.readFull(b[:1]); err != nil {
			return 0, fmt.Errorf("raw TCP baseline: %w", err)
		}
	}
	return time.Since(t0), nil
}

// read has the server send warm+iters messages of size bytes to the client,
// the direction an RDMA read moves data, and returns the throughput of the
// timed ones in bytes per second. The warm-up messages are not timed.
//
// Each message is asked for with a request of its own and at most win
// requests are outstanding, the window of the godat read run; the
// warm-up's requests are all answered before the timed ones start, as the
// godat run drains its warm-up reads. That is the work an RDMA read does:
// a request crosses to the server, which answers with the data, and the
// client may not have more than win of them in flight. Announcing the
// count up front and letting the server stream would be cheaper (no
// request has to cross, the pipe never waits for the client) but would
// measure a plain stream in the other direction, the bw baseline reversed,
// rather than reads.
func (rc rawClient) read(ctx context.Context, size, win, warm, iters int, poll bool) (float64, error) {
	r, closeFn, err := rc.dial(ctx, rawReq{op: rawRead, poll: poll, size: uint32(size), count: uint64(warm + iters)})
	if err != nil {
		return 0, err
	}
	defer closeFn()
	win = max(win, 1)
	b := rawBuf(size)
	q := make([]byte, rawReadReqLen)
	next := uint64(0) // index of the next request
	stream := func(count int, timed bool) error {
		asked, got := 0, 0
		for got < count {
			for asked < count && asked-got < win {
				binary.LittleEndian.PutUint64(q, next)
				if err := r.write(q); err != nil {
					return err
				}
				asked++
				next++
			}
			if err := r.readFull(b); err != nil {
				return err
			}
			got++
			if timed {
				rc.prog.add(1)
			}
		}
		return nil
	}
	if err := stream(warm, false); err != nil {
		return 0, fmt.Errorf("raw TCP baseline: %w", err)
	}
	rc.prog.start()
	t0 := time.Now()
	if err := stream(iters, true); err != nil {
		return 0, fmt.Errorf("raw TCP baseline: %w", err)
	}
	return float64(size) * float64(iters) / time.Since(t0).Seconds(), nil
}
