package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// The demo's benchmark: small enough to finish in about a second.
var demoBench = benchParams{ops: []string{"lat", "bw"}, sizes: []int{64, 4 << 10, 1 << 20}, iters: 300, warm: warmup(300)}

// childStartTimeout bounds the wait for the child server's ready line.
const childStartTimeout = 15 * time.Second

// demoReport is the JSON output of the demo.
type demoReport struct {
	Check *checkReport `json:"check"`
	Bench []benchRow   `json:"bench"`
}

// demoIA returns the IA the demo uses from the built-in configuration:
// "tcp" when it is there and available, else "loopback"; and whether the
// server must run in this process (the loopback provider cannot cross
// processes).
func demoIA(reg *registry.Registry) (name string, inProcess bool, err error) {
	var lb *registry.ProviderInfo
	for _, pi := range reg.List() {
		if pi.IAName == "tcp" && pi.Available {
			return "tcp", false, nil
		}
		if pi.IAName == "loopback" && pi.Available {
			lb = &pi
		}
	}
	if lb == nil {
		return "", false, errors.New("the built-in configuration has neither an available tcp nor a loopback IA")
	}
	return lb.IAName, true, nil
}

func demo(ctx context.Context, o options, stdout, stderr io.Writer) int {
	reg := registry.New(registry.EmbeddedConfig())
	name, inProcess, err := demoIA(reg)
	if err != nil {
		fmt.Fprintln(stderr, "dattest:", err)
		return exitFailure
	}
	bench := demoBench
	bench.poll = o.params.poll
	if o.setSizes {
		bench.sizes = o.params.sizes
	}
	if o.setIters {
		bench.iters, bench.warm = o.params.iters, o.params.warm
	}
	if o.setWarmup {
		bench.warm = o.params.warm
	}
	if len(o.params.ops) > 0 {
		bench.ops = o.params.ops
	}
	var cfg clientConfig
	var stopServer func() error
	if inProcess {
		cfg, stopServer, err = startInProcess(ctx, serverConfig{reg: reg, ia: name, idle: defaultIdleTimeout})
	} else {
		cfg, stopServer, err = startChild(ctx, []string{"-s", "-embedded", "-d", name, "-p", "0"})
	}
	if err != nil {
		fmt.Fprintln(stderr, "dattest:", err)
		return exitFailure
	}
	cfg.reg, cfg.ia, cfg.stderr = reg, name, stderr
	where := "a child process"
	if inProcess {
		where = "this process (the " + name + " provider connects only within one process)"
	}
	if !o.json {
		fmt.Fprintf(stdout, "dattest demo: IA %s, server in %s\n\n", name, where)
	}

	code := exitOK
	rep, err := runCheck(ctx, cfg)
	var rows []benchRow
	if err == nil && !rep.Passed {
		code = exitFailure
	}
	if err == nil && rep.Passed {
		rows, err = runBench(ctx, cfg, bench)
	}
	if serr := stopServer(); serr != nil {
		fmt.Fprintln(stderr, "dattest: server:", serr)
		code = exitFailure
	}
	if err != nil {
		fmt.Fprintln(stderr, "dattest:", err)
		code = exitFailure
	}
	if o.json {
		if rows == nil {
			rows = []benchRow{}
		}
		err = writeJSON(stdout, demoReport{Check: rep, Bench: rows})
	} else {
		if rep != nil {
			err = writeCheck(stdout, rep)
		}
		if err == nil && len(rows) > 0 {
			fmt.Fprintln(stdout)
			err = writeBench(stdout, rows)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "dattest:", err)
		return exitFailure
	}
	return code
}

// startInProcess starts the server cfg describes as a goroutine (its
// output, when cfg.out is nil, is dropped) and returns the client
// configuration that reaches it and a function that stops it. cfg.ready,
// if set, is called before startInProcess returns.
func startInProcess(ctx context.Context, cfg serverConfig) (clientConfig, func() error, error) {
	sctx, cancel := context.WithCancel(ctx)
	ready := make(chan serverInfo, 1)
	done := make(chan error, 1)
	if cfg.out == nil {
		cfg.out = io.Discard
	}
	also := cfg.ready
	cfg.ready = func(si serverInfo) {
		if also != nil {
			also(si)
		}
		ready <- si
	}
	go func() {
		done <- serve(sctx, cfg)
	}()
	stop := func() error { cancel(); return <-done }
	select {
	case si := <-ready:
		return clientConfig{port: si.ConnQual, target: si.Addr, rawHost: si.Raw.IP.String()}, stop, nil
	case err := <-done:
		cancel()
		if err == nil {
			err = errors.New("server ended before it was ready")
		}
		return clientConfig{}, nil, err
	}
}

// readyRE matches the server's ready line (serverInfo.readyLine).
var readyRE = regexp.MustCompile(`serving IA (\S+) at (\S+) on port (\d+) \(raw TCP baseline on (\S+)\)`)

// startChild starts dattest with args (a server: "-s ... -p 0") as a child
// process and returns the client configuration that reaches it and a
// function that stops it. The child is stopped (SIGTERM, then SIGKILL
// after a delay) when stop is called, when ctx ends, and — through the
// parent-death signal — when this process dies.
func startChild(ctx context.Context, args []string) (clientConfig, func() error, error) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(cctx, exe, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out := &lineWatch{ready: make(chan string, 1)}
	cmd.Stdout = out
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		cancel()
		return clientConfig{}, nil, fmt.Errorf("starting the server: %w", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			<-exited
			if st := cmd.ProcessState; st == nil || !st.Success() {
				stopErr = fmt.Errorf("the server process ended with %v (%v); its stderr: %s", st, waitErr, bytes.TrimSpace(errb.Bytes()))
			}
		})
		return stopErr
	}
	fail := func(err error) (clientConfig, func() error, error) {
		stop()
		if msg := bytes.TrimSpace(errb.Bytes()); len(msg) > 0 {
			err = fmt.Errorf("%w; its stderr: %s", err, msg)
		}
		return clientConfig{}, nil, err
	}
	timer := time.NewTimer(childStartTimeout)
	defer timer.Stop()
	var line string
	select {
	case line = <-out.ready:
	case <-exited:
		return fail(fmt.Errorf("the server process ended before it was ready (%v)", waitErr))
	case <-timer.C:
		return fail(errors.New("the server process did not get ready in time"))
	case <-ctx.Done():
		return fail(api.ContextError(ctx))
	}
	m := readyRE.FindStringSubmatch(line)
	if m == nil {
		return fail(fmt.Errorf("unexpected first line from the server: %q", line))
	}
	port, _ := strconv.ParseUint(m[3], 10, 32)
	host := m[2]
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if net.ParseIP(host) == nil {
		host = "127.0.0.1"
	}
	raw, _, _ := net.SplitHostPort(m[4])
	return clientConfig{host: host, port: api.ConnQual(port), rawHost: raw}, stop, nil
}

// lineWatch is the child's stdout: it hands the first line to ready and
// keeps nothing else.
type lineWatch struct {
	mu    sync.Mutex
	buf   []byte
	sent  bool
	ready chan string
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
		w.ready <- string(w.buf[:i])
		w.sent, w.buf = true, nil
	}
	return len(p), nil
}
