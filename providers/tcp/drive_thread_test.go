//go:build linux

package tcp

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
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
	awaitEpollWait(t, fmt.Sprintf("/proc/self/task/%d/syscall", <-tid))
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
	task := fmt.Sprintf("/proc/self/task/%d/", <-tid)
	awaitEpollWait(t, task+"syscall")
	before := switches(t, task+"status")
	time.Sleep(300 * time.Millisecond)
	if after := switches(t, task+"status"); after != before {
		t.Errorf("the idle waiter's thread woke %d times in 300 ms", after-before)
	}
	if err := srv.ep.PostSend([]api.LMRTriplet{srv.lmr.Triplet(0, 64)}, 2, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// awaitEpollWait waits until the thread whose /proc syscall file is path
// blocks in epoll_wait(2).
func awaitEpollWait(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(string(b)); len(f) > 0 && f[0] == fmt.Sprint(unix.SYS_EPOLL_PWAIT) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waiting thread never blocked in epoll_wait(2): %s reads %q", path, b)
		}
		time.Sleep(time.Millisecond)
	}
}

// switches returns the voluntary context switches that the /proc status
// file at path counts for its thread.
func switches(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "voluntary_ctxt_switches:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no voluntary_ctxt_switches in %s", path)
	return 0
}
