package datnet_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/datnet"
)

// The benchmarks measure a datnet stream over the tcp provider and a raw
// TCP net.Conn side by side, in the same run, against one server process
// (this test binary, re-executed with serverEnv set) on 127.0.0.1, so
// that the ratio of the two rows is what to compare across machines.
// $GODAT_DATNET_IA, when set, replaces the tcp IA by that IA of the
// configuration registry.Open reads (a verbs IA, say); raw TCP then runs
// on that IA's address.
const serverEnv = "GODAT_DATNET_BENCH_SERVER"

// benchIA opens the IA the benchmarks stream over.
func benchIA() (api.IA, error) {
	if envIA != "" {
		return configured(envIA)(context.Background())
	}
	return inProcess("tcp")(context.Background())
}

// Connection modes, the first byte a client sends.
const (
	modeEcho = 'e' // write back every byte
	modeSink = 's' // read to the end, then write the count (8 bytes)
)

// serverMain serves datnet on the tcp IA and raw TCP on 127.0.0.1 until
// its standard input ends, after printing both addresses.
func serverMain() int {
	ia, err := benchIA()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ia.Close(api.CloseAbrupt)
	dl, err := datnet.Listen(ia, ":0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer dl.Close()
	host := "127.0.0.1"
	if envIA != "" {
		a, _, err := ia.Query()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		host = a.Address.String()
	}
	tl, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer tl.Close()
	for _, l := range []net.Listener{dl, tl} {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go serveBench(c)
			}
		}()
	}
	fmt.Printf("datnet=%s tcp=%s\n", dl.Addr(), tl.Addr())
	io.Copy(io.Discard, os.Stdin)
	return 0
}

func serveBench(c net.Conn) {
	defer c.Close()
	mode := make([]byte, 1)
	if _, err := io.ReadFull(c, mode); err != nil {
		return
	}
	buf := make([]byte, 256<<10)
	switch mode[0] {
	case modeEcho:
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if _, err := c.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	case modeSink:
		n, _ := io.CopyBuffer(io.Discard, struct{ io.Reader }{c}, buf)
		binary.LittleEndian.PutUint64(buf, uint64(n))
		c.Write(buf[:8])
	}
}

// benchServer starts the server process; the client side opens its own
// tcp IA.
type benchServer struct {
	datnetAddr, tcpAddr string
	ia                  api.IA
}

func startBenchServer(b *testing.B) *benchServer {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("bench server: %v", err)
	}
	s := &benchServer{}
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "datnet":
			s.datnetAddr = v
		case "tcp":
			s.tcpAddr = v
		}
	}
	s.ia, err = benchIA()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.ia.Close(api.CloseAbrupt) })
	return s
}

// dial opens a connection of kind ("datnet" or "rawtcp") in mode.
func (s *benchServer) dial(b *testing.B, kind string, mode byte) net.Conn {
	b.Helper()
	var c net.Conn
	var err error
	if kind == "datnet" {
		c, err = datnet.Dial(context.Background(), s.ia, s.datnetAddr)
	} else {
		c, err = net.Dial("tcp", s.tcpAddr)
	}
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Write([]byte{mode}); err != nil {
		b.Fatal(err)
	}
	return c
}

var kinds = []string{"datnet", "rawtcp"}

// BenchmarkRequestResponse is a 64-byte ping-pong: ns/op is one round
// trip.
func BenchmarkRequestResponse(b *testing.B) {
	startBenchServer(b).run(b, modeEcho, 64, func(b *testing.B, c net.Conn, buf []byte) {
		for range b.N {
			if _, err := c.Write(buf); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// run runs body as a sub-benchmark for each kind of connection, on a
// connection to s in mode, with a size-byte buffer; the bytes per op are
// size and the timer is reset just before body runs.
func (s *benchServer) run(b *testing.B, mode byte, size int, body func(b *testing.B, c net.Conn, buf []byte)) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			c := s.dial(b, kind, mode)
			defer c.Close()
			buf := make([]byte, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			body(b, c, buf)
		})
	}
}

// BenchmarkStream writes 64 KiB at a time to a reader that discards
// them; the timed part ends when the server has counted every byte.
func BenchmarkStream(b *testing.B) {
	startBenchServer(b).run(b, modeSink, 64<<10, func(b *testing.B, c net.Conn, buf []byte) {
		for range b.N {
			if _, err := c.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf[:8]); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if n := binary.LittleEndian.Uint64(buf); n != uint64(b.N*len(buf)) {
			b.Fatalf("the server counted %d bytes of %d", n, b.N*len(buf))
		}
	})
}
