package connreq

import (
	"sync"
	"time"
)

// Timeout is an active EP's connection timeout (dat_ep_connect(3DAT)) for
// a provider that keeps its own clock: Start arms it, Stop disarms it,
// and Wait waits for a callback that was already running. It is guarded
// by the lock given to Start, which the provider holds around Start and
// Stop. The zero value is disarmed.
type Timeout struct {
	t  *time.Timer
	wg sync.WaitGroup
}

// Start arms the timeout, replacing one armed before: after d, expire
// runs with mu held, unless Stop or a later Start came first. mu is held.
func (x *Timeout) Start(d time.Duration, mu sync.Locker, expire func()) {
	x.Stop()
	x.wg.Add(1)
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		defer x.wg.Done()
		mu.Lock()
		defer mu.Unlock()
		if x.t != t {
			return // stopped, or a later attempt's
		}
		x.t = nil
		expire()
	})
	x.t = t
}

// Stop disarms the timeout; a callback already running finds it
// disarmed and does nothing. The lock given to Start is held.
func (x *Timeout) Stop() {
	if x.t == nil {
		return
	}
	if x.t.Stop() {
		x.wg.Done()
	}
	x.t = nil
}

// Wait returns once no callback runs. It is called without the lock, when
// the EP is gone, so that no goroutine of the timeout outlives it.
func (x *Timeout) Wait() { x.wg.Wait() }
