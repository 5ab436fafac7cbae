package sock

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The system calls on non-blocking descriptors that godat's polling and
// waiting paths make. They are raw: a call that cannot block need not tell
// the scheduler, which costs time and, when the runtime's monitor thread
// sleeps, wakes it (a futex round trip per message, measured). They
// return the errno, 0 for success.

// ReadNB reads into b from non-blocking descriptor fd.
func ReadNB(fd uintptr, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// WriteNB writes b to non-blocking descriptor fd.
func WriteNB(fd uintptr, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// maxIOV is the most segments one writev takes (IOV_MAX on Linux).
const maxIOV = 1024

// WritevNB writes the non-empty slices of bufs (at most maxIOV of them,
// and at most limit bytes if limit > 0) to non-blocking descriptor fd
// with one writev, using *iov as scratch for the vector (it grows as
// needed and is cleared after the call, so that it keeps no memory
// alive). Advance drops what was written.
func WritevNB(fd uintptr, bufs [][]byte, iov *[]syscall.Iovec, limit int) (int, syscall.Errno) {
	v := (*iov)[:0]
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		if len(v) == maxIOV {
			break
		}
		if limit > 0 {
			if limit <= len(b) {
				b = b[:limit]
				limit = -1 // this segment is the last
			} else {
				limit -= len(b)
			}
		}
		e := syscall.Iovec{Base: &b[0]}
		e.SetLen(len(b))
		v = append(v, e)
		if limit < 0 {
			break
		}
	}
	*iov = v
	switch len(v) {
	case 0:
		return 0, 0
	case 1:
		// One buffer: write costs less than writev (no vector to
		// copy in and walk).
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(v[0].Base)), uintptr(v[0].Len))
		clear(v)
		if e != 0 {
			return 0, e
		}
		return int(n), 0
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&v[0])), uintptr(len(v)))
	clear(v)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// Advance drops the first n bytes of bufs and returns what is left; the
// slices it drops entirely are set to nil in bufs' backing array (they
// keep no memory alive), and a partly written one is resliced.
func Advance(bufs [][]byte, n int) [][]byte {
	for len(bufs) > 0 && n >= len(bufs[0]) {
		n -= len(bufs[0])
		bufs[0] = nil
		bufs = bufs[1:]
	}
	if len(bufs) > 0 {
		bufs[0] = bufs[0][n:]
	}
	return bufs
}

// EpollWaitNB collects the events ready in epoll instance ep, without
// waiting (a zero timeout).
func EpollWaitNB(ep uintptr, evs []unix.EpollEvent) (int, syscall.Errno) {
	if len(evs) == 0 {
		return 0, 0
	}
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, ep, uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}
