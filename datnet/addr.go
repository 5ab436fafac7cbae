package datnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/godat/godat/api"
)

// Addr is one end of a stream: an IA's address and a connection
// qualifier, the DAT counterparts of a host and a port.
type Addr struct {
	IA   net.Addr     // the IA's address, as dat_ia_query(3DAT) reports it
	Qual api.ConnQual // the connection qualifier (a port on IP transports)
}

// Network returns "dat".
func (a *Addr) Network() string { return "dat" }

// String formats the address as host:qualifier, the form Dial and Listen
// read.
func (a *Addr) String() string {
	if a == nil {
		return "<nil>"
	}
	host := ""
	if a.IA != nil {
		host = a.IA.String()
	}
	return net.JoinHostPort(host, strconv.FormatUint(uint64(a.Qual), 10))
}

// providerAddr is an IA address given by its network and text. Every
// provider reads this form for its own network (the tcp provider IP
// addresses, loopback name#instance, a plugin whatever it declares), so
// datnet needs no provider's address type.
type providerAddr struct{ network, text string }

func (a providerAddr) Network() string { return a.network }
func (a providerAddr) String() string  { return a.text }

// splitAddr reads "host:qualifier". An empty host means local, the IA's
// own address.
func splitAddr(addr string) (host string, q api.ConnQual, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.ParseUint(port, 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("connection qualifier %q is not a number", port)
	}
	return host, api.ConnQual(n), nil
}

// resolve turns the host of a dial address into an address of the
// network of local, the dialing IA's. On IP networks a name that is not
// an address literal is looked up.
func resolve(ctx context.Context, local net.Addr, host string) (net.Addr, error) {
	if host == "" {
		return local, nil
	}
	network := local.Network()
	switch network {
	case "ip", "ip4", "ip6", "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
		if net.ParseIP(host) == nil {
			ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
			if err != nil {
				return nil, err
			}
			if len(ips) == 0 {
				return nil, fmt.Errorf("no address for %q", host)
			}
			return &ips[0], nil
		}
		return &net.IPAddr{IP: net.ParseIP(host)}, nil
	}
	return providerAddr{network: network, text: host}, nil
}

// setupErr is the error of a Dial or Listen (op) of addr that failed
// with err: a *net.OpError naming the address, as package net's do,
// unless err is about the address itself and names it already.
func setupErr(op, addr string, err error) error {
	e := &net.OpError{Op: op, Net: "dat", Err: err}
	if ae := (*net.AddrError)(nil); !errors.As(err, &ae) {
		e.Addr = givenAddr(addr)
	}
	return e
}

// givenAddr is an address as a caller gave it to Dial or Listen.
type givenAddr string

func (a givenAddr) Network() string { return "dat" }
func (a givenAddr) String() string  { return string(a) }
