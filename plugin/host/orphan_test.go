package host_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/registry"
)

// envHostRole makes the test binary act as a host process that opens an
// IA of the plugin in the configuration the variable names, prints the
// plugin's pid and waits to be killed.
const envHostRole = "GODAT_PLUGIN_TEST_HOST"

func hostRole() int {
	r, err := registry.Load(os.Getenv(envHostRole))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	if _, err := r.Open(context.Background(), "x"); err != nil {
		fmt.Println("error", err)
		return 1
	}
	st, _ := r.PluginStatus("lp")
	fmt.Println("pid", st.PID)
	io.Copy(io.Discard, os.Stdin) // until killed
	return 0
}

// A plugin whose host is killed notices and exits by itself: no orphan
// remains. The test process makes itself the subreaper of its
// descendants, so the orphaned plugin becomes its child and its exit can
// be observed and reaped here.
func TestPluginExitsWhenHostDies(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("cannot become a subreaper: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)

	tmp := shortTempDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHostRole+"="+writeConfig(t, examplePath, "", "x"), "TMPDIR="+tmp)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the host process said nothing: %v", err)
	}
	f := strings.Fields(line)
	pid, _ := strconv.Atoi(f[len(f)-1])
	if len(f) != 2 || f[0] != "pid" || pid <= 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the host process said %q", line)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	type result struct {
		ws  syscall.WaitStatus
		err error
	}
	done := make(chan result, 1)
	go func() {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		done <- result{ws, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("waiting for the orphaned plugin %d: %v", pid, r.err)
		}
		if !r.ws.Exited() || r.ws.ExitStatus() != 3 {
			t.Fatalf("the orphaned plugin ended with %v, want exit status 3 (it noticed its host died)", r.ws)
		}
		// Its socket went with it.
		if es, _ := os.ReadDir(tmp); len(es) > 0 {
			t.Errorf("the orphaned plugin left %s in $TMPDIR", es[0].Name())
		}
	case <-time.After(20 * time.Second):
		syscall.Kill(pid, syscall.SIGKILL)
		<-done
		t.Fatalf("the plugin %d outlived its killed host by 20s", pid)
	}
}

func fileSHA256(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
