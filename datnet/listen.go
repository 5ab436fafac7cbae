package datnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/godat/godat/api"
)

// acceptTimeout bounds how long Accept waits for a peer it accepted to
// finish connecting before it drops that request and takes the next.
const acceptTimeout = 10 * time.Second

// ListenConfig holds the options of the connections a Listener accepts.
// The zero value is usable.
type ListenConfig struct {
	Options
}

// Listener accepts streams on a public service point of an IA. It
// implements net.Listener; Accept and Close are safe for concurrent use.
type Listener struct {
	ia     api.IA
	opts   Options
	evd    api.EVD
	psp    api.PSP
	addr   *Addr
	ctx    context.Context
	cancel context.CancelFunc

	acceptMu  sync.Mutex // one Accept waits on the EVD at a time
	closeOnce sync.Once
	closeErr  error
}

// Listen listens on ia at addr (":qualifier", or "host:qualifier" with
// the IA's own address as host) with default options. Qualifier 0 picks a
// free one; Addr reports it.
func Listen(ia api.IA, addr string) (net.Listener, error) {
	var lc ListenConfig
	return lc.Listen(ia, addr)
}

// Listen listens on ia at addr. The listener uses ia until its Close,
// which must come before ia's.
func (lc *ListenConfig) Listen(ia api.IA, addr string) (net.Listener, error) {
	l, err := lc.listen(ia, addr)
	if err != nil {
		return nil, setupErr("listen", addr, err)
	}
	return l, nil
}

func (lc *ListenConfig) listen(ia api.IA, addr string) (*Listener, error) {
	t, err := parseTarget(lc.Options, ia, addr)
	if err != nil {
		return nil, err
	}
	o, host, q, local := t.opts, t.host, t.qual, t.local
	if host != "" && host != local.String() {
		return nil, fmt.Errorf("%q is not the address of the IA (%s)", host, local)
	}
	l := &Listener{ia: ia, opts: o}
	if l.evd, err = ia.CreateEVD(64, nil, api.EVDCR); err != nil {
		return nil, err
	}
	if q == 0 {
		l.psp, q, err = ia.CreatePSPAny(l.evd, api.PSPConsumer)
	} else {
		l.psp, err = ia.CreatePSP(q, l.evd, api.PSPConsumer)
	}
	if err != nil {
		l.evd.Free()
		return nil, err
	}
	l.addr = &Addr{IA: local, Qual: q}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l, nil
}

// Addr returns the listener's IA address and connection qualifier.
func (l *Listener) Addr() net.Addr { return l.addr }

// Accept waits for the next connection. A request that is not a datnet
// stream, or whose peer gives up before it is established, is rejected or
// dropped, and Accept waits on. After Close it fails with an error that is
// net.ErrClosed.
func (l *Listener) Accept() (net.Conn, error) {
	l.acceptMu.Lock()
	defer l.acceptMu.Unlock()
	var ev api.Event
	for {
		if _, err := l.evd.Wait(l.ctx, 1, &ev); err != nil {
			if l.ctx.Err() != nil {
				err = net.ErrClosed
			}
			return nil, l.opErr(err)
		}
		if ev.Number != api.ConnectionRequestEvent {
			continue
		}
		c, err := l.accept(ev.CR.CR)
		if err == nil {
			return c, nil
		}
		var e *api.Error
		if errors.As(err, &e) && e.Type == api.InsufficientResources {
			return nil, l.opErr(err)
		}
		if l.ctx.Err() != nil {
			return nil, l.opErr(net.ErrClosed)
		}
	}
}

// accept takes one connection request: a connection with its receive
// buffers posted, the request accepted with this side's hello, and the
// ESTABLISHED event.
func (l *Listener) accept(cr api.CR) (*Conn, error) {
	p, err := cr.Query()
	if err != nil {
		cr.Reject(nil)
		return nil, err
	}
	h, err := parseHello(p.PrivateData)
	if err != nil {
		cr.Reject(nil)
		return nil, err
	}
	c, err := newConn(l.ia, l.opts)
	if err != nil {
		cr.Reject(nil)
		return nil, err
	}
	c.local = &Addr{IA: l.addr.IA, Qual: l.addr.Qual}
	c.peer = &Addr{IA: p.RemoteAddr, Qual: p.RemotePortQual}
	c.setPeer(h)
	if err := cr.Accept(c.ep, c.hello().marshal()); err != nil {
		c.release()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(l.ctx, acceptTimeout)
	defer cancel()
	if _, err := c.established(ctx); err != nil {
		c.ep.Disconnect(api.CloseAbrupt)
		c.release()
		return nil, err
	}
	c.start()
	return c, nil
}

// Close stops listening, rejects the requests not yet accepted, and
// unblocks Accept.
func (l *Listener) Close() error {
	first := false
	l.closeOnce.Do(func() {
		first = true
		l.cancel()
		l.acceptMu.Lock()
		defer l.acceptMu.Unlock()
		err := l.psp.Free()
		var ev api.Event
		for l.evd.Dequeue(&ev) == nil {
			if ev.Number == api.ConnectionRequestEvent && ev.CR.CR != nil {
				ev.CR.CR.Reject(nil)
			}
		}
		if e := l.evd.Free(); err == nil {
			err = e
		}
		l.closeErr = err
	})
	if !first {
		return l.opErr(net.ErrClosed)
	}
	if l.closeErr != nil {
		return l.opErr(l.closeErr)
	}
	return nil
}

func (l *Listener) opErr(err error) error {
	return &net.OpError{Op: "accept", Net: "dat", Addr: l.addr, Err: err}
}
