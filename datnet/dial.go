package datnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/godat/godat/api"
)

// Limits and defaults of a stream's buffers.
const (
	DefaultBuffers    = 16
	DefaultBufferSize = 64 << 10
	DefaultLinger     = 10 * time.Second

	minBuffers    = 4 // see creditBatch
	maxBuffers    = 1 << 12
	maxBufferSize = 16 << 20
)

// Options are what Dialer and ListenConfig share: the receive and send
// buffers of each connection and how long Close waits for the peer. The
// zero value means the defaults.
type Options struct {
	// Buffers is the number of receive buffers, and of send buffers, of
	// each connection: how many messages can be in flight each way.
	Buffers int
	// BufferSize is the largest payload of one message. Each buffer
	// holds that and an 8-byte header; a connection registers
	// 2 × Buffers × (BufferSize + 8) bytes.
	BufferSize int
	// Linger bounds how long Close waits for written data to leave
	// while the peer does not read. Then Close disconnects anyway.
	Linger time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.Buffers == 0 {
		o.Buffers = DefaultBuffers
	}
	if o.BufferSize == 0 {
		o.BufferSize = DefaultBufferSize
	}
	if o.Linger == 0 {
		o.Linger = DefaultLinger
	}
	if o.Buffers < minBuffers || o.Buffers > maxBuffers {
		return o, fmt.Errorf("option Buffers %d is outside [%d, %d]", o.Buffers, minBuffers, maxBuffers)
	}
	if o.BufferSize < 1 || o.BufferSize > maxBufferSize-headerLen {
		return o, fmt.Errorf("option BufferSize %d is outside [1, %d]", o.BufferSize, maxBufferSize-headerLen)
	}
	if o.Linger < 0 {
		return o, fmt.Errorf("option Linger %v is negative", o.Linger)
	}
	return o, nil
}

// A Dialer holds the options for connecting to a Listener. The zero value
// is usable.
type Dialer struct {
	Options
}

// Dial connects to the Listener at addr ("host:qualifier", the host in
// the form of ia's network; an empty host is ia itself) through ia, with
// default options.
func Dial(ctx context.Context, ia api.IA, addr string) (net.Conn, error) {
	var d Dialer
	return d.Dial(ctx, ia, addr)
}

// Dial connects to addr through ia. The end of ctx before the connection
// is established ends the attempt; after that ctx has no effect. The
// connection uses ia until its Close, which must come before ia's.
func (d *Dialer) Dial(ctx context.Context, ia api.IA, addr string) (net.Conn, error) {
	c, err := d.dial(ctx, ia, addr)
	if err != nil {
		return nil, setupErr("dial", addr, err)
	}
	return c, nil
}

// target is what Dial and Listen read from their arguments: the options
// with defaults, the address split, and the IA's own address.
type target struct {
	opts  Options
	host  string
	qual  api.ConnQual
	local net.Addr
}

func parseTarget(o Options, ia api.IA, addr string) (t target, err error) {
	if t.opts, err = o.withDefaults(); err != nil {
		return t, err
	}
	if t.host, t.qual, err = splitAddr(addr); err != nil {
		return t, err
	}
	t.local, err = iaAddress(ia)
	return t, err
}

func (d *Dialer) dial(ctx context.Context, ia api.IA, addr string) (*Conn, error) {
	t, err := parseTarget(d.Options, ia, addr)
	if err != nil {
		return nil, err
	}
	o, q, local := t.opts, t.qual, t.local
	remote, err := resolve(ctx, local, t.host)
	if err != nil {
		return nil, err
	}
	c, err := newConn(ia, o)
	if err != nil {
		return nil, err
	}
	c.local = &Addr{IA: local}
	c.peer = &Addr{IA: remote, Qual: q}
	if err := c.ep.Connect(remote, q, api.TimeoutInfinite, c.hello().marshal(), 0, 0); err != nil {
		c.release()
		return nil, err
	}
	pd, err := c.established(ctx)
	if err != nil {
		c.ep.Disconnect(api.CloseAbrupt)
		c.release()
		return nil, err
	}
	h, err := parseHello(pd)
	if err != nil {
		c.ep.Disconnect(api.CloseAbrupt)
		c.release()
		return nil, err
	}
	c.setPeer(h)
	if p, err := c.ep.Query(); err == nil {
		c.local.Qual = p.LocalPortQual
	}
	c.start()
	return c, nil
}

// iaAddress is the address ia reports, which gives the network and form
// of the addresses it connects to.
func iaAddress(ia api.IA) (net.Addr, error) {
	a, _, err := ia.Query()
	if err != nil {
		return nil, err
	}
	if a.Address == nil {
		return nil, errors.New("the IA reports no address")
	}
	return a.Address, nil
}

// newConn makes the DAT objects of one connection and posts every receive
// buffer, so that the peer may send as soon as it is connected.
func newConn(ia api.IA, o Options) (c *Conn, err error) {
	c = &Conn{
		ia: ia, nrecv: o.Buffers, nsend: o.Buffers, size: headerLen + o.BufferSize, linger: o.Linger,
		rlock: make(chan struct{}, 1), wlock: make(chan struct{}, 1),
		rdl: newDeadline(), wdl: newDeadline(),
		readable: make(chan struct{}, 1), writable: make(chan struct{}, 1), changed: make(chan struct{}, 1),
		closed: make(chan struct{}), waitTok: make(chan struct{}, 1), idle: make(chan struct{}, 1),
		rq:     make([]message, o.Buffers),
		held:   make([]int, 0, o.Buffers),
		posted: make([]posted, o.Buffers),
		seqOf:  make([]int, o.Buffers),
	}
	c.kickEv.Number = api.SoftwareEvent
	c.rdl.expire, c.wdl.expire = c.kick, c.kick
	defer func() {
		if err != nil {
			c.release()
			c = nil
		}
	}()
	if c.pz, err = ia.CreatePZ(); err != nil {
		return
	}
	if c.evd, err = ia.CreateEVD(c.nrecv+c.nsend+8, nil, api.EVDDTO|api.EVDConnection|api.EVDSoftware); err != nil {
		return
	}
	attr := &api.EPAttr{MaxMessageSize: uint32(c.size), MaxRecvDTOs: c.nrecv, MaxRequestDTOs: c.nsend, MaxRecvIOV: 1, MaxRequestIOV: 1}
	if c.ep, err = ia.CreateEP(c.pz, c.evd, c.evd, c.evd, attr); err != nil {
		return
	}
	if c.mem, err = api.AllocMemory((c.nrecv + c.nsend) * c.size); err != nil {
		return
	}
	region := api.Region{Type: api.MemTypeVirtual, Bytes: c.mem.Bytes()}
	if c.lmr, err = ia.CreateLMR(c.pz, region, api.MemPrivLocalRead|api.MemPrivLocalWrite, api.VATypeVA); err != nil {
		return
	}
	if c.reg, err = c.lmr.Query(); err != nil {
		return
	}
	for i := range c.nrecv {
		if !c.postRecv(i) {
			if err = c.err; err == nil {
				err = errors.New("posting the receive buffers failed")
			}
			return
		}
	}
	c.freeSend = make([]int, 0, c.nsend)
	for i := c.nsend - 1; i >= 0; i-- {
		c.freeSend = append(c.freeSend, c.nrecv+i)
	}
	return c, nil
}

func (c *Conn) hello() hello { return hello{buffers: c.nrecv, size: c.size} }

// setPeer takes the peer's receive side: it may be sent one message per
// buffer, each no larger than the smaller of the two buffer sizes.
func (c *Conn) setPeer(h hello) {
	c.mu.Lock()
	c.credits += h.buffers
	c.peerBufs = h.buffers
	c.payload = min(c.size, h.size) - headerLen
	c.mu.Unlock()
}

// established waits for the connection to be established and returns the
// private data the ESTABLISHED event carries (the acceptor's, on the
// active side). Completions that arrive first are applied.
func (c *Conn) established(ctx context.Context) ([]byte, error) {
	var ev api.Event
	for {
		if _, err := c.evd.Wait(ctx, 1, &ev); err != nil {
			return nil, err
		}
		switch ev.Number {
		case api.ConnectionEstablishedEvent:
			return append([]byte(nil), ev.Conn.PrivateData...), nil
		case api.DTOCompletionEvent:
			c.mu.Lock()
			c.handle(&ev)
			c.mu.Unlock()
		case api.ConnectionPeerRejectedEvent:
			return nil, errors.New("connection refused by the peer")
		case api.ConnectionNonPeerRejectedEvent:
			return nil, errors.New("connection refused: nobody listens there")
		case api.ConnectionUnreachableEvent:
			return nil, errors.New("the peer is unreachable")
		case api.ConnectionTimedOutEvent:
			return nil, errors.New("connection timed out")
		default:
			return nil, fmt.Errorf("connection failed: %v", ev.Number)
		}
	}
}
