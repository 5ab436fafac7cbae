package testmain

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// Go's fuzzing coordinator discards what its worker processes print, so a
// worker that dies of a panic in a goroutine of its own or of a fatal
// runtime error is reported only as "fuzzing process hung or terminated
// unexpectedly", with an input that rarely reproduces it when the cause is
// a race. To keep the cause, each worker sends its crash output to a file
// in a directory the coordinator made, and the coordinator prints what it
// finds there when the run ends.

// crashDirEnv passes that directory from the coordinator to its workers,
// which inherit its environment.
const crashDirEnv = "GODAT_FUZZ_CRASH_DIR"

// keepWorkerCrashes sets a fuzzing run up so: in a worker it points the
// crash output at a new file of the coordinator's directory; in the
// coordinator it makes the directory and returns the function that prints
// the crashes found there and removes it. Elsewhere it does nothing.
func keepWorkerCrashes(args []string) (report func()) {
	nothing := func() {}
	switch role(args) {
	case "worker":
		dir := os.Getenv(crashDirEnv)
		if dir == "" {
			return nothing
		}
		f, err := os.CreateTemp(dir, "worker-*")
		if err != nil {
			return nothing
		}
		defer f.Close() // SetCrashOutput keeps a duplicate
		if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
			fmt.Fprintf(os.Stderr, "testmain: a fuzzing worker's crash output stays unseen: %v\n", err)
		}
		return nothing
	case "coordinator":
		dir, err := os.MkdirTemp("", "fuzz-crashes-")
		if err != nil {
			return nothing
		}
		os.Setenv(crashDirEnv, dir)
		// The race detector reads $GORACE as a process starts, so this
		// sends the workers' race reports to the directory too, not the
		// coordinator's own.
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" log_path="+filepath.Join(dir, "race")))
		return func() { printCrashes(dir); os.RemoveAll(dir) }
	}
	return nothing
}

// role tells a fuzzing worker ("worker"), the process that coordinates
// workers ("coordinator") and any other test process ("") apart by the
// flags the go command gave them.
func role(args []string) string {
	fuzz := false
	for i, a := range args {
		a = "-" + strings.TrimLeft(a, "-")
		switch {
		case a == "-test.fuzzworker" || a == "-test.fuzzworker=true":
			return "worker"
		case strings.HasPrefix(a, "-test.fuzz="):
			fuzz = a != "-test.fuzz="
		case a == "-test.fuzz" && i+1 < len(args):
			fuzz = args[i+1] != ""
		}
	}
	if fuzz {
		return "coordinator"
	}
	return ""
}

// printCrashes writes to stderr what the workers left in dir: their crash
// output (empty for a worker that did not crash) and the race detector's
// reports.
func printCrashes(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil || len(b) == 0 {
			continue
		}
		fmt.Fprintf(os.Stderr, "--- a fuzzing worker printed, unseen till now (%s):\n%s\n", filepath.Base(name), b)
	}
}
