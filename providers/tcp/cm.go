package tcp

import (
	"bytes"
	"io"
	"time"

	"github.com/godat/godat/api"
)

// Connection management: the active side's connect, service points,
// connection requests and the handshake.

// exchange writes the HELLO and reads the listener's answer, keeping the
// private data of an ACCEPT or REJECT in c.pd.
func (c *conn) exchange(hello []byte) (hsMsg, error) {
	if _, err := c.nc.Write(hello); err != nil {
		return hsMsg{}, err
	}
	m, pd, err := c.readHS()
	if err != nil {
		return m, err
	}
	if m.Type != hsAccept && m.Type != hsReject && m.Type != hsNonPeer && m.Type != hsVersion {
		return m, errBadHS
	}
	c.hs, c.pd = m, bytes.Clone(pd)
	return m, nil
}

// readHS reads one handshake message into the connection's fixed buffer;
// the private data it returns is valid until the next call.
func (c *conn) readHS() (hsMsg, []byte, error) {
	b := c.hsbuf[:]
	if _, err := io.ReadFull(c.nc, b[:hsLen]); err != nil {
		return hsMsg{}, nil, err
	}
	m, err := decodeHS(b[:hsLen], maxPrivateData)
	if err != nil {
		return m, nil, err
	}
	pd := b[hsLen : hsLen+int(m.PDLen)]
	if _, err := io.ReadFull(c.nc, pd); err != nil {
		return m, nil, err
	}
	if len(pd) == 0 {
		pd = nil
	}
	return m, pd, nil
}

// ---------------------------------------------------------------------
// Service points.

// Pauses of an accept goroutine after a failed accept: the first, and the
// longest (the pause doubles while the failures go on).
const (
	acceptRetryMin = 5 * time.Millisecond
	acceptRetryMax = time.Second
)

// testHookAcceptErr, set by tests only, sees each failed accept of a
// service point that is listening, with its port.
var testHookAcceptErr func(q api.ConnQual, err error)
