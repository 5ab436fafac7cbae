//go:build verbs && cgo && !race && !godat_cgocall

package verbs

import (
	"unsafe"
)

// callC runs fn(arg), a gd_*_call function of shim.c (calls.go), directly
// on the calling thread's system stack, without cgo's entry into and exit
// from the scheduler's system-call state.
func callC(fn, arg unsafe.Pointer) {
	asmcgocall(fn, arg)
}

// asmcgocall runs fn(arg) on the current thread's system stack and
// returns when fn does; the goroutine keeps its P meanwhile. It is the Go
// runtime's own primitive under cgo calls (runtime/asm_amd64.s and the
// other ports), not an exported API: a Go release that drops it breaks
// this build at link time, and -tags godat_cgocall is the way around.
//
//go:linkname asmcgocall runtime.asmcgocall
//go:noescape
func asmcgocall(fn, arg unsafe.Pointer) int32
