package datnet

import (
	"sync"
	"time"
)

// deadline is one direction's deadline: a channel that is closed while the
// deadline has passed. Blocked calls select on it, so moving the deadline
// into the past wakes them at once and moving it into the future lets
// them sleep on. Setting it may allocate; waiting does not.
type deadline struct {
	expire func() // called when the deadline passes (it wakes a goroutine in EVD.Wait)
	mu     sync.Mutex
	timer  *time.Timer
	gen    uint64 // counts sets, so that a timer of an earlier set does nothing
	ch     chan struct{}
}

func newDeadline() *deadline { return &deadline{ch: make(chan struct{})} }

// set moves the deadline to t; the zero time means none.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.gen++
	expired := isClosed(d.ch)
	if t.IsZero() {
		if expired {
			d.ch = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if expired {
			d.ch = make(chan struct{})
		}
		gen := d.gen
		d.timer = time.AfterFunc(dur, func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			if d.gen == gen && !isClosed(d.ch) {
				close(d.ch)
				d.expired()
			}
		})
		return
	}
	if !expired {
		close(d.ch)
		d.expired()
	}
}

func (d *deadline) expired() {
	if d.expire != nil {
		d.expire()
	}
}

// wait returns the channel that is closed when the deadline passes.
func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ch
}

// stop releases the timer (Close).
func (d *deadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
