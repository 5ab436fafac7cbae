// Package thread tells a test what one thread of its process is doing:
// which system call it is blocked in, and how often it has gone to sleep.
// It reads /proc/self/task, so it works on Linux only, as godat does.
package thread

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Go runs f on a new goroutine locked to its own thread and returns that
// thread's id; done is closed once f has returned.
func Go(f func()) (tid int, done <-chan struct{}) {
	ids := make(chan int, 1)
	d := make(chan struct{})
	go func() {
		defer close(d)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ids <- unix.Gettid()
		f()
	}()
	return <-ids, d
}

// StaysAsleep waits for thread tid to block in the system call numbered
// nr, then fails the test if the thread wakes within d.
func StaysAsleep(t testing.TB, tid int, nr uintptr, d time.Duration) {
	t.Helper()
	AwaitSyscall(t, tid, nr)
	before := Sleeps(t, tid)
	time.Sleep(d)
	if after := Sleeps(t, tid); after != before {
		t.Errorf("thread %d, blocked in system call %d, woke %d times in %v", tid, nr, after-before, d)
	}
}

// AwaitSyscall waits up to 10 s for thread tid to block in the system
// call numbered nr, and fails the test if it does not.
func AwaitSyscall(t testing.TB, tid int, nr uintptr) {
	t.Helper()
	path := fmt.Sprintf("/proc/self/task/%d/syscall", tid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(string(b)); len(f) > 0 && f[0] == strconv.FormatUint(uint64(nr), 10) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d never blocked in system call %d: %s reads %q", tid, nr, path, b)
		}
		time.Sleep(time.Millisecond)
	}
}

// Sleeps returns how many times thread tid has gone to sleep: its
// voluntary context switches.
func Sleeps(t testing.TB, tid int) int {
	t.Helper()
	path := fmt.Sprintf("/proc/self/task/%d/status", tid)
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
