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
	// go test writes the failing input into the package's testdata,
	// which must not stay.
	t.Cleanup(func() { os.RemoveAll("testdata/crash/testdata") })
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
}

// TestCoordinatorSetsUp checks what the coordinator hands its workers:
// the crash directory, and the race detector's log path inside it with
// the options $GORACE already held.
func TestCoordinatorSetsUp(t *testing.T) {
	t.Setenv(crashDirEnv, "")
	t.Setenv("GORACE", "halt_on_error=1")
	report := keepWorkerCrashes([]string{"-test.fuzz=^FuzzX$"})
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Fatalf("no $%s after the coordinator's set-up", crashDirEnv)
	}
	if want := "halt_on_error=1 log_path=" + dir + "/race"; os.Getenv("GORACE") != want {
		t.Errorf("GORACE=%q, want %q", os.Getenv("GORACE"), want)
	}
	if err := os.WriteFile(dir+"/worker-1", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	report()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the crash directory is still there after the report: %v", err)
	}
}
