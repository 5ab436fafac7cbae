package tcp

import (
	"fmt"
	"net"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
)

// IA options: what the platform_params of an IA's configuration entry
// may say, and how it is applied to the IA's sockets.
//
// platform_params is a list of key=value items separated by white space;
// an empty string (or only white space) leaves every option at its
// default. Each key may appear once. An unknown key, an item without "=",
// a repeated key or a value the key does not accept makes Open fail with
// ErrInvalidParameter, whose message names the key and the value.
//
// The one key is peer_timeout, a Go duration ("30s", "1m30s", "2500ms"),
// default 30s, either 0 or between 1s and 24h:
//
//   - With a peer_timeout of T, a connection whose peer has gone silent
//     (its host is down, the network between is cut, every packet is
//     lost) is declared broken once nothing has been heard from the peer
//     for about T: the EP gets CONNECTION_BROKEN and its outstanding DTOs
//     complete FLUSHED, as when the peer resets the connection. This
//     holds whether the connection is idle (TCP keepalive probes find
//     the silence) or has data the peer has not acknowledged (the TCP
//     user timeout, TCP_USER_TIMEOUT, ends the retransmissions). An idle
//     connection is given up at the first keepalive probe due once T has
//     passed, so at most one probe interval after T; the interval is T/5
//     rounded up to whole seconds (at least 1 s), the first probe is
//     sent after the same time of silence, and probes are only sent
//     while nothing is in flight. A connection with data in flight is
//     given up about T after the oldest data the peer has not
//     acknowledged was sent.
//   - The user timeout also covers a peer that is alive but takes no
//     data: Linux ends a connection whose peer's receive window has
//     stayed closed for T while data waits to be sent. That happens only
//     when the peer's provider stops reading its socket for T, for
//     instance when a message waits for a buffer of an empty SRQ while
//     the sender keeps sending, or when the peer process is stopped.
//   - peer_timeout=0 leaves the kernel's defaults: no keepalive probes and
//     no user timeout, so an idle connection to a silent peer is never
//     given up and one with data in flight only when the kernel's
//     retransmissions run out (net.ipv4.tcp_retries2, about 15 minutes).
//   - The timeout applies from the moment the TCP connection is
//     established, on both sides, before the handshake: a peer that goes
//     silent during the handshake ends it as any handshake failure does
//     (TIMED_OUT or NON_PEER_REJECTED for the requester; at the listener
//     the request is never delivered, or the accepting EP gets
//     ACCEPT_COMPLETION_ERROR). The TCP connect itself is bounded by the
//     timeout of Connect and the kernel's SYN retries, not by
//     peer_timeout.
//   - A peer that closes its sockets (a process that is killed) is
//     detected at once whatever peer_timeout says: its kernel sends FIN
//     or RST.
type options struct {
	peerTimeout time.Duration // 0: the kernel's defaults
}

// Limits and the default of peer_timeout.
const (
	defaultPeerTimeout = 30 * time.Second
	minPeerTimeout     = time.Second    // the message of parseOptions says so
	maxPeerTimeout     = 24 * time.Hour // likewise

	// keepAliveSplit is how many probe intervals a peer timeout is
	// divided into: the silence before the first probe, then the probes.
	keepAliveSplit = 5
)

// defaultOptions are the options of an empty platform_params.
var defaultOptions = options{peerTimeout: defaultPeerTimeout}

// parseOptions reads platform_params.
func parseOptions(s string) (options, error) {
	o := defaultOptions
	seen := map[string]bool{}
	for _, item := range strings.Fields(s) {
		key, val, ok := strings.Cut(item, "=")
		if !ok || key == "" {
			return o, optErr(fmt.Sprintf("item %q is not key=value", item))
		}
		if seen[key] {
			return o, optErr(fmt.Sprintf("%s is given twice (%s)", key, item))
		}
		seen[key] = true
		switch key {
		case "peer_timeout":
			d, err := time.ParseDuration(val)
			switch {
			case err != nil:
				return o, optErr(fmt.Sprintf("peer_timeout=%q is not a duration (for example 30s or 1m)", val))
			case d < 0:
				return o, optErr(fmt.Sprintf("peer_timeout=%s is negative", val))
			case d != 0 && (d < minPeerTimeout || d > maxPeerTimeout):
				return o, optErr(fmt.Sprintf("peer_timeout=%s: must be 0 or from 1s to 24h", val))
			}
			o.peerTimeout = d
		default:
			return o, optErr(fmt.Sprintf("unknown key %q in %q (known: peer_timeout)", key, item))
		}
	}
	return o, nil
}

func optErr(msg string) error {
	return api.Errorf(api.InvalidParameter, api.NoSubtype, "tcp: platform_params: "+msg)
}

// keepAlive returns the keepalive settings for peer timeout t > 0: the
// probe interval, also the silence before the first probe, is t/5 rounded
// up to whole seconds (the unit of the socket options), at least 1 s, and
// the probe count makes the first probe plus the probes about t. With a
// user timeout set, Linux goes by the user timeout rather than the count:
// it gives the connection up at the first probe due once t has passed
// since the peer was last heard from.
func keepAlive(t time.Duration) net.KeepAliveConfig {
	ceil := func(a, b time.Duration) time.Duration { return (a + b - 1) / b }
	iv := max(time.Second, ceil(t/keepAliveSplit, time.Second)*time.Second)
	n := max(1, int(ceil(t-iv, iv)))
	return net.KeepAliveConfig{Enable: true, Idle: iv, Interval: iv, Count: n}
}

// applyToConn sets the options on a connection socket, as soon as it is
// connected (dialled or accepted) and before anything is exchanged on it.
// The settings belong to the socket, so they hold for any descriptor
// later duplicated from it. With peer_timeout=0 nothing is set: the
// socket was made without Go's default keepalive (see listen and dial).
func (o options) applyToConn(nc net.Conn) error {
	t := o.peerTimeout
	if t == 0 {
		return nil
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return fmt.Errorf("%T is not a TCP connection", nc)
	}
	if err := tc.SetKeepAliveConfig(keepAlive(t)); err != nil {
		return err
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(t/time.Millisecond))
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("setsockopt TCP_USER_TIMEOUT: %w", serr)
	}
	return nil
}
