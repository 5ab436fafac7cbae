package sock

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The system calls on non-blocking descriptors that godat's polling and
// waiting paths make. They are raw: a call that cannot block need not tell
// the scheduler, which costs time and, when the runtime's monitor thread
// sleeps, wakes it (a futex round trip per message). They return the
// errno, 0 for success.
//
// The socket calls here are recvfrom(2), sendto(2) and sendmsg(2) rather
// than read(2), write(2) and writev(2): the socket calls go straight to
// the socket layer, where the file calls first pass through the file
// layer (descriptor position, permission hooks, an iterator over the
// buffers), a cost a consumer spinning on an empty socket pays on every
// turn (docs/performance.md has the numbers). ReadNB and WriteNB stay plain
// read and write for the raw-TCP baselines, which mirror the peers'
// rawtcp tool.

// ReadNB reads into b from non-blocking descriptor fd with read(2).
func ReadNB(fd uintptr, b []byte) (int, syscall.Errno) {
	return rawBuf(syscall.SYS_READ, fd, b, 0)
}

// RecvNB reads into b from socket fd with recvfrom(2), without waiting
// (MSG_DONTWAIT).
func RecvNB(fd uintptr, b []byte) (int, syscall.Errno) {
	return rawBuf(syscall.SYS_RECVFROM, fd, b, unix.MSG_DONTWAIT)
}

// WriteNB writes b to non-blocking descriptor fd with write(2).
func WriteNB(fd uintptr, b []byte) (int, syscall.Errno) {
	return rawBuf(syscall.SYS_WRITE, fd, b, 0)
}

// rawBuf makes system call trap with descriptor fd, buf's address and
// length, and a4 (flags, or a timeout), and returns the call's count or
// its errno. With buf empty it makes no call. read(2) and write(2) take
// three arguments and ignore the rest, so one six-argument form serves
// every call here.
func rawBuf[T any](trap, fd uintptr, buf []T, a4 uintptr) (int, syscall.Errno) {
	if len(buf) == 0 {
		return 0, 0
	}
	n, _, e := syscall.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), a4, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// maxIOV is the most buffers one sendmsg takes (IOV_MAX on Linux).
const maxIOV = 1024

// WritevNB writes the non-empty slices of bufs (at most maxIOV of them,
// and at most limit bytes if limit > 0) to non-blocking stream socket fd,
// using *iov as scratch for the vector (it grows as needed and is cleared
// after the call, so that it keeps no memory alive). Advance drops what
// was written.
//
// A slice of bigSeg bytes or more is written mostly by a system call of
// its own (see bigSeg): the short slices before it go first, with one
// sendmsg that also carries the big slice's first bytes, up to leadLen
// in all, so that they leave in one packet; then the rest of it, with a
// sendto; then the slices after it in the same way, for as long as the
// descriptor takes everything it is given. A batch of short slices is
// still one system call. The count is what was written; an error is
// returned only when nothing was.
func WritevNB(fd uintptr, bufs [][]byte, iov *[]syscall.Iovec, limit int) (int, syscall.Errno) {
	if len(bufs) == 1 && len(bufs[0]) > 0 {
		// One buffer (a batch of small frames staged in one): a
		// sendto, as the loop below would make, without the vector.
		b := bufs[0]
		if limit > 0 && limit < len(b) {
			b = b[:limit]
		}
		n, e := sendtoNB(fd, &b[0], len(b))
		if e != 0 {
			return 0, e
		}
		return int(n), 0
	}
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
	defer clear(v)
	written := 0
	rest := false // v[i] is what a lead left of a big slice
	for i := 0; i < len(v); {
		// The run v[i:j]: a big slice (or its rest) alone, or the
		// short ones up to the next big one.
		j, want := i+1, int(v[i].Len)
		if v[i].Len < bigSeg && !rest {
			for j < len(v) && v[j].Len < bigSeg {
				want += int(v[j].Len)
				j++
			}
		}
		var n uintptr
		var e syscall.Errno
		switch {
		case j < len(v) && v[i].Len < bigSeg && !rest:
			// Short slices ahead of a big one: they leave in one call
			// with its first bytes, up to leadLen in all, unless they
			// fill that much themselves; the rest of the big one is
			// the next run.
			lead := max(leadLen-want, 0)
			if lead > 0 {
				big := v[j]
				v[j].SetLen(lead)
				n, e = sendmsgNB(fd, v[i:j+1])
				v[j].Base = (*byte)(unsafe.Add(unsafe.Pointer(big.Base), lead))
				v[j].SetLen(int(big.Len) - lead)
				want += lead
				rest = true
			} else {
				n, e = sendmsgNB(fd, v[i:j])
			}
		case j == i+1:
			// One buffer (a big one, its rest, or a short one at the
			// end): sendto.
			rest = false
			n, e = sendtoNB(fd, v[i].Base, int(v[i].Len))
		default:
			n, e = sendmsgNB(fd, v[i:j])
		}
		if e != 0 {
			if written > 0 {
				break // the caller comes back and meets the error then
			}
			return 0, e
		}
		written += int(n)
		if int(n) < want {
			break
		}
		i = j
	}
	return written, 0
}

// sendmsgNB sends the buffers of v, which is not empty, on socket fd with
// one sendmsg(2), without waiting and without SIGPIPE.
func sendmsgNB(fd uintptr, v []syscall.Iovec) (uintptr, syscall.Errno) {
	msg := unix.Msghdr{Iov: (*unix.Iovec)(unsafe.Pointer(&v[0]))}
	msg.SetIovlen(len(v))
	n, _, e := syscall.RawSyscall(syscall.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&msg)), unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT)
	return n, e
}

// sendtoNB sends the n bytes at p on socket fd with one sendto(2), without
// waiting and without SIGPIPE: for one buffer it costs less than sendmsg
// (no message header and vector to copy in and walk).
func sendtoNB(fd uintptr, p *byte, n int) (uintptr, syscall.Errno) {
	k, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(p)), uintptr(n), unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT, 0, 0)
	return k, e
}

// leadLen is how many bytes WritevNB sends in the call that carries the
// short slices ahead of a big one: they and the big slice's first bytes.
// The header then never leaves alone (which would wake a waiting receiver
// once more per frame, see bigSeg), and a polling receiver's stream is
// faster than with the header held back by MSG_MORE until the payload
// follows, for a reason not pinned down; 64 KiB was the steadiest lead
// across streams and reads (docs/performance.md).
const leadLen = 64 << 10

// bigSeg is the length from which WritevNB writes a slice by a system
// call of its own rather than in one sendmsg with the slices before it
// (but for its first bytes: leadLen). A stream's sender is limited by its
// own CPU, and the kernel's send path costs markedly more per byte when a
// large payload follows other data in the same call (in the copy from
// user memory, for a reason not pinned down). What goes ahead of the big
// slice never leaves alone: a frame header sent as a packet of its own
// wakes a waiting receiver once more per frame. For a shorter payload the
// extra system call costs more than it saves, so frames below 512 KiB
// keep sharing a call (docs/performance.md).
const bigSeg = 512 << 10

// WritevNB shortens a big slice by its lead and sends the rest on its
// own, so the lead must stay shorter than any big slice: with leadLen at
// bigSeg or more, a slice cut short by the write's limit could be shorter
// than its lead, and its rest would get a negative length. This line stops
// the build if the two constants are ever tuned that way.
const _ uint = bigSeg - leadLen - 1

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
	return rawBuf(syscall.SYS_EPOLL_PWAIT, ep, evs, 0)
}
