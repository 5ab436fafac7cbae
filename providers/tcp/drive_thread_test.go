//go:build linux

package tcp

import (
	"context"
	"fmt"
	"os"
	"runtime"
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
	path := fmt.Sprintf("/proc/self/task/%d/syscall", <-tid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(string(b)); len(f) > 0 && f[0] == fmt.Sprint(unix.SYS_EPOLL_PWAIT) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waiting thread never blocked in epoll_wait(2): %s reads %q", path, b)
		}
		time.Sleep(time.Millisecond)
	}
	if err := srv.ep.PostSend([]api.LMRTriplet{srv.lmr.Triplet(0, 64)}, 2, api.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Wait: %v", err)
	}
}
