package connreq

import (
	"sync"
	"testing"
	"time"
)

// A timeout fires once, under the lock, unless stopped or re-armed first;
// Wait returns once its callback has run.
func TestTimeout(t *testing.T) {
	var mu sync.Mutex
	var x Timeout
	fired := make(chan string, 4)
	mu.Lock()
	x.Start(time.Hour, &mu, func() { fired <- "stopped" })
	x.Stop()
	x.Start(time.Hour, &mu, func() { fired <- "replaced" })
	x.Start(time.Millisecond, &mu, func() {
		if mu.TryLock() {
			mu.Unlock()
			fired <- "without the lock"
			return
		}
		fired <- "last"
	})
	mu.Unlock()
	x.Wait()
	if got := <-fired; got != "last" {
		t.Fatalf("the timeout that fired was %q, want the last one armed", got)
	}
	select {
	case got := <-fired:
		t.Fatalf("another timeout fired too: %q", got)
	case <-time.After(20 * time.Millisecond):
	}
	mu.Lock()
	x.Stop() // (disarmed already: a no-op)
	mu.Unlock()
}
