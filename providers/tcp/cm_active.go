package tcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/connreq"
)

// Connect starts a connection to the service point listening on TCP port q
// of remote, a *net.IPAddr or *net.TCPAddr (dat_ep_connect(3DAT)). The EP
// moves to ACTIVE_CONNECTION_PENDING and the outcome arrives on its
// connect EVD: ESTABLISHED with the acceptor's private data, PEER_REJECTED
// with the rejector's, NON_PEER_REJECTED (nobody listens on q, the
// listener's backlog is full, its IA closed, or it speaks another wire
// version), UNREACHABLE (no route, another address family) or TIMED_OUT
// (no answer within timeout, which covers the TCP connect and the
// handshake). A q above 65535 is ErrInvalidParameter; an EP not
// UNCONNECTED gets ErrInvalidState.
func (p *ep) Connect(remote net.Addr, q api.ConnQual, timeout api.Timeout, privateData []byte, qos api.QOS, flags api.ConnectFlags) error {
	ip, err := remoteIP(remote)
	if err != nil {
		return err
	}
	if q > maxConnQual {
		return api.Errorf(api.InvalidParameter, api.SubArg3, fmt.Sprintf("connection qualifier %d is not a TCP port", q))
	}
	if err := connreq.CheckConnectFlags(flags, "tcp"); err != nil {
		return err
	}
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	if p.State != api.EPUnconnected {
		return p.StateErr("Connect")
	}
	p.startConnect(ip, q, timeout, privateData)
	return nil
}

// DupConnect connects to the remote address and connection qualifier of
// the connected EP dup (dat_ep_dup_connect(3DAT)).
func (p *ep) DupConnect(dupArg api.EP, timeout api.Timeout, privateData []byte, qos api.QOS) error {
	dup := dupArg.(*ep)
	p.ia.mu.Lock()
	defer p.ia.mu.Unlock()
	remote, q, err := p.DupTarget(&dup.Endpoint)
	if err != nil {
		return err
	}
	ip, _ := remoteIP(remote)
	p.startConnect(ip, q, timeout, privateData)
	return nil
}

// startConnect moves p to ACTIVE_CONNECTION_PENDING and starts the
// connection's goroutine, which dials, shakes hands and becomes the
// reader. ia.mu is held.
func (p *ep) startConnect(ip net.IP, q api.ConnQual, timeout api.Timeout, pd []byte) {
	p.State = api.EPActiveConnectionPending
	p.LocalPort, p.RemoteAddr, p.RemotePort, p.PeerPD = nextPortQual(), &net.IPAddr{IP: ip}, q, nil
	c := newConn(p.ia)
	c.ep = p
	p.adopt(c)
	var deadline time.Time // zero: no deadline
	if timeout != api.TimeoutInfinite {
		deadline = time.Now().Add(timeout)
	}
	ctx, cancel := contextUntil(deadline)
	c.cancel = cancel
	hello := helloFor(p, hsHello, len(pd))
	msg := make([]byte, hsLen+len(pd))
	encodeHS(msg, &hello)
	copy(msg[hsLen:], pd)
	addr := net.JoinHostPort(ip.String(), strconv.FormatUint(uint64(q), 10))
	local := p.ia.ip
	c.goRun(func() {
		defer cancel()
		c.dial(ctx, deadline, local, addr, msg)
	})
}

// contextUntil returns a cancellable context ending at deadline, or
// never for a zero deadline.
func contextUntil(deadline time.Time) (context.Context, context.CancelFunc) {
	if deadline.IsZero() {
		return context.WithCancel(context.Background())
	}
	return context.WithDeadline(context.Background(), deadline)
}

// dial is the active side's connection goroutine.
func (c *conn) dial(ctx context.Context, deadline time.Time, local net.IP, addr string, hello []byte) {
	// No keepalive of Go's: the IA's options decide (applyToConn).
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: local}, KeepAlive: -1}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		if err = c.ia.opts.applyToConn(nc); err != nil {
			_ = nc.Close()
		}
	}
	mu := &c.ia.mu
	if err != nil {
		ev := dialEvent(ctx, err)
		mu.Lock()
		c.failConnect(ev, nil)
		mu.Unlock()
		return
	}
	mu.Lock()
	if c.aborted {
		mu.Unlock()
		_ = nc.Close()
		return
	}
	c.nc = nc
	mu.Unlock()
	_ = nc.SetDeadline(deadline)
	m, err := c.exchange(hello)
	mu.Lock()
	if err != nil || c.aborted {
		ev := api.ConnectionNonPeerRejectedEvent
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && !c.aborted {
			ev = api.ConnectionTimedOutEvent
		}
		c.failConnect(ev, nil)
		mu.Unlock()
		_ = nc.Close()
		return
	}
	switch m.Type {
	case hsAccept:
	case hsReject:
		c.failConnect(api.ConnectionPeerRejectedEvent, c.pd)
		mu.Unlock()
		_ = nc.Close()
		return
	default:
		c.failConnect(api.ConnectionNonPeerRejectedEvent, nil)
		mu.Unlock()
		_ = nc.Close()
		return
	}
	mu.Unlock()
	var ready [hsLen]byte
	encodeHS(ready[:], &hsMsg{Version: wireVersion, Type: hsReady})
	_, err = nc.Write(ready[:])
	mu.Lock()
	p := c.ep
	if err != nil || c.aborted || p.c != c || p.State != api.EPActiveConnectionPending {
		c.failConnect(api.ConnectionNonPeerRejectedEvent, nil)
		mu.Unlock()
		_ = nc.Close()
		return
	}
	p.PeerPD = c.pd
	c.establish(p, p.PeerPD)
}

// dialEvent maps a dial error to the connection event the requester gets:
// TIMED_OUT when the connect timeout passed (the context's deadline, or the
// dialer's own timeout, which can fire first), NON_PEER_REJECTED when the
// host answered but nothing listens (refused or reset), and UNREACHABLE for
// every other failure to reach the address: no route, an unreachable,
// blackhole or prohibit route, a network that is down, an address of
// another family (dat_ep_connect(3DAT)).
func dialEvent(ctx context.Context, err error) api.EventNumber {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded),
		errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return api.ConnectionTimedOutEvent
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return api.ConnectionNonPeerRejectedEvent
	}
	return api.ConnectionUnreachableEvent
}

// failConnect ends a connection attempt with event ev, unless it was
// abandoned. ia.mu is held.
func (c *conn) failConnect(ev api.EventNumber, pd []byte) {
	p := c.ep
	if c.aborted || p.c != c || p.State != api.EPActiveConnectionPending {
		return
	}
	c.aborted = true
	p.PeerPD = pd
	p.toDisconnected(ev, pd)
}
