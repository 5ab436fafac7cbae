package tcp

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/ring"
	"github.com/godat/godat/internal/sgl"
	"github.com/godat/godat/internal/sock"
)

// Timeouts of the connection machinery. None bounds a consumer-visible
// wait: they only stop a goroutine from waiting for ever on a peer that
// stopped answering.
const (
	hsTimeout    = 10 * time.Second // a listener waits this long for HELLO and READY
	drainTimeout = 5 * time.Second  // a closing connection waits this long for the peer's FIN
	finalTimeout = time.Second      // the last frames of a freed EP must be written within this
)

var past = time.Unix(1, 0)

// txItem is a frame waiting for the writer: its header and the memory its
// payload comes from.
type txItem struct {
	hdr      [frameLen]byte
	segs     [][]byte
	readResp bool
}

// maxBatchSegs bounds the payload segments the writer hands to one writev.
const maxBatchSegs = 128

// conn is one TCP connection of an EP, from the connection attempt to the
// end of its goroutines. Its fields are guarded by ia.mu unless noted.
type conn struct {
	ia  *ia
	ep  *ep      // nil on the passive side until the request is accepted
	nc  net.Conn // set once dialled or accepted
	wg  sync.WaitGroup
	pr  *pendingReq // passive side: the request this connection carries
	hs  hsMsg       // the peer's handshake message
	pd  []byte      // the peer's private data (handshake)
	out hsMsg       // passive side: the ACCEPT to send, set by CR.Accept

	cancel  func() // active side: aborts the dial
	aborted bool   // the attempt was abandoned locally
	up      bool   // the data transfer phase has begun
	closing bool   // no more frames are processed; the writer is finishing
	drop    bool   // the closing writer discards queued frames
	disc    bool   // the closing writer sends DISCONNECT
	hard    bool   // the closing writer closes the socket instead of half-closing it
	wexited bool
	live    int // goroutines running
	wdone   chan struct{}
	cond    *sync.Cond // wakes the writer

	// Negotiated limits.
	lim       limits // what this side accepts
	maxMsg    uint32 // largest message this side sends
	maxRDMA   uint32 // largest RDMA transfer this side asks for
	readsOut  int    // RDMA reads this side has in flight at most
	readsIn   int    // RDMA read responses this side queues at most
	peerSRQ   bool   // the peer takes receives from an SRQ: sends need no credit
	requester        // the state of this side's requests
	responder        // the state of the peer's requests

	tx     ring.Ring[txItem]
	txsegs [][]byte // scratch of pump, under ia.mu

	// The send side. Whoever sets wbusy (under ia.mu) owns the socket's
	// send side and the scratch below until it clears wbusy: the writer
	// goroutine, or a goroutine that posts, or the reader (direct writes,
	// see flush).
	rc        syscall.RawConn // nil: no direct writes
	wbusy     bool            // a goroutine is writing
	wrem      bool            // wvec holds the unwritten rest of a direct write
	txPend    atomic.Bool     // wrem, for pollers to see without the lock
	deferWake int             // goroutines that flush before they release ia.mu
	wstage    [wstageLen]byte // one batch's headers and small payloads, packed (stage)
	wpos      int             // wstage[:wpos] is in use
	wrun      int             // index in wvec of the slice of wstage that ends at wpos; -1: none
	wvec      [][]byte
	wvec0     [][]byte // wvec's full backing array
	wbufs     net.Buffers
	wiov      []syscall.Iovec
	wrFn      func(uintptr) // writeNB's callback (made once: no allocation)
	wrN       int
	wrErr     syscall.Errno
	credTimer *time.Timer // sends a credit update or ACK that nothing carried
	credArmed bool
	rxWoke    bool          // the reader completed a receive with a notification
	rxBulk    uint64        // payload bytes received since the last quick ACK (quickAck)
	qaFn      func(uintptr) // quickAck's callback (made once: no allocation)

	// The last frames, the ACK owed and DISCONNECT (lastFrames).
	wlast [2 * frameLen]byte

	// Reader scratch: only the reader goroutine uses these.
	rhdr    [frameLen]byte
	rsegs   [][]byte
	scratch [512]byte
	hsbuf   [hsLen + maxPrivateData]byte
	rb      [rxBufLen]byte // read-ahead: rb[rr:rw] is read and not yet consumed
	rr, rw  int

	// The receive side's ownership (see "Polling" in the package
	// documentation). rxTok is 1 while a goroutine consumes the stream:
	// the reader, or a consumer polling an EVD the connection feeds. The
	// reader scratch above belongs to the token's holder.
	pollable  bool               // pollers may drive the receive side (set by begin)
	rxFn      func(uintptr) bool // waitRx's callback (made once: no allocation)
	pollDirFn func(uintptr)      // readNB's read on a net.TCPConn
	rxN       int
	rxErr     error
	rxDst     []byte
	pl        payload
	rxTok     atomic.Int32
	rxMissed  atomic.Int32 // the reader found data while a poller held the token
	rxKick    atomic.Bool  // a poller left the end of the stream to the reader: pollers keep off
	rxClosed  atomic.Bool  // the connection is closing: pollers keep off

	// Quiet mode (see "Polling" in the package documentation).
	sk      *sock.Conn    // the socket once up, outside the runtime's poller; nil: c.nc is a net.Conn
	polled  atomic.Bool   // a poller tried to drive the connection since the reader last looked
	ackAt   atomic.Int64  // an ACK is left to pollers: ackOwed, or since when (UnixNano); 0: none
	ackPoll atomic.Int32  // polls since ackAt was last looked at
	rxCalls int           // waitFD calls in the current wait (reader scratch)
	waitErr error         // waitFD's read error (reader scratch: pollers have rxErr)
	goQuiet bool          // waitFD found pollers at work (reader scratch)
	quietIn time.Duration // how long until the quiet check looks again (under ia.mu)
}

// A quiet connection's reader looks whether pollers still drive it
// quietCheck after it went quiet, then twice as long after each look
// that finds them at work, up to quietMax; when they stopped, it watches
// the socket again. (Each look wakes a runtime thread, which on a small
// machine preempts the very consumer that polls; the doubling keeps
// steady polling down to a few looks a second.)
const (
	quietCheck = time.Millisecond
	quietMax   = 16 * time.Millisecond
)

// rxBufLen is the reader's read-ahead buffer: a frame header and a small
// payload arrive with one read system call. Payload bytes beyond it are
// read straight into their destination.
const rxBufLen = 16 << 10

// requester is the sending side's sequence and credit state.
type requester struct {
	txSeq     uint64 // last sequence number assigned
	acked     uint64 // cumulative ACK received
	nextTx    int    // index in ep.reqs of the first request not yet started
	sendsSent uint64 // SEND frames sent, each using one credit
	credits   uint64 // receive credits the peer granted
	inFlight  int    // RDMA reads awaiting their response
	// reapLate: requests an ACK finished wait to be completed until the
	// consumer has answered the receive that brought the ACK (ackIn).
	// Written under ia.mu; pollers read it without.
	reapLate atomic.Bool
}

// responder is the receiving side's state.
type responder struct {
	rxSeq      uint64 // last request sequence number seen
	placed     uint64 // last request placed: what ACK reports
	ackSent    uint64
	recvPosted uint64 // receive credits granted
	credSent   uint64
	respQueued int    // READ_RESP frames queued
	respCut    uint64 // the request of the first READ_RESP a closing writer discarded; 0: none
	inRecv     bool
	cur        recvWR // the receive being filled (cookie and flags)
}

func newConn(i *ia) *conn {
	c := &conn{ia: i, wdone: make(chan struct{})}
	c.cond = sync.NewCond(&i.mu)
	c.wvec0 = make([][]byte, 0, maxBatchSegs+maxIOV+2)
	c.wvec = c.wvec0
	c.wiov = make([]syscall.Iovec, 0, cap(c.wvec0))
	c.rsegs = make([][]byte, 0, maxIOV)
	return c
}

// goRun starts f on a goroutine of the connection. ia.mu is held.
func (c *conn) goRun(f func()) {
	c.wg.Add(1)
	c.ia.wg.Add(1)
	c.live++
	go func() {
		defer c.ia.wg.Done()
		defer c.wg.Done()
		f()
		c.ia.mu.Lock()
		c.live--
		c.ia.mu.Unlock()
	}()
}

// negotiate sets the connection's limits from the local EP attributes and
// the peer's handshake. ia.mu is held.
func (c *conn) negotiate(a *api.EPAttr, peer *hsMsg) {
	c.lim = limits{maxMsg: a.MaxMessageSize, maxRDMA: a.MaxRDMASize}
	c.maxMsg = min(a.MaxMessageSize, peer.MaxMsg)
	c.maxRDMA = min(a.MaxRDMASize, peer.MaxRDMA)
	c.readsOut = max(1, min(a.MaxRDMAReadOut, int(min(peer.ReadsIn, maxRDMAReadPerEP))))
	c.readsIn = max(1, a.MaxRDMAReadIn)
	c.peerSRQ = peer.Flags&hsFlagSRQ != 0
}

// hello builds this side's handshake message for EP p. ia.mu is held.
func helloFor(p *ep, typ uint16, pdLen int) hsMsg {
	m := hsMsg{Version: wireVersion, Type: typ, PDLen: uint16(pdLen),
		MaxMsg: p.attr.MaxMessageSize, MaxRDMA: p.attr.MaxRDMASize,
		ReadsIn: uint32(max(1, p.attr.MaxRDMAReadIn)), ReadsOut: uint32(max(1, p.attr.MaxRDMAReadOut)),
		PortQual: uint64(p.localPort), QOS: uint32(p.attr.QOS)}
	if p.srq != nil {
		m.Flags |= hsFlagSRQ
	}
	return m
}

// begin enters the data transfer phase: it readies the socket and the
// writer, then posts ESTABLISHED with the peer's private data pd, then
// starts the DTOs posted before the connection came up. A consumer that
// sees the event therefore finds the connection fully set up, and any
// failure of an early DTO comes after the event. ia.mu is held; p is
// CONNECTED.
func (c *conn) begin(p *ep, pd []byte) {
	c.up = true
	c.recvPosted = uint64(p.recvs.Len())
	c.credTimer = time.AfterFunc(time.Hour, c.creditDue)
	c.credTimer.Stop()
	if tc, ok := c.nc.(*net.TCPConn); ok && p.srq == nil {
		// Out of the runtime's poller, so that input can go unwatched
		// while pollers drive the connection. On failure the
		// connection stays on the net.TCPConn, always watched.
		if s, err := sock.FromTCP(tc); err == nil {
			c.nc, c.sk = s, s
		}
	}
	if sc, ok := c.nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.rc = rc
		}
	}
	c.wrFn, c.rxFn, c.pollDirFn, c.qaFn = c.writevFD, c.waitFD, c.pollDirFD, c.quickAckFD
	c.rxTok.Store(1) // the reader's, until it waits
	if c.rc != nil && p.srq == nil {
		// An EP on an SRQ is not polled: its reader may have to wait
		// for an SRQ buffer, which a poller must not do.
		c.pollable = true
		p.recvEVD.addFeed(c)
		if p.reqEVD != p.recvEVD {
			p.reqEVD.addFeed(c)
		}
	}
	c.goRun(c.writeLoop)
	p.connEvent(api.ConnectionEstablishedEvent, pd)
	p.pump()
	if p.watermarks(p.heldRecvs()) {
		// The hard watermark is watched from now on
		// (dat_ep_set_watermark(3DAT)).
		p.breakConn(c, false)
	}
}

// wake tells the writer there is something to send, unless the calling
// goroutine promised to flush (deferWake). ia.mu is held.
func (c *conn) wake() {
	if c.deferWake == 0 {
		c.cond.Signal()
	}
}

// shutdown ends the data transfer phase. drop discards queued frames, disc
// sends DISCONNECT after them, hard closes the socket once they are
// written, kick interrupts the reader (when another goroutine than the
// reader ends the connection). ia.mu is held.
func (c *conn) shutdown(drop, disc, hard, kick bool) {
	if !c.up {
		c.abort()
		return
	}
	if !c.closing {
		c.closing, c.drop, c.disc = true, drop, disc
		_ = c.nc.SetWriteDeadline(time.Now().Add(drainTimeout))
		if c.credTimer != nil {
			c.credTimer.Stop()
			c.credArmed = false
		}
		c.rxClosed.Store(true)
		if c.pollable {
			c.ep.recvEVD.dropFeed(c)
			c.ep.reqEVD.dropFeed(c)
		}
	}
	if hard && !c.hard {
		c.hard = true
		_ = c.nc.SetWriteDeadline(time.Now().Add(finalTimeout))
		if c.wexited {
			_ = c.nc.Close()
		}
	}
	if kick || hard {
		_ = c.nc.SetReadDeadline(past)
	}
	c.cond.Broadcast()
	c.ia.srqCond.Broadcast()
}

// abort abandons a connection that is not up: a dial, a handshake, a
// pending request. ia.mu is held.
func (c *conn) abort() {
	c.aborted = true
	if c.cancel != nil {
		c.cancel()
	}
	if c.nc != nil {
		_ = c.nc.SetDeadline(past)
	}
}

// enqueue appends a frame to the writer's queue and returns it for the
// caller to fill. ia.mu is held.
func (c *conn) enqueue(f *frame, segs [][]byte) *txItem {
	t := c.tx.PushBack()
	encodeFrame(t.hdr[:], f)
	t.segs = append(t.segs[:0], segs...)
	t.readResp = f.Type == frReadResp
	c.wake()
	return t
}

// ackDue reports whether an ACK (or a credit update) is owed.
func (c *conn) ackDue() bool { return c.placed != c.ackSent || c.recvPosted != c.credSent }

// writeLoop is the connection's writer: it sends queued frames in order,
// several per writev, straight from their memory, with an ACK if one is
// owed, whenever no other goroutine is writing directly (flush); it
// finishes what a direct write left unwritten; it ends the connection's
// sending side when the connection closes.
func (c *conn) writeLoop() {
	mu := &c.ia.mu
	mu.Lock()
	for {
		for c.wbusy || (!c.wrem && c.tx.Len() == 0 && !c.ackDue() && !c.closing) ||
			(c.wrem && c.isQuiet() && !c.closing) {
			// (The rest of a direct write on a quiet connection is
			// its pollers' to finish: pollTx.)
			c.cond.Wait()
		}
		if c.wrem {
			// The rest of a direct write: always finished, even when
			// closing, so that the stream stays whole.
			c.wrem, c.wbusy = false, true
			c.txPend.Store(false)
			mu.Unlock()
			err := c.writeVec()
			mu.Lock()
			c.wbusy = false
			if err != nil && !c.closing {
				c.ep.lost(c)
			}
			continue
		}
		if c.closing && c.drop {
			for c.tx.Len() > 0 {
				t := c.tx.Front()
				if t.readResp && c.respCut == 0 {
					c.respCut = binary.BigEndian.Uint64(t.hdr[8:])
				}
				clear(t.segs)
				c.tx.PopFront()
			}
		}
		if c.closing && c.tx.Len() == 0 {
			disc, hard := c.disc, c.hard
			c.disc = false
			n := 0
			if disc {
				n = c.lastFrames()
			}
			mu.Unlock()
			if n > 0 {
				_, _ = c.nc.Write(c.wlast[:n])
			}
			mu.Lock()
			hard = hard || c.hard
			c.wexited = true
			mu.Unlock()
			if hard {
				_ = c.nc.Close()
			} else if hc, ok := c.nc.(interface{ CloseWrite() error }); ok {
				_ = hc.CloseWrite()
			} else {
				_ = c.nc.Close()
			}
			close(c.wdone)
			return
		}
		c.wbusy = true
		quick := c.batch()
		// The batch refers to wstage and to the DTOs' memory only: the
		// ring's slots may be reused while it is written.
		mu.Unlock()
		err := c.writeVec()
		if quick {
			c.quickAck()
		}
		mu.Lock()
		c.wbusy = false
		if err != nil && !c.closing {
			c.ep.lost(c)
		}
	}
}

// lastFrames encodes into wlast what a disconnecting side writes last and
// returns its length: the ACK it owes, if any, then DISCONNECT. Without the
// ACK the peer would flush, on DISCONNECT, requests whose data this side
// has placed and whose receives it may already have completed. The ACK
// covers no READ_REQ whose READ_RESP was discarded (respCut): the peer
// flushes that read and what follows it. ia.mu is held.
func (c *conn) lastFrames() int {
	n := 0
	placed := c.placed
	if c.respCut != 0 {
		placed = min(placed, c.respCut-1)
	}
	if placed > c.ackSent {
		c.ackSent, c.credSent = placed, c.recvPosted
		encodeFrame(c.wlast[:], &frame{Type: frAck, Flags: frFlagAck, Ack: placed, Credits: c.recvPosted})
		n = frameLen
	}
	encodeFrame(c.wlast[n:], &frame{Type: frDisc})
	return n + frameLen
}

// batch moves queued frames into wvec, with the ACK owed, if any, in the
// header of one of them (a receiver applies it once it has processed that
// frame) or, when none fits, as an ACK frame of its own. Headers, and
// payloads of inlineMax bytes or less, are copied into wstage, one after
// the other, so that a batch of small frames is a single buffer (one
// write system call); larger payloads are written from their memory.
// It reports whether a quick ACK is due once the batch is written
// (quickAck). ia.mu is held and the caller set wbusy.
func (c *conn) batch() (quick bool) {
	c.wvec = c.wvec0[:0]
	c.wpos, c.wrun = 0, -1
	ack := c.ackDue() && !c.closing
	// Where the ACK goes: with no READ_RESP queued, as early as it can,
	// so that the peer learns of its completions and credits before the
	// frames that follow (which may prompt it to send): on the first
	// frame when that one is short, else in a frame ahead of it. With a
	// READ_RESP queued, on the last frame, since an ACK must not be
	// applied before the response of a read it covers.
	onFirst := false
	if ack && c.respQueued == 0 {
		if c.tx.Len() > 0 && binary.BigEndian.Uint32(c.tx.Front().hdr[4:]) <= ackRideMax {
			onFirst = true
		} else {
			c.appendAck()
			ack = false
		}
	}
	nsegs := 0
	var h *[frameLen]byte
	for c.tx.Len() > 0 && nsegs < maxBatchSegs {
		t := c.tx.Front()
		n := int(binary.BigEndian.Uint32(t.hdr[4:])) // the payload's length
		inline := n <= inlineMax && !t.readResp
		need := frameLen
		if inline {
			need += n
		}
		if c.wpos+need > len(c.wstage) {
			break // the next batch takes it
		}
		h = c.stageHdr(t.hdr[:])
		if onFirst {
			c.carryAck(h)
			onFirst, ack = false, false
		}
		for _, s := range t.segs {
			switch {
			case inline:
				c.stage(s)
			case len(s) > 0:
				c.wvec = append(c.wvec, s)
				c.wrun = -1
			}
		}
		nsegs += 1 + len(t.segs)
		if t.readResp {
			c.respQueued--
		}
		sgl.Drop(t.segs)
		c.tx.PopFront()
	}
	if ack && c.tx.Len() == 0 {
		c.carryAck(h)
	}
	if c.rxBulk >= quickAckBytes {
		c.rxBulk = 0
		return true
	}
	return false
}

// quickAckBytes is how much payload a connection receives between two
// quick ACKs (quickAck).
const quickAckBytes = 256 << 10

// quickAck sets TCP_QUICKACK on the socket, after a write, on a
// connection that receives a stream. Linux takes a socket that sends
// data soon after receiving some for one side of an exchange of
// messages ("pingpong" mode) and delays its TCP acknowledgements, to let
// them ride on its answers. The ACK frames a stream's receiver writes
// make it look so, and the delayed acknowledgements then hold back the
// peer's sending: on loopback a raw TCP stream of 1 MiB messages went
// from 10.5 to 7.8-8.3 GB/s once its receiver wrote 48 bytes back per
// message, and back to 9.3-9.7 GB/s with TCP_QUICKACK set after each of
// them (2026-11-23). The option leaves that mode until the socket
// next answers soon after receiving, so it is set again after a batch
// whenever quickAckBytes more have come in: one system call per 256 KiB
// received at most, and almost never on an exchange of small messages.
func (c *conn) quickAck() {
	if c.rc != nil {
		_ = c.rc.Control(c.qaFn)
	}
}

// quickAckFD is quickAck's setsockopt.
func (c *conn) quickAckFD(fd uintptr) {
	err := unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1)
	if testHookQuickAck != nil {
		testHookQuickAck(err)
	}
}

// testHookQuickAck, set by tests only, sees each TCP_QUICKACK set, with
// its error.
var testHookQuickAck func(error)

// stage copies b into wstage at wpos, for a caller that checked the room,
// and adds it to the batch: as a longer last slice when that one ends
// where b goes.
func (c *conn) stage(b []byte) {
	p := c.wpos
	c.wpos += copy(c.wstage[p:], b)
	if k := len(c.wvec) - 1; k >= 0 && k == c.wrun {
		c.wvec[k] = c.wvec[k][:len(c.wvec[k])+len(b)]
	} else if len(b) > 0 {
		c.wvec = append(c.wvec, c.wstage[p:c.wpos])
		c.wrun = len(c.wvec) - 1
	}
}

// stageHdr stages the frame header h and returns its copy, which an ACK
// may still be put into.
func (c *conn) stageHdr(h []byte) *[frameLen]byte {
	p := c.wpos
	c.stage(h[:frameLen])
	return (*[frameLen]byte)(c.wstage[p:])
}

// zeroFrame is the blank a header is encoded over in wstage.
var zeroFrame [frameLen]byte

// wstageLen is the size of a batch's staging buffer: room for the headers
// of a full batch (maxBatchSegs) and some small payloads.
const wstageLen = 8 << 10

// inlineMax is the largest payload of a SEND or RDMA WRITE that a batch
// copies next to its header rather than writing it from the DTO's memory.
// For so little data the copy costs less than the extra segment of a
// vectored write: a plain-socket 64 B round trip took 0.3 µs less of CPU
// with header and payload in one buffer than in two. The copy is made
// while the DTO is outstanding, when the consumer may not change that
// memory. Read responses are never copied: their memory is the
// consumer's to write while a peer reads it, which the kernel's gather
// tolerates and a copy in Go would turn into a data race.
const inlineMax = 256

// ackRideMax is the largest payload of a frame whose header carries the
// ACK owed ahead of the rest of a batch: the peer applies an ACK after
// the frame's payload, and a long one would delay its completions.
const ackRideMax = 4 << 10

// credDelay is how long a credit update (when the peer may be out of
// credits) or the ACK of a polled receive waits for a frame to ride on.
const credDelay = 20 * time.Microsecond

// armCredit schedules the owed ACK and credit update. ia.mu is held.
func (c *conn) armCredit() {
	if !c.credArmed {
		c.credArmed = true
		c.credTimer.Reset(credDelay)
	}
}

// deferAck lets an owed ACK or credit update wait for a frame to ride on,
// for credDelay at most: on a quiet connection its pollers (or the
// reader's quiet check) send it late, so that no timer is armed per
// message (arming one wakes a runtime thread); otherwise the credit timer
// does. ia.mu is held.
func (c *conn) deferAck() {
	if c.isQuiet() {
		if c.ackAt.Load() == 0 {
			c.ackPoll.Store(0)
			c.ackAt.Store(ackOwed) // timed by the pollers, later (lateAck)
		}
		return
	}
	c.armCredit()
}

// ackOwed is ackAt for an ACK whose wait has not been timed yet.
const ackOwed = 1

// ackPolls is how many polls pass between two looks at the clock while an
// ACK is left to pollers (reading the clock costs more than a poll that
// finds nothing).
const ackPolls = 32

// lateAck sends an ACK left to pollers once it has waited credDelay (or at
// once when force is set). Pollers call it after each poll: it reads the
// clock every ackPolls calls only, and times the wait from the first such
// reading, so the ACK waits between credDelay and credDelay plus ackPolls
// polls.
func (c *conn) lateAck(force bool) {
	at := c.ackAt.Load()
	if at == 0 {
		return
	}
	if !force {
		if c.ackPoll.Add(1) < ackPolls {
			return
		}
		c.ackPoll.Store(0)
		now := time.Now().UnixNano()
		if at == ackOwed {
			c.ackAt.CompareAndSwap(ackOwed, now)
			return
		}
		if now-at < int64(credDelay) {
			return
		}
	}
	c.ia.mu.Lock()
	if c.up && !c.closing && c.ackAt.Load() != 0 {
		if c.ackDue() {
			c.flush(true)
		} else {
			c.ackAt.Store(0)
		}
	}
	c.ia.mu.Unlock()
}

// creditDue sends the credit update owed, if nothing carried it.
func (c *conn) creditDue() {
	c.ia.mu.Lock()
	defer c.ia.mu.Unlock()
	c.credArmed = false
	if c.up && !c.closing && c.ackDue() {
		c.flush(true)
	}
}

// appendAck adds the ACK owed to the batch as an ACK frame. ia.mu is held.
func (c *conn) appendAck() {
	placed, posted := c.takeAck()
	h := c.stageHdr(zeroFrame[:])
	encodeFrame(h[:], &frame{Type: frAck, Flags: frFlagAck, Ack: placed, Credits: posted})
}

// carryAck puts the ACK owed into the header h of a frame about to be
// written. ia.mu is held.
func (c *conn) carryAck(h *[frameLen]byte) {
	placed, posted := c.takeAck()
	putAck(h[:], true, placed, posted)
}

// takeAck records the ACK owed as sent and returns what it says: the
// requests placed and the receives posted. ia.mu is held.
func (c *conn) takeAck() (placed, posted uint64) {
	if c.credArmed {
		c.credArmed = false
		c.credTimer.Stop()
	}
	c.ackSent, c.credSent = c.placed, c.recvPosted
	c.ackAt.Store(0)
	return c.placed, c.recvPosted
}

// flush sends what is queued, and the ACK if one is owed and ack is set,
// from the calling goroutine with non-blocking writes, if no other
// goroutine is writing: a post then costs no hand-off to the writer.
// What the socket does not take at once is left to the writer goroutine,
// so flush never waits for the peer. ia.mu is held; flush releases it
// while it writes.
func (c *conn) flush(ack bool) {
	for range 4 {
		work := c.tx.Len() > 0 || (ack && c.ackDue())
		if !work {
			return
		}
		if c.wbusy || c.wrem {
			return // the writer in progress (or due) looks at the queue again
		}
		if c.rc == nil || !c.up || c.closing {
			c.cond.Signal()
			return
		}
		c.wbusy = true
		if !c.writeHeld(c.batch()) {
			return
		}
		if c.closing {
			c.cond.Broadcast()
			return
		}
	}
	if c.tx.Len() > 0 || c.ackDue() {
		c.cond.Signal()
	}
}

// pollTx lets a poller write, without waiting, what a quiet connection
// left to its pollers (txPend): the rest of a direct write (flush) and
// the frames a streaming consumer queued (ep.post), so that a polling
// consumer writes its own stream as it reads it, with no writer
// goroutine to wake and schedule. It returns whether an unwritten rest
// remains.
func (c *conn) pollTx() bool {
	if !c.txPend.Load() {
		return false
	}
	c.markPolled()
	defer c.markPolled() // (a long write counts as polling too)
	mu := &c.ia.mu
	mu.Lock()
	defer mu.Unlock()
	if c.wbusy || !c.up || c.closing {
		return c.wrem
	}
	if !c.isQuiet() {
		// The writer goroutine's again (it clears txPend when it
		// takes a rest; queued frames alone are simply its).
		if !c.wrem {
			c.txPend.Store(false)
		}
		c.cond.Signal()
		return c.wrem
	}
	if c.wrem {
		c.wrem, c.wbusy = false, true
		if !c.writeHeld(false) {
			return c.wrem
		}
	}
	c.txPend.Store(false)
	c.flush(true) // what is queued (behind the rest)
	return c.wrem
}

// writeHeld writes wvec without waiting, for a caller that set wbusy and
// holds ia.mu (released while it writes). What the socket does not take
// is left in wrem, for the writer goroutine or, on a quiet connection,
// for the pollers (pollTx), which spin anyway and so need no wake-up; an
// error breaks the connection. quick asks for a quick ACK after the
// write (batch says when). true: everything was written.
func (c *conn) writeHeld(quick bool) bool {
	mu := &c.ia.mu
	mu.Unlock()
	done, err := c.writeNB()
	if quick {
		c.quickAck()
	}
	mu.Lock()
	c.wbusy = false
	switch {
	case err != nil:
		c.wvec = c.wvec0[:0]
		c.txPend.Store(false)
		if !c.closing {
			c.ep.lost(c)
		}
		c.cond.Broadcast()
		return false
	case !done:
		c.wrem = true
		c.txPend.Store(true)
		if !c.isQuiet() {
			c.cond.Signal()
		}
		return false
	}
	return true
}

// handBack ends quiet mode and gives the connection back to its reader
// and writer goroutines: input is watched again, and the rest of a direct
// write the pollers left is the writer's. ia.mu is not held.
func (c *conn) handBack() {
	c.polled.Store(false) // (else the reader would leave the stream to pollers again)
	c.watchOn()
	if !c.txPend.Load() && !c.reapLate.Load() {
		return
	}
	c.ia.mu.Lock()
	c.settleReap() // (the quiet check that would have is off)
	if c.wrem || c.tx.Len() > 0 {
		c.cond.Signal()
	}
	c.ia.mu.Unlock()
}

// writeNB writes wvec with one non-blocking writev and drops what was
// written from it; done reports that nothing is left.
func (c *conn) writeNB() (done bool, err error) {
	var n int
	if c.sk != nil {
		n, err = c.sk.WritevNB(c.wvec, &c.wiov, maxWriteNB)
	} else {
		c.wrN, c.wrErr = 0, 0
		if err = c.rc.Control(c.wrFn); err == nil && c.wrErr != 0 { // never waits: no need for the write lock
			err = c.wrErr
		}
		n = c.wrN
	}
	switch err {
	case nil:
	case syscall.EAGAIN, syscall.EINTR:
		n = 0
	default:
		return false, err
	}
	c.wvec = sock.Advance(c.wvec, n)
	if len(c.wvec) == 0 {
		c.wvec = c.wvec0[:0]
		return true, nil
	}
	return false, nil
}

// writevFD is writeNB's non-blocking writev of wvec, maxWriteNB bytes
// at most.
func (c *conn) writevFD(fd uintptr) {
	c.wrN, c.wrErr = sock.WritevNB(fd, c.wvec, &c.wiov, maxWriteNB)
}

// maxWriteNB bounds one non-blocking write. On loopback the kernel takes
// as much as the peer reads meanwhile, so an unbounded writev of a
// stream of large DTOs ran for milliseconds, with the poller away from
// its completions and many megabytes queued in the socket; streaming
// 1 MiB RDMA writes between two polling processes went from 4.4-5.1 to
// 6.1-6.4 GB/s with this bound (2 MiB; 1 MiB did as well, 256 KiB and
// 4 MiB worse).
const maxWriteNB = 2 << 20

// writeVec writes wvec with one vectored write.
func (c *conn) writeVec() error {
	var err error
	if c.sk != nil {
		_, err = c.sk.Writev(c.wvec)
	} else {
		c.wbufs = net.Buffers(c.wvec)
		_, err = c.wbufs.WriteTo(c.nc)
	}
	clear(c.wvec)
	c.wvec = c.wvec0[:0]
	return err
}

// readFull reads exactly len(b) bytes: what the read-ahead buffer holds,
// then from the socket, straight into b for a large remainder, else
// through the buffer (one read for this and the frames that follow).
func (c *conn) readFull(b []byte) error {
	n := copy(b, c.rb[c.rr:c.rw])
	c.rr += n
	b = b[n:]
	if len(b) > 0 && c.isQuiet() {
		c.handBack() // the reader is about to wait inside a frame
	}
	for len(b) > 0 {
		if len(b) >= rxBufLen/2 {
			k, err := c.nc.Read(b)
			b = b[k:]
			if err != nil && len(b) > 0 && !c.kicked(err) {
				return err
			}
			continue
		}
		k, err := c.nc.Read(c.rb[:])
		m := copy(b, c.rb[:k])
		c.rr, c.rw = m, k
		b = b[m:]
		if err != nil && len(b) > 0 && !c.kicked(err) {
			return err
		}
	}
	return nil
}

// readInto reads n bytes into the segments, in order.
func (c *conn) readInto(segs [][]byte, n uint64) error {
	for _, s := range segs {
		if n == 0 {
			break
		}
		k := min(uint64(len(s)), n)
		if err := c.readFull(s[:k]); err != nil {
			return err
		}
		n -= k
	}
	if n != 0 {
		return errBadFrame
	}
	return nil
}

// drain ends the reader: it reads and discards what the peer still sends
// until the peer closes (or drainTimeout), waits for the writer, and
// closes the socket.
func (c *conn) drain() {
	c.watchOn()
	_ = c.nc.SetReadDeadline(time.Now().Add(drainTimeout))
	c.ia.mu.Lock()
	if c.hard {
		_ = c.nc.SetReadDeadline(past)
	}
	c.ia.mu.Unlock()
	for {
		if _, err := c.nc.Read(c.scratch[:]); err != nil {
			break
		}
	}
	<-c.wdone
	_ = c.nc.Close()
}

// kicked reports whether a read error is a poller's kick (see poll)
// rather than the end of the connection, and if so clears it. Only the
// holder of the receive token calls it.
func (c *conn) kicked(err error) bool {
	if !c.pollable || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	c.ia.mu.Lock()
	defer c.ia.mu.Unlock()
	if c.closing {
		return false
	}
	// (rxKick stays set: what a poller leaves to the reader is the end of
	// the stream, and pollers keep off from then on.)
	kick := c.rxKick.Load()
	// A poller is at work if it polled since the last look, or is in
	// the middle of a poll (it has the receive token: the reader has
	// not) or of a write (a long one may span a look).
	busy := c.polled.Swap(false) || c.rxTok.Load() != 0 || c.wbusy
	c.settleReap()
	if !kick && c.isQuiet() && busy {
		// Pollers still drive the connection: look again later, and
		// send an ACK they left waiting too long.
		c.quietIn = min(2*c.quietIn, quietMax)
		_ = c.nc.SetReadDeadline(time.Now().Add(c.quietIn))
		if at := c.ackAt.Load(); at != 0 && (at == ackOwed || time.Now().UnixNano()-at >= int64(credDelay)) && c.ackDue() {
			c.flush(true)
		}
		return true
	}
	// Pollers stopped, a waiter already ended quiet mode, or a poller
	// left the end of the stream to the reader: the reader watches the
	// socket again, the writer finishes what they left unwritten, and
	// they send what they left owed.
	c.watchOn()
	if c.wrem || c.tx.Len() > 0 {
		c.cond.Signal()
	}
	if c.ackAt.Load() != 0 && c.ackDue() {
		c.flush(true)
	}
	_ = c.nc.SetReadDeadline(time.Time{})
	return true
}

// enterQuiet stops watching the socket for input: pollers drive the
// connection, and the reader looks every quietCheck whether they still do.
// Called by the reader, without the receive token.
func (c *conn) enterQuiet() {
	if changed, err := c.sk.Watch(false); err == nil && changed {
		c.polled.Store(false)
		if testHookQuiet != nil {
			testHookQuiet(true)
		}
	}
	c.ia.mu.Lock()
	if !c.closing {
		c.quietIn = quietCheck
		_ = c.nc.SetReadDeadline(time.Now().Add(quietCheck))
	}
	c.ia.mu.Unlock()
}

// watchOn ends quiet mode: input is watched again (a waiter is woken at
// once if input is already there). Any goroutine may call it.
func (c *conn) watchOn() {
	if !c.isQuiet() {
		return
	}
	if changed, err := c.sk.Watch(true); err == nil && changed && testHookQuiet != nil {
		testHookQuiet(false)
	}
}

// isQuiet reports whether the connection is in quiet mode: its socket's
// input is not watched (pollers, or a driven wait, drive it).
func (c *conn) isQuiet() bool { return c.sk != nil && !c.sk.Watching() }

// testHookQuiet, set by tests only, sees connections enter (true) and
// leave (false) quiet mode.
var testHookQuiet func(entered bool)

// waitRx waits until there is something to read, and reads it into the
// read-ahead buffer, or, with something buffered or a payload unfinished,
// until the stream is the reader's again. The reader holds the receive
// token on entry and on return; while it waits in the netpoller or in
// quiet mode it does not, and a polling consumer may take the stream
// meanwhile.
func (c *conn) waitRx() error {
	held := true
	for {
		c.waitErr, c.rxCalls, c.goQuiet = nil, 0, false
		if held {
			c.rxTok.Store(0)
			held = false
		}
		err := c.rc.Read(c.rxFn)
		if err != nil {
			// The token is not held when the wait fails. A kick or a
			// quiet check needs none (the reader waits again).
			if c.kicked(err) {
				continue
			}
			if !c.rxTok.CompareAndSwap(0, 1) {
				c.rxMissed.Store(1)
				for !c.rxTok.CompareAndSwap(0, 1) {
					runtime.Gosched() // a poller is finishing
				}
			}
			return err
		}
		if c.goQuiet {
			// Pollers drive the stream (one has the token): stop
			// watching it, and wait again without the token.
			c.enterQuiet()
			continue
		}
		held = true
		if c.waitErr != nil {
			return c.waitErr
		}
		if c.rr != c.rw || c.pl.active {
			return nil
		}
	}
}

// waitFD is waitRx's callback: it takes the receive token and reads
// without waiting; false (wait for the socket) if there is nothing to
// read or a poller has the stream. Finding pollers at work (they polled
// since the reader last looked, hold the token, or took what woke the
// reader) it returns true without the token and sets goQuiet; in quiet
// mode it leaves the stream alone (false), and the quiet check decides.
func (c *conn) waitFD(fd uintptr) bool {
	c.rxCalls++
	if c.sk != nil && !c.rxKick.Load() {
		if c.isQuiet() {
			return false // pollers drive the stream: wait for the quiet check
		}
		if c.polled.Load() {
			c.goQuiet = true // pollers are at work: leave the stream to them
			return true
		}
	}
	if !c.rxTok.CompareAndSwap(0, 1) {
		// A poller has the stream. It looks at rxMissed after it lets
		// go, so data that woke us is not left unread.
		c.rxMissed.Store(1)
		if !c.rxTok.CompareAndSwap(0, 1) {
			if c.sk != nil && !c.isQuiet() {
				c.goQuiet = true
				return true
			}
			return false
		}
	}
	if c.rr != c.rw || c.pl.active {
		return true // a poller left part of a frame
	}
	k, e := sock.RecvNB(fd, c.rb[:])
	switch {
	case e == syscall.EAGAIN || e == syscall.EINTR:
		c.rxTok.Store(0)
		return false
	case e != 0:
		c.waitErr = e
	case k == 0:
		c.waitErr = io.EOF
	default:
		c.rr, c.rw = 0, k
	}
	return true
}

// pollDirFD is readNB's read on a net.TCPConn, into rxDst.
func (c *conn) pollDirFD(fd uintptr) {
	c.rxN, c.rxErr = 0, nil
	if n, e := sock.RecvNB(fd, c.rxDst); e != 0 {
		c.rxErr = e
	} else {
		c.rxN = n
	}
}

// readNB is the polling paths' read into b, which never waits:
// syscall.EAGAIN when the socket holds nothing. A sock.Conn is called
// directly; a net.TCPConn through its RawConn.
func (c *conn) readNB(b []byte) (int, error) {
	if c.sk != nil {
		return c.sk.ReadNB(b)
	}
	c.rxDst, c.rxN, c.rxErr = b, 0, nil
	if err := c.rc.Control(c.pollDirFn); err != nil {
		c.rxDst = nil
		return 0, err
	}
	n, err := c.rxN, c.rxErr
	c.rxDst, c.rxErr = nil, nil
	return n, err
}

// readLoop is the connection's reader in the data transfer phase.
func (c *conn) readLoop() {
	defer c.drain()
	for {
		if c.pollable && (c.rr == c.rw && !c.pl.active || c.sk != nil && c.polled.Load()) {
			// Nothing buffered, or pollers want the stream (they go
			// on with what is buffered and with an unfinished
			// payload): wait without the receive token, in the
			// netpoller or in quiet mode while they drive it.
			if err := c.waitRx(); err != nil {
				c.readFailed(err)
				return
			}
			continue
		}
		if c.pl.active {
			// A poller left a payload unfinished.
			if !c.step(false, true) {
				return
			}
			continue
		}
		if err := c.readFull(c.rhdr[:]); err != nil {
			c.readFailed(err)
			return
		}
		if !c.step(false, false) {
			return
		}
	}
}

// step processes the frame whose header is in rhdr: it decodes it, runs
// its handler and sends what that queued; false ends the connection's
// reading. The caller holds the receive token; polled says it is a
// polling consumer.
func (c *conn) step(polled, resume bool) bool {
	var f frame
	if !resume {
		var err error
		f, err = decodeFrame(c.rhdr[:], &c.lim)
		if err != nil {
			c.violation()
			return false
		}
	}
	mu := &c.ia.mu
	mu.Lock()
	c.deferWake++
	var ok bool
	if resume {
		ok = c.continuePayload(polled)
	} else {
		ok = c.handle(&f, polled)
	}
	if c.rxWoke && !polled && ok && c.rr == c.rw && c.ackDue() && c.tx.Len() == 0 {
		// A receive completed with a notification: its consumer
		// may answer at once, and its frames would carry the ACK.
		// Let it run first rather than write the ACK alone now.
		mu.Unlock()
		runtime.Gosched()
		mu.Lock()
	}
	ack := c.rr == c.rw
	if polled && c.rxWoke && ack && c.ackDue() && c.tx.Len() == 0 {
		// The same: the polling consumer is about to see the
		// receive and may answer; the ACK waits for its frames,
		// for credDelay at most.
		c.deferAck()
		ack = false
	}
	c.rxWoke = false
	c.deferWake--
	if ok {
		// Frames the handler queued go out now; an owed ACK too,
		// unless more of the stream is already here (ACKs are
		// cumulative: the next one covers both).
		c.flush(ack)
	} else {
		c.cond.Broadcast()
	}
	mu.Unlock()
	return ok
}

// poll lets a consumer polling an EVD drive the connection's receive side
// (evd.Dequeue): if nobody else consumes the stream, it reads what the
// socket holds without waiting and processes it (pollStream). The end of
// the stream is left to the reader, kicked out of its netpoller wait for
// it. false: the caller could not drive the connection (another goroutine
// has the stream, or it is ending).
func (c *conn) poll() bool {
	if c.rxKick.Load() || c.rxClosed.Load() {
		return false
	}
	// Marked even when the reader has the stream: it hands the stream
	// over at its next frame boundary (readLoop).
	c.markPolled()
	c.settleOwed()
	if !c.rxTok.CompareAndSwap(0, 1) {
		return false
	}
	defer c.lateAck(false)
	for {
		if c.rxMissed.Load() != 0 {
			c.rxMissed.Store(0) // (a store is a locked exchange: only when set)
		}
		more := c.pollStream()
		if more {
			// The stream ended or a read failed: the reader takes
			// over and sees it for itself (it would not be woken
			// otherwise).
			c.rxKick.Store(true)
			c.rxTok.Store(0)
			_ = c.nc.SetReadDeadline(past)
			return false
		}
		c.rxTok.Store(0)
		if c.rxMissed.Load() == 0 || !c.rxTok.CompareAndSwap(0, 1) {
			return true
		}
	}
}

// markPolled records that a poller is at work, for the reader's quiet
// check.
func (c *conn) markPolled() {
	if !c.polled.Load() {
		c.polled.Store(true)
	}
}

// pollStream reads without waiting and processes what it can: whole
// headers, and as much of a payload as is here (the rest is read by the
// next holder of the token); it reports whether the reader must take
// over. The caller holds the receive token.
func (c *conn) pollStream() bool {
	drained := false // the last read did not fill the buffer: the socket was empty
	for {
		if c.pl.active {
			if !c.step(true, true) {
				return false // the connection ends; its reader was kicked
			}
			if c.pl.active {
				return false // the rest of the payload is not here yet
			}
		}
		for c.rw-c.rr >= frameLen {
			c.rr += copy(c.rhdr[:], c.rb[c.rr:c.rw])
			if !c.step(true, false) {
				return false
			}
			if c.pl.active {
				return false
			}
		}
		if c.rr == c.rw {
			c.rr, c.rw = 0, 0
		} else if c.rr > 0 {
			c.rw = copy(c.rb[:], c.rb[c.rr:c.rw])
			c.rr = 0
		}
		if drained {
			// Another read now would most likely find nothing (a
			// system call on the consumer's critical path for
			// nothing); the next poll reads what comes.
			return false
		}
		space := len(c.rb) - c.rw
		k, e := c.readNB(c.rb[c.rw:])
		switch {
		case e == syscall.EAGAIN || e == syscall.EINTR:
			// Part of a header may stay buffered: its rest wakes the
			// reader, or the next poll reads it.
			return false
		case e != nil || k == 0:
			return true // the reader sees the error or EOF for itself
		}
		c.rw += k
		drained = k < space
	}
}

// readFailed handles a read error: the peer is gone (BROKEN), unless the
// connection is already closing.
func (c *conn) readFailed(err error) {
	c.ia.mu.Lock()
	defer c.ia.mu.Unlock()
	if !c.closing {
		c.ep.lost(c)
	}
	_ = err
}

// violation handles a frame the protocol does not allow: the connection
// breaks.
func (c *conn) violation() {
	c.ia.mu.Lock()
	defer c.ia.mu.Unlock()
	if !c.closing {
		c.ep.lost(c)
	}
}

// handle processes one frame; false ends the reader. ia.mu is held; it
// is released only while a payload that is not yet buffered is read.
func (c *conn) handle(f *frame, polled bool) bool {
	switch f.Type {
	case frSend, frSendInv, frWrite, frReadResp:
		var dst [][]byte
		var ok bool
		switch f.Type {
		case frWrite:
			dst, ok = c.beginWrite(f)
		case frReadResp:
			dst, ok = c.beginReadResp(f)
		default:
			dst, ok = c.beginSend(f)
		}
		if !ok {
			return false
		}
		c.rxBulk += uint64(f.Len)
		c.pl = payload{active: true, f: *f, all: dst, dst: dst, left: uint64(f.Len)}
		return c.continuePayload(polled)
	case frReadReq:
		return c.onReadReq(f)
	case frAck:
		return c.onAck(f)
	case frNak:
		return c.onNak(f)
	case frDisc:
		return c.onDisc()
	}
	if !c.closing {
		c.ep.lost(c)
	}
	return false
}

// payload is the frame whose payload is being read: where the rest of it
// goes. It belongs to the holder of the receive token; a poller may leave
// it unfinished (active) for the next holder.
type payload struct {
	active bool
	f      frame
	all    [][]byte // the destination segments, cleared at the end
	dst    [][]byte // what is left of them
	left   uint64
}

// continuePayload reads the rest of the current payload, to the end (the
// reader) or as far as the socket has it now (a poller: the payload may
// stay active), then completes the frame. false ends the connection's
// reading. ia.mu is held; it is released while the socket is read, not
// while a payload already in the read-ahead buffer is copied (the common
// small message then costs one lock hold from header to completion).
func (c *conn) continuePayload(polled bool) bool {
	mu := &c.ia.mu
	var err error
	switch {
	case c.pl.left <= uint64(c.rw-c.rr):
		_, err = c.fillNB() // all buffered: no system call
	case polled:
		var done bool
		mu.Unlock()
		done, err = c.fillNB()
		mu.Lock()
		if err == nil && !done {
			return true
		}
	default:
		mu.Unlock()
		err = c.readInto(c.pl.dst, c.pl.left)
		mu.Lock()
	}
	f := c.pl.f
	sgl.Drop(c.pl.all)
	c.pl = payload{}
	switch f.Type {
	case frWrite:
		return c.endWrite(&f, err)
	case frReadResp:
		return c.endReadResp(&f, err)
	}
	return c.endSend(&f, err, polled)
}

// fillNB reads what it can of the current payload without waiting:
// buffered bytes, then straight from the socket into the destination.
func (c *conn) fillNB() (done bool, err error) {
	for c.pl.left > 0 {
		if len(c.pl.dst) == 0 {
			return false, errBadFrame
		}
		s := c.pl.dst[0]
		if len(s) == 0 {
			c.pl.dst = c.pl.dst[1:]
			continue
		}
		s = s[:min(uint64(len(s)), c.pl.left)]
		var m int
		if c.rr < c.rw {
			m = copy(s, c.rb[c.rr:c.rw])
			c.rr += m
		} else {
			k, e := c.readNB(s)
			switch {
			case e == syscall.EAGAIN || e == syscall.EINTR:
				return false, nil
			case e != nil:
				return false, e
			case k == 0:
				return false, io.EOF
			}
			m = k
		}
		c.pl.left -= uint64(m)
		c.pl.dst[0] = c.pl.dst[0][m:]
	}
	return true, nil
}

// nextSeq checks that a request frame carries the next sequence number.
// ia.mu is held.
func (c *conn) nextSeq(f *frame) bool {
	if f.Seq != c.rxSeq+1 {
		return false
	}
	c.rxSeq = f.Seq
	return true
}

// refuse answers request seq with a NAK of status st and breaks the
// connection; the NAK is written after the frames already queued. ia.mu
// is held.
func (c *conn) refuse(seq uint64, st api.DTOStatus) {
	c.enqueue(&frame{Type: frNak, Seq: seq, Status: uint16(st)}, nil)
	c.ep.breakConn(c, false)
}

// beginSend checks a SEND or SEND_INV and takes its receive; it returns
// the memory the message goes to. ia.mu is held.
func (c *conn) beginSend(f *frame) ([][]byte, bool) {
	p := c.ep
	if c.closing {
		return nil, false
	}
	if !c.nextSeq(f) {
		p.lost(c)
		return nil, false
	}
	var rw *recvWR
	if s := p.srq; s != nil {
		if s.recvs.Len() == 0 && c.ackDue() {
			c.cond.Signal() // the ACK owed must not wait for the SRQ
		}
		for s.recvs.Len() == 0 && !c.closing {
			c.ia.srqCond.Wait()
		}
		if c.closing {
			return nil, false
		}
		rw = s.take()
	} else {
		if p.recvs.Len() == 0 {
			p.lost(c) // the peer sent without a credit
			return nil, false
		}
		rw = p.recvs.Front()
		p.recvs.PopFront()
	}
	c.cur.cookie, c.cur.flags = rw.cookie, rw.flags
	dst, room, ok := p.ia.mem.Gather(c.rsegs[:0], rw.iov, p.recvPZ(), api.MemPrivLocalWrite)
	c.rsegs = dst[:0]
	inval := f.Type == frSendInv
	var bad api.DTOStatus
	switch {
	case !ok:
		bad = api.DTOErrLocalProtection
		p.completeRecv(&c.cur, bad, 0, api.OpReceive, 0, true)
		c.refuse(f.Seq, api.DTOErrRemoteResponder)
	case uint64(f.Len) > room:
		bad = api.DTOErrLocalLength
		p.completeRecv(&c.cur, bad, 0, api.OpReceive, 0, true)
		c.refuse(f.Seq, api.DTOErrRemoteResponder)
	case inval && p.invalidatable(api.RMRContext(f.RKey)) == nil:
		bad = api.DTOErrLocalProtection
		p.completeRecv(&c.cur, bad, 0, api.OpReceive, 0, true)
		c.refuse(f.Seq, api.DTOErrRemoteAccess)
	}
	if bad != api.DTOSuccess {
		clear(dst)
		return nil, false
	}
	c.inRecv = true
	return dst, true
}

// endSend completes the receive of a SEND whose payload was read (err:
// or not); polled says that a poller read it. ia.mu is held.
func (c *conn) endSend(f *frame, err error, polled bool) bool {
	p := c.ep
	inval := f.Type == frSendInv
	if err != nil {
		if !c.closing {
			p.lost(c)
		}
		return false
	}
	if c.closing || !c.inRecv {
		return false
	}
	c.inRecv = false
	op, rctx := api.OpReceive, api.RMRContext(0)
	if inval {
		if r := p.invalidatable(api.RMRContext(f.RKey)); r != nil {
			r.unbind()
		}
		op, rctx = api.OpReceiveWithInvalidate, api.RMRContext(f.RKey)
	}
	// A buffer taken from an SRQ counts against the EP's watermarks
	// until its completion; a hard one exceeded breaks the connection
	// once the message is complete.
	hard := p.srq != nil && p.watermarks(1)
	p.completeRecv(&c.cur, api.DTOSuccess, uint64(f.Len), op, rctx, f.Flags&frFlagSolicited != 0)
	if hard {
		p.breakConn(c, false)
		return false
	}
	c.placed = f.Seq
	return c.ackIn(f, polled && c.rxWoke)
}

// beginWrite checks a WRITE and returns the memory its data goes to.
// ia.mu is held.
func (c *conn) beginWrite(f *frame) ([][]byte, bool) {
	p := c.ep
	if c.closing {
		return nil, false
	}
	if !c.nextSeq(f) {
		p.lost(c)
		return nil, false
	}
	rt := api.RMRTriplet{Addr: api.VAddr(f.Addr), Length: f.Len, RMRContext: api.RMRContext(f.RKey)}
	dst, ok := p.ia.mem.Remote(rt, uint64(f.Len), api.MemPrivRemoteWrite, p.pz, p)
	if !ok {
		c.refuse(f.Seq, api.DTOErrRemoteAccess)
		return nil, false
	}
	if f.Len == 0 {
		return nil, true
	}
	c.rsegs = append(c.rsegs[:0], dst)
	return c.rsegs, true
}

// endWrite acknowledges a WRITE whose data was read (err: or not).
// ia.mu is held.
func (c *conn) endWrite(f *frame, err error) bool {
	p := c.ep
	if err != nil {
		if !c.closing {
			p.lost(c)
		}
		return false
	}
	if c.closing {
		return false
	}
	c.placed = f.Seq
	return c.ackIn(f, false)
}

// onReadReq checks a READ_REQ and queues its response. ia.mu is held.
func (c *conn) onReadReq(f *frame) bool {
	p := c.ep
	if c.closing {
		return false
	}
	if !c.nextSeq(f) || c.respQueued >= c.readsIn {
		p.lost(c)
		return false
	}
	rt := api.RMRTriplet{Addr: api.VAddr(f.Addr), Length: f.RLen, RMRContext: api.RMRContext(f.RKey)}
	src, ok := p.ia.mem.Remote(rt, uint64(f.RLen), api.MemPrivRemoteRead, p.pz, p)
	if !ok {
		c.refuse(f.Seq, api.DTOErrRemoteAccess)
		return false
	}
	c.rsegs = append(c.rsegs[:0], src)
	c.enqueue(&frame{Type: frReadResp, Seq: f.Seq, Len: f.RLen}, c.rsegs)
	clear(c.rsegs)
	c.respQueued++
	c.placed = f.Seq
	return c.ackIn(f, false)
}

// beginReadResp checks a READ_RESP and returns the memory of its read.
// ia.mu is held.
func (c *conn) beginReadResp(f *frame) ([][]byte, bool) {
	p := c.ep
	if c.closing {
		return nil, false
	}
	if f.Seq == 0 || !p.acknowledge(c, f.Seq-1) {
		p.lost(c)
		return nil, false
	}
	w := p.reqs.Front()
	if w == nil || !w.sent || w.seq != f.Seq || (w.kind != reqRead && w.kind != reqReadToRMR) || f.Len != w.remote.Length {
		p.lost(c)
		return nil, false
	}
	c.rsegs = append(c.rsegs[:0], w.segs...)
	return c.rsegs, true
}

// endReadResp completes the read whose response was read (err: or not).
// ia.mu is held.
func (c *conn) endReadResp(f *frame, err error) bool {
	p := c.ep
	if err != nil {
		if !c.closing {
			p.lost(c)
		}
		return false
	}
	if c.closing {
		return false
	}
	w := p.reqs.Front()
	w.done = true
	c.inFlight--
	c.acked = f.Seq
	if f.Flags&frFlagAck != 0 {
		return c.ackIn(f, false) // (which reaps and pumps)
	}
	p.reap()
	p.pump()
	return true
}

// onAck applies an ACK frame. ia.mu is held.
func (c *conn) onAck(f *frame) bool {
	if c.closing {
		return false
	}
	return c.ackIn(f, false)
}

// ackIn applies the acknowledgement a processed frame carries, if any:
// requests it covers complete, sends its credits allow go out. A credit
// count that goes down or an ACK the stream does not allow breaks the
// connection (false). ia.mu is held.
//
// late says that the frame was a message a polling consumer is about to
// see. On a quiet connection with no request waiting to start, the
// requests the ACK covers are then marked finished but completed later
// (reapLate): after the consumer's next post has written its frame, or
// at its next poll or wait, or at the reader's quiet check. The
// consumer's answer to the message leaves first, and the completions,
// which it rarely needs before answering, cost its critical path
// nothing. Every path that counts or flushes the requests completes
// them first.
func (c *conn) ackIn(f *frame, late bool) bool {
	if f.Flags&frFlagAck == 0 {
		return true
	}
	p := c.ep
	if f.Credits < c.credits {
		p.lost(c)
		return false
	}
	if late && p.state == api.EPConnected && c.nextTx == p.reqs.Len() && c.isQuiet() {
		// Nothing waits to start: only completions are due, and they
		// can wait for the consumer's answer (reapLate).
		if !p.ackMark(c, f.Ack) {
			p.lost(c)
			return false
		}
		c.credits = f.Credits
		if !c.reapLate.Load() {
			c.reapLate.Store(true)
		}
		if testHookReapLate != nil {
			testHookReapLate(c)
		}
		return true
	}
	if !p.acknowledge(c, f.Ack) {
		p.lost(c)
		return false
	}
	c.credits = f.Credits
	p.pump()
	return true
}

// testHookReapLate, set by tests only, sees each ACK whose completions
// are left late, with its connection.
var testHookReapLate func(*conn)

// settleReap completes the requests a late ACK finished (see ackIn).
// ia.mu is held.
func (c *conn) settleReap() {
	if c.reapLate.Load() {
		c.reapLate.Store(false) // (reap clears it too, on the EP's connection)
		c.ep.reap()
	}
}

// settleOwed is settleReap for a caller without ia.mu.
func (c *conn) settleOwed() {
	if c.reapLate.Load() {
		c.ia.mu.Lock()
		c.settleReap()
		c.ia.mu.Unlock()
	}
}

// onNak fails the request a NAK names and breaks the connection. ia.mu
// is held.
func (c *conn) onNak(f *frame) bool {
	p := c.ep
	if c.closing {
		return false
	}
	if f.Seq == 0 || !p.acknowledge(c, f.Seq-1) {
		p.lost(c)
		return false
	}
	if w := p.reqs.Front(); w != nil && w.sent && w.seq == f.Seq {
		w.failed, w.status = true, api.DTOStatus(f.Status)
	}
	p.breakConn(c, true)
	return false
}

// onDisc handles the peer's DISCONNECT. ia.mu is held.
func (c *conn) onDisc() bool {
	if !c.closing {
		c.ep.peerDisconnected(c)
	}
	return false
}
