package plugin

import (
	"fmt"

	"github.com/godat/godat/api"
)

// crashed handles the end of a plugin process that the host did not ask
// for: the process is reaped, every call on its objects fails from now on
// with an error that says so, and each of its IAs gets the catastrophic
// asynchronous event. Opening one of its IAs again starts a new process.
func (c *conn) crashed(cause error) {
	c.client.Kill() // reaps the process
	why := fmt.Sprintf("plugin %q (pid %d) exited unexpectedly", c.prov.e.Name, c.pid)
	if cause != nil {
		why += " (" + cause.Error() + ")"
	}
	c.deadErr.Store(api.Errorf(api.InternalError, api.NoSubtype, why+"; close its IAs and open them again"))
	c.dead.Store(true)
	c.ctl.close()
	c.seqMu.Lock()
	c.seqCond.Broadcast()
	c.seqMu.Unlock()
	c.prov.lost(c, why)

	c.mu.Lock()
	ias := append([]*hIA(nil), c.ias...)
	c.mu.Unlock()
	for _, ia := range ias {
		ev := api.Event{Number: api.AsyncIACatastrophicEvent, Async: api.AsyncErrorData{Object: ia, Reason: api.ReasonIACatastrophic}}
		ia.async.post(&ev, true)
	}
}
