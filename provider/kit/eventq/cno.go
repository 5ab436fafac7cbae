package eventq

import (
	"context"
	"encoding/binary"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
)

// CNO is a consumer notification object (dat_cno_create(3DAT),
// dat_cno_wait(3DAT)): the queues attached to it trigger it, its waiters
// learn which EVD triggered, and its wait agent is called for every trigger.
//
// A trigger that finds no waiter is latched: the next Wait returns at once
// with that EVD. Several goroutines may wait; one trigger releases one of
// them. The agent runs on a goroutine the CNO starts when there is a call to
// make and that ends when there is none, so the agent is never called
// concurrently with itself and no goroutine is left behind once the CNO is
// idle; Close waits for it.
//
// A CNO made by NewFDCNO also owns a file descriptor (dat_cno_fd_create,
// DAT 2.0) that is readable while a trigger is latched: each trigger adds
// to it and collecting the trigger (Wait, Collect) empties it, so a
// consumer can wait for the CNO in poll(2), epoll(7) or select(2) beside
// descriptors of its own. Close closes it.
//
// CNO is safe for concurrent use.
type CNO struct {
	mu      sync.Mutex
	pending api.EVD       // latched trigger
	sig     chan struct{} // closed to wake all waiters; nil when none wait
	waiters int
	nullGen uint64 // bumped to release waiters with a nil EVD

	agent   api.WaitAgent
	calls   []api.EVD // agent calls still to make
	running bool
	wg      sync.WaitGroup
	closed  bool

	fd    int  // the eventfd of an FD CNO, while hasFD
	hasFD bool // false for a CNO without descriptor, and once closed
}

// NewCNO returns a CNO with the given wait agent (nil for none).
func NewCNO(agent api.WaitAgent) *CNO { return &CNO{agent: agent} }

// NewFDCNO returns a CNO with the given wait agent (nil for none) that
// owns a non-blocking, close-on-exec eventfd(2), readable while a trigger
// is latched (FD). A process out of descriptors gets
// ErrInsufficientResources.
func NewFDCNO(agent api.WaitAgent) (*CNO, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, api.Errorf(api.InsufficientResources, api.NoSubtype, "CNO file descriptor: eventfd: "+err.Error())
	}
	return &CNO{agent: agent, fd: fd, hasFD: true}, nil
}

// FD returns the CNO's file descriptor: -1 for a CNO made by NewCNO and
// once the CNO is closed. The descriptor belongs to the CNO; the consumer
// may wait on it and read it, and must not close it.
func (c *CNO) FD() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.hasFD {
		return -1
	}
	return c.fd
}

// one is what a trigger adds to the eventfd counter (a uint64 in host
// byte order).
var one = func() (b [8]byte) {
	binary.NativeEndian.PutUint64(b[:], 1)
	return b
}()

// signal makes the descriptor readable. c.mu is held. The write fails
// only when the counter is at its maximum, which leaves it readable.
func (c *CNO) signal() {
	if c.hasFD {
		_, _ = unix.Write(c.fd, one[:])
	}
}

// unsignal empties the descriptor's counter. c.mu is held. A read that
// finds it empty (the consumer read it) fails with EAGAIN, which is fine.
func (c *CNO) unsignal() {
	if c.hasFD {
		var b [8]byte
		_, _ = unix.Read(c.fd, b[:])
	}
}

// Collect takes the latched trigger without waiting (dat_cno_trigger,
// DAT 2.0): the EVD whose notification triggered the CNO last since the
// trigger was last collected, or nil if none has; the descriptor of an FD
// CNO is no longer readable afterwards.
func (c *CNO) Collect() api.EVD {
	c.mu.Lock()
	defer c.mu.Unlock()
	evd := c.pending
	c.pending = nil
	c.unsignal()
	return evd
}

// SetAgent replaces the wait agent (dat_cno_modify_agent(3DAT)); nil
// removes it. Calls already scheduled use the agent current when they run.
func (c *CNO) SetAgent(agent api.WaitAgent) {
	c.mu.Lock()
	c.agent = agent
	c.mu.Unlock()
}

// Agent returns the current wait agent.
func (c *CNO) Agent() api.WaitAgent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.agent
}

// Waiters returns the number of goroutines blocked in Wait.
func (c *CNO) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiters
}

// Trigger records that evd received a notification event: it releases a
// waiter (or latches the EVD for the next Wait) and schedules an agent call.
func (c *CNO) Trigger(evd api.EVD) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.pending = evd
	c.signal()
	c.broadcast()
	if c.agent != nil {
		c.calls = append(c.calls, evd)
		if !c.running {
			c.running = true
			c.wg.Add(1)
			go c.runAgent()
		}
	}
}

// broadcast wakes every waiter; they re-check the state. c.mu is held.
func (c *CNO) broadcast() {
	if c.sig != nil {
		close(c.sig)
		c.sig = nil
	}
}

func (c *CNO) runAgent() {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		if len(c.calls) == 0 || c.closed {
			c.calls = c.calls[:0]
			c.running = false
			c.mu.Unlock()
			return
		}
		evd := c.calls[0]
		n := copy(c.calls, c.calls[1:])
		c.calls[n] = nil
		c.calls = c.calls[:n]
		agent := c.agent
		c.mu.Unlock()
		if agent != nil {
			agent(evd)
		}
	}
}

// ReleaseWaiters wakes every current waiter with a nil EVD and no error, as
// dat_cno_wait(3DAT) requires when the last EVD feeding the CNO is freed.
func (c *CNO) ReleaseWaiters() {
	c.mu.Lock()
	if c.waiters > 0 {
		c.nullGen++
		c.broadcast()
	}
	c.mu.Unlock()
}

// Wait blocks until the CNO is triggered and returns the EVD that triggered
// it (dat_cno_wait(3DAT)). The EVD is a hint: its event may already have
// been taken. Waiters released by ReleaseWaiters or Close get (nil, nil).
// The end of ctx gives api.ContextError: ErrTimeoutExpired for a deadline,
// ErrInterruptedCall for a cancel, both wrapping ctx.Err() (the project's
// rule for every blocking call; the page calls the timeout DAT_QUEUE_EMPTY).
func (c *CNO) Wait(ctx context.Context) (api.EVD, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gen := c.nullGen
	for {
		switch {
		case c.closed || c.nullGen != gen:
			return nil, nil
		case c.pending != nil:
			evd := c.pending
			c.pending = nil
			c.unsignal()
			return evd, nil
		case ctx.Err() != nil:
			return nil, api.ContextError(ctx)
		}
		if c.sig == nil {
			c.sig = make(chan struct{})
		}
		sig := c.sig
		c.waiters++
		c.mu.Unlock()
		select {
		case <-sig:
		case <-ctx.Done():
		}
		c.mu.Lock()
		c.waiters--
	}
}

// Close releases every waiter with a nil EVD, drops scheduled agent calls,
// makes later triggers no-ops and closes the descriptor of an FD CNO. It
// does not wait for an agent call in progress; WaitIdle does. Close must
// not be called from the agent.
func (c *CNO) Close() {
	c.mu.Lock()
	c.closed = true
	c.pending = nil
	c.broadcast()
	if c.hasFD {
		_ = unix.Close(c.fd)
		c.hasFD = false
	}
	c.mu.Unlock()
}

// WaitIdle waits until no agent call is running. Call it after Close,
// without holding locks the agent may need.
func (c *CNO) WaitIdle() { c.wg.Wait() }
