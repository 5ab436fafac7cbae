//go:build linux

package tcp

import (
	"context"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/thread"
)

// A waiter that drives its connections blocks in epoll_wait(2) in its own
// thread, so that the message it waits for wakes that thread and no
// other. A goroutine locked to its thread (a C program's, through the C
// ABI) that blocked in the runtime's poller instead would sleep in a
// futex, to be handed over by the thread that polled the network: two
// wake-ups per message.
func TestDrivenWaitBlocksInItsThread(t *testing.T) {
	cli, srv := benchPair(t)
	if err := cli.ep.PostRecv([]api.LMRTriplet{cli.lmr.Triplet(0, 64)}, 1, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	tid := make(chan int, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- unix.Gettid()
		var ev api.Event
		_, err := cli.recv.Wait(context.Background(), 1, &ev)
		done <- err
	}()
	thread.AwaitSyscall(t, <-tid, unix.SYS_EPOLL_PWAIT)
	if err := srv.ep.PostSend([]api.LMRTriplet{srv.lmr.Triplet(0, 64)}, 2, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// An idle driven waiter's thread sleeps until something happens: it does
// not wake on a timer. (It did, every 50 ms, to catch a close it might
// have missed; each time, on its way back to sleep, it held its P in the
// system call until the runtime took it back, stalling every other
// goroutine of a process with one P: a third of a raw TCP stream's speed
// in dattest's server.)
func TestDrivenWaitSleepsWhileIdle(t *testing.T) {
	cli, srv := benchPair(t)
	if err := cli.ep.PostRecv([]api.LMRTriplet{cli.lmr.Triplet(0, 64)}, 1, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	tid := make(chan int, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- unix.Gettid()
		var ev api.Event
		_, err := cli.recv.Wait(context.Background(), 1, &ev)
		done <- err
	}()
	id := <-tid
	thread.AwaitSyscall(t, id, unix.SYS_EPOLL_PWAIT)
	before := thread.Sleeps(t, id)
	time.Sleep(300 * time.Millisecond)
	if after := thread.Sleeps(t, id); after != before {
		t.Errorf("the idle waiter's thread woke %d times in 300 ms", after-before)
	}
	if err := srv.ep.PostSend([]api.LMRTriplet{srv.lmr.Triplet(0, 64)}, 2, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Wait: %v", err)
	}
}
