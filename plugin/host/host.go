package host

// The registry's PluginHost, one provider per [[plugin]] table, and the
// running plugin process behind it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
	pb "github.com/godat/godat/plugin/proto"
	"github.com/godat/godat/registry"
)

func init() { registry.RegisterPluginHost(host{}) }

// StartTimeout bounds the start of a plugin process: from exec to the end
// of the handshake. A plugin that has not answered by then is killed, with
// everything it started, and its IAs are unavailable for this Open.
var StartTimeout = 10 * time.Second

// RetryDelay is how long a plugin that stayed silent for StartTimeout is
// not started again: Opens of its IAs fail at once with the same reason
// meanwhile, unless its executable has changed. A program that opens
// several IAs of one hung plugin waits for it once.
var RetryDelay = 30 * time.Second

// waitNote is how long a start may take before the host says, once per
// plugin, what it is waiting for.
const waitNote = time.Second

// EnvLog names the environment variable that sets the level of the
// messages the host logs about its plugins (and relays from their standard
// error): trace, debug, info, warn (the default), error or off.
const EnvLog = "GODAT_PLUGIN_LOG"

// logOutput is where the host's log of its plugins goes.
var logOutput io.Writer = os.Stderr

type host struct{}

func (host) Provider(e registry.PluginEntry) registry.PluginProvider {
	// A configuration built by a program may hold a relative path: it is
	// fixed now against the working directory, and never looked up in
	// $PATH.
	if abs, err := filepath.Abs(e.Path); err == nil {
		e.Path = abs
	}
	return &Provider{e: e}
}

// Provider is the api.Provider of one [[plugin]] table: Open starts the
// plugin process if it is not running and opens an IA in it. The process
// is shared by every IA opened through the Provider and stops when the last
// of them is closed.
type Provider struct {
	e registry.PluginEntry

	mu       sync.Mutex
	running  *runningPlugin // the running process, or nil
	version  string
	protocol int
	reason   string // why the last start failed or the last process ended
	// A start that cost StartTimeout is not tried again before heldUntil
	// while the executable is heldID.
	heldUntil time.Time
	heldID    fileID

	noted atomic.Bool // the wait for a slow start has been announced

	sumMu sync.Mutex // Check runs with or without mu held
	sum   sumCache
}

// sumCache remembers the checksum Check computed while the executable
// stays the same file with the same content. It spares listings the
// hashing; a start always hashes what it runs.
type sumCache struct {
	id  fileID
	sum string
}

// Check reports why the plugin cannot be started, without starting it.
func (p *Provider) Check() error {
	if p.e.SHA256 == "" {
		_, err := statExe(p.e.Path)
		return err
	}
	f, id, err := openExe(p.e.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	p.sumMu.Lock()
	defer p.sumMu.Unlock()
	if p.sum.sum == "" || p.sum.id != id {
		sum, err := hashExe(f)
		if err != nil {
			return err
		}
		p.sum = sumCache{id: id, sum: sum}
	}
	return p.checkSum(p.sum.sum)
}

func (p *Provider) checkSum(sum string) error {
	if sum != p.e.SHA256 {
		return fmt.Errorf("%s has sha256 %s but the configuration (%s) expects %s; refusing to run it", p.e.Path, sum, p.e.Pos, p.e.SHA256)
	}
	return nil
}

// Status describes the plugin and its process.
func (p *Provider) Status() registry.PluginStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := registry.PluginStatus{Name: p.e.Name, Path: p.e.Path, Version: p.version, Protocol: p.protocol,
		State: "stopped", Reason: p.reason}
	if c := p.running; c != nil && !c.dead.Load() {
		st.State, st.PID, st.IAs = "running", c.pid, c.iaCount()
	} else if p.reason != "" {
		st.State = "failed"
	}
	return st
}

// unavailable builds the error Open returns when the plugin cannot serve.
func (p *Provider) unavailable(format string, args ...any) error {
	return api.Errorf(api.ProviderNotFound, api.NoSubtype, fmt.Sprintf("plugin %q: ", p.e.Name)+fmt.Sprintf(format, args...))
}

// Open opens an IA in the plugin process, starting the process first if
// it is not running (dat_ia_open(3DAT)). A plugin that cannot be started
// (missing, not executable, wrong checksum, another protocol version, exits
// or stays silent during the handshake) makes Open fail with
// ErrProviderNotFound and the reason. A context that ends during the start
// abandons it, with the context's error.
func (p *Provider) Open(ctx context.Context, op api.OpenParams) (api.IA, error) {
	if ctx.Err() != nil {
		return nil, api.ContextError(ctx)
	}
	p.mu.Lock()
	c := p.running
	if c == nil || c.dead.Load() {
		if p.heldLocked() {
			err := p.unavailable("%s (not started again for %v unless its executable changes)", p.reason, RetryDelay)
			p.mu.Unlock()
			return nil, err
		}
		var err error
		c, err = p.start(ctx)
		if err != nil {
			var fe *startError
			if errors.As(err, &fe) {
				p.reason = fe.err.Error()
				if fe.silent {
					p.heldUntil, p.heldID = time.Now().Add(RetryDelay), fe.id
				}
				err = p.unavailable("%v", fe.err)
			}
			p.mu.Unlock()
			return nil, err
		}
		p.running, p.version, p.protocol, p.reason = c, c.version, c.protocol, ""
		p.heldUntil = time.Time{}
	}
	c.opening++
	p.mu.Unlock()

	ia, err := c.openIA(ctx, op)

	p.mu.Lock()
	c.opening--
	p.unlockStopIdle(c)
	if err != nil {
		return nil, err
	}
	return ia, nil
}

// heldLocked reports that the last start failed by silence recently
// enough, and the executable is still the one that was silent. p.mu is
// held.
func (p *Provider) heldLocked() bool {
	if p.heldUntil.IsZero() || time.Now().After(p.heldUntil) {
		return false
	}
	st, err := os.Stat(p.e.Path)
	return err == nil && fileIDOf(st) == p.heldID
}

// released is called when an IA of c is closed (or lost): the last one
// stops the process.
func (p *Provider) released(c *runningPlugin) {
	p.mu.Lock()
	if p.unlockStopIdle(c) {
		return
	}
	c.releaseRings()
}

// unlockStopIdle unlocks p.mu, which the caller holds, and stops c if it
// is the running process and has no IA open or opening; it reports
// whether it stopped c. c.stop runs without p.mu, so that a new start is
// not held up by the old process ending.
func (p *Provider) unlockStopIdle(c *runningPlugin) bool {
	stop := c.idleLocked() && p.running == c
	if stop {
		p.running = nil
	}
	p.mu.Unlock()
	if stop {
		c.stop()
	}
	return stop
}

// lost records that the process of c ended on its own.
func (p *Provider) lost(c *runningPlugin, why string) {
	p.mu.Lock()
	if p.running == c {
		p.running = nil
	}
	p.reason = why
	p.mu.Unlock()
}

func logLevel() hclog.Level {
	s := strings.TrimSpace(os.Getenv(EnvLog))
	if s == "" {
		return hclog.Warn
	}
	return hclog.LevelFromString(s)
}

// startError is why a plugin could not be started, as opposed to the
// caller's context ending first.
type startError struct {
	err    error
	silent bool   // it cost StartTimeout
	id     fileID // the executable that was started
}

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// start runs the plugin executable and completes the handshake. A pinned
// executable is opened once: the bytes hashed are the bytes executed.
func (p *Provider) start(ctx context.Context) (*runningPlugin, error) {
	r := &procRunner{path: p.e.Path, args: p.e.Args, env: append(slices.Clone(p.e.Env), wire.EnvCtlFD+"=3")}
	var id fileID
	var err error
	if p.e.SHA256 == "" {
		id, err = statExe(p.e.Path)
	} else {
		r.exe, id, err = openExe(p.e.Path)
		if err == nil {
			defer r.exe.Close()
			err = p.checkExe(r.exe)
		}
		if err == nil {
			if testHookHashed != nil {
				testHookHashed()
			}
			r.verify = func() error {
				if err := p.checkExe(r.exe); err != nil {
					return fmt.Errorf("it changed between the check and the exec (%w) and was killed", err)
				}
				return nil
			}
		}
	}
	if err != nil {
		return nil, &startError{err: err}
	}
	fail := func(err error, silent bool) error { return &startError{err: err, silent: silent, id: id} }

	hostEnd, child, err := ctlPair()
	if err != nil {
		return nil, fail(err, false)
	}
	r.extra = []*os.File{child}
	tail := &tailWriter{}
	rp := new(atomic.Pointer[wire.Rings])
	logger := hclog.New(&hclog.LoggerOptions{
		Name: "godat-plugin." + p.e.Name, Level: logLevel(), Output: logOutput,
	})
	client := goplugin.NewClient(&goplugin.ClientConfig{
		GRPCDialOptions:  []grpc.DialOption{grpc.WithUnaryInterceptor(fenceCalls(rp))},
		Stderr:           tail,
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.PluginSets(nil),
		RunnerFunc:       r.prepare,
		SkipHostEnv:      true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		StartTimeout:     StartTimeout,
		Logger:           logger,
	})
	end := func() {
		client.Kill()
		r.release()
		hostEnd.Close()
	}
	// The caller's context abandons the start; StartTimeout is the
	// plugin's own budget, and only its expiry is held against it.
	stopAbandon := context.AfterFunc(ctx, r.abandon)
	note := time.AfterFunc(waitNote, func() {
		if p.noted.CompareAndSwap(false, true) {
			logger.Warn(fmt.Sprintf("waiting up to %v for %s to complete the plugin handshake", StartTimeout, p.e.Path))
		}
	})
	rpcClient, err := client.Client()
	note.Stop()
	child.Close() // the child has its copy, or never will
	if !stopAbandon() {
		end()
		return nil, abandoned(ctx, p.e.Name)
	}
	if err != nil {
		end()
		var ce *startError
		if errors.As(err, &ce) {
			return nil, ce
		}
		silent := strings.Contains(err.Error(), "timeout while waiting for plugin to start")
		return nil, fail(explainStart(err, tail.last()), silent)
	}
	raw, err := rpcClient.Dispense(wire.PluginName)
	if err != nil {
		end()
		return nil, fail(fmt.Errorf("the plugin offers no provider: %w", err), false)
	}
	c := &runningPlugin{prov: p, client: client, proc: r, rpc: raw.(pb.ProviderClient), ctl: &hostCtl{c: hostEnd},
		protocol: client.NegotiatedVersion(), objs: map[uint64]proxy{}, mems: map[*api.Memory]*sharedMem{},
		crashDone: make(chan struct{}), ringsP: rp, postByCall: testPostByCall.Load()}
	c.seqCond = sync.NewCond(&c.seqMu)
	hctx, cancel := context.WithTimeout(ctx, StartTimeout)
	hello, err := c.rpc.Hello(hctx, &pb.HelloReq{})
	silent := errors.Is(hctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	if err != nil {
		c.kill()
		if ctx.Err() != nil {
			return nil, abandoned(ctx, p.e.Name)
		}
		if silent {
			return nil, fail(fmt.Errorf("it did not answer its first call within %v and was killed", StartTimeout), true)
		}
		return nil, fail(fmt.Errorf("the plugin did not answer: %w", err), false)
	}
	c.version, c.pid = hello.Version, int(hello.Pid)
	if err := c.setupRings(); err != nil {
		c.kill()
		return nil, fail(err, false)
	}
	if err := c.startEvents(); err != nil {
		c.kill()
		return nil, fail(err, false)
	}
	return c, nil
}

// checkExe hashes the open executable and compares the sum with the
// configuration's.
func (p *Provider) checkExe(f *os.File) error {
	sum, err := hashExe(f)
	if err != nil {
		return err
	}
	return p.checkSum(sum)
}

// abandoned is the error of a start the caller's context ended.
func abandoned(ctx context.Context, name string) error {
	e := api.ContextError(ctx)
	e.Msg = fmt.Sprintf("plugin %q: its start was abandoned", name)
	return e
}

// explainStart turns go-plugin's start errors into the reasons a user
// reads; stderr is the last line the plugin wrote there, if any.
func explainStart(err error, stderr string) error {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	said := ""
	if stderr != "" {
		said = fmt.Sprintf(" (it said: %q)", stderr)
	}
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "incompatible api version"):
		return fmt.Errorf("it speaks another plugin protocol version than this godat, which speaks %d (%s); rebuild it against this godat", wire.ProtocolVersion, msg)
	case strings.Contains(low, "exited before we could connect"), strings.Contains(low, "plugin exited"),
		strings.Contains(low, "unrecognized remote plugin message"):
		return fmt.Errorf("it exited during the handshake%s without speaking the plugin protocol; is it a godat provider plugin that calls plugin.Serve?", said)
	case strings.Contains(low, "timeout while waiting for plugin to start"):
		return fmt.Errorf("it did not complete the handshake within %v%s and was killed", StartTimeout, said)
	}
	return fmt.Errorf("starting it failed: %s%s", msg, said)
}

// tailWriter keeps the last line a plugin wrote to its standard error.
type tailWriter struct {
	mu   sync.Mutex
	line string
}

func (w *tailWriter) Write(b []byte) (int, error) {
	if s := strings.TrimSpace(string(b)); s != "" {
		if len(s) > 200 {
			s = s[:200] + "..."
		}
		w.mu.Lock()
		w.line = s
		w.mu.Unlock()
	}
	return len(b), nil
}

func (w *tailWriter) last() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.line
}

// runningPlugin is a running plugin process and the host's connections to
// it (gRPC, the control socket, the shared rings).
type runningPlugin struct {
	prov     *Provider
	client   *goplugin.Client
	rpc      pb.ProviderClient
	proc     *procRunner
	ctl      *hostCtl
	pid      int
	version  string
	protocol int

	evCancel  context.CancelFunc
	watchDone chan struct{} // the liveness stream ended
	pumpDone  chan struct{} // the completion pump ended
	crashDone chan struct{} // closed when a crash has been dealt with

	// The data path (shm.go).
	ringsP         *atomic.Pointer[wire.Rings]
	ringMem        *api.Memory
	sqBell, cqBell *wire.Bell
	cqMu           sync.Mutex // one reader of the completion ring at a time
	rec            wire.Event // scratch record, under cqMu
	ringsGone      bool       // under cqMu: the region is unmapped
	postByCall     bool       // no post takes the submission ring (testPostByCall)
	stopping       atomic.Bool
	dead           atomic.Bool
	corrupt        atomic.Bool // the plugin broke the ring protocol
	deadErr        atomic.Pointer[api.Error]

	mu      sync.Mutex // objs, ias, opening
	objs    map[uint64]proxy
	ias     []*proxyIA
	opening int // Opens under way (guarded by prov.mu)

	seqMu     sync.Mutex
	seqCond   *sync.Cond
	processed uint64

	refusals sync.WaitGroup // Rejects of requests their host queue had no room for (refuse)

	memMu   sync.Mutex
	mems    map[*api.Memory]*sharedMem
	nextMem uint64
}

// sharedMem is a host region mapped into the plugin.
type sharedMem struct {
	id   uint64
	refs int
}

func (c *runningPlugin) iaCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ias)
}

// idleLocked reports that no IA is open or opening. prov.mu is held.
func (c *runningPlugin) idleLocked() bool { return c.opening == 0 && c.iaCount() == 0 }

// stop ends a process that serves no IA: the Watch stream first (the
// server would otherwise wait for it), then the process, then the control
// socket. It returns once the process is reaped.
func (c *runningPlugin) stop() {
	c.stopping.Store(true)
	c.evCancel()
	<-c.watchDone
	c.kill()
}

// kill ends the process and releases what the host holds for it: the
// process is reaped, the completion pump has read the last record.
func (c *runningPlugin) kill() {
	c.endProcess()
	c.dead.Store(true)
	if c.cqBell != nil {
		c.cqBell.Close()
		if c.pumpDone != nil {
			<-c.pumpDone
		}
	}
	c.ctl.close()
	c.seqMu.Lock()
	c.seqCond.Broadcast()
	c.seqMu.Unlock()
	c.refusals.Wait()
	c.releaseRings()
}

// endProcess stops the plugin process and everything it started, and
// returns once they are reaped.
func (c *runningPlugin) endProcess() {
	c.client.Kill()
	c.proc.release()
}

// releaseRings frees the data-path region once nothing can use it: the
// process is dead and no IA of it is open (a crashed plugin's IAs may
// still be posting until they are closed).
func (c *runningPlugin) releaseRings() {
	if !c.dead.Load() || c.iaCount() > 0 {
		return
	}
	c.cqMu.Lock()
	defer c.cqMu.Unlock()
	if c.ringsGone || c.ringMem == nil {
		return
	}
	c.ringsGone = true
	c.ringsP.Store(nil)
	c.sqBell.Close()
	c.ringMem.Free()
}

// setupRings makes the data-path region and doorbells and hands them to
// the plugin.
func (c *runningPlugin) setupRings() error {
	m, err := api.AllocMemory(wire.ShmSize)
	if err != nil {
		return err
	}
	sq, err := wire.NewBell()
	if err != nil {
		m.Free()
		return err
	}
	cq, err := wire.NewBell()
	if err != nil {
		m.Free()
		sq.Close()
		return err
	}
	r := wire.NewRings(m.Bytes())
	r.SQInit()
	if err := c.ctl.call(wire.CtlMsg{Op: wire.CtlRings, A: wire.ShmSize, B: uint64(api.AddrOf(m.Bytes()))}, m.FD(), sq.FD(), cq.FD()); err != nil {
		m.Free()
		sq.Close()
		cq.Close()
		return fmt.Errorf("setting up the shared rings: %w", err)
	}
	c.ringMem, c.sqBell, c.cqBell = m, sq, cq
	c.ringsP.Store(r)
	return nil
}

// fenceCalls makes every control call carry the number of submissions the
// host has made, which the plugin executes before the call.
func fenceCalls(rp *atomic.Pointer[wire.Rings]) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if r := rp.Load(); r != nil {
			if n := r.Submitted(); n > 0 {
				ctx = metadata.AppendToOutgoingContext(ctx, wire.FenceKey, strconv.FormatUint(n, 10))
			}
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// gone is the error of every call once the plugin process is gone.
func (c *runningPlugin) gone() error {
	if e := c.deadErr.Load(); e != nil {
		return e
	}
	return api.Errorf(api.InternalError, api.NoSubtype, fmt.Sprintf("plugin %q (pid %d) is not running", c.prov.e.Name, c.pid))
}

// rpcErr converts a transport error of a call.
func (c *runningPlugin) rpcErr(err error) error {
	if c.dead.Load() || c.stopping.Load() {
		return c.gone()
	}
	return api.Errorf(api.InternalError, api.NoSubtype, fmt.Sprintf("plugin %q: %v", c.prov.e.Name, err))
}

// waitSeq returns once the events the plugin sent up to seq are on the
// host's queues, or the plugin is gone.
func (c *runningPlugin) waitSeq(seq uint64) {
	c.seqMu.Lock()
	for c.processed < seq && !c.dead.Load() {
		c.seqCond.Wait()
	}
	c.seqMu.Unlock()
}

// done finishes a call: the transport error or the DAT error of the reply,
// after the reply's events are queued.
func (c *runningPlugin) done(r interface {
	GetErr() *pb.Err
	GetSeq() uint64
}, err error) error {
	if err != nil {
		return c.rpcErr(err)
	}
	c.waitSeq(r.GetSeq())
	return wire.ErrFromPB(r.GetErr())
}

// --- memory ---

// share makes m available to the plugin (mapped at the same address) and
// returns its id; every share is matched by an unshare.
func (c *runningPlugin) share(m *api.Memory) (uint64, error) {
	c.memMu.Lock()
	defer c.memMu.Unlock()
	if s := c.mems[m]; s != nil {
		s.refs++
		return s.id, nil
	}
	c.nextMem++
	id := c.nextMem
	b := m.Bytes()
	if err := c.ctl.call(wire.CtlMsg{Op: wire.CtlMap, ID: id, A: uint64(len(b)), B: uint64(api.AddrOf(b))}, m.FD()); err != nil {
		if c.dead.Load() {
			return 0, c.gone()
		}
		return 0, api.Errorf(api.InsufficientResources, api.SubResourceMemory, "sharing LMR memory with the plugin: "+err.Error())
	}
	c.mems[m] = &sharedMem{id: id, refs: 1}
	return id, nil
}

func (c *runningPlugin) unshare(m *api.Memory) {
	if m == nil {
		return
	}
	c.memMu.Lock()
	defer c.memMu.Unlock()
	s := c.mems[m]
	if s == nil {
		return
	}
	if s.refs--; s.refs > 0 {
		return
	}
	delete(c.mems, m)
	if !c.dead.Load() {
		c.ctl.call(wire.CtlMsg{Op: wire.CtlUnmap, ID: s.id}, -1)
	}
}
