//go:build linux

package tcp

import (
	"context"
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
	waitOnThread(t, func(tid int) { thread.AwaitSyscall(t, tid, unix.SYS_EPOLL_PWAIT) })
}

// An idle driven waiter's thread sleeps until something happens: it does
// not wake on a timer. (It did, every 50 ms, to catch a close it might
// have missed; each time, on its way back to sleep, it held its P in the
// system call until the runtime took it back, stalling every other
// goroutine of a process with one P: a third of a raw TCP stream's speed
// in dattest's server.)
func TestDrivenWaitSleepsWhileIdle(t *testing.T) {
	waitOnThread(t, func(tid int) { thread.StaysAsleep(t, tid, unix.SYS_EPOLL_PWAIT, 300*time.Millisecond) })
}

// waitOnThread blocks a driven Wait for a message on a goroutine locked to
// its own thread, runs check with that thread's id, then sends the
// message and checks that the Wait returns.
func waitOnThread(t *testing.T, check func(tid int)) {
	t.Helper()
	cli, srv := benchPair(t)
	if err := cli.ep.PostRecv([]api.LMRTriplet{cli.lmr.Triplet(0, 64)}, 1, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	var err error
	tid, done := thread.Go(func() {
		var ev api.Event
		_, err = cli.recv.Wait(context.Background(), 1, &ev)
	})
	check(tid)
	if err := srv.ep.PostSend([]api.LMRTriplet{srv.lmr.Triplet(0, 64)}, 2, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	<-done
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
}
