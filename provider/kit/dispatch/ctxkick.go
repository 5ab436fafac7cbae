package dispatch

import "context"

// CtxKick makes the end of a blocked waiter's context wake it: a driven
// wait that blocks outside Go's channels (in a system call, say) cannot
// select on ctx.Done. The registration (context.AfterFunc, which
// allocates) is kept for the next wait with the same context, so that a
// consumer waiting again and again with one context allocates nothing.
// The zero value is ready once Init has set the kick; it is not safe for
// concurrent use: the waiter (one at a time) calls Watch, its owner Stop.
type CtxKick struct {
	kick func()
	ctx  context.Context
	stop func() bool
}

// Init sets the function that wakes the waiter; it may run on any
// goroutine, at any time until Stop.
func (w *CtxKick) Init(kick func()) { w.kick = kick }

// Watch arranges for the end of ctx to call the kick, unless it is
// arranged already; the registration for an earlier context is dropped.
func (w *CtxKick) Watch(ctx context.Context) {
	if ctx == w.ctx {
		return
	}
	w.Stop()
	w.ctx = ctx
	if ctx.Done() != nil {
		w.stop = context.AfterFunc(ctx, w.kick)
	}
}

// Stop drops the registration, if any: the kick is not called for it
// afterwards (unless it had started already).
func (w *CtxKick) Stop() {
	if w.stop != nil {
		w.stop()
		w.stop = nil
	}
	w.ctx = nil
}
