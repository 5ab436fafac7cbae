package testmain

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestRole(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-test.paniconexit0", "-test.timeout=10m0s"}, ""},
		{[]string{"-test.fuzz=^FuzzX$", "-test.fuzztime=100x"}, "coordinator"},
		{[]string{"--test.fuzz", "FuzzX"}, "coordinator"},
		{[]string{"-test.fuzz="}, ""},
		{[]string{"-test.fuzzworker", "-test.fuzz=^FuzzX$"}, "worker"},
		{[]string{"-test.fuzzcachedir=/tmp/x", "-test.fuzzworker=true"}, "worker"},
	} {
		if got := role(c.args); got != c.want {
			t.Errorf("role(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// TestWorkerCrashShown fuzzes testdata/crash, whose workers die of a panic
// in a goroutine, and checks that the run's output has the panic. Without
// Verify it has only the coordinator's "terminated unexpectedly".
func TestWorkerCrashShown(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	cmd := exec.Command(goCmd, "test", "-run", "^$", "-fuzz", "^FuzzPlanted$", "-fuzztime", "50x", "./testdata/crash")
	cmd.Env = append(os.Environ(), "CRASH_PLANTED=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("fuzzing a target whose workers crash passed:\n%s", out)
	}
	for _, want := range []string{"terminated unexpectedly", "a fuzzing worker printed", "panic: planted: a goroutine of the worker panics", "crash.FuzzPlanted"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	// (the failing input go test wrote is the package's testdata, which
	// must not stay)
	os.RemoveAll("testdata/crash/testdata")
}
