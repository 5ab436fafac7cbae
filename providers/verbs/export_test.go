//go:build verbs && cgo

package verbs

import "github.com/godat/godat/api"

// CQNotes reports how many completion notifications of the CQ of e, an
// EVD of an IA opened through Provider.Open (not the registry), the
// watcher and the driven waits have taken.
func CQNotes(e api.EVD) (watcher, waiter uint64) {
	c := e.(*evd).cq
	return c.byWatcher.Load(), c.byWaiter.Load()
}

// WaitParked reports whether a driven Wait on e (as for CQNotes) is
// blocked on its CQ's completion channel.
func WaitParked(e api.EVD) bool {
	c := e.(*evd).cq
	c.chMu.Lock()
	defer c.chMu.Unlock()
	return c.parked
}

// WatcherOwns reports whether the watcher reads the completion channel
// of e's CQ (as for CQNotes), rather than the driven waits.
func WatcherOwns(e api.EVD) bool {
	c := e.(*evd).cq
	c.chMu.Lock()
	defer c.chMu.Unlock()
	return c.owner == ownWatcher
}

// WatcherArmed reports whether the watcher reads the completion channel
// of e's CQ and has armed the CQ since it got the channel back: a
// completion now reaches it as a notification. (Until it has, one that
// comes is found by the watcher's drain, without a notification.)
func WatcherArmed(e api.EVD) bool {
	c := e.(*evd).cq
	c.chMu.Lock()
	defer c.chMu.Unlock()
	return c.owner == ownWatcher && c.armed.Load()
}

// PollLooks reports how many looks at e's CQ (as for CQNotes) left the
// CQ unarmed to a consumer at work.
func PollLooks(e api.EVD) uint64 { return e.(*evd).cq.looks.Load() }

// ErrnoText is errnoText, for the test of the errno names in errors.
var ErrnoText = errnoText
