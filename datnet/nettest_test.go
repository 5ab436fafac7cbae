package datnet_test

import (
	"net"
	"testing"

	"golang.org/x/net/nettest"

	"github.com/godat/godat/datnet"
)

// runNettest runs x/net/nettest's conformance suite for net.Conn on
// streams over the IAs open gives, with default and with small buffers
// (so that flow control and message splitting are exercised).
func runNettest(t *testing.T, open opener) {
	for _, tc := range []struct {
		name string
		o    datnet.Options
	}{
		{"default", datnet.Options{}},
		{"small", datnet.Options{Buffers: 4, BufferSize: 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
				p, err := newPipe(t, open, tc.o)
				if err != nil {
					return nil, nil, nil, err
				}
				return p.c1, p.c2, func() {
					if err := p.stop(); err != nil {
						t.Errorf("stop: %v", err)
					}
				}, nil
			})
		})
	}
}

func TestNettestLoopback(t *testing.T) { runNettest(t, inProcess("lo")) }

func TestNettestTCP(t *testing.T) { runNettest(t, inProcess("tcp")) }

// The plugin host: every call crosses to the example plugin's process.
func TestNettestPlugin(t *testing.T) { runNettest(t, inProcess("plugin")) }

// The IA $GODAT_DATNET_IA names, from the configuration registry.Open
// reads: verbs on soft-RoCE in .ci/verbs.
func TestNettestConfiguredIA(t *testing.T) {
	if envIA == "" {
		t.Skip("GODAT_DATNET_IA names no IA")
	}
	runNettest(t, configured(envIA))
}
