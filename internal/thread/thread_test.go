package thread

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A thread blocked in nanosleep is seen there, and each sleep counts.
func TestAwaitSyscallAndSleeps(t *testing.T) {
	tid := make(chan int)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- unix.Gettid()
		<-release
		for range 3 {
			ts := unix.NsecToTimespec(int64(20 * time.Millisecond))
			unix.Nanosleep(&ts, nil)
		}
		tid <- 0
	}()
	id := <-tid
	before := Sleeps(t, id)
	close(release)
	AwaitSyscall(t, id, unix.SYS_NANOSLEEP)
	after := Sleeps(t, id)
	<-tid
	if after <= before {
		t.Errorf("sleeps %d then %d, want more", before, after)
	}
}
