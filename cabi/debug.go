//go:build cabi

package main

/*
#include <stdlib.h>
#include "cabi.h"
*/
import "C"

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"unsafe"

	"github.com/godat/godat/api"
)

// Switches in the environment help find out what a C program and the
// library did to each other; all are off unless set.
//
// GODAT_STACKS: a program that seems to hang in godat can be asked where.
// SIGQUIT then writes every goroutine's stack to standard error and ends
// the process with status 2, as it would a Go program. (A c-shared library
// leaves SIGQUIT to its host unless it asks for it, and by default it must
// not: the host may use the signal itself.)
//
// GODAT_EVENTS: every event the library hands the program
// (dat_evd_dequeue, dat_evd_wait) is also written to standard error, one
// line each: the EVD, the event, and the EP it names, if any.
//
// GODAT_CMEM_FAIL: the library's C allocations fail (cmemFail).
func init() {
	logEvents = os.Getenv("GODAT_EVENTS") != ""
	if os.Getenv("GODAT_STACKS") == "" {
		return
	}
	quit := make(chan os.Signal, 1)
	signal.Notify(quit, syscall.SIGQUIT)
	go func() {
		<-quit
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		os.Exit(2)
	}()
}

// cmemFail reports whether GODAT_CMEM_FAIL is set in the C environment
// now: while it is, every C allocation of the library fails as a failing
// calloc would, so that a test can see each call answer
// DAT_INSUFFICIENT_RESOURCES and lose nothing. It is read from the C
// environment at each allocation (they are few, none on a data path), so
// a program can set and unset it between calls with setenv(3).
func cmemFail() bool {
	v := C.getenv(cmemFailVar)
	return v != nil && *v != 0
}

var cmemFailVar = C.CString("GODAT_CMEM_FAIL")

// logEvents is GODAT_EVENTS, read once at load.
var logEvents bool

// logEvent writes the line GODAT_EVENTS asks for, of the event c as the
// program gets it.
func logEvent(c *C.DAT_EVENT) {
	n := api.EventNumber(c.event_number)
	d := unsafe.Pointer(&c.event_data)
	var ep unsafe.Pointer
	switch n.Stream() {
	case api.EVDDTO:
		ep = unsafe.Pointer((*C.DAT_DTO_COMPLETION_EVENT_DATA)(d).ep_handle)
	case api.EVDConnection:
		ep = unsafe.Pointer((*C.DAT_CONNECTION_EVENT_DATA)(d).ep_handle)
	}
	fmt.Fprintf(os.Stderr, "godat: EVD %p: %v, EP %p\n", unsafe.Pointer(c.evd_handle), n, ep)
}
