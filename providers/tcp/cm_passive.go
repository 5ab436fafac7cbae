package tcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/connreq"
)

// listener is what PSPs and RSPs share: a TCP listener and its accept
// goroutine.
type listener struct {
	ln      *net.TCPListener
	qual    api.ConnQual
	stopped bool
	done    chan struct{} // closed by stop: ends the accept goroutine's pause
}

// stop closes the listener and ends its accept goroutine. ia.mu is held.
func (l *listener) stop() {
	if !l.stopped {
		l.stopped = true
		close(l.done)
		_ = l.ln.Close()
	}
}

// listen opens a TCP listener on port q of the IA's address. ia.mu is held.
func (i *ia) listen(q api.ConnQual) (listener, error) {
	if i.Closed() {
		return listener{}, kit.ErrIAClosed // (the guard refuses it first; this is for callers without the guard: no listener may outlive the IA)
	}
	if q > maxConnQual {
		return listener{}, api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("connection qualifier %d is not a TCP port", q))
	}
	// No keepalive of Go's on accepted sockets: the IA's options decide
	// (applyToConn). Plain TCP only (Go would listen for Multipath TCP
	// too), so that those options apply to every accepted socket.
	lc := net.ListenConfig{KeepAlive: -1}
	lc.SetMultipathTCP(false)
	l, err := lc.Listen(context.Background(), "tcp", (&net.TCPAddr{IP: i.ip, Port: int(q)}).String())
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			if q == 0 {
				// The kernel found no free port (CreatePSPAny,
				// CreateRSP... with 0): none is available.
				return listener{}, &api.Error{Type: api.ConnQualUnavailable, Msg: "no free TCP port on " + i.ip.String(), Cause: err}
			}
			return listener{}, api.Errorf(api.ConnQualInUse, api.NoSubtype, fmt.Sprintf("connection qualifier %d is in use", q))
		}
		return listener{}, &api.Error{Type: api.ConnQualUnavailable, Msg: fmt.Sprintf("listening on %d", q), Cause: err}
	}
	ln := l.(*net.TCPListener)
	return listener{ln: ln, qual: api.ConnQual(ln.Addr().(*net.TCPAddr).Port), done: make(chan struct{})}, nil
}

// servicePoint is a PSP or RSP: it takes the requests its listener accepts.
type servicePoint interface {
	// arrive delivers a request; false means it cannot be taken (the
	// service point stopped, or its EVD is full). ia.mu is held.
	arrive(pr *pendingReq) bool
	// port is the connection qualifier.
	port() api.ConnQual
}

// serve starts sp's accept goroutine on l, which the IA's wait group
// counts until the listener is stopped. ia.mu is held.
func (i *ia) serve(l *listener, sp servicePoint) {
	i.wg.Add(1)
	go i.acceptLoop(l, sp)
}

// acceptLoop is a service point's accept goroutine; it ends when the
// listener is stopped (listener.stop). A failed accept is tried again
// after a pause, as net/http's server does: its causes pass (no file
// descriptor or buffer free; a network error of the connection being
// accepted, which Linux reports from accept), and meanwhile requesters
// queue up on the listener, which stays open, so a goroutine that gave up
// would leave them unanswered for ever.
func (i *ia) acceptLoop(l *listener, sp servicePoint) {
	defer i.wg.Done()
	ln, done := l.ln, l.done // (read-only once listening: no lock)
	var pause time.Duration
	for {
		nc, err := ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if testHookAcceptErr != nil {
				testHookAcceptErr(sp.port(), err)
			}
			pause = min(max(2*pause, acceptRetryMin), acceptRetryMax)
			t := time.NewTimer(pause)
			select {
			case <-done:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		pause = 0
		if err := i.opts.applyToConn(nc); err != nil {
			_ = nc.Close() // the requester sees the connection end
			continue
		}
		i.mu.Lock()
		if i.Closed() {
			i.mu.Unlock()
			_ = nc.Close()
			return
		}
		if i.handshakes >= maxHandshakes {
			i.mu.Unlock()
			_ = nc.Close() // the requester sees the connection end
			continue
		}
		i.handshakes++
		c := newConn(i)
		c.nc = nc
		c.goRun(func() { c.passive(sp) })
		i.mu.Unlock()
	}
}

// pendingReq is a connection request waiting for the consumer's decision.
// Handoff moves it from one CR to another.
type pendingReq struct {
	c        *conn
	cr       *cr
	decided  chan struct{} // closed once decision is set
	decision uint16        // hsAccept, hsReject or hsNonPeer
	pd       []byte        // the private data of the answer
}

// decide records the answer to the request and wakes its goroutine.
// ia.mu is held.
func (pr *pendingReq) decide(d uint16, pd []byte) {
	if pr.decision != 0 {
		return
	}
	pr.decision, pr.pd = d, bytes.Clone(pd)
	close(pr.decided)
}

// passive is the passive side's connection goroutine: it reads the HELLO,
// delivers the request, waits for the consumer's answer, and after an
// accept becomes the reader.
func (c *conn) passive(sp servicePoint) {
	nc := c.nc
	_ = nc.SetDeadline(time.Now().Add(hsTimeout))
	m, pd, err := c.readHS()
	c.ia.mu.Lock()
	c.ia.handshakes--
	c.ia.mu.Unlock()
	if errors.Is(err, errBadVersion) {
		var b [hsLen]byte
		encodeHS(b[:], &hsMsg{Version: wireVersion, Type: hsVersion})
		_, _ = nc.Write(b[:])
	}
	if err != nil || m.Type != hsHello {
		_ = nc.Close()
		return
	}
	c.hs, c.pd = m, bytes.Clone(pd)
	pr := &pendingReq{c: c, decided: make(chan struct{})}
	c.pr = pr
	mu := &c.ia.mu
	mu.Lock()
	if !sp.arrive(pr) {
		pr.decide(hsNonPeer, nil)
	}
	mu.Unlock()
	<-pr.decided
	mu.Lock()
	d, out := pr.decision, c.out
	mu.Unlock()
	b := c.hsbuf[:]
	switch d {
	case hsAccept:
		out.PDLen = uint16(len(pr.pd))
		encodeHS(b, &out)
		copy(b[hsLen:], pr.pd)
		_ = nc.SetDeadline(time.Now().Add(hsTimeout))
		_, err = nc.Write(b[:hsLen+len(pr.pd)])
		var r hsMsg
		if err == nil {
			r, _, err = c.readHS()
		}
		mu.Lock()
		p := c.ep
		if err != nil || r.Type != hsReady || c.aborted || p.c != c || p.State != api.EPCompletionPending {
			if p.c == c && p.State == api.EPCompletionPending {
				p.toDisconnected(api.ConnectionAcceptCompletionErrorEvent, nil)
			}
			mu.Unlock()
			_ = nc.Close()
			return
		}
		c.establish(p, nil)
		return
	case hsReject:
		encodeHS(b, &hsMsg{Version: wireVersion, Type: hsReject, PDLen: uint16(len(pr.pd))})
		copy(b[hsLen:], pr.pd)
		_ = nc.SetDeadline(time.Now().Add(finalTimeout))
		_, _ = nc.Write(b[:hsLen+len(pr.pd)])
	default:
		encodeHS(b, &hsMsg{Version: wireVersion, Type: hsNonPeer})
		_ = nc.SetDeadline(time.Now().Add(finalTimeout))
		_, _ = nc.Write(b[:hsLen])
	}
	_ = nc.Close()
}

// psp is a Public Service Point (dat_psp_create(3DAT)).
type psp struct {
	api.ContextSlot
	ia    *ia
	l     listener
	evd   *evd
	flags api.PSPFlags
}

// CreatePSP listens on TCP port q of the IA's address, delivering requests
// to evd (dat_psp_create(3DAT)): ErrConnQualInUse if the port is taken (by
// anyone on the host), ErrInvalidParameter above 65535. The backlog is
// the EVD's free space: a request that finds it full is refused
// (NON_PEER_REJECTED). With PSPProvider each request comes with an EP the
// provider created.
func (i *ia) CreatePSP(q api.ConnQual, evdArg api.EVD, flags api.PSPFlags) (api.PSP, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.createPSP(q, evdArg, flags)
}

// CreatePSPAny is CreatePSP on a free TCP port the kernel picks, which it
// returns (dat_psp_create_any(3DAT)).
func (i *ia) CreatePSPAny(evdArg api.EVD, flags api.PSPFlags) (api.PSP, api.ConnQual, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	s, err := i.createPSP(0, evdArg, flags)
	if err != nil {
		return nil, 0, err
	}
	return s, s.l.qual, nil
}

func (i *ia) createPSP(q api.ConnQual, evdArg api.EVD, flags api.PSPFlags) (*psp, error) {
	e := evdArg.(*evd)
	if err := i.psps.Room(); err != nil {
		return nil, err
	}
	l, err := i.listen(q)
	if err != nil {
		return nil, err
	}
	s := &psp{ia: i, l: l, evd: e, flags: flags}
	i.psps.Add(s)
	i.serve(&s.l, s)
	return s, nil
}

func (s *psp) port() api.ConnQual { return s.l.qual }

func (s *psp) arrive(pr *pendingReq) bool {
	if s.l.stopped {
		return false
	}
	c := &cr{ia: s.ia, psp: s, qual: s.l.qual, pr: pr}
	if s.flags == api.PSPProvider {
		c.Local = s.ia.newProviderEP(&pr.c.hs)
	}
	ev := api.Event{Number: api.ConnectionRequestEvent,
		CR: api.CRArrivalData{PSP: s, LocalAddr: &net.IPAddr{IP: s.ia.ip}, ConnQual: s.l.qual, CR: c}}
	if !s.evd.Q.TryPost(&ev, true) {
		if c.Local != nil {
			c.Local.destroy()
		}
		return false
	}
	pr.cr = c
	s.ia.crs.Add(c)
	return true
}

// stop closes the listener. ia.mu is held.
func (s *psp) stop() { s.l.stop() }

// HandleType reports HandlePSP (dat_get_handle_type(3DAT)).
func (s *psp) HandleType() api.HandleType { return api.HandlePSP }

// Query returns the PSP's parameters (dat_psp_query(3DAT)).
func (s *psp) Query() (api.PSPParam, error) {
	return api.PSPParam{IA: s.ia, ConnQual: s.l.qual, EVD: s.evd, Flags: s.flags}, nil
}

// Free stops listening (dat_psp_free(3DAT)); later connects to its port
// are refused (NON_PEER_REJECTED). Requests already delivered stay valid.
func (s *psp) Free() error { return kit.Free(&s.ia.mu, &s.ia.psps, s, nil, s.stop) }

// rsp is a Reserved Service Point (dat_rsp_create(3DAT)).
type rsp struct {
	connreq.RSP[*ep] // the reserved EP, until a request takes it
	ia               *ia
	l                listener
	evd              *evd
}

// CreateRSP listens on TCP port q for one request for ep, which moves from
// UNCONNECTED to RESERVED (dat_rsp_create(3DAT)). When the request arrives
// the EP moves to PASSIVE_CONNECTION_PENDING and the RSP stops listening.
func (i *ia) CreateRSP(q api.ConnQual, epArg api.EP, evdArg api.EVD) (api.RSP, error) {
	p, e := epArg.(*ep), evdArg.(*evd)
	i.mu.Lock()
	defer i.mu.Unlock()
	if p.State != api.EPUnconnected {
		return nil, p.StateErr("CreateRSP")
	}
	if err := i.rsps.Room(); err != nil {
		return nil, err
	}
	l, err := i.listen(q)
	if err != nil {
		return nil, err
	}
	r := &rsp{RSP: connreq.RSP[*ep]{EP: p}, ia: i, l: l, evd: e}
	p.State = api.EPReserved
	i.rsps.Add(r)
	i.serve(&r.l, r)
	return r, nil
}

func (r *rsp) port() api.ConnQual { return r.l.qual }

func (r *rsp) arrive(pr *pendingReq) bool {
	if r.l.stopped || r.Taken || r.EP.State != api.EPReserved {
		return false
	}
	c := &cr{CR: connreq.CR[*ep]{Local: r.EP}, ia: r.ia, rsp: r, qual: r.l.qual, pr: pr}
	ev := api.Event{Number: api.ConnectionRequestEvent,
		CR: api.CRArrivalData{RSP: r, LocalAddr: &net.IPAddr{IP: r.ia.ip}, ConnQual: r.l.qual, CR: c}}
	if !r.evd.Q.TryPost(&ev, true) {
		return false
	}
	r.stop()
	r.Taken = true
	r.EP.State = api.EPPassiveConnectionPending
	pr.cr = c
	r.ia.crs.Add(c)
	return true
}

func (r *rsp) stop() { r.l.stop() }

// Query returns the RSP's parameters (dat_rsp_query(3DAT)).
func (r *rsp) Query() (api.RSPParam, error) {
	r.ia.mu.Lock()
	defer r.ia.mu.Unlock()
	return r.Param(r.ia, r.l.qual, r.evd), nil
}

// Free destroys the RSP (dat_rsp_free(3DAT)). If no request has arrived
// the EP returns from RESERVED to UNCONNECTED.
func (r *rsp) Free() error {
	return kit.Free(&r.ia.mu, &r.ia.rsps, r, nil, func() { r.stop(); r.Unreserve() })
}

// cr is a pending Connection Request (dat_cr_query(3DAT)).
type cr struct {
	connreq.CR[*ep] // handle, the RSP's or provider-created EP, done mark
	ia              *ia
	psp             *psp
	rsp             *rsp
	qual            api.ConnQual
	pr              *pendingReq
}

// Query returns the requester's IP address, port qualifier and private
// data, and the EP reserved for the request (dat_cr_query(3DAT)).
func (c *cr) Query() (api.CRParam, error) {
	c.ia.mu.Lock()
	defer c.ia.mu.Unlock()
	return c.Param(c.remoteAddr(), api.ConnQual(c.pr.c.hs.PortQual), c.pr.c.pd)
}

func (c *cr) remoteAddr() net.Addr {
	if ta, ok := c.pr.c.nc.RemoteAddr().(*net.TCPAddr); ok {
		return &net.IPAddr{IP: ta.IP, Zone: ta.Zone}
	}
	return c.pr.c.nc.RemoteAddr()
}

// Accept accepts the request on ep, or on the CR's own EP when ep is nil
// (dat_cr_accept(3DAT)). The EP moves to COMPLETION_PENDING and the
// ACCEPT, with privateData and the EP's attributes, is sent; when the
// requester's READY arrives the EP is CONNECTED with ESTABLISHED. If the
// requester has given up meanwhile, the EP gets ACCEPT_COMPLETION_ERROR
// and moves to DISCONNECTED. On an error return nothing changes.
func (c *cr) Accept(epArg api.EP, privateData []byte) error {
	c.ia.mu.Lock()
	defer c.ia.mu.Unlock()
	given, _ := epArg.(*ep)
	p, err := c.Accepting(given, c.rsp != nil)
	if err != nil {
		return err
	}
	c.ia.crs.Remove(c)
	k := c.pr.c
	p.LocalPort, p.RemoteAddr, p.RemotePort = c.qual, c.remoteAddr(), api.ConnQual(k.hs.PortQual)
	k.ep = p
	p.adopt(k)
	k.out = helloFor(p, hsAccept, 0)
	k.out.PortQual = uint64(c.qual)
	c.pr.decide(hsAccept, privateData)
	return nil
}

// Reject rejects the request (dat_cr_reject(3DAT)); the requester gets
// PEER_REJECTED carrying privateData. An RSP's EP returns to UNCONNECTED;
// a provider-created EP is destroyed.
func (c *cr) Reject(privateData []byte) error { return c.decline(hsReject, privateData) }

// Refuse refuses the request as the provider does (provider.CRRefuser):
// the requester gets NON_PEER_REJECTED; otherwise as Reject.
func (c *cr) Refuse() error { return c.decline(hsNonPeer, nil) }

var _ provider.CRRefuser = (*cr)(nil)

// decline answers the request with decision (hsReject or hsNonPeer) and
// ends it, for Reject and Refuse.
func (c *cr) decline(decision uint16, pd []byte) error {
	c.ia.mu.Lock()
	defer c.ia.mu.Unlock()
	if c.Done {
		return connreq.ErrCRDone
	}
	c.pr.decide(decision, pd)
	c.end()
	return nil
}

// end finishes a request that was rejected or handed off: it leaves the
// IA's table, and its local EP returns to the provider
// (connreq.CR.Finish), which destroys an EP it made for the request.
// ia.mu is held.
func (c *cr) end() {
	c.ia.crs.Remove(c)
	if p := c.Finish(); p != nil {
		p.destroy()
	}
}

// Handoff passes the request to the service point of this IA listening on
// q, where it arrives as a new CONNECTION_REQUEST with a new CR
// (dat_cr_handoff(3DAT)); ErrInvalidParameter if none of this IA listens
// there, ErrInsufficientResources (nothing changed) if its backlog is
// full. This CR's local EP is released as by Reject.
func (c *cr) Handoff(q api.ConnQual) error {
	c.ia.mu.Lock()
	defer c.ia.mu.Unlock()
	if c.Done {
		return connreq.ErrCRDone
	}
	var sp servicePoint
	for s := range c.ia.psps.All() {
		if s.l.qual == q && !s.l.stopped {
			sp = s
		}
	}
	for r := range c.ia.rsps.All() {
		if r.l.qual == q && !r.l.stopped {
			sp = r
		}
	}
	if sp == nil {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("no service point of this IA listens on %d", q))
	}
	if !sp.arrive(c.pr) {
		return api.Errorf(api.InsufficientResources, api.NoSubtype, "the backlog of the target service point is full")
	}
	c.end()
	return nil
}

// abort refuses the request because its IA is closing: the requester gets
// NON_PEER_REJECTED. ia.mu is held.
func (c *cr) abort() {
	c.Done = true
	c.pr.decide(hsNonPeer, nil)
}
