// Package crash is a fuzz target for testmain's own test: with
// $CRASH_PLANTED set, its worker processes die of a panic in a goroutine
// of their own, which Go's fuzzing coordinator alone would not show.
package crash

import (
	"os"
	"testing"

	"github.com/godat/godat/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Verify(m, nil) }

func FuzzPlanted(f *testing.F) {
	f.Add([]byte("x"))
	planted := os.Getenv("CRASH_PLANTED") != ""
	f.Fuzz(func(t *testing.T, b []byte) {
		if planted {
			done := make(chan struct{})
			go func() {
				defer close(done)
				panic("planted: a goroutine of the worker panics")
			}()
			<-done
		}
	})
}
