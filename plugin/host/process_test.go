package host_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/syncbuf"
	"github.com/godat/godat/plugin/host"
)

// envMark marks the processes a test's plugin starts: they inherit it, and
// markedProcs finds them by it.
const envMark = "GODAT_PLUGIN_TEST_MARK"

// mark sets a mark of the test's own in the environment the plugins
// inherit and returns it.
func mark(t *testing.T) string {
	m := fmt.Sprintf("%s-%d-%d", t.Name(), os.Getpid(), time.Now().UnixNano())
	t.Setenv(envMark, m)
	return m
}

// markedProc is a process that carries a mark.
type markedProc struct {
	pid, ppid int
	state     string
}

// markedProcs lists the processes whose environment carries mark m.
func markedProcs(t testing.TB, m string) []markedProc {
	t.Helper()
	es, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte(envMark + "=" + m + "\x00")
	var out []markedProc
	for _, e := range es {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold anything but ')'
		// ends it.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out = append(out, markedProc{pid: pid, ppid: ppid, state: f[0]})
	}
	return out
}

// noneLeft checks that no process with mark m is alive and none is a
// zombie left for this process to reap; a process killed a moment ago
// may take a little while to go, so it waits a bounded time for that.
// Whatever is left is killed, so that the test leaves nothing behind.
func noneLeft(t *testing.T, m string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []markedProc
		for _, p := range markedProcs(t, m) {
			if p.state != "Z" || p.ppid == os.Getpid() {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				syscall.Kill(p.pid, syscall.SIGKILL)
			}
			t.Errorf("processes the plugin started are still there (pid, state, parent): %v", left)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// within runs f and fails the test if it has not returned after d: a
// bound on a hang, not a measurement. On failure, kill frees f.
func within(t *testing.T, d time.Duration, what string, kill func(), f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		kill()
		<-done
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// writeScript writes an executable shell script.
func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// shortTempDir is a new directory for $TMPDIR: short, unlike t.TempDir,
// because a plugin's socket path in it must fit a sockaddr_un.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "t")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustNotExist(t *testing.T, path, what string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		t.Fatal(what)
	}
}

// A configuration named without a directory with a relative plugin path
// runs the plugin beside the file, never a program of the same name found
// in $PATH.
func TestRelativePluginPathIgnoresPATH(t *testing.T) {
	for _, pinned := range []bool{false, true} {
		t.Run(fmt.Sprintf("pinned=%v", pinned), func(t *testing.T) {
			extra := ""
			if pinned {
				extra = "sha256 = \"" + fileSHA256(t, examplePath) + "\"\n"
			}
			conf := writeConfig(t, "lp-plugin", extra, "x")
			dir := filepath.Dir(conf)
			if err := os.Symlink(examplePath, filepath.Join(dir, "lp-plugin")); err != nil {
				t.Fatal(err)
			}
			decoys := t.TempDir()
			ran := filepath.Join(decoys, "ran")
			writeScript(t, filepath.Join(decoys, "lp-plugin"), "touch "+ran+"\nexit 1\n")
			t.Setenv("PATH", decoys+string(os.PathListSeparator)+os.Getenv("PATH"))
			t.Chdir(dir)

			r := loadRegistry(t, "dat.conf")
			ia, err := r.Open(context.Background(), "x")
			mustNotExist(t, ran, "the program of the same name in $PATH ran")
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if err := ia.Close(api.CloseAbrupt); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A pinned executable replaced by other bytes of the same size, with its
// modification time set back, is refused: by the listing and by Open, in
// the same process that ran it before.
func TestPinnedSwapSameSizeAndMtime(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "lp-plugin")
	copyFile(t, examplePath, exe)
	r := loadRegistry(t, writeConfig(t, exe, "sha256 = \""+fileSHA256(t, exe)+"\"\n", "x"))
	if pi := r.List()[0]; !pi.Available {
		t.Fatalf("before the swap: unavailable: %s", pi.Reason)
	}
	ia, err := r.Open(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := ia.Close(api.CloseAbrupt); err != nil {
		t.Fatal(err)
	}

	st, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(dir, "ran")
	head := "#!/bin/sh\ntouch " + ran + "\nexit 1\n#"
	decoy := head + strings.Repeat("x", int(st.Size())-len(head)-1) + "\n"
	if err := os.WriteFile(exe, []byte(decoy), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(exe, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if st2, err := os.Stat(exe); err != nil || st2.Size() != st.Size() || !st2.ModTime().Equal(st.ModTime()) {
		t.Fatalf("the swap changed the size or the time: %v %v", st2, err)
	}

	const want = "but the configuration"
	if pi := r.List()[0]; pi.Available || !strings.Contains(pi.Reason, want) {
		t.Errorf("listing after the swap: available %v, reason %q; want unavailable saying %q", pi.Available, pi.Reason, want)
	}
	ia, err = r.Open(context.Background(), "x")
	if err == nil {
		ia.Close(api.CloseAbrupt)
	}
	mustNotExist(t, ran, "the swapped-in executable ran")
	if !errors.Is(err, api.ErrProviderNotFound) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open after the swap: %v, want DAT_PROVIDER_NOT_FOUND saying %q", err, want)
	}
}

// The bytes of a pinned plugin that run are the bytes that were hashed: a
// file renamed over it after the check does not run, and one written into
// it in place between the check and the exec is found out and killed.
func TestPinnedExecutesWhatWasHashed(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "lp-plugin")
	ran := filepath.Join(dir, "ran")
	decoy := []byte("#!/bin/sh\ntouch " + ran + "\nsleep 1000\n")
	for _, tc := range []struct {
		name string
		swap func() error
		want string // "" for a successful Open
	}{
		{"renamed over", func() error {
			tmp := exe + ".new"
			if err := os.WriteFile(tmp, decoy, 0o755); err != nil {
				return err
			}
			return os.Rename(tmp, exe)
		}, ""},
		{"written in place", func() error { return os.WriteFile(exe, decoy, 0o755) }, "changed between the check and the exec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mark(t)
			os.Remove(ran)
			copyFile(t, examplePath, exe)
			r := loadRegistry(t, writeConfig(t, exe, "sha256 = \""+fileSHA256(t, exe)+"\"\n", "x"))
			var swapErr error
			defer host.SetHashedHook(func() { swapErr = tc.swap() })()
			ia, err := r.Open(context.Background(), "x")
			if swapErr != nil {
				t.Fatal(swapErr)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				mustNotExist(t, ran, "the file renamed over the checked one ran")
				if err := ia.Close(api.CloseAbrupt); err != nil {
					t.Fatal(err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.want) {
				if err == nil {
					ia.Close(api.CloseAbrupt)
				}
				t.Fatalf("Open: %v, want an error saying %q", err, tc.want)
			}
			noneLeft(t, m)
		})
	}
}

// A plugin that never answers and whose child holds its standard output
// and error fails to start within StartTimeout, and neither it nor its
// child survives.
func TestSilentPluginWithChildIsKilled(t *testing.T) {
	defer goleak.VerifyNone(t)
	defer func(d time.Duration) { host.StartTimeout = d }(host.StartTimeout)
	host.StartTimeout = time.Second
	m := mark(t)
	exe := filepath.Join(t.TempDir(), "hangs")
	writeScript(t, exe, "sleep 1000 &\nsleep 1000\n")
	r := loadRegistry(t, writeConfig(t, exe, "", "x"))
	var err error
	within(t, time.Minute, "Open of a silent plugin", func() {
		for _, p := range markedProcs(t, m) {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}, func() {
		_, err = r.Open(context.Background(), "x")
	})
	if !errors.Is(err, api.ErrProviderNotFound) || !strings.Contains(err.Error(), "did not complete the handshake within 1s") {
		t.Fatalf("Open: %v, want DAT_PROVIDER_NOT_FOUND saying it did not complete the handshake within 1s", err)
	}
	noneLeft(t, m)
}

// A plugin started by a wrapper script closes at once and leaves nothing
// behind, even when the script left a child holding the plugin's output.
func TestWrapperScriptPlugin(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"exec", "exec " + examplePath + " \"$@\"\n"},
		{"child and exec", "sleep 1000 &\nexec " + examplePath + " \"$@\"\n"},
		{"child", "sleep 1000 &\n" + examplePath + " \"$@\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			m := mark(t)
			exe := filepath.Join(t.TempDir(), "wrapper")
			writeScript(t, exe, tc.body)
			r := loadRegistry(t, writeConfig(t, exe, "", "x"))
			killAll := func() {
				for _, p := range markedProcs(t, m) {
					syscall.Kill(p.pid, syscall.SIGKILL)
				}
			}
			var ia api.IA
			var err error
			within(t, time.Minute, "Open", killAll, func() { ia, err = r.Open(context.Background(), "x") })
			if err != nil {
				t.Fatal(err)
			}
			st := pluginStatus(t, r)
			within(t, 20*time.Second, "Close", killAll, func() { err = ia.Close(api.CloseAbrupt) })
			if err != nil {
				t.Fatal(err)
			}
			if !exited(st.PID) {
				t.Errorf("the plugin process %d is still there (or unreaped) after its last IA closed", st.PID)
			}
			noneLeft(t, m)
		})
	}
}

// A silent plugin costs StartTimeout once, not once per IA: its other IAs
// fail at once with the same reason until its executable changes. While
// waiting, the host says once what it is waiting for.
func TestSilentPluginIsNotRetriedAtOnce(t *testing.T) {
	defer func(d time.Duration) { host.StartTimeout = d }(host.StartTimeout)
	host.StartTimeout = 3 * time.Second
	var log syncbuf.Buffer
	defer host.SetLogOutput(io.MultiWriter(&log, os.Stderr))()
	m := mark(t)
	dir := t.TempDir()
	exe, starts := filepath.Join(dir, "silent"), filepath.Join(dir, "starts")
	body := "echo started >> " + starts + "\nexec sleep 1000\n"
	writeScript(t, exe, body)
	r := loadRegistry(t, writeConfig(t, exe, "", "a", "b"))
	count := func() int {
		b, _ := os.ReadFile(starts)
		return strings.Count(string(b), "started")
	}
	const why = "did not complete the handshake within 3s"
	open := func(name string) error {
		t.Helper()
		ia, err := r.Open(context.Background(), name)
		if err == nil {
			ia.Close(api.CloseAbrupt)
			t.Fatalf("Open %s succeeded", name)
		}
		if !errors.Is(err, api.ErrProviderNotFound) || !strings.Contains(err.Error(), why) {
			t.Fatalf("Open %s: %v, want DAT_PROVIDER_NOT_FOUND saying %q", name, err, why)
		}
		return err
	}
	open("a")
	err := open("b")
	if n := count(); n != 1 {
		t.Errorf("the plugin was started %d times for two IAs in a row, want once", n)
	}
	if !strings.Contains(err.Error(), "not started again") {
		t.Errorf("the second Open says %q; want it to say the plugin is not started again yet", err)
	}
	want := fmt.Sprintf("waiting up to 3s for %s to complete the plugin handshake", exe)
	if n := strings.Count(log.String(), want); n != 1 {
		t.Errorf("the host said %d times %q, want once; its log:\n%s", n, want, log.String())
	}

	// A new executable is tried at once.
	writeScript(t, exe, body)
	open("a")
	if n := count(); n != 2 {
		t.Errorf("after the executable changed the plugin was started %d times in all, want 2", n)
	}
	if n := strings.Count(log.String(), "waiting up to"); n != 1 {
		t.Errorf("the host said %d times what it waits for, want once per plugin", n)
	}
	noneLeft(t, m)
}

// The go-plugin sockets of the plugin processes are removed however the
// process ends: refused at the handshake, killed, or stopped.
func TestNoSocketLeft(t *testing.T) {
	tmp := shortTempDir(t)
	t.Setenv("TMPDIR", tmp)
	left := func(when string) {
		t.Helper()
		if left, _ := filepath.Glob(filepath.Join(tmp, "plugin*")); len(left) > 0 {
			t.Errorf("%s: left in $TMPDIR: %v", when, left)
		}
	}
	r := loadRegistry(t, writeConfig(t, oldProtoPath, "", "x"))
	if _, err := r.Open(context.Background(), "x"); err == nil {
		t.Fatal("Open of a plugin of another protocol succeeded")
	}
	left("after a plugin of another protocol")

	r = loadRegistry(t, writeConfig(t, examplePath, "", "x"))
	ia, err := r.Open(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := ia.Close(api.CloseAbrupt); err != nil {
		t.Fatal(err)
	}
	left("after a plugin stopped")

	ia, err = r.Open(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	async, err := ia.AsyncEVD()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pluginStatus(t, r).PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ev api.Event
	if _, err := async.Wait(ctx, 1, &ev); err != nil || ev.Number != api.AsyncIACatastrophicEvent {
		t.Fatalf("waiting for the catastrophic event: %v %v", err, ev.Number)
	}
	if err := ia.Close(api.CloseAbrupt); err != nil {
		t.Fatal(err)
	}
	left("after a plugin killed")
}
