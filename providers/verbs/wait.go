//go:build verbs && cgo

package verbs

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
)

// Who reads a CQ's completion channel (cq.owner).
const (
	ownWatcher = iota // the watcher goroutine (cq.watch)
	ownWaiters        // the EVD's driven waits (driveWait)
)

// waitHold is how long the driven waits keep the completion channel after
// the last of them: a consumer that waits now and then, a stream's writer
// waiting for room, say, would otherwise pay the hand-over to the watcher
// and back (several goroutine wake-ups) on each wait. The price is that
// completions nobody waits for or dequeues stay in the CQ up to two
// periods.
const waitHold = 20 * time.Millisecond

// longAgo is a read deadline in the past: setting it wakes the watcher
// blocked reading the channel's descriptor (take).
var longAgo = time.Unix(1, 0)

// driveWait is Wait on an EVD with a CQ: the waiting goroutine reads the
// completion channel itself, so that a completion wakes it and nothing
// else. It arms the CQ, drains it, and blocks in poll(2), in its own
// thread, on the channel's descriptor and a kick eventfd; woken by a
// notification, it takes the event (and acknowledges it), drains the CQ
// into the queue and returns what it waited for, leaving the CQ unarmed
// until the next wait or the watcher arms it. A kick (an event posted to
// the queue some other way, the end of ctx, SetUnwaitable, Free or IA
// close) wakes it through the eventfd. (Blocking in the thread rather
// than in Go's network poller spares a C caller, whose goroutine is
// locked to its thread, a second wake-up: a goroutine parked in the
// poller is woken by whichever thread polls the network, and then handed
// over to its own thread.)
//
// The channel is read by one goroutine at a time: the first driven wait
// takes it from the watcher (take), and the waits keep it until no wait
// has begun for a waitHold period, or until the EVD feeds a CNO, when
// the watcher gets it back (giveBack) and arms the CQ again.
func (e *evd) driveWait(ctx context.Context, threshold int, ev *api.Event) (int, error) {
	c := e.cq
	defer c.waitEnded(e)
	if done, n, err := e.Q.BeginWait(threshold, ev); done {
		return n, err
	}
	if !c.take() {
		// The watcher has ended: the CQ is being destroyed (the queue
		// is closed) or its channel failed (reported).
		if done, n, err := e.Q.Check(ev); done {
			return n, err
		}
		e.Q.EndWait()
		return e.Q.Wait(ctx, threshold, ev)
	}
	c.watchCtx(ctx)
	for {
		e.arm() // (and drains)
		c.setParked(true)
		if done, n, err := e.Q.Check(ev); done {
			c.setParked(false)
			return n, err
		}
		if ctx.Err() != nil {
			c.setParked(false)
			return e.Q.EndWait(), api.ContextError(ctx)
		}
		c.got, c.failed = false, 0
		err := c.rc.Control(c.blockFn)
		c.setParked(false)
		switch {
		case err != nil || c.stopped():
			// The descriptor is closed, or about to be: the CQ is
			// being destroyed, after its queue was closed.
			if done, n, err := e.Q.Check(ev); done {
				return n, err
			}
			return e.Q.EndWait(), api.Errorf(api.Abort, api.NoSubtype, "EVD destroyed")
		case c.failed != 0:
			e.ia.async.PostAsync(api.AsyncProviderInternalErrorEvent, e, api.ReasonEVDOther)
			c.dead.Store(true)
			e.Q.EndWait()
			return e.Q.Wait(ctx, threshold, ev)
		case c.got:
			c.byWaiter.Add(1)
			c.armMu.Lock()
			c.armed.Store(false) // a notification disarms the CQ
			c.armMu.Unlock()
			e.drain(false)
			if done, n, err := e.Q.Check(ev); done {
				return n, err
			}
		}
	}
}

// blockCB is the driven waiter's block, under the channel file's
// RawConn.Control (fd is its descriptor, valid meanwhile): poll(2) on it
// and the kick eventfd until one is readable; then it takes one
// notification, if there is one, and acknowledges it. A kick that came
// before the block leaves the eventfd readable, so it is not lost; the
// eventfd stays open while the waiter is here (destroy leaves its closing
// to the waiter then), so the block needs no timeout: an idle waiter's
// thread sleeps until something happens (the tcp provider's driven wait
// says why that matters).
func (c *cq) blockCB(fd uintptr) {
	c.chMu.Lock()
	if c.closing {
		c.chMu.Unlock()
		return
	}
	c.inside = true
	kfd := c.kickFD
	c.chMu.Unlock()
	defer func() {
		c.chMu.Lock()
		c.inside = false
		if c.closing {
			c.closeKick()
		}
		c.chMu.Unlock()
	}()
	c.pfds[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	c.pfds[1] = unix.PollFd{Fd: int32(kfd), Events: unix.POLLIN}
	for {
		n, err := unix.Poll(c.pfds[:], -1)
		if err == unix.EINTR || err == nil && n == 0 {
			continue
		}
		if err != nil {
			c.failed = C.int(err.(syscall.Errno))
			return
		}
		break
	}
	if c.pfds[1].Revents != 0 {
		var b [8]byte
		_, _ = unix.Read(kfd, b[:])
	}
	if c.pfds[0].Revents != 0 {
		switch r := C.gd_cq_event(c.ch); {
		case r < 0:
			c.failed = -r
		case r > 0:
			c.got = true
		}
	}
}

// closeKick closes the kick eventfd. chMu is held and closing is set.
func (c *cq) closeKick() {
	if c.kickFD >= 0 {
		unix.Close(c.kickFD)
		c.kickFD = -1
	}
}

// stopped reports whether destroy has begun.
func (c *cq) stopped() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// take makes the channel the driven waits' own, asking the watcher for
// it if it has it, and reports false if the watcher has ended instead.
// The caller is the EVD's waiter.
func (c *cq) take() bool {
	c.chMu.Lock()
	if c.owner == ownWaiters {
		c.chMu.Unlock()
		return true
	}
	if !c.evicting {
		c.evicting = true
		c.setDeadline()
	}
	c.chMu.Unlock()
	select {
	case <-c.handed:
		return true
	case <-c.done:
		return false
	}
}

// yield is the watcher's side of take: when a waiter asks for the
// channel it hands it over and waits until it gets it back (giveBack),
// then arms the CQ again, since the waits may have left it unarmed. It
// reports false when the CQ is being destroyed meanwhile.
func (c *cq) yield(e *evd) bool {
	c.chMu.Lock()
	if !c.evicting {
		c.clearDeadline() // (nothing is due: clear what an earlier take left)
		c.chMu.Unlock()
		return true
	}
	c.evicting = false
	c.owner = ownWaiters
	c.waitersOwn.Store(true)
	c.clearDeadline()
	c.chMu.Unlock()
	c.handed <- struct{}{}
	select {
	case <-c.resume:
	case <-c.stop:
		return false
	}
	e.settle()
	return true
}

// waitEnded notes the end of a Wait on the EVD, whether it blocked or
// found its event queued (e.waiting counts it until then: lookBack
// leaves the channel to a wait in progress and counts on its end to look
// again). The channel goes back to the watcher at once if the EVD feeds
// a CNO (only the watcher triggers it), else once a waitHold period
// passes without a wait (lookBack): until then, completions that come
// while nobody waits or dequeues stay in the CQ.
func (c *cq) waitEnded(e *evd) {
	c.chMu.Lock()
	defer c.chMu.Unlock()
	// Under chMu, so that ModifyCNO sees either this wait or its end.
	e.waiting.Add(-1)
	if c.owner != ownWaiters {
		return
	}
	if e.cnoFed.Load() {
		c.giveBack()
		return
	}
	c.waited = true
	if !c.backSet {
		c.backSet = true
		c.back.Reset(waitHold)
	}
}

// lookBack gives the channel back to the watcher if no driven wait is in
// progress and none ended since the last look.
func (c *cq) lookBack(e *evd) {
	c.chMu.Lock()
	defer c.chMu.Unlock()
	c.backSet = false
	switch {
	case c.owner != ownWaiters || c.closing:
	case e.waiting.Load() > 0:
		// Its end sets the timer again.
	case c.waited:
		c.waited = false
		c.backSet = true
		c.back.Reset(waitHold)
	default:
		c.giveBack()
	}
}

// cnoAttached gives the channel back to the watcher if no wait is in
// progress (else the wait's end does), so that the CNO hears of the
// next completion.
func (c *cq) cnoAttached(e *evd) {
	c.chMu.Lock()
	defer c.chMu.Unlock()
	if c.owner == ownWaiters && e.waiting.Load() == 0 {
		c.giveBack()
	}
}

// giveBack makes the channel the watcher's again. chMu is held.
func (c *cq) giveBack() {
	c.owner = ownWatcher
	c.waitersOwn.Store(false)
	select {
	case c.resume <- struct{}{}:
	default:
	}
}

// kick wakes the driven waiter if it is blocked on the channel (or about
// to be). The queue calls it with its lock held.
func (c *cq) kick() {
	c.chMu.Lock()
	if c.parked && !c.closing {
		c.parked = false
		c.ring()
	}
	c.chMu.Unlock()
}

// ring writes the kick eventfd. chMu is held, and the eventfd is open
// (closing is set before it is closed).
func (c *cq) ring() {
	one := [8]byte{1}
	_, _ = unix.Write(c.kickFD, one[:])
}

// setParked records that the driven waiter is about to block (on), or
// that it no longer is.
func (c *cq) setParked(on bool) {
	c.chMu.Lock()
	c.parked = on
	c.chMu.Unlock()
}

// setDeadline wakes the watcher out of its read of the channel. chMu is
// held.
func (c *cq) setDeadline() {
	if !c.past {
		c.past = true
		_ = c.file.SetReadDeadline(longAgo) // (fails only once closed)
	}
}

// clearDeadline lets the watcher's next read of the channel block. chMu
// is held.
func (c *cq) clearDeadline() {
	if c.past {
		c.past = false
		_ = c.file.SetReadDeadline(time.Time{})
	}
}

// watchCtx makes the end of ctx kick the waiter (dispatch.CtxKick),
// unless the CQ is being destroyed.
func (c *cq) watchCtx(ctx context.Context) {
	c.chMu.Lock()
	defer c.chMu.Unlock()
	if !c.closing {
		c.ctxKick.Watch(ctx)
	}
}
