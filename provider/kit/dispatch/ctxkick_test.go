package dispatch

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestCtxKick checks that the end of the watched context kicks once, that
// watching the same context again registers nothing new (no allocation),
// and that a dropped registration never kicks.
func TestCtxKick(t *testing.T) {
	var kicks atomic.Int32
	done := make(chan struct{}, 4)
	var w CtxKick
	w.Init(func() { kicks.Add(1); done <- struct{}{} })

	ctx, cancel := context.WithCancel(context.Background())
	w.Watch(ctx)
	if n := testing.AllocsPerRun(100, func() { w.Watch(ctx) }); n != 0 {
		t.Fatalf("watching the same context again allocates %v times", n)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the end of the watched context did not kick")
	}

	other, cancelOther := context.WithCancel(context.Background())
	w.Watch(other)
	third, cancelThird := context.WithCancel(context.Background())
	defer cancelThird()
	w.Watch(third) // drops other's registration
	cancelOther()
	w.Stop()
	cancelThird()
	time.Sleep(20 * time.Millisecond) // (a kick would run on its own goroutine)
	if n := kicks.Load(); n != 1 {
		t.Fatalf("%d kicks, want 1: a dropped registration kicked", n)
	}

	w.Watch(context.Background()) // never ends: nothing to register
	if w.stop != nil {
		t.Fatal("a context that never ends was registered")
	}
}
