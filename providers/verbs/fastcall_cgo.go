//go:build verbs && cgo && (race || godat_cgocall)

package verbs

/*
#cgo noescape gd_call
#cgo nocallback gd_call
#include "shim.h"
*/
import "C"

import (
	"unsafe"
)

// callC runs fn(arg), a gd_*_call function of shim.c (calls.go), through
// an ordinary cgo call: for the race detector, which models a cgo call as
// a synchronization point and would not see a direct call as one, and for
// builds with -tags godat_cgocall (fastcall.go).
func callC(fn, arg unsafe.Pointer) {
	C.gd_call((*[0]byte)(fn), arg)
}
