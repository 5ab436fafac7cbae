package host

// The plugin process itself: which bytes run, and making sure that ending
// the plugin ends everything it started.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"
	"golang.org/x/sys/unix"
)

// fileID tells apart the versions of an executable without reading it:
// a file replaced or rewritten in place gets another inode or ctime, and
// the ctime cannot be set back.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

func fileIDOf(st fs.FileInfo) fileID {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{size: st.Size(), mtime: st.ModTime().UnixNano()}
	}
	return fileID{dev: s.Dev, ino: s.Ino, size: s.Size,
		mtime: s.Mtim.Nano(), ctime: s.Ctim.Nano()}
}

// checkExecutable says why st cannot be the plugin's executable, or nil.
func checkExecutable(path string, st fs.FileInfo) error {
	switch {
	case st.IsDir():
		return fmt.Errorf("executable %s is a directory", path)
	case !st.Mode().IsRegular():
		return fmt.Errorf("executable %s is not a regular file (%v)", path, st.Mode().Type())
	case st.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable (mode %v)", path, st.Mode().Perm())
	}
	return nil
}

// pathError words an error from opening or stating the executable.
func pathError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("executable %s does not exist", path)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("executable %s: %w", path, err)
}

// statExe checks the executable at path without opening it.
func statExe(path string) (fileID, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileID{}, pathError(path, err)
	}
	return fileIDOf(st), checkExecutable(path, st)
}

// openExe opens the executable at path for reading, to be hashed and run
// through the one descriptor. O_NONBLOCK keeps a FIFO put in its place
// from blocking the open; it is refused as not a regular file.
func openExe(path string) (*os.File, fileID, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fileID{}, pathError(path, err)
	}
	st, err := f.Stat()
	if err == nil {
		err = checkExecutable(path, st)
	}
	if err != nil {
		f.Close()
		return nil, fileID{}, err
	}
	return f, fileIDOf(st), nil
}

// hashExe returns the SHA-256 of the whole file f, read from its start
// whatever its offset.
func hashExe(f *os.File) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, 1<<62)); err != nil {
		return "", fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// testHookHashed, when set by a test, runs after a pinned executable has
// been checked and before it is run.
var testHookHashed func()

// testPostByCall, when set by a test, makes the plugins started from then
// on take every post by a call: the path of a post that does not fit the
// submission ring, which the suite can then prove in full.
var testPostByCall atomic.Bool

// pipeGrace is how long the readers of a plugin's output may go on after
// its process group is gone: they drain what is left in the pipes. A
// process that left the group and still holds them is cut off after it.
const pipeGrace = time.Second

// procRunner is go-plugin's runner of one plugin process
// (ClientConfig.RunnerFunc). It runs the executable in a process group of
// its own — through the descriptor that was checked when the plugin is
// pinned — and kills the whole group whenever the process ends or is
// ended, so that nothing the plugin started outlives it and no reader of
// its output waits for a descendant that keeps the pipes open.
type procRunner struct {
	path  string     // the configured executable, for argv[0] and messages
	exe   *os.File   // the checked executable of a pinned plugin, or nil
	extra []*os.File // ExtraFiles (the control socket at 3)
	args  []string
	env   []string
	// verify runs right after the exec: it reports a pinned executable
	// that was rewritten in place between the check and the exec.
	verify func() error

	cmd       *exec.Cmd
	socketDir string // go-plugin's directory for the plugin's socket

	mu             sync.Mutex
	pid            int
	aborted        bool // the start was abandoned: do not start, or kill
	reaped         bool // the pid is no longer ours to signal
	done           chan struct{}
	waitErr        error
	stdout, stderr *os.File
}

var _ runner.Runner = (*procRunner)(nil)

// prepare is the ClientConfig.RunnerFunc: cmd carries the environment
// go-plugin gives the plugin, dir the directory for its socket.
func (r *procRunner) prepare(_ hclog.Logger, cmd *exec.Cmd, dir string) (runner.Runner, error) {
	r.socketDir = dir
	c := &exec.Cmd{
		Path:        r.path,
		Args:        append([]string{r.path}, r.args...),
		Env:         slices.Concat(os.Environ(), r.env, cmd.Env),
		ExtraFiles:  r.extra,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if r.exe != nil {
		// The child has the descriptor at 3+len(extra) when it execs, so
		// the kernel runs the very file that was hashed. A #! script keeps
		// the descriptor open, and its interpreter reads it by that name.
		c.ExtraFiles = append(slices.Clone(r.extra), r.exe)
		c.Path = "/proc/self/fd/" + strconv.Itoa(2+len(c.ExtraFiles))
	}
	r.cmd = c
	return r, nil
}

func (r *procRunner) Start(context.Context) error {
	rOut, wOut, err := os.Pipe()
	if err != nil {
		return err
	}
	rErr, wErr, err := os.Pipe()
	if err != nil {
		rOut.Close()
		wOut.Close()
		return err
	}
	r.cmd.Stdout, r.cmd.Stderr = wOut, wErr
	r.mu.Lock()
	if r.aborted {
		err = errAbandoned
	} else {
		err = r.cmd.Start()
	}
	wOut.Close()
	wErr.Close()
	if err != nil {
		r.mu.Unlock()
		rOut.Close()
		rErr.Close()
		if errors.Is(err, errAbandoned) {
			return err
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot execute %s: %w", r.path, err)
	}
	r.pid = r.cmd.Process.Pid
	r.stdout, r.stderr = rOut, rErr
	r.done = make(chan struct{})
	r.mu.Unlock()
	go r.wait()
	if r.verify != nil {
		if err := r.verify(); err != nil {
			r.kill()
			return err
		}
	}
	return nil
}

// errAbandoned is returned by Start once the caller gave up on the start.
var errAbandoned = errors.New("start abandoned")

// wait reaps the process. The process group bears the pid as its id, so
// the group is killed before the pid is released: nothing the plugin left
// behind survives it, and no other process group can be hit.
func (r *procRunner) wait() {
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, r.pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
	r.mu.Lock()
	unix.Kill(-r.pid, unix.SIGKILL)
	err := r.cmd.Wait()
	r.reaped = true
	out, errp := r.stdout, r.stderr
	r.mu.Unlock()
	deadline := time.Now().Add(pipeGrace)
	out.SetReadDeadline(deadline)
	errp.SetReadDeadline(deadline)
	r.waitErr = err
	close(r.done)
}

// kill ends the plugin's process group.
func (r *procRunner) kill() {
	r.mu.Lock()
	if r.pid != 0 && !r.reaped {
		unix.Kill(-r.pid, unix.SIGKILL)
	}
	r.mu.Unlock()
}

// abandon ends a start the caller no longer waits for.
func (r *procRunner) abandon() {
	r.mu.Lock()
	r.aborted = true
	r.mu.Unlock()
	r.kill()
}

// release ends the process group if it is still there, waits until the
// process is reaped and frees what the runner holds. It is called once
// go-plugin is done with the runner (after Client.Kill).
func (r *procRunner) release() {
	r.kill()
	r.mu.Lock()
	done, out, errp := r.done, r.stdout, r.stderr
	r.stdout, r.stderr = nil, nil
	r.mu.Unlock()
	if done != nil {
		<-done
	}
	if out != nil {
		out.Close()
		errp.Close()
	}
	if r.socketDir != "" {
		os.RemoveAll(r.socketDir)
	}
}

func (r *procRunner) Wait(context.Context) error {
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	if done == nil {
		return nil
	}
	<-done
	return r.waitErr
}

func (r *procRunner) Kill(context.Context) error {
	r.kill()
	return nil
}

func (r *procRunner) Stdout() io.ReadCloser {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stdout
}

func (r *procRunner) Stderr() io.ReadCloser {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr
}

func (r *procRunner) Name() string { return r.path }

func (r *procRunner) Diagnose(context.Context) string {
	return ""
}

func (r *procRunner) ID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pid == 0 {
		return ""
	}
	return strconv.Itoa(r.pid)
}

func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}
