//go:build cabi

package main

import (
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

// With GODAT_STACKS set in its environment, a C program that seems to hang
// in godat can be asked where: SIGQUIT then writes every goroutine's stack
// to standard error and ends the process with status 2, as it would a Go
// program. (A c-shared library leaves SIGQUIT to its host unless it asks
// for it, and by default it must not: the host may use the signal itself.)
func init() {
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
