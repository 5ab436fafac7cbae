package tcp

import (
	"io"
	"net"
	"sync"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/ring"
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

	// Writer scratch: only the writer goroutine uses these.
	wh    [maxBatchSegs][frameLen]byte // copies of the headers of one batch
	whdr  [2][frameLen]byte            // ACK and DISCONNECT
	wvec  [][]byte
	wbufs net.Buffers

	// Reader scratch: only the reader goroutine uses these.
	rhdr    [frameLen]byte
	rsegs   [][]byte
	scratch [512]byte
	hsbuf   [hsLen + maxPrivateData]byte
}

// requester is the sending side's sequence and credit state.
type requester struct {
	txSeq     uint64 // last sequence number assigned
	acked     uint64 // cumulative ACK received
	nextTx    int    // index in ep.reqs of the first request not yet started
	sendsSent uint64 // SEND frames sent, each using one credit
	credits   uint64 // receive credits the peer granted
	inFlight  int    // RDMA reads awaiting their response
}

// responder is the receiving side's state.
type responder struct {
	rxSeq      uint64 // last request sequence number seen
	placed     uint64 // last request placed: what ACK reports
	ackSent    uint64
	recvPosted uint64 // receive credits granted
	credSent   uint64
	respQueued int // READ_RESP frames queued
	inRecv     bool
	cur        recvWR // the receive being filled (cookie and flags)
}

func newConn(i *ia) *conn {
	c := &conn{ia: i, wdone: make(chan struct{})}
	c.cond = sync.NewCond(&i.mu)
	c.wvec = make([][]byte, 0, maxBatchSegs+maxIOV+2)
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

// begin enters the data transfer phase and starts the writer. ia.mu is
// held; p is CONNECTED.
func (c *conn) begin(p *ep) {
	c.up = true
	c.recvPosted = uint64(p.recvs.Len())
	c.goRun(c.writeLoop)
	p.pump()
}

// wake tells the writer there is something to send. ia.mu is held.
func (c *conn) wake() { c.cond.Signal() }

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
// several per writev, straight from their memory, then an ACK if one is
// owed once the queue is empty.
func (c *conn) writeLoop() {
	mu := &c.ia.mu
	mu.Lock()
	for {
		for c.tx.Len() == 0 && !c.ackDue() && !c.closing {
			c.cond.Wait()
		}
		if c.closing && c.drop {
			for c.tx.Len() > 0 {
				clear(c.tx.Front().segs)
				c.tx.PopFront()
			}
		}
		if c.closing && c.tx.Len() == 0 {
			disc, hard := c.disc, c.hard
			c.disc = false
			mu.Unlock()
			if disc {
				encodeFrame(c.whdr[0][:], &frame{Type: frDisc})
				_, _ = c.nc.Write(c.whdr[0][:])
			}
			mu.Lock()
			hard = hard || c.hard
			c.wexited = true
			mu.Unlock()
			if hard {
				_ = c.nc.Close()
			} else if tc, ok := c.nc.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			} else {
				_ = c.nc.Close()
			}
			close(c.wdone)
			return
		}
		c.wvec = c.wvec[:0]
		nsegs, nitems := 0, 0
		for c.tx.Len() > 0 && nsegs < maxBatchSegs {
			t := c.tx.Front()
			h := &c.wh[nitems]
			*h = t.hdr
			nitems++
			c.wvec = append(c.wvec, h[:])
			for _, s := range t.segs {
				if len(s) > 0 {
					c.wvec = append(c.wvec, s)
				}
			}
			nsegs += 1 + len(t.segs)
			if t.readResp {
				c.respQueued--
			}
			clear(t.segs)
			c.tx.PopFront()
		}
		if c.tx.Len() == 0 && c.ackDue() && !c.closing {
			c.ackSent, c.credSent = c.placed, c.recvPosted
			encodeFrame(c.whdr[1][:], &frame{Type: frAck, Seq: c.placed, Addr: c.recvPosted})
			c.wvec = append(c.wvec, c.whdr[1][:])
		}
		// The batch refers to header copies and to the DTOs' memory only:
		// the ring's slots may be reused while it is written.
		mu.Unlock()
		err := c.writeVec()
		mu.Lock()
		if err != nil && !c.closing {
			c.ep.lost(c)
		}
	}
}

// writeVec writes c.wvec with one vectored write.
func (c *conn) writeVec() error {
	c.wbufs = net.Buffers(c.wvec)
	_, err := c.wbufs.WriteTo(c.nc)
	clear(c.wvec)
	return err
}

// readFull reads exactly len(b) bytes.
func (c *conn) readFull(b []byte) error {
	_, err := io.ReadFull(c.nc, b)
	return err
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

// readLoop is the connection's reader in the data transfer phase.
func (c *conn) readLoop() {
	defer c.drain()
	for {
		if err := c.readFull(c.rhdr[:]); err != nil {
			c.readFailed(err)
			return
		}
		f, err := decodeFrame(c.rhdr[:], &c.lim)
		if err != nil {
			c.violation()
			return
		}
		if !c.handle(&f) {
			return
		}
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

// handle processes one frame; false ends the reader.
func (c *conn) handle(f *frame) bool {
	switch f.Type {
	case frSend, frSendInv:
		return c.onSend(f)
	case frWrite:
		return c.onWrite(f)
	case frReadReq:
		return c.onReadReq(f)
	case frReadResp:
		return c.onReadResp(f)
	case frAck:
		return c.onAck(f)
	case frNak:
		return c.onNak(f)
	case frDisc:
		return c.onDisc()
	}
	c.violation()
	return false
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

func (c *conn) onSend(f *frame) bool {
	mu := &c.ia.mu
	mu.Lock()
	p := c.ep
	if c.closing {
		mu.Unlock()
		return false
	}
	if !c.nextSeq(f) {
		p.lost(c)
		mu.Unlock()
		return false
	}
	var rw *recvWR
	if s := p.srq; s != nil {
		for s.recvs.Len() == 0 && !c.closing {
			c.ia.srqCond.Wait()
		}
		if c.closing {
			mu.Unlock()
			return false
		}
		rw = s.take()
	} else {
		if p.recvs.Len() == 0 {
			p.lost(c) // the peer sent without a credit
			mu.Unlock()
			return false
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
		mu.Unlock()
		return false
	}
	c.inRecv = true
	mu.Unlock()
	err := c.readInto(dst, uint64(f.Len))
	clear(dst)
	mu.Lock()
	defer mu.Unlock()
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
	p.completeRecv(&c.cur, api.DTOSuccess, uint64(f.Len), op, rctx, f.Flags&frFlagSolicited != 0)
	c.placed = f.Seq
	c.wake()
	return true
}

func (c *conn) onWrite(f *frame) bool {
	mu := &c.ia.mu
	mu.Lock()
	p := c.ep
	if c.closing {
		mu.Unlock()
		return false
	}
	if !c.nextSeq(f) {
		p.lost(c)
		mu.Unlock()
		return false
	}
	rt := api.RMRTriplet{Addr: api.VAddr(f.Addr), Length: f.Len, RMRContext: api.RMRContext(f.RKey)}
	dst, ok := p.ia.mem.Remote(rt, uint64(f.Len), api.MemPrivRemoteWrite, p.pz, p)
	if !ok {
		c.refuse(f.Seq, api.DTOErrRemoteAccess)
		mu.Unlock()
		return false
	}
	mu.Unlock()
	var err error
	if f.Len > 0 {
		err = c.readFull(dst)
	}
	mu.Lock()
	defer mu.Unlock()
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
	c.wake()
	return true
}

func (c *conn) onReadReq(f *frame) bool {
	c.ia.mu.Lock()
	defer c.ia.mu.Unlock()
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
	return true
}

func (c *conn) onReadResp(f *frame) bool {
	mu := &c.ia.mu
	mu.Lock()
	p := c.ep
	if c.closing {
		mu.Unlock()
		return false
	}
	if f.Seq == 0 || !p.acknowledge(c, f.Seq-1) {
		p.lost(c)
		mu.Unlock()
		return false
	}
	w := p.reqs.Front()
	if w == nil || !w.sent || w.seq != f.Seq || (w.kind != reqRead && w.kind != reqReadToRMR) || f.Len != w.remote.Length {
		p.lost(c)
		mu.Unlock()
		return false
	}
	dst := append(c.rsegs[:0], w.segs...)
	mu.Unlock()
	err := c.readInto(dst, uint64(f.Len))
	clear(dst)
	c.rsegs = dst[:0]
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		if !c.closing {
			p.lost(c)
		}
		return false
	}
	if c.closing {
		return false
	}
	w = p.reqs.Front()
	w.done = true
	c.inFlight--
	c.acked = f.Seq
	p.reap()
	p.pump()
	return true
}

func (c *conn) onAck(f *frame) bool {
	c.ia.mu.Lock()
	defer c.ia.mu.Unlock()
	p := c.ep
	if c.closing {
		return false
	}
	if f.Addr < c.credits || !p.acknowledge(c, f.Seq) {
		p.lost(c)
		return false
	}
	c.credits = f.Addr
	p.pump()
	return true
}

func (c *conn) onNak(f *frame) bool {
	c.ia.mu.Lock()
	defer c.ia.mu.Unlock()
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

func (c *conn) onDisc() bool {
	c.ia.mu.Lock()
	defer c.ia.mu.Unlock()
	if !c.closing {
		c.ep.peerDisconnected(c)
	}
	return false
}
