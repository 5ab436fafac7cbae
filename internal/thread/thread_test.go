package thread

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A thread blocked in nanosleep is seen there, each sleep counts, and a
// thread that sleeps on for longer than the check stays asleep.
func TestAwaitSyscallAndSleeps(t *testing.T) {
	release := make(chan struct{})
	tid, done := Go(func() {
		<-release
		for _, d := range []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 400 * time.Millisecond} {
			ts := unix.NsecToTimespec(int64(d))
			unix.Nanosleep(&ts, nil)
		}
	})
	before := Sleeps(t, tid)
	close(release)
	AwaitSyscall(t, tid, unix.SYS_NANOSLEEP)
	if after := Sleeps(t, tid); after <= before {
		t.Errorf("sleeps %d then %d, want more", before, after)
	}
	time.Sleep(60 * time.Millisecond) // into the long sleep
	StaysAsleep(t, tid, unix.SYS_NANOSLEEP, 100*time.Millisecond)
	<-done
}
