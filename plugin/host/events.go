package host

import (
	"context"
	"fmt"
	"syscall"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
	pb "github.com/godat/godat/plugin/proto"
)

// startEvents starts the completion pump and the liveness watch: an
// Events call the plugin holds open for its whole life, whose end without
// the host asking means the process died.
func (c *runningPlugin) startEvents() error {
	ctx, cancel := context.WithCancel(bg)
	stream, err := c.rpc.Watch(ctx, &pb.WatchReq{})
	if err != nil {
		cancel()
		return fmt.Errorf("the plugin refused the Watch stream: %w", err)
	}
	c.evCancel, c.watchDone, c.pumpDone = cancel, make(chan struct{}), make(chan struct{})
	go c.watch(stream)
	go c.pump()
	return nil
}

func (c *runningPlugin) watch(stream pb.Provider_WatchClient) {
	defer close(c.watchDone)
	_, err := stream.Recv()
	if !c.stopping.Load() {
		c.crashed(err)
	}
}

// pump moves the plugin's events from the completion ring onto the host's
// queues, sleeping on the doorbell when the ring is empty, until the
// doorbell is closed.
func (c *runningPlugin) pump() {
	defer close(c.pumpDone)
	r := c.ringsP.Load()
	for {
		c.consumeCQ()
		if err := wire.SleepOn(r.U32(wire.OffCQSleeping), r.CQPending, c.cqBell); err != nil {
			c.consumeCQ()
			return
		}
	}
}

// consumeCQ delivers every record on the completion ring. The pump calls
// it, and so does a Dequeue that finds its queue empty while records wait,
// so that a polling consumer needs no system call and no other goroutine.
func (c *runningPlugin) consumeCQ() {
	c.cqMu.Lock()
	r := c.ringsP.Load()
	if r == nil || c.ringsGone {
		c.cqMu.Unlock()
		return
	}
	var last uint64
	for {
		ok, err := r.Get(&c.rec)
		if err != nil {
			// A plugin that corrupts the ring has failed: end it, and
			// the crash handling takes over.
			c.corrupt.Store(true)
			syscall.Kill(c.pid, syscall.SIGKILL)
			break
		}
		if !ok {
			break
		}
		last = c.rec.Seq
		c.deliver(&c.rec)
	}
	c.rec = wire.Event{}
	c.cqMu.Unlock()
	if last != 0 {
		c.seqMu.Lock()
		if last > c.processed {
			c.processed = last
		}
		c.seqCond.Broadcast()
		c.seqMu.Unlock()
	}
}

// deliver queues one event of the plugin on the host EVD it names.
// c.cqMu is held.
func (c *runningPlugin) deliver(e *wire.Event) {
	evd, ok := c.lookup(e.EVD).(*proxyEVD)
	if !ok {
		return // the EVD was freed meanwhile
	}
	if e.Notify {
		evd.Q.Notify()
		return
	}
	ia := evd.ia
	ev := api.Event{Number: e.Number}
	switch ev.Number.Stream() {
	case api.EVDDTO:
		ep := c.proxyEPOf(e.EP, ia)
		ev.DTO = api.DTOCompletionData{Cookie: api.Cookie(e.Cookie), Status: e.Status,
			Length: e.Length, Op: e.Op, RMRContext: e.RMRContext}
		if ep != nil {
			ev.DTO.EP = ep
			ep.completed(&ev.DTO)
		}
	case api.EVDRMRBind:
		ev.RMRBind = api.RMRBindCompletionData{Cookie: api.Cookie(e.Cookie), Status: e.Status}
		if m, ok := c.lookup(e.RMR).(*proxyRMR); ok {
			ev.RMRBind.RMR = m
			m.bindDone(ev.RMRBind.Cookie)
		}
	case api.EVDCR:
		cr := c.crOf(e.CR, ia)
		ev.CR = api.CRArrivalData{PSP: proxyOf[api.PSP](c, e.PSP), RSP: proxyOf[api.RSP](c, e.RSP), ConnQual: api.ConnQual(e.ConnQual),
			CR: cr, Truncated: e.Truncated}
		if e.HasAddr {
			ev.CR.LocalAddr = wire.Addr{Net: e.Network, Str: e.Addr}
		}
		if !evd.Q.TryPost(&ev, false) {
			if r, ok := cr.(*proxyCR); ok {
				c.refuse(r)
			}
		}
		return
	case api.EVDConnection:
		ev.Conn = api.ConnectionData{PrivateData: e.PrivateData}
		if ep := c.proxyEPOf(e.EP, ia); ep != nil {
			ev.Conn.EP = ep
			ep.connEvent(ev.Number)
		}
	case api.EVDAsync:
		ev.Async = api.AsyncErrorData{Object: c.objectOf(e.Object, e.ObjectType, ia), Reason: int(e.Reason)}
	}
	evd.post(&ev, false)
}

// refuse refuses a connection request whose host queue was full when it
// arrived. A provider refuses a request that finds its service point's EVD
// full; the plugin's EVD had room because software events live only in
// the host's queue, so the host applies that rule here, through the
// plugin's provider (Refuse), instead of letting the request overflow the
// queue and its requester wait for a timeout. The call runs on a
// goroutine of its own, since deliver may run inside a consumer's Dequeue
// holding the completion ring; kill waits for it.
func (c *runningPlugin) refuse(r *proxyCR) {
	c.refusals.Go(func() { _ = r.Refuse() })
}

// cqWaiting reports records on the completion ring that nobody has read.
func (c *runningPlugin) cqWaiting() bool {
	r := c.ringsP.Load()
	return r != nil && r.CQPending()
}
