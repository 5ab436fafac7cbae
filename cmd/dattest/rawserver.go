package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// rawListenAddr is where the raw TCP baseline listens: the IA's IP when it
// has one, else 127.0.0.1 (an in-process provider).
func rawListenAddr(a net.Addr, port int) string {
	ip, ok := ipAddr(a)
	host := "127.0.0.1"
	if ok && ip != nil {
		host = ip.String()
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// rawServer is the raw TCP baseline: it serves up to cap(slots)
// connections at once, each until its client leaves, goes quiet for idle,
// or the server stops; one more is closed at once.
type rawServer struct {
	ln     *net.TCPListener
	idle   time.Duration
	slots  chan struct{} // one per open connection
	log    func(string)  // may be nil
	ctx    context.Context
	cancel context.CancelFunc // ends ctx: called by stop
	mu     sync.Mutex
	conns  map[*net.TCPConn]struct{}
	wg     sync.WaitGroup
}

// startRawServer listens on addr for at most maxConns connections at once,
// each dropped after idle without a message (0: never); log, when set,
// takes a line for each connection refused or dropped.
func startRawServer(addr string, maxConns int, idle time.Duration, log func(string)) (*rawServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("raw TCP baseline: %w", err)
	}
	r := &rawServer{ln: ln.(*net.TCPListener), idle: idle, slots: make(chan struct{}, max(maxConns, 1)),
		log: log, conns: map[*net.TCPConn]struct{}{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

func (r *rawServer) addr() *net.TCPAddr { return r.ln.Addr().(*net.TCPAddr) }

func (r *rawServer) port() int { return r.addr().Port }

func (r *rawServer) logf(format string, a ...any) {
	if r.log != nil {
		r.log(fmt.Sprintf(format, a...))
	}
}

func (r *rawServer) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.AcceptTCP()
		if err != nil {
			return
		}
		select {
		case r.slots <- struct{}{}:
		default:
			r.logf("raw connection from %s: refused: %d open (-max-sessions)", c.RemoteAddr(), cap(r.slots))
			c.Close()
			continue
		}
		r.mu.Lock()
		if r.conns == nil {
			r.mu.Unlock()
			c.Close()
			<-r.slots
			return
		}
		r.conns[c] = struct{}{}
		r.mu.Unlock()
		r.wg.Add(1)
		go r.serve(c)
	}
}

// serve runs one connection and frees its slot.
func (r *rawServer) serve(c *net.TCPConn) {
	defer r.wg.Done()
	from := c.RemoteAddr()
	ctx, cancel := context.WithCancelCause(r.ctx)
	w := watchIdle(r.idle, func() {
		cancel(errIdle)                // ends a poll loop
		c.SetDeadline(time.Unix(1, 0)) // ends a blocking read or write
	})
	err := serveRaw(ctx, c, w)
	w.stop()
	switch {
	case context.Cause(ctx) == errIdle:
		r.logf("raw connection from %s: dropped: idle for %v (-idle-timeout)", from, r.idle)
	case err != nil:
		r.logf("raw connection from %s: refused: %v", from, err)
	}
	cancel(nil)
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.Close()
	<-r.slots
}

// stop closes the listener and every connection and waits for their
// goroutines.
func (r *rawServer) stop() {
	r.cancel()
	r.ln.Close()
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.mu.Unlock()
	r.wg.Wait()
}
