package plugin

// The host side: the registry's PluginHost, one provider per [[plugin]]
// table, and the running plugin process behind it.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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
	pb "github.com/godat/godat/plugin/proto"
	"github.com/godat/godat/registry"
)

func init() { registry.RegisterPluginHost(host{}) }

// StartTimeout bounds the start of a plugin process: from exec to the end
// of the handshake. A plugin that has not answered by then is killed and
// its IAs are unavailable for this Open.
var StartTimeout = 10 * time.Second

// EnvLog names the environment variable that sets the level of the
// messages the host logs about its plugins (and relays from their standard
// error): trace, debug, info, warn (the default), error or off.
const EnvLog = "GODAT_PLUGIN_LOG"

type host struct{}

func (host) Provider(e registry.PluginEntry) registry.PluginProvider {
	return &Provider{e: e}
}

// Provider is the api.Provider of one [[plugin]] table: Open starts the
// plugin process if it is not running and opens an IA in it. The process
// is shared by every IA opened through the Provider and stops when the last
// of them is closed.
type Provider struct {
	e registry.PluginEntry

	mu       sync.Mutex
	conn     *conn // the running process, or nil
	version  string
	protocol int
	reason   string // why the last start failed or the last process ended

	sumMu sync.Mutex // Check runs with or without mu held
	sum   sumCache
}

// sumCache remembers the checksum of the executable while it does not
// change.
type sumCache struct {
	size int64
	mod  time.Time
	sum  string
}

// Check reports why the plugin cannot be started, without starting it.
func (p *Provider) Check() error {
	st, err := os.Stat(p.e.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("executable %s does not exist", p.e.Path)
	case err != nil:
		return fmt.Errorf("executable %s: %w", p.e.Path, err)
	case st.IsDir():
		return fmt.Errorf("executable %s is a directory", p.e.Path)
	case st.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable (mode %v)", p.e.Path, st.Mode().Perm())
	}
	if p.e.SHA256 == "" {
		return nil
	}
	p.sumMu.Lock()
	defer p.sumMu.Unlock()
	c := p.sum
	if c.sum == "" || c.size != st.Size() || !c.mod.Equal(st.ModTime()) {
		f, err := os.Open(p.e.Path)
		if err != nil {
			return fmt.Errorf("executable %s: %w", p.e.Path, err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("reading %s: %w", p.e.Path, err)
		}
		c = sumCache{size: st.Size(), mod: st.ModTime(), sum: hex.EncodeToString(h.Sum(nil))}
		p.sum = c
	}
	if c.sum != p.e.SHA256 {
		return fmt.Errorf("%s has sha256 %s but the configuration (%s) expects %s; refusing to run it", p.e.Path, c.sum, p.e.Pos, p.e.SHA256)
	}
	return nil
}

// Status describes the plugin and its process.
func (p *Provider) Status() registry.PluginStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := registry.PluginStatus{Name: p.e.Name, Path: p.e.Path, Version: p.version, Protocol: p.protocol,
		State: "stopped", Reason: p.reason}
	if c := p.conn; c != nil && !c.dead.Load() {
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
// ErrProviderNotFound and the reason.
func (p *Provider) Open(ctx context.Context, op api.OpenParams) (api.IA, error) {
	if ctx.Err() != nil {
		return nil, api.ContextError(ctx)
	}
	p.mu.Lock()
	c := p.conn
	if c == nil || c.dead.Load() {
		if err := p.Check(); err != nil {
			p.reason = err.Error()
			p.mu.Unlock()
			return nil, p.unavailable("%v", err)
		}
		var err error
		c, err = p.start(ctx)
		if err != nil {
			p.reason = err.Error()
			p.mu.Unlock()
			return nil, p.unavailable("%v", err)
		}
		p.conn, p.version, p.protocol, p.reason = c, c.version, c.protocol, ""
	}
	c.opening++
	p.mu.Unlock()

	ia, err := c.openIA(ctx, op)

	p.mu.Lock()
	c.opening--
	stop := c.idleLocked() && p.conn == c
	if stop {
		p.conn = nil
	}
	p.mu.Unlock()
	if stop {
		c.stop()
	}
	if err != nil {
		return nil, err
	}
	return ia, nil
}

// released is called when an IA of c is closed (or lost): the last one
// stops the process.
func (p *Provider) released(c *conn) {
	p.mu.Lock()
	stop := c.idleLocked() && p.conn == c
	if stop {
		p.conn = nil
	}
	p.mu.Unlock()
	if stop {
		c.stop()
		return
	}
	c.releaseRings()
}

// lost records that the process of c ended on its own.
func (p *Provider) lost(c *conn, why string) {
	p.mu.Lock()
	if p.conn == c {
		p.conn = nil
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

// start runs the plugin executable and completes the handshake.
func (p *Provider) start(ctx context.Context) (*conn, error) {
	hostEnd, child, err := ctlPair()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(p.e.Path, p.e.Args...)
	cmd.Env = append(append(os.Environ(), p.e.Env...), EnvCtlFD+"=3")
	cmd.ExtraFiles = []*os.File{child}
	timeout := StartTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = max(time.Until(d), time.Millisecond)
	}
	tail := &tailWriter{}
	rp := new(atomic.Pointer[rings])
	client := goplugin.NewClient(&goplugin.ClientConfig{
		GRPCDialOptions:  []grpc.DialOption{grpc.WithUnaryInterceptor(fenceCalls(rp))},
		Stderr:           tail,
		HandshakeConfig:  Handshake,
		VersionedPlugins: pluginSets(nil),
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		StartTimeout:     timeout,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name: "godat-plugin." + p.e.Name, Level: logLevel(), Output: os.Stderr,
		}),
	})
	rpcClient, err := client.Client()
	child.Close() // the child has its copy, or never will
	if err != nil {
		client.Kill()
		hostEnd.Close()
		return nil, explainStart(err, tail.last())
	}
	raw, err := rpcClient.Dispense(pluginName)
	if err != nil {
		client.Kill()
		hostEnd.Close()
		return nil, fmt.Errorf("the plugin offers no provider: %w", err)
	}
	c := &conn{prov: p, client: client, rpc: raw.(pb.ProviderClient), ctl: &hostCtl{c: hostEnd},
		protocol: client.NegotiatedVersion(), objs: map[uint64]hobj{}, mems: map[*api.Memory]*sharedMem{},
		crashDone: make(chan struct{}), ringsP: rp}
	c.seqCond = sync.NewCond(&c.seqMu)
	hctx, cancel := context.WithTimeout(ctx, timeout)
	hello, err := c.rpc.Hello(hctx, &pb.HelloReq{})
	cancel()
	if err != nil {
		c.kill()
		return nil, fmt.Errorf("the plugin did not answer: %w", err)
	}
	c.version, c.pid = hello.Version, int(hello.Pid)
	if err := c.setupRings(); err != nil {
		c.kill()
		return nil, err
	}
	if err := c.startEvents(); err != nil {
		c.kill()
		return nil, err
	}
	return c, nil
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
		return fmt.Errorf("it speaks another plugin protocol version than this godat, which speaks %d (%s); rebuild it against this godat", ProtocolVersion, msg)
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

// conn is a running plugin process.
type conn struct {
	prov     *Provider
	client   *goplugin.Client
	rpc      pb.ProviderClient
	ctl      *hostCtl
	pid      int
	version  string
	protocol int

	evCancel  context.CancelFunc
	watchDone chan struct{} // the liveness stream ended
	pumpDone  chan struct{} // the completion pump ended
	crashDone chan struct{} // closed when a crash has been dealt with

	// The data path (shm.go).
	ringsP         *atomic.Pointer[rings]
	ringMem        *api.Memory
	sqBell, cqBell *bell
	cqMu           sync.Mutex // one reader of the completion ring at a time
	rec            event      // scratch record, under cqMu
	ringsGone      bool       // under cqMu: the region is unmapped
	stopping       atomic.Bool
	dead           atomic.Bool
	corrupt        atomic.Bool // the plugin broke the ring protocol
	deadErr        atomic.Pointer[api.Error]

	mu      sync.Mutex // objs, ias, opening
	objs    map[uint64]hobj
	ias     []*hIA
	opening int // Opens under way (guarded by prov.mu)

	seqMu     sync.Mutex
	seqCond   *sync.Cond
	processed uint64

	memMu   sync.Mutex
	mems    map[*api.Memory]*sharedMem
	nextMem uint64
}

// sharedMem is a host region mapped into the plugin.
type sharedMem struct {
	id   uint64
	refs int
}

func (c *conn) iaCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ias)
}

// idleLocked reports that no IA is open or opening. prov.mu is held.
func (c *conn) idleLocked() bool { return c.opening == 0 && c.iaCount() == 0 }

// stop ends a process that serves no IA: the Watch stream first (the
// server would otherwise wait for it), then the process, then the control
// socket. It returns once the process is reaped.
func (c *conn) stop() {
	c.stopping.Store(true)
	c.evCancel()
	<-c.watchDone
	c.kill()
}

// kill ends the process and releases what the host holds for it: the
// process is reaped, the completion pump has read the last record.
func (c *conn) kill() {
	c.client.Kill()
	c.dead.Store(true)
	if c.cqBell != nil {
		c.cqBell.close()
		if c.pumpDone != nil {
			<-c.pumpDone
		}
	}
	c.ctl.close()
	c.seqMu.Lock()
	c.seqCond.Broadcast()
	c.seqMu.Unlock()
	c.releaseRings()
}

// releaseRings frees the data-path region once nothing can use it: the
// process is dead and no IA of it is open (a crashed plugin's IAs may
// still be posting until they are closed).
func (c *conn) releaseRings() {
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
	c.sqBell.close()
	c.ringMem.Free()
}

// setupRings makes the data-path region and doorbells and hands them to
// the plugin.
func (c *conn) setupRings() error {
	m, err := api.AllocMemory(shmSize)
	if err != nil {
		return err
	}
	sq, err := newBell()
	if err != nil {
		m.Free()
		return err
	}
	cq, err := newBell()
	if err != nil {
		m.Free()
		sq.close()
		return err
	}
	r := newRings(m.Bytes())
	r.sqInit()
	if err := c.ctl.call(ctlMsg{op: ctlRings, a: shmSize, b: uint64(api.AddrOf(m.Bytes()))}, m.FD(), sq.fd, cq.fd); err != nil {
		m.Free()
		sq.close()
		cq.close()
		return fmt.Errorf("setting up the shared rings: %w", err)
	}
	c.ringMem, c.sqBell, c.cqBell = m, sq, cq
	c.ringsP.Store(r)
	return nil
}

// fenceCalls makes every control call carry the number of submissions the
// host has made, which the plugin executes before the call.
func fenceCalls(rp *atomic.Pointer[rings]) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if r := rp.Load(); r != nil {
			if n := r.submitted(); n > 0 {
				ctx = metadata.AppendToOutgoingContext(ctx, fenceKey, strconv.FormatUint(n, 10))
			}
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// gone is the error of every call once the plugin process is gone.
func (c *conn) gone() error {
	if e := c.deadErr.Load(); e != nil {
		return e
	}
	return api.Errorf(api.InternalError, api.NoSubtype, fmt.Sprintf("plugin %q (pid %d) is not running", c.prov.e.Name, c.pid))
}

// rpcErr converts a transport error of a call.
func (c *conn) rpcErr(err error) error {
	if c.dead.Load() || c.stopping.Load() {
		return c.gone()
	}
	return api.Errorf(api.InternalError, api.NoSubtype, fmt.Sprintf("plugin %q: %v", c.prov.e.Name, err))
}

// waitSeq returns once the events the plugin sent up to seq are on the
// host's queues, or the plugin is gone.
func (c *conn) waitSeq(seq uint64) {
	c.seqMu.Lock()
	for c.processed < seq && !c.dead.Load() {
		c.seqCond.Wait()
	}
	c.seqMu.Unlock()
}

// done finishes a call: the transport error or the DAT error of the reply,
// after the reply's events are queued.
func (c *conn) done(r interface {
	GetErr() *pb.Err
	GetSeq() uint64
}, err error) error {
	if err != nil {
		return c.rpcErr(err)
	}
	c.waitSeq(r.GetSeq())
	return errFromPB(r.GetErr())
}

// --- memory ---

// share makes m available to the plugin (mapped at the same address) and
// returns its id; every share is matched by an unshare.
func (c *conn) share(m *api.Memory) (uint64, error) {
	c.memMu.Lock()
	defer c.memMu.Unlock()
	if s := c.mems[m]; s != nil {
		s.refs++
		return s.id, nil
	}
	c.nextMem++
	id := c.nextMem
	b := m.Bytes()
	if err := c.ctl.call(ctlMsg{op: ctlMap, id: id, a: uint64(len(b)), b: uint64(api.AddrOf(b))}, m.FD()); err != nil {
		if c.dead.Load() {
			return 0, c.gone()
		}
		return 0, api.Errorf(api.InsufficientResources, api.SubResourceMemory, "sharing LMR memory with the plugin: "+err.Error())
	}
	c.mems[m] = &sharedMem{id: id, refs: 1}
	return id, nil
}

func (c *conn) unshare(m *api.Memory) {
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
		c.ctl.call(ctlMsg{op: ctlUnmap, id: s.id}, -1)
	}
}
