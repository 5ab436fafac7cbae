package host

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/godat/godat/api"
)

// crashed handles the end of a plugin process that the host did not ask
// for: the process is reaped, every call on its objects fails from now on
// with an error that says so, and each of its IAs gets the catastrophic
// asynchronous event. Opening one of its IAs again starts a new process.
func (c *runningPlugin) crashed(cause error) {
	why := fmt.Sprintf("plugin %q (pid %d) exited unexpectedly", c.prov.e.Name, c.pid)
	if c.corrupt.Load() {
		why = fmt.Sprintf("plugin %q (pid %d) broke the shared-memory protocol and was stopped", c.prov.e.Name, c.pid)
	} else if cause != nil {
		why += " (" + cause.Error() + ")"
	}
	c.deadErr.Store(api.Errorf(api.InternalError, api.NoSubtype, why+"; close its IAs and open them again"))
	c.dead.Store(true)
	c.endProcess()
	// The completions the plugin wrote before it died come first.
	c.cqBell.Close()
	<-c.pumpDone
	c.ctl.close()
	c.seqMu.Lock()
	c.seqCond.Broadcast()
	c.seqMu.Unlock()
	c.prov.lost(c, why)

	c.mu.Lock()
	ias := append([]*proxyIA(nil), c.ias...)
	var eps []*proxyEP
	for _, o := range c.objs {
		if e, ok := o.(*proxyEP); ok {
			eps = append(eps, e)
		}
	}
	c.mu.Unlock()
	for _, ia := range ias {
		ev := api.Event{Number: api.AsyncIACatastrophicEvent, Async: api.AsyncErrorData{Object: ia, Reason: api.ReasonIACatastrophic}}
		ia.async.post(&ev, true)
	}
	for _, e := range eps {
		e.flush()
	}
	close(c.crashDone)
}

// lostDuring reports whether a call failed because the plugin process
// died; it returns once the host has dealt with the crash, so that what
// was outstanding has been flushed.
func (c *runningPlugin) lostDuring(err error) bool {
	if c.stopping.Load() {
		return false
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.Canceled:
	default:
		return false
	}
	select {
	case <-c.crashDone:
		return true
	case <-time.After(crashWait):
		return c.dead.Load()
	}
}

// crashWait bounds how long a call that failed on a broken connection
// waits for the host to notice the crash.
const crashWait = 10 * time.Second
