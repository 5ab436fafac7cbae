package tcp

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godat/godat/api"
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

// maxHandshakes bounds the accepted connections of an IA that have not
// yet sent their HELLO: a listener closes what it accepts beyond that
// at once. Each holds a descriptor and a goroutine for up to hsTimeout,
// so without a bound anyone who can reach the port could open
// connections that say nothing until the process runs out of
// descriptors. (A variable for the tests.)
var maxHandshakes = 1024

var past = time.Unix(1, 0)

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

	cancel         func() // active side: aborts the dial
	aborted        bool   // the attempt was abandoned locally
	up             bool   // the data transfer phase has begun
	closing        bool   // no more frames are processed; the writer is finishing
	discardQueued  bool   // the closing writer discards queued frames
	sendDisconnect bool   // the closing writer sends DISCONNECT
	fullClose      bool   // the closing writer closes the socket instead of half-closing it
	live           int    // goroutines running

	// Negotiated limits.
	lim       limits // what this side accepts
	maxMsg    uint32 // largest message this side sends
	maxRDMA   uint32 // largest RDMA transfer this side asks for
	readsOut  int    // RDMA reads this side has in flight at most
	readsIn   int    // RDMA read responses this side queues at most
	peerSRQ   bool   // the peer takes receives from an SRQ: sends need no credit
	requester        // the state of this side's requests
	responder        // the state of the peer's requests

	sender   // the socket's send side (conn_write.go)
	acks     // ACK and credit updates nothing else carried (conn_ack.go)
	receiver // the socket's receive side (conn_read.go)
	quiet    // the socket unwatched while consumers poll (conn_quiet.go)
}

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
	c := &conn{ia: i}
	c.wdone = make(chan struct{})
	c.cond = sync.NewCond(&i.mu)
	c.wvec0 = make([][]byte, 0, maxBatchSegs+providerLimits.MaxIOV+2)
	c.wvec = c.wvec0
	c.wiov = make([]syscall.Iovec, 0, cap(c.wvec0))
	c.rsegs = make([][]byte, 0, providerLimits.MaxIOV)
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
	c.readsOut = max(1, min(a.MaxRDMAReadOut, min(int(peer.ReadsIn), providerLimits.MaxRDMAReadPerEP)))
	c.readsIn = max(1, a.MaxRDMAReadIn)
	c.peerSRQ = peer.Flags&hsFlagSRQ != 0
}

// hello builds this side's handshake message for EP p. ia.mu is held.
func helloFor(p *ep, typ uint16, pdLen int) hsMsg {
	m := hsMsg{Version: wireVersion, Type: typ, PDLen: uint16(pdLen),
		MaxMsg: p.Attr.MaxMessageSize, MaxRDMA: p.Attr.MaxRDMASize,
		ReadsIn: uint32(max(1, p.Attr.MaxRDMAReadIn)), ReadsOut: uint32(max(1, p.Attr.MaxRDMAReadOut)),
		PortQual: uint64(p.LocalPort), QOS: uint32(p.Attr.QOS)}
	if p.SRQ != nil {
		m.Flags |= hsFlagSRQ
	}
	return m
}

// establish ends the handshake of p's connection, either side's: the
// socket loses the handshake's deadline, the attributes are negotiated,
// p is CONNECTED and the connection begins (pd goes with ESTABLISHED);
// then this goroutine, having released ia.mu, which it held, becomes the
// connection's reader.
func (c *conn) establish(p *ep, pd []byte) {
	_ = c.nc.SetDeadline(time.Time{})
	c.negotiate(&p.Attr, &c.hs)
	p.State = api.EPConnected
	c.begin(p, pd)
	c.ia.mu.Unlock()
	c.readLoop()
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
	if tc, ok := c.nc.(*net.TCPConn); ok && p.SRQ == nil {
		// Out of the runtime's poller, so that input can go unwatched
		// while pollers drive the connection. On failure the
		// connection stays on the net.TCPConn, always watched.
		if s, err := sock.FromTCP(tc); err == nil {
			s.Hold() // (a new Conn): the pollers' use (readNB), ended by drain
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
	if c.rc != nil && p.SRQ == nil {
		// An EP on an SRQ is not polled: its reader may have to wait
		// for an SRQ buffer, which a poller must not do.
		c.pollable = true
		p.RecvEVD.addFeed(c)
		if p.RequestEVD != p.RecvEVD {
			p.RequestEVD.addFeed(c)
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

// shutdown ends the data transfer phase. discardQueued discards queued
// frames, sendDisconnect sends DISCONNECT after them, fullClose closes the
// socket once they are written (rather than half-closing it), kick
// interrupts the reader (when another goroutine than the reader ends the
// connection). ia.mu is held.
func (c *conn) shutdown(discardQueued, sendDisconnect, fullClose, kick bool) {
	if !c.up {
		c.abort()
		return
	}
	if !c.closing {
		c.closing, c.discardQueued, c.sendDisconnect = true, discardQueued, sendDisconnect
		_ = c.nc.SetWriteDeadline(time.Now().Add(drainTimeout))
		if c.credTimer != nil {
			c.credTimer.Stop()
			c.credArmed = false
		}
		c.rxClosed.Store(true)
		if c.pollable {
			c.ep.RecvEVD.dropFeed(c)
			c.ep.RequestEVD.dropFeed(c)
		}
	}
	if fullClose && !c.fullClose {
		c.fullClose = true
		_ = c.nc.SetWriteDeadline(time.Now().Add(finalTimeout))
		if c.wexited {
			_ = c.nc.Close()
		}
	}
	if kick || fullClose {
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
