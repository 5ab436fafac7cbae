package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// minWindow is the smallest RDMA window a server session exposes; the
// validated sequence uses its first 96 KiB.
const minWindow = 128 << 10

// maxIOVPrepSegs bounds the segments an IOV_PREP may ask the next receive
// to have.
const maxIOVPrepSegs = 64

// serverConfig configures serve.
type serverConfig struct {
	reg     *registry.Registry
	ia      string // IA name; "" for openNode's pick
	port    uint64 // connection qualifier; 0 for any free one
	rawPort int    // TCP port of the raw baseline; 0 for any free one
	// maxSessions is how many DAT sessions, and raw baseline connections,
	// are served at once (-max-sessions; 0 for defaultMaxSessions).
	maxSessions int
	// idle drops a session or raw connection whose peer sends nothing for
	// this long (-idle-timeout); 0: never.
	idle time.Duration
	// busyWait is how long a connection request waits for a free session
	// (0 for the constant busyWait).
	busyWait time.Duration
	out      io.Writer             // one line when ready, one per session
	diag     io.Writer             // notes for people (may be nil)
	ready    func(info serverInfo) // called once the server listens (may be nil)
}

// serverInfo says where a server listens.
type serverInfo struct {
	IA       string
	Addr     net.Addr // the IA's address
	ConnQual api.ConnQual
	Raw      *net.TCPAddr // the raw TCP baseline listener
	ia       api.IA       // the IA itself, for a caller in this process
}

// readyLine is the first line a server prints; the demo parses it.
func (si serverInfo) readyLine() string {
	addr := "-"
	if si.Addr != nil {
		addr = si.Addr.String()
	}
	return fmt.Sprintf("dattest: serving IA %s at %s on port %d (raw TCP baseline on %s)", si.IA, addr, si.ConnQual, si.Raw)
}

// serve runs the server until ctx ends, serving up to cfg.maxSessions
// clients at once, and frees everything before it returns. It returns nil
// after a clean shutdown.
func serve(ctx context.Context, cfg serverConfig) (err error) {
	if cfg.maxSessions <= 0 {
		cfg.maxSessions = defaultMaxSessions
	}
	if cfg.busyWait <= 0 {
		cfg.busyWait = busyWait
	}
	n, err := openNode(ctx, cfg.reg, cfg.ia)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, n.close()) }()

	crEVD, err := n.ia.CreateEVD(cmEVDQLen, nil, api.EVDCR)
	if err != nil {
		return fmt.Errorf("CreateEVD: %w", err)
	}
	defer func() { err = errors.Join(err, crEVD.Free()) }()
	var psp api.PSP
	q := api.ConnQual(cfg.port)
	if cfg.port == 0 {
		psp, q, err = n.ia.CreatePSPAny(crEVD, api.PSPConsumer)
	} else {
		psp, err = n.ia.CreatePSP(q, crEVD, api.PSPConsumer)
	}
	if err != nil {
		return fmt.Errorf("creating a PSP on port %d: %w", cfg.port, err)
	}
	defer func() { err = errors.Join(err, psp.Free()) }()

	out := &lineWriter{w: cfg.out}
	raw, err := startRawServer(rawListenAddr(n.attr.Address, cfg.rawPort), cfg.maxSessions, cfg.idle, out.line)
	if err != nil {
		return err
	}
	defer raw.stop()
	// Every session ends (cancel, then wait) before the raw server, the
	// PSP, the EVD and the IA go.
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	info := serverInfo{IA: n.name, Addr: n.attr.Address, ConnQual: q, Raw: raw.addr(), ia: n.ia}
	if _, ip := ipAddr(n.attr.Address); !ip && n.attr.Address != nil && cfg.diag != nil {
		fmt.Fprintf(cfg.diag, "dattest: note: IA %s has %s addresses, not IP addresses: only clients in this process can reach it\n",
			n.name, n.attr.Address.Network())
	}
	out.line(info.readyLine())
	if cfg.ready != nil {
		cfg.ready(info)
	}
	// A request holds a handler while it waits for a session and while
	// its session runs; a session holds a slot. Requests beyond the
	// handlers are rejected at once, so that a flood of them costs no
	// more than maxSessions waiting goroutines.
	slots := make(chan struct{}, cfg.maxSessions)
	handlers := make(chan struct{}, 2*cfg.maxSessions)
	busy := fmt.Sprintf("server busy (%d sessions), try later", cfg.maxSessions)
	var ev api.Event
	for seq := 1; ; seq++ {
		if _, err := crEVD.Wait(ctx, 1, &ev); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("waiting for connection requests: %w", err)
		}
		if ev.Number != api.ConnectionRequestEvent {
			continue
		}
		cr := ev.CR.CR
		select {
		case handlers <- struct{}{}:
		default:
			out.line(rejectCR(cr, seq, busy))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-handlers }()
			if !acquire(sctx, slots, cfg.busyWait) {
				why := busy
				if sctx.Err() != nil {
					why = "server shutting down"
				}
				out.line(rejectCR(cr, seq, why))
				return
			}
			defer func() { <-slots }()
			out.line(runSession(sctx, n, cr, seq, raw.port(), cfg.idle))
		}()
	}
}

// acquire takes a slot, waiting up to d for one; false if none came free
// or ctx ended.
func acquire(ctx context.Context, slots chan struct{}, d time.Duration) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// lineWriter writes whole lines from any goroutine.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.w, s)
}

// crFrom names the client of a connection request for the log.
func crFrom(cr api.CR) (api.CRParam, string, error) {
	prm, err := cr.Query()
	from := "?"
	if err == nil && prm.RemoteAddr != nil {
		from = prm.RemoteAddr.String()
	}
	return prm, from, err
}

// rejectCR rejects a connection request, telling the client why (in a
// REJECT message, cut to 40 bytes of text to fit a provider's private
// data), and returns a line for the log.
func rejectCR(cr api.CR, seq int, why string) string {
	_, from, _ := crFrom(cr)
	cr.Reject(newMsg(kindReject).text(tagText, truncate(why, 40)).marshal())
	return fmt.Sprintf("session %d from %s: rejected: %s", seq, from, why)
}

// runSession accepts (or rejects) one connection request, serves it until
// the peer leaves, sends nothing for idle (0: no limit) or ctx ends, frees
// it, and returns a line for the log.
// welcomeMsg is the private data of the server's accept. The idle hint is
// optional: where the provider's private data is too short for it (verbs
// on RoCE takes 54 bytes), the welcome goes without.
func welcomeMsg(nonce uint64, rawPort int, idle time.Duration, limit int) []byte {
	m := newMsg(kindWelcome).u64(tagNonce, nonce).u64(tagStatus, 0).u64(tagRawPort, uint64(rawPort))
	if b := m.u64(tagIdle, uint64(idle.Milliseconds())).marshal(); len(b) <= limit {
		return b
	}
	return newMsg(kindWelcome).u64(tagNonce, nonce).u64(tagStatus, 0).u64(tagRawPort, uint64(rawPort)).marshal()
}

func runSession(ctx context.Context, n *node, cr api.CR, seq int, rawPort int, idle time.Duration) string {
	prm, from, err := crFrom(cr)
	prefix := fmt.Sprintf("session %d from %s", seq, from)
	if err != nil {
		cr.Reject(nil)
		return prefix + ": CR.Query: " + err.Error()
	}
	hello, herr := decode(prm.PrivateData)
	if herr == nil && hello.kind != kindHello {
		herr = fmt.Errorf("private data is a %s message, not HELLO", kindName(hello.kind))
	}
	var nonce, maxSize uint64
	if herr == nil {
		nonce, herr = hello.get(tagNonce)
	}
	if herr == nil {
		maxSize = hello.getOr(tagMaxSize, 0)
		if maxSize > maxBenchSize {
			herr = fmt.Errorf("benchmark size %d exceeds the server's limit of %d", maxSize, maxBenchSize)
		}
	}
	if herr != nil {
		rejectCR(cr, seq, herr.Error())
		return prefix + ": rejected: " + herr.Error()
	}
	s, err := newSession(n, int(maxSize))
	if err != nil {
		rejectCR(cr, seq, "server out of resources")
		return prefix + ": rejected: " + err.Error()
	}
	s.kind = hello.getOr(tagSession, sessionCheck)
	prefix += " (" + sessionName(s.kind) + ")"
	defer s.free()

	if err := s.postRecv(nil); err != nil {
		cr.Reject(nil)
		return prefix + ": " + err.Error()
	}
	if err := cr.Accept(s.ep, welcomeMsg(nonce, rawPort, idle, n.pattr.MaxPrivateDataSize)); err != nil {
		return prefix + ": Accept: " + err.Error()
	}
	ev, err := s.cmEvent(ctx, connectTimeout)
	if err != nil {
		return prefix + ": waiting for the connection: " + err.Error()
	}
	if ev.Number != api.ConnectionEstablishedEvent {
		return prefix + ": connection " + ev.Number.String()
	}
	s.refresh()
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.idle = watchIdle(idle, func() { cancel(errIdle) })
	err = s.loop(sctx)
	s.idle.stop()
	end := fmt.Sprintf("%s: %d requests, ", prefix, s.nreq)
	switch {
	case err != nil && context.Cause(sctx) == errIdle:
		return end + fmt.Sprintf("dropped: idle for %v (-idle-timeout)", idle)
	case ctx.Err() != nil:
		return end + "ended by shutdown"
	case err != nil:
		return end + "failed: " + err.Error()
	}
	ev, cerr := s.cmEvent(ctx, connectTimeout)
	switch {
	case cerr != nil:
		return end + "receive flushed"
	case ev.Number == api.ConnectionBrokenEvent && s.kind == sessionStale:
		return end + "connection BROKEN, as the stale-context check expects"
	}
	return end + "connection " + ev.Number.String()
}
