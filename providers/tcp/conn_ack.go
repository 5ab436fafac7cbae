package tcp

import (
	"sync/atomic"
	"time"
)

// acks is a connection's state for the ACK and credit updates it owes the
// peer: most ride on the headers of frames going that way anyway
// (carryAck); the rest go out in ACK frames of their own, at once, after
// a delay, or left to pollers. Fields are guarded by ia.mu unless noted.
type acks struct {
	credTimer *time.Timer // sends a credit update or ACK that nothing carried
	credArmed bool
	rxWoke    bool          // the reader completed a receive with a notification
	rxWrite   bool          // the reader placed an RDMA write (its consumer may watch the memory)
	rxBulk    uint64        // payload bytes received since the last quick ACK (quickAck)
	qaFn      func(uintptr) // quickAck's callback (made once: no allocation)
	ackAt     atomic.Int64  // an ACK is left to pollers: ackOwed, or since when (UnixNano); 0: none
	ackPoll   atomic.Int32  // polls since ackAt was last looked at
}

// ackDue reports whether an ACK (or a credit update) is owed.
func (c *conn) ackDue() bool { return c.placed != c.ackSent || c.recvPosted != c.credSent }

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
