//go:build verbs && cgo

package verbs

/*
#cgo LDFLAGS: -lrdmacm -libverbs
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Supported reports whether this build can drive RDMA devices.
const Supported = true

// unavailable says why no verbs IA can be opened: rdma-core's own answer
// when it cannot list devices or lists none.
func unavailable() string {
	n, err := C.gd_device_count()
	switch {
	case n < 0:
		why := "rdma-core cannot list RDMA devices: ibv_get_device_list: " + errnoText(err)
		if errors.Is(err, syscall.ENOSYS) {
			why += "; the kernel has no RDMA support loaded (ib_uverbs)"
		}
		return why
	case n == 0:
		return "rdma-core found no RDMA device (ibv_get_device_list returned an empty list)"
	}
	return ""
}

// errnoText formats the errno a cgo call returned.
func errnoText(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		if e == 0 {
			return "failed without an errno"
		}
		return fmt.Sprintf("%s (%s)", e.Error(), errnoName(e))
	}
	if err == nil {
		return "failed without an errno"
	}
	return err.Error()
}

// errnoName gives the symbolic name of e ("ENODEV"), or its number when
// it has none.
func errnoName(e syscall.Errno) string {
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}

// pollable puts a duplicate of fd, a non-blocking descriptor of
// rdma-core's, in Go's network poller: closing the returned file wakes a
// goroutine parked in the RawConn's Read and leaves fd itself open. name
// is the file's name.
func pollable(fd C.int, name string) (*os.File, syscall.RawConn, error) {
	d, err := syscall.Dup(int(fd))
	if err != nil {
		return nil, nil, fmt.Errorf("dup: %w", err)
	}
	syscall.CloseOnExec(d)
	f := os.NewFile(uintptr(d), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, rc, nil
}

// syscallErrno converts an errno value a C helper returned.
func syscallErrno(rc C.int) error { return syscall.Errno(rc) }
