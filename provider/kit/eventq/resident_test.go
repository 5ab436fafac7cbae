//go:build linux

package eventq

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
)

// residentPages counts the pages of b's memory that are in core and the
// pages it spans (mincore(2)).
func residentPages(t *testing.T, b []api.Event) (in, all int) {
	t.Helper()
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	end := start + uintptr(len(b))*unsafe.Sizeof(api.Event{})
	start &^= page - 1
	end = (end + page - 1) &^ (page - 1)
	vec := make([]byte, (end-start)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(unsafe.SliceData(vec)))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	for _, v := range vec {
		if v&1 != 0 {
			in++
		}
	}
	return in, len(vec)
}

// TestRingResident checks that a new or resized queue's ring is in core
// before any event is posted. The rings (16 and 32 MiB) are big enough
// for the Go heap to take their memory fresh from the kernel, which is
// not in core until something touches it: without the touch, the resized
// one at least is found out of core, and the posts would take the page
// faults, on the data path.
func TestRingResident(t *testing.T) {
	const qlen = 1 << 16 // 64 Ki events of 256 bytes
	q := New(qlen, nil)
	if in, all := residentPages(t, q.buf); in != all {
		t.Errorf("New(%d): %d of the ring's %d pages in core, want all", qlen, in, all)
	}
	if err := q.Resize(2 * qlen); err != nil {
		t.Fatal(err)
	}
	if in, all := residentPages(t, q.buf); in != all {
		t.Errorf("Resize(%d): %d of the ring's %d pages in core, want all", 2*qlen, in, all)
	}
}
