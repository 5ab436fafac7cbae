package eventq

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
)

// readable reports whether fd polls readable without waiting.
func readable(t *testing.T, fd int) bool {
	t.Helper()
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	for err == unix.EINTR { // (the runtime's preemption signal interrupts it)
		n, err = unix.Poll(p, 0)
	}
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	return n == 1 && p[0].Revents&unix.POLLIN != 0
}

// TestFDCNOFollowsTheTrigger checks that an FD CNO's descriptor is
// readable exactly while a trigger is latched: a trigger makes it so,
// Collect and Wait take the trigger and reset it, and a consumer that
// reads the descriptor itself loses no later trigger.
func TestFDCNOFollowsTheTrigger(t *testing.T) {
	owner, other := &fakeEVD{}, &fakeEVD{}
	c, err := NewFDCNO(nil)
	if err != nil {
		t.Fatal(err)
	}
	fd := c.FD()
	if fd < 0 || readable(t, fd) {
		t.Fatalf("new FD CNO: descriptor %d, readable %v; want a quiet descriptor", fd, fd >= 0)
	}
	if got := c.Collect(); got != nil {
		t.Fatalf("Collect before any trigger = %v, want nil", got)
	}

	q, q2 := New(4, owner), New(4, other)
	q.SetCNO(c)
	q2.SetCNO(c)
	q.Post(dto(1), true)
	q2.Post(dto(2), true)
	if !readable(t, fd) {
		t.Fatal("descriptor not readable after a trigger")
	}
	if got := c.Collect(); got != other {
		t.Fatal("Collect did not name the EVD that triggered last")
	}
	if readable(t, fd) {
		t.Fatal("descriptor still readable after Collect")
	}
	if got := c.Collect(); got != nil {
		t.Fatalf("second Collect = %v, want nil", got)
	}

	q.Post(dto(3), true)
	if got, err := c.Wait(context.Background()); got != owner || err != nil {
		t.Fatalf("Wait = %v, %v; want the triggering EVD", got, err)
	}
	if readable(t, fd) {
		t.Fatal("descriptor still readable after Wait took the trigger")
	}

	// The consumer drains the descriptor itself: the trigger stays
	// latched, and the next one makes the descriptor readable again.
	q.Post(dto(4), true)
	var b [8]byte
	if _, err := unix.Read(fd, b[:]); err != nil {
		t.Fatalf("consumer's read: %v", err)
	}
	q.Post(dto(5), true)
	if !readable(t, fd) {
		t.Fatal("a trigger after the consumer read the descriptor left it quiet")
	}
	if got := c.Collect(); got != owner {
		t.Fatal("Collect after the consumer's read lost the trigger")
	}

	// Plain CNOs have no descriptor but collect the same way.
	p := NewCNO(nil)
	q2.SetCNO(p)
	q2.Post(dto(6), true)
	if p.FD() != -1 || p.Collect() != other || p.Collect() != nil {
		t.Fatal("a CNO without descriptor: FD or Collect wrong")
	}
	p.Close()
	p.WaitIdle()

	c.Close()
	c.WaitIdle()
	if c.FD() != -1 {
		t.Fatal("FD after Close is not -1")
	}
	if l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil && l == "anon_inode:[eventfd]" {
		t.Fatalf("descriptor %d still an eventfd after Close", fd)
	}
	q.Post(dto(7), true) // a trigger after Close writes nowhere
	if c.Collect() != nil {
		t.Fatal("a closed CNO latched a trigger")
	}
}

// TestFDCNOConcurrent triggers an FD CNO from several goroutines while
// another collects, then closes it with triggers still arriving: under
// -race nothing may race, and every trigger must be seen by some
// collection before Close (the descriptor never stays quiet while a
// trigger is latched).
func TestFDCNOConcurrent(t *testing.T) {
	c, err := NewFDCNO(nil)
	if err != nil {
		t.Fatal(err)
	}
	fd := c.FD()
	const posters, each = 4, 2000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range posters {
		q := New(4, &fakeEVD{})
		q.SetCNO(c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ev api.Event
			for k := range each {
				q.Post(dto(api.Cookie(i*each+k)), true)
				q.Dequeue(&ev)
			}
		}()
	}
	collected := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				collected <- n
				return
			default:
			}
			if readable(t, fd) && c.Collect() != nil {
				n++
			}
		}
	}()
	wg.Wait()
	close(stop)
	n := <-collected
	// After the posters are done, a latched trigger (if any) still shows.
	if got := c.Collect(); got != nil {
		n++
	} else if readable(t, fd) {
		t.Fatal("descriptor readable with no trigger latched")
	}
	if n == 0 {
		t.Fatal("no trigger was collected")
	}
	c.Close()
	c.WaitIdle()
}
