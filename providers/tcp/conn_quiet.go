package tcp

import (
	"io"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godat/godat/internal/sock"
)

// quiet is a connection's quiet-mode state (see "Polling" in the package
// documentation): while consumers poll the EVDs it feeds, its socket
// leaves the runtime's poller and the pollers drive it.
type quiet struct {
	sk          *sock.Conn    // the socket once up, outside the runtime's poller; nil: c.nc is a net.Conn
	polled      atomic.Bool   // a poller tried to drive the connection since the reader last looked
	rxPolls     uint32        // frames, or parts of a payload, pollers processed (under ia.mu)
	rxPollsSeen uint32        // rxPolls at the last quiet check (under ia.mu)
	rxCalls     int           // waitFD calls in the current wait: the first is before it (reader scratch)
	busyLooks   int           // the reader's recent looks that found pollers at work (reader scratch)
	sawPolls    bool          // the current wait's looks found polls since the last (reader scratch)
	waitErr     error         // waitFD's read error (reader scratch: pollers have rxErr)
	goQuiet     bool          // waitFD found pollers at work (reader scratch)
	quietIn     time.Duration // how long until the quiet check looks again (under ia.mu)
	lookedSoon  bool          // the coming look is the soon one, after a look that found input waiting (under ia.mu)
}

// A quiet connection's reader looks whether pollers still drive it
// quietCheck after it went quiet, then twice as long after each look
// that finds them at work, up to quietMax; when they stopped, it watches
// the socket again. (Each look wakes a runtime thread, which on a small
// machine preempts the very consumer that polls; the doubling keeps
// steady polling down to a few looks a second.)
// A look that finds input waiting in the socket while pollers seem at
// work looks again quietSoon later, once, before the doubled interval.
// (Variables only so that a test can stretch them where a look must not
// race a woken goroutine for a CPU: stretchQuiet.)
var (
	quietCheck = time.Millisecond
	quietMax   = 16 * time.Millisecond
	quietSoon  = 100 * time.Microsecond
)

// enterQuiet stops watching the socket for input: pollers drive the
// connection, and the reader looks every quietCheck whether they still do.
// Called by the reader, without the receive token.
func (c *conn) enterQuiet() {
	if changed, err := c.sk.Watch(false); err == nil && changed {
		c.polled.Store(false)
		if testHookQuiet != nil {
			testHookQuiet(c, true)
		}
	}
	c.ia.mu.Lock()
	if !c.closing {
		c.quietIn, c.rxPollsSeen, c.lookedSoon = quietCheck, c.rxPolls, false
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
		testHookQuiet(c, false)
	}
}

// isQuiet reports whether the connection is in quiet mode: its socket's
// input is not watched (pollers, or a driven wait, drive it).
func (c *conn) isQuiet() bool { return c.sk != nil && !c.sk.Watching() }

// waitFD is waitRx's callback: it takes the receive token and reads
// without waiting; false (wait for the socket) if there is nothing to
// read or a poller has the stream. Once quietAfter of its looks in a row
// found pollers at work (they polled since the reader last looked, hold
// the token, or took what woke the reader) it returns true without the
// token and sets goQuiet; in quiet mode it leaves the stream alone
// (false), and the quiet check decides.
func (c *conn) waitFD(fd uintptr) bool {
	c.rxCalls++
	counted := false
	if c.sk != nil && !c.rxKick.Load() {
		if c.isQuiet() {
			return false // pollers drive the stream: wait for the quiet check
		}
		if c.polled.Load() {
			c.polled.Store(false) // (each look needs polls of its own)
			c.sawPolls = true
			counted = true
			if c.busyLook() {
				c.goQuiet = true // pollers are at work: leave the stream to them
				return true
			}
		} else if c.rxTok.Load() == 0 {
			c.busyLooks >>= 1
		}
	}
	if !c.rxTok.CompareAndSwap(0, 1) {
		// A poller has the stream. It looks at rxMissed after it lets
		// go, so data that woke us is not left unread.
		c.rxMissed.Store(1)
		if !c.rxTok.CompareAndSwap(0, 1) {
			if c.sk != nil && !c.isQuiet() && !counted && c.busyLook() {
				c.goQuiet = true
				return true
			}
			return false
		}
	}
	if c.rbStart != c.rbEnd || c.rxPayload.active {
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
		c.rbStart, c.rbEnd = 0, k
		if c.rxCalls > 1 && !counted {
			// Data woke the reader, no poller took it meanwhile, and
			// none polled since the last look: whatever they polled
			// before, they do not read the stream as it comes.
			c.busyLooks = 0
		}
	}
	return true
}

// quietAfter is how many looks in a row must find pollers at work before
// the reader goes quiet; a look that finds no poll since the last halves
// the count, and clears it if data woke the reader and no poller took it.
// A consumer that spins on its EVDs is seen at every look (when its
// reader's wake-up preempts it, the reader takes the data, but the
// consumer's polls are seen all the same). One that polls for its
// completions but otherwise spins on memory (an RDMA-write ping-pong that
// watches its landing area, as dtest -W does) is not seen when the peer's
// write comes: quiet mode would leave it in the socket until the next
// quiet check.
const quietAfter = 4

// busyLook counts a look of the reader's that found pollers at work and
// reports whether enough did (quietAfter) for it to go quiet.
func (c *conn) busyLook() bool {
	c.busyLooks++
	if c.busyLooks < quietAfter {
		return false
	}
	c.busyLooks = 0 // (quiet mode, once it ends, needs fresh evidence)
	return true
}

// markPolled records that a poller is at work, for the reader's quiet
// check.
func (c *conn) markPolled() {
	if !c.polled.Load() {
		c.polled.Store(true)
	}
}
