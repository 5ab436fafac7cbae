package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"strconv"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// clientConfig says which IA the client opens and where the server is.
type clientConfig struct {
	reg  *registry.Registry
	ia   string       // IA name; "" for openNode's pick
	host string       // server host (-h)
	port api.ConnQual // server's connection qualifier (-p)
	// target, when set, is the server's IA address, used as is instead of
	// host (an in-process server); rawHost then names the raw baseline
	// host.
	target  net.Addr
	rawHost string
	stderr  io.Writer
}

// remote returns the address to connect to: host's IP as a *net.TCPAddr
// whose port is the connection qualifier, for providers with IP addresses.
func (cfg clientConfig) remote(ctx context.Context, n *node) (net.Addr, error) {
	if cfg.target != nil {
		return cfg.target, nil
	}
	own := n.attr.Address
	if _, ok := ipAddr(own); ok || own == nil {
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", cfg.host)
		if err != nil {
			return nil, err
		}
		ip := ips[0]
		for _, a := range ips { // prefer IPv4, as the embedded tcp IA does
			if a.Is4() || a.Is4In6() {
				ip = a
				break
			}
		}
		return &net.TCPAddr{IP: net.IP(ip.Unmap().AsSlice()), Port: int(cfg.port)}, nil
	}
	if cfg.host == own.String() {
		return own, nil
	}
	return nil, fmt.Errorf("IA %s (provider %s) has %s addresses, not IP addresses: it cannot reach host %q; "+
		"use an IA of an IP provider such as tcp, or try dattest -demo", n.name, n.pattr.ProviderName, own.Network(), cfg.host)
}

// serverName names the server in errors: its address and connection
// qualifier q, q once. A TCP address whose port is q (remote's, for an IP
// provider) already says it; any other gets "port q" after it.
func serverName(remote net.Addr, q api.ConnQual) string {
	if a, ok := remote.(*net.TCPAddr); ok && uint64(a.Port) == uint64(q) {
		return a.String()
	}
	return fmt.Sprintf("%v port %d", remote, q)
}

func (cfg clientConfig) rawAddr(port int) string {
	h := cfg.rawHost
	if h == "" {
		h = cfg.host
	}
	return net.JoinHostPort(h, strconv.Itoa(port))
}

// client is the client side of one connection. Its memory is one receive
// slot, one send slot and a scratch area for RDMA reads.
type client struct {
	*link
	local   *buf
	slot    int
	scratch int // offset of the scratch area
	nonce   uint64
	rawPort int
	pdOut   int // bytes of private data sent and received
	pdIn    int
	// serverIdle is the server's idle timeout (WELCOME; 0: none or not
	// said), lastReply when the server last answered a request.
	serverIdle time.Duration
	lastReply  time.Time
}

const scratchSize = 128 << 10

// dial opens a connection of the given session kind to the server.
// maxSize is the largest benchmark message the session will carry.
func dial(ctx context.Context, n *node, cfg clientConfig, kind uint64, maxSize int) (_ *client, err error) {
	remote, err := cfg.remote(ctx, n)
	if err != nil {
		return nil, err
	}
	l, err := newLink(n)
	if err != nil {
		return nil, err
	}
	c := &client{link: l, slot: max(ctrlSize, maxSize), nonce: rand.Uint64() | 1}
	defer func() {
		if err != nil {
			c.free()
		}
	}()
	c.scratch = 2 * c.slot
	if c.local, err = newBuf(n, c.scratch+scratchSize, api.MemPrivLocalRead|api.MemPrivLocalWrite); err != nil {
		return nil, err
	}
	hello := newMsg(kindHello).u64(tagNonce, c.nonce).u64(tagSession, kind).u64(tagMaxSize, uint64(maxSize)).marshal()
	c.pdOut = len(hello)
	if lim := n.pattr.MaxPrivateDataSize; lim > 0 && len(hello) > lim {
		return nil, fmt.Errorf("the provider's private data limit (%d bytes) is below the %d bytes HELLO needs", lim, len(hello))
	}
	if err := c.ep.Connect(remote, cfg.port, connectTimeout, hello, api.QOSBestEffort, api.ConnectDefault); err != nil {
		return nil, fmt.Errorf("EP.Connect to %s: %w", serverName(remote, cfg.port), err)
	}
	ev, err := c.cmEvent(ctx, connectTimeout+connectTimeout/2)
	if err != nil {
		return nil, fmt.Errorf("waiting for the connection to %s: %w", serverName(remote, cfg.port), err)
	}
	pd := ev.Conn.PrivateData
	switch ev.Number {
	case api.ConnectionEstablishedEvent:
	case api.ConnectionPeerRejectedEvent:
		why := "no reason given"
		if m, err := decode(pd); err == nil && m.kind == kindReject {
			t, _ := m.find(tagText)
			why = string(t)
		}
		return nil, fmt.Errorf("server %s rejected the connection: %s", serverName(remote, cfg.port), why)
	default:
		return nil, fmt.Errorf("connecting to %s: %v", serverName(remote, cfg.port), ev.Number)
	}
	c.pdIn = len(pd)
	c.refresh()
	w, err := decode(pd)
	if err != nil {
		return nil, fmt.Errorf("the server's private data (%d bytes): %w", len(pd), err)
	}
	if w.kind != kindWelcome {
		return nil, fmt.Errorf("the server's private data is a %s message, want WELCOME", kindName(w.kind))
	}
	if echo, err := w.get(tagNonce); err != nil || echo != c.nonce {
		return nil, fmt.Errorf("the server echoed nonce %#x, want %#x (%v)", echo, c.nonce, err)
	}
	if err := w.status(); err != nil {
		return nil, err
	}
	c.rawPort = int(w.getOr(tagRawPort, 0))
	c.serverIdle = time.Duration(min(w.getOr(tagIdle, 0), math.MaxInt64/uint64(time.Millisecond))) * time.Millisecond
	c.lastReply = time.Now()
	return c, nil
}

// close disconnects gracefully and frees the connection.
func (c *client) close(ctx context.Context) error {
	if st, _, _, err := c.ep.GetStatus(); err == nil && st == api.EPConnected {
		if c.ep.Disconnect(api.CloseGraceful) == nil {
			c.cmEvent(ctx, connectTimeout)
		}
	}
	return c.free()
}

func (c *client) free() error {
	return errors.Join(c.link.free(), c.local.free())
}

// call sends req and returns the server's reply. sendSegs is the number of
// segments the request is sent from; recvLens, when set, the segments of
// the receive that takes the reply.
func (c *client) call(ctx context.Context, req *msg, sendSegs int, recvLens []int) (*msg, error) {
	var riov []api.LMRTriplet
	var rsegs [][]byte
	if recvLens == nil {
		riov, rsegs = c.local.scatter(0, []int{c.slot}, 0)
	} else {
		riov, rsegs = c.local.scatter(0, recvLens, 53)
	}
	ckr := c.nextCookie()
	if err := c.ep.PostRecv(riov, ckr, api.CompletionDefault); err != nil {
		return nil, fmt.Errorf("PostRecv: %w", err)
	}
	b := req.marshal()
	siov, ssegs := c.local.scatter(c.slot, splitLens(len(b), sendSegs), 29)
	spread(ssegs, b)
	cks := c.nextCookie()
	if err := c.ep.PostSend(siov, cks, api.CompletionDefault); err != nil {
		return nil, fmt.Errorf("PostSend: %w", err)
	}
	got, err := c.await(ctx, false, ckr, cks)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kindName(req.kind), err)
	}
	c.lastReply = time.Now()
	m, err := decode(gather(rsegs, int(got[0].Length)))
	if err != nil {
		return nil, fmt.Errorf("reply to %s: %w", kindName(req.kind), err)
	}
	if m.kind != req.kind|replyBit {
		if err := m.status(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("got a %s, want a %s reply", kindName(m.kind), kindName(req.kind))
	}
	return m, m.status()
}

// idleHint adds to err, when the session went the server's idle timeout
// without a request before it failed, that the server may have dropped it.
func (c *client) idleHint(err error) error {
	if c.serverIdle <= 0 {
		return err
	}
	if quiet := time.Since(c.lastReply); quiet >= c.serverIdle {
		return fmt.Errorf("%w (the session had no request for %v; the server drops a session idle for %v: see its -idle-timeout)",
			err, quiet.Round(time.Second), c.serverIdle)
	}
	return err
}

// remoteWindow is a window of the server's memory: an RMR triplet base.
type remoteWindow struct {
	addr api.VAddr
	len  int
	ctx  api.RMRContext
	// readsIn is how many RDMA reads the server's EP serves at once (0:
	// the server did not say).
	readsIn int
}

func (w remoteWindow) at(off, n int) api.RMRTriplet {
	return api.RMRTriplet{Addr: w.addr + api.VAddr(off), Length: uint32(n), RMRContext: w.ctx}
}

func windowOf(m *msg) (remoteWindow, error) {
	a, err1 := m.get(tagAddr)
	l, err2 := m.get(tagLength)
	r, err3 := m.get(tagRMR)
	w := remoteWindow{addr: api.VAddr(a), len: int(l), ctx: api.RMRContext(r)}
	// A peer-supplied count, clamped: no run keeps more than maxWindow
	// reads outstanding anyway.
	w.readsIn = int(min(m.getOr(tagReadsIn, 0), maxWindow))
	return w, errors.Join(err1, err2, err3)
}

// window asks for the server's RDMA window.
func (c *client) window(ctx context.Context) (remoteWindow, error) {
	m, err := c.call(ctx, newMsg(kindWindow), 1, nil)
	if err != nil {
		return remoteWindow{}, err
	}
	return windowOf(m)
}

// rdma posts an RDMA write (write set) or read of the local segments iov
// to remote and waits for it.
func (c *client) rdma(ctx context.Context, write bool, iov []api.LMRTriplet, remote api.RMRTriplet) error {
	ck := c.nextCookie()
	var err error
	if write {
		err = c.ep.PostRDMAWrite(iov, ck, remote, api.CompletionDefault)
	} else {
		err = c.ep.PostRDMARead(iov, ck, remote, api.CompletionDefault)
	}
	if err != nil {
		return err
	}
	_, err = c.await(ctx, false, ck)
	return err
}

// writeVerify RDMA-writes n pattern bytes from k local segments to offset
// off of window w (window offset woff on the server), then asks the server
// to verify them.
func (c *client) writeVerify(ctx context.Context, w remoteWindow, off, woff, n, k int, seed uint64) error {
	iov, segs := c.local.scatter(c.slot, splitLens(n, k), 41)
	data := make([]byte, n)
	fillPattern(data, seed)
	spread(segs, data)
	if err := c.rdma(ctx, true, iov, w.at(off, n)); err != nil {
		return fmt.Errorf("RDMA write: %w", err)
	}
	_, err := c.call(ctx, newMsg(kindVerify).u64(tagOffset, uint64(woff)).u64(tagLength, uint64(n)).u64(tagSeed, seed), 1, nil)
	return err
}

// fill asks the server to fill window bytes [off, off+n) with the pattern
// of seed.
func (c *client) fill(ctx context.Context, off, n int, seed uint64) error {
	_, err := c.call(ctx, newMsg(kindFill).u64(tagOffset, uint64(off)).u64(tagLength, uint64(n)).u64(tagSeed, seed), 1, nil)
	return err
}

// fillRead asks the server to fill window bytes [off, off+n) with a
// pattern, RDMA-reads them into k local segments and checks them.
func (c *client) fillRead(ctx context.Context, w remoteWindow, off, n, k int, seed uint64) error {
	if err := c.fill(ctx, off, n, seed); err != nil {
		return err
	}
	iov, segs := c.local.scatter(c.scratch, splitLens(n, k), 43)
	for _, s := range segs {
		clear(s)
	}
	if err := c.rdma(ctx, false, iov, w.at(off, n)); err != nil {
		return fmt.Errorf("RDMA read: %w", err)
	}
	// The read's completion makes its data visible here: the sync calls
	// are for memory that a peer's RDMA reads and writes reach.
	if i := checkPattern(gather(segs, n), seed); i >= 0 {
		return fmt.Errorf("RDMA read: byte %d of %d is wrong", i, n)
	}
	return nil
}

// ping sends a PING with n pattern bytes and checks the reply's.
func (c *client) ping(ctx context.Context, kind uint16, n, sendSegs int, recvLens []int, seed uint64) error {
	p := make([]byte, n)
	fillPattern(p, seed)
	m, err := c.call(ctx, newMsg(kind).u64(tagSeed, seed).bytes(tagPayload, p), sendSegs, recvLens)
	if err != nil {
		return err
	}
	rs, err := m.get(tagSeed)
	if err != nil {
		return err
	}
	rp, _ := m.find(tagPayload)
	if len(rp) != n {
		return fmt.Errorf("reply payload has %d bytes, want %d", len(rp), n)
	}
	if i := checkPattern(rp, rs); i >= 0 || rs != seed+1 {
		return fmt.Errorf("reply payload byte %d is wrong (seed %d)", i, rs)
	}
	return nil
}
