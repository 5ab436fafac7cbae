package main

import (
	"errors"
	"sync/atomic"
	"time"
)

// The server's limits (see the package documentation, "Server").
const (
	// defaultMaxSessions is -max-sessions: DAT sessions served at once,
	// and raw baseline connections open at once.
	defaultMaxSessions = 4
	// maxMaxSessions bounds -max-sessions.
	maxMaxSessions = 1024
	// defaultIdleTimeout is -idle-timeout: a session or raw connection
	// whose peer sends nothing for this long is dropped.
	defaultIdleTimeout = time.Minute
	// busyWait is how long a connection request that finds every session
	// taken waits for one before it is rejected. A client that connects
	// again right after its session ended (the validated sequence's
	// stale-context check, a benchmark after a check) would otherwise
	// race the server's freeing of that session.
	busyWait = 2 * time.Second
)

// errIdle ends a session or raw connection whose peer went quiet.
var errIdle = errors.New("idle")

// idleWatch calls a function once the work it watches has made no progress
// for a whole timeout. The work calls tick whenever its peer does something
// (a request, a message arrives); a tick is one atomic add, cheap enough for
// a benchmark's per-message path, and the watch's own goroutine looks at the
// count idleChecks times per timeout, so it fires between one timeout and
// 1+1/idleChecks timeouts after the last tick. A nil *idleWatch watches
// nothing.
type idleWatch struct {
	ticks atomic.Uint64
	quit  chan struct{} // closed by stop
	done  chan struct{} // closed when the goroutine has returned
}

// idleChecks is how many times per timeout an idleWatch looks for progress.
const idleChecks = 4

// watchIdle starts watching for a timeout d, after which it calls fire
// (once, from its own goroutine). d <= 0 returns nil: no watch.
func watchIdle(d time.Duration, fire func()) *idleWatch {
	if d <= 0 {
		return nil
	}
	w := &idleWatch{quit: make(chan struct{}), done: make(chan struct{})}
	go w.run(max(d/idleChecks, 1), fire)
	return w
}

func (w *idleWatch) run(period time.Duration, fire func()) {
	defer close(w.done)
	t := time.NewTicker(period)
	defer t.Stop()
	last, quiet := w.ticks.Load(), 0
	for {
		select {
		case <-w.quit:
			return
		case <-t.C:
		}
		if n := w.ticks.Load(); n != last {
			last, quiet = n, 0
			continue
		}
		if quiet++; quiet >= idleChecks {
			fire()
			return
		}
	}
}

// tick records progress.
func (w *idleWatch) tick() {
	if w != nil {
		w.ticks.Add(1)
	}
}

// stop ends the watch and waits for its goroutine: fire is not running and
// will not be called once stop returns. Call it once.
func (w *idleWatch) stop() {
	if w == nil {
		return
	}
	close(w.quit)
	<-w.done
}
