package main

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/providers/loopback"
)

// A client that finds no server says where it looked, naming the port
// once: "127.0.0.1:P", not "127.0.0.1:P port P".
func TestDialErrorNamesPortOnce(t *testing.T) {
	ctx := testCtx(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nobody listens there now
	reg := embedded()
	n, err := openNode(ctx, reg, "tcp")
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	cfg := clientConfig{reg: reg, ia: "tcp", host: "127.0.0.1", port: api.ConnQual(port), stderr: &bytes.Buffer{}}
	c, err := dial(ctx, n, cfg, sessionCheck, 64)
	if err == nil {
		c.close(ctx)
		t.Fatal("dial found a server where none listens")
	}
	p := strconv.Itoa(port)
	if msg := err.Error(); !strings.Contains(msg, "127.0.0.1:"+p) || strings.Count(msg, p) != 1 {
		t.Errorf("error %q: want the server named once as 127.0.0.1:%s", msg, p)
	}
}

func TestServerName(t *testing.T) {
	for _, c := range []struct {
		addr net.Addr
		q    api.ConnQual
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 18515}, 18515, "192.0.2.1:18515"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 7}, 7, "[2001:db8::1]:7"},
		{&net.TCPAddr{IP: net.IPv4(192, 0, 2, 1)}, 7, "192.0.2.1:0 port 7"}, // (not one dial makes)
		{loopback.Addr{Name: "lo", Instance: 1}, 7, "lo#1 port 7"},
	} {
		if got := serverName(c.addr, c.q); got != c.want {
			t.Errorf("serverName(%v, %d) = %q, want %q", c.addr, c.q, got, c.want)
		}
	}
}
