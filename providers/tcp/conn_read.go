package tcp

import (
	"errors"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godat/godat/internal/sock"
)

// rxBufLen is the reader's read-ahead buffer: a frame header and a small
// payload arrive with one read system call. Payload bytes beyond it are
// read straight into their destination.
const rxBufLen = 16 << 10

// receiver is a connection's receive side. Its scratch belongs to the
// goroutine that holds rxTok (see "Polling" in the package
// documentation): the reader goroutine, or a consumer polling an EVD the
// connection feeds.
type receiver struct {
	rhdr           [frameLen]byte
	rsegs          [][]byte
	scratch        [512]byte
	hsbuf          [hsLen + maxPrivateData]byte
	rb             [rxBufLen]byte // read-ahead: rb[rbStart:rbEnd] is read and not yet consumed
	rbStart, rbEnd int

	pollable  bool               // pollers may drive the receive side (set by begin)
	rxFn      func(uintptr) bool // waitRx's callback (made once: no allocation)
	pollDirFn func(uintptr)      // readNB's read on a net.TCPConn
	rxN       int
	rxErr     error
	rxDst     []byte
	rxPayload payload
	rxTok     atomic.Int32  // 1 while a goroutine consumes the stream
	rxBusy    atomic.Uint32 // polls that found the token taken (yieldToHolder)
	rxInFrame atomic.Bool   // the reader reads inside a frame, token held, and may wait in the netpoller
	rxMissed  atomic.Int32  // the reader found data while a poller held the token
	rxKick    atomic.Bool   // a poller left the end of the stream to the reader: pollers keep off
	rxClosed  atomic.Bool   // the connection is closing: pollers keep off
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
	if c.directRest || c.tx.Len() > 0 {
		c.cond.Signal()
	}
	c.ia.mu.Unlock()
}

// readFull reads exactly len(b) bytes: what the read-ahead buffer holds,
// then from the socket, straight into b for a large remainder, else
// through the buffer (one read for this and the frames that follow).
func (c *conn) readFull(b []byte) error {
	n := copy(b, c.rb[c.rbStart:c.rbEnd])
	c.rbStart += n
	b = b[n:]
	if len(b) > 0 && c.isQuiet() {
		c.handBack() // the reader is about to wait inside a frame
	}
	if len(b) > 0 && c.pollable {
		c.rxInFrame.Store(true)
		if h := testHookInFrame.Load(); h != nil {
			(*h)(c)
		}
		defer c.rxInFrame.Store(false)
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
		c.rbStart, c.rbEnd = m, k
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
	if c.fullClose {
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
	if c.sk != nil {
		// The reader holds the receive token for good: no poller reads
		// the socket any more, and the descriptor may close.
		c.sk.Release()
	}
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
	// A poller is at work if it is in the middle of a poll (it has the
	// receive token: the reader has not) or of a write (a long one may
	// span a look), or if it polled since the last look, unless input
	// waits that no poll since has read any of: then the pollers come
	// only between messages (one that spins on memory for the next
	// message, say), and the reader must take it. The writer goroutine's
	// write is no poller's: it may be waiting for room that the peer's
	// reader makes, while that reader is kept quiet the same way by a
	// writer waiting for this one: both ends would stall.
	polled := c.polled.Swap(false)
	busy := c.rxTok.Load() != 0 || c.wbusy && !c.wblock
	pending := -1 // bytes waiting in the socket; -1: not asked yet
	if polled && !busy && c.isQuiet() {
		pending = c.sk.Pending()
		busy = c.rxPolls != c.rxPollsSeen || pending == 0
	}
	c.rxPollsSeen = c.rxPolls
	c.settleReap()
	if !kick && c.isQuiet() && busy {
		// Pollers still drive the connection: look again later, and
		// send an ACK they left waiting too long. Input waiting gets the
		// soon look (quietSoon): pollers that read the stream take it by
		// then, and one that stopped to watch memory would otherwise
		// leave it for a whole doubled interval.
		if pending < 0 {
			pending = c.sk.Pending()
		}
		next := quietSoon
		if pending == 0 || c.lookedSoon {
			c.quietIn = min(2*c.quietIn, quietMax)
			next = c.quietIn
		}
		c.lookedSoon = next == quietSoon
		_ = c.nc.SetReadDeadline(time.Now().Add(next))
		if testHookLook != nil {
			testHookLook(c, pending > 0, next)
		}
		if at := c.ackAt.Load(); at != 0 && (at == ackOwed || time.Now().UnixNano()-at >= int64(credDelay)) && c.ackDue() {
			c.checkAck()
		}
		return true
	}
	// Pollers stopped, a waiter already ended quiet mode, or a poller
	// left the end of the stream to the reader: the reader watches the
	// socket again, the writer finishes what they left unwritten, and
	// they send what they left owed.
	wasQuiet := c.isQuiet()
	if testHookStall != nil && wasQuiet && c.sk.Pending() > 0 {
		testHookStall(c)
	}
	c.watchOn()
	// The deadline goes with quiet mode, before checkAck: its write
	// releases ia.mu, and a driven Wait may make the connection quiet
	// again meanwhile, with a deadline of its own that must stand.
	_ = c.nc.SetReadDeadline(time.Time{})
	if c.directRest || c.tx.Len() > 0 {
		if testHookRestLate != nil && wasQuiet {
			testHookRestLate(c)
		}
		c.cond.Signal()
	}
	if c.ackAt.Load() != 0 && c.ackDue() {
		c.checkAck()
	}
	return true
}

// checkAck sends, at a quiet check, an ACK the pollers left owed. ia.mu
// is held.
func (c *conn) checkAck() {
	if testHookCheckAck != nil {
		testHookCheckAck()
	}
	c.flush(true)
}

// Set by tests only: testHookQuiet sees connections enter (true) and
// leave (false) quiet mode; testHookCheckAck sees a quiet check send an
// ACK that nobody else did; testHookStall sees a quiet check end quiet
// mode on a connection whose input waited for it; testHookLook sees a
// quiet check that keeps the connection quiet, whether input waited, and
// when it looks next; testHookRestLate sees a quiet check that ends quiet
// mode find writing that pollers left undone (the rest of a write, or
// queued frames).
var (
	testHookQuiet    func(c *conn, entered bool)
	testHookCheckAck func()
	testHookStall    func(c *conn)
	testHookLook     func(c *conn, pending bool, next time.Duration)
	testHookRestLate func(c *conn)
)

// waitRx waits until there is something to read, and reads it into the
// read-ahead buffer, or, with something buffered or a payload unfinished,
// until the stream is the reader's again. The reader holds the receive
// token on entry and on return; while it waits in the netpoller or in
// quiet mode it does not, and a polling consumer may take the stream
// meanwhile.
func (c *conn) waitRx() error {
	held := true
	for {
		c.waitErr, c.rxCalls, c.goQuiet, c.sawPolls = nil, 0, false, false
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
		if c.rbStart != c.rbEnd || c.rxPayload.active {
			return nil
		}
	}
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
// directly; a net.TCPConn through its RawConn. The caller holds the
// receive token, so the socket's descriptor is open: the connection
// holds it (begin) until drain, whose reader has the token from then on.
func (c *conn) readNB(b []byte) (int, error) {
	if c.sk != nil {
		return c.sk.ReadHeld(b)
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
		if c.pollable && (c.rbStart == c.rbEnd && !c.rxPayload.active || c.sk != nil && c.polled.Load()) {
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
		if c.rxPayload.active {
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
	if polled {
		c.rxPolls++ // (for the quiet check, which holds ia.mu too)
	}
	var ok bool
	if resume {
		ok = c.continuePayload(polled)
	} else {
		ok = c.handle(&f, polled)
	}
	if c.rxWoke && !polled && ok && c.rbStart == c.rbEnd && c.ackDue() && c.tx.Len() == 0 {
		// A receive completed with a notification: its consumer
		// may answer at once, and its frames would carry the ACK.
		// Let it run first rather than write the ACK alone now.
		mu.Unlock()
		runtime.Gosched()
		mu.Lock()
	}
	ack := c.rbStart == c.rbEnd
	if (polled || c.sawPolls) && (c.rxWoke || c.rxWrite && c.placed == c.ackSent+1) && ack && c.ackDue() && c.tx.Len() == 0 {
		// The same: the polling consumer (who read the frame, or
		// polled before the reader woke for it) is about to see the
		// receive, or the bytes of an RDMA write it watches for,
		// and may answer; the ACK waits for its frames, for
		// credDelay at most. (A peer that waits for the write's
		// completion before it writes again, as in an RDMA-write
		// ping-pong, then has it with the answer, which its own
		// poll reads: neither side's reader needs to wake. A
		// second write before the answer means the peer streams:
		// its ACK goes at once.)
		c.deferAck()
		ack = false
	}
	c.rxWoke, c.rxWrite = false, false
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
		c.yieldToHolder()
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

// busyYield is how often a poller that finds the receive token taken
// makes way for its holder: every busyYield-th time.
const busyYield = 64

// yieldToHolder is poll's answer to a taken token. The holder may be the
// reader, inside a frame, parked in the netpoller for the rest of it. When
// every P runs a spinning consumer (GOMAXPROCS=1, say), nothing polls the
// network until the runtime's monitor does, every 10 ms, and
// runtime.Gosched does not either (the scheduler takes the yielding
// goroutine back from its queue before it looks): the reader would read a
// socketful per 10 ms, and a 1 MiB poll stream crawled at a tenth of its
// speed. So every busyYield-th failed poll, if the reader is inside a
// frame and input waits in the socket, wakes the reader with a read
// deadline in the past (its read sees a kick, and reads on), then yields.
func (c *conn) yieldToHolder() {
	if c.rxBusy.Add(1)%busyYield != 0 {
		return
	}
	if c.rxInFrame.Load() && !c.rxClosed.Load() && c.sk != nil && c.sk.Pending() > 0 {
		// (Not once the connection closes: the deadline would cut
		// drain's short.)
		_ = c.nc.SetReadDeadline(past)
	}
	runtime.Gosched()
}

// testHookInFrame, set by tests only, sees the reader begin a read inside
// a frame that may wait, holding the receive token. (Atomic: a test sets
// it while readers run.)
var testHookInFrame atomic.Pointer[func(c *conn)]

// pollStream reads without waiting and processes what it can: whole
// headers, and as much of a payload as is here (the rest is read by the
// next holder of the token); it reports whether the reader must take
// over. The caller holds the receive token.
func (c *conn) pollStream() bool {
	drained := false // the last read did not fill the buffer: the socket was empty
	for {
		if c.rxPayload.active {
			if !c.step(true, true) {
				return false // the connection ends; its reader was kicked
			}
			if c.rxPayload.active {
				return false // the rest of the payload is not here yet
			}
		}
		for c.rbEnd-c.rbStart >= frameLen {
			c.rbStart += copy(c.rhdr[:], c.rb[c.rbStart:c.rbEnd])
			if !c.step(true, false) {
				return false
			}
			if c.rxPayload.active {
				return false
			}
		}
		if c.rbStart == c.rbEnd {
			c.rbStart, c.rbEnd = 0, 0
		} else if c.rbStart > 0 {
			c.rbEnd = copy(c.rb[:], c.rb[c.rbStart:c.rbEnd])
			c.rbStart = 0
		}
		if drained {
			// Another read now would most likely find nothing (a
			// system call on the consumer's critical path for
			// nothing); the next poll reads what comes.
			return false
		}
		space := len(c.rb) - c.rbEnd
		k, e := c.readNB(c.rb[c.rbEnd:])
		switch {
		case e == syscall.EAGAIN || e == syscall.EINTR:
			// Part of a header may stay buffered: its rest wakes the
			// reader, or the next poll reads it.
			return false
		case e != nil || k == 0:
			return true // the reader sees the error or EOF for itself
		}
		c.rbEnd += k
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
