package tcp

// A second process for the two-process tests: the test binary re-executes
// itself with helperEnv set, and TestMain runs helperMain instead of the
// tests (the way os/exec's tests use their own binary). The helper is a
// small DAT server on the "tcp" IA:
//
//   - it listens on a PSP of its choice and prints "PORT <q>" on stdout;
//   - a request whose private data is "reject" is rejected with the
//     private data "no thanks";
//   - a request whose private data is "hold" is never answered (until the
//     helper exits);
//   - any other request is accepted with private data "welcome " + the
//     request's; the server then sends the client one message telling it
//     the RMR context, address and length of a 64 KiB window it may read
//     and write, and echoes every message it receives;
//   - it exits when its stdin is closed.

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

const helperEnv = "GODAT_TCP_TEST_HELPER"

const helperWindow = 64 << 10

func helperMain() int {
	ctx := context.Background()
	ia, err := registry.Open(ctx, "tcp")
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: open:", err)
		return 1
	}
	defer ia.Close(api.CloseAbrupt)
	crEVD, err := ia.CreateEVD(16, nil, api.EVDCR)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	_, q, err := ia.CreatePSPAny(crEVD, api.PSPConsumer)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	fmt.Printf("PORT %d\n", q)
	quit := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(quit)
	}()
	var wg sync.WaitGroup
	for {
		select {
		case <-quit:
			return 0
		default:
		}
		wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		var ev api.Event
		_, err := crEVD.Wait(wctx, 1, &ev)
		cancel()
		if err != nil {
			continue
		}
		cp, err := ev.CR.CR.Query()
		if err != nil {
			continue
		}
		if string(cp.PrivateData) == "reject" {
			_ = ev.CR.CR.Reject([]byte("no thanks"))
			continue
		}
		if string(cp.PrivateData) == "hold" {
			continue
		}
		s, err := newHelperConn(ia)
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 1
		}
		if err := ev.CR.CR.Accept(s.ep, append([]byte("welcome "), cp.PrivateData...)); err != nil {
			fmt.Fprintln(os.Stderr, "helper: accept:", err)
			return 1
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serve(quit)
		}()
	}
}

// helperConn is one accepted connection of the helper.
type helperConn struct {
	ep                 api.EP
	recv, req, connEVD api.EVD
	win, buf           []byte
	winLMR, bufLMR     api.LMRParam
}

func newHelperConn(ia api.IA) (*helperConn, error) {
	pz, err := ia.CreatePZ()
	if err != nil {
		return nil, err
	}
	s := &helperConn{win: make([]byte, helperWindow), buf: make([]byte, 2*helperWindow)}
	for _, e := range []*api.EVD{&s.recv, &s.req, &s.connEVD} {
		if *e, err = ia.CreateEVD(64, nil, api.EVDDTO|api.EVDConnection|api.EVDRMRBind); err != nil {
			return nil, err
		}
	}
	if s.ep, err = ia.CreateEP(pz, s.recv, s.req, s.connEVD, nil); err != nil {
		return nil, err
	}
	for _, r := range []struct {
		b    []byte
		p    *api.LMRParam
		priv api.MemPriv
	}{{s.win, &s.winLMR, api.MemPrivAll}, {s.buf, &s.bufLMR, api.MemPrivLocalRead | api.MemPrivLocalWrite}} {
		l, err := ia.CreateLMR(pz, api.Region{Type: api.MemTypeVirtual, Bytes: r.b}, r.priv, api.VATypeVA)
		if err != nil {
			return nil, err
		}
		if *r.p, err = l.Query(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// serve tells the client about the window, then echoes messages until the
// connection ends.
func (s *helperConn) serve(quit <-chan struct{}) {
	wait := func(e api.EVD) (api.Event, bool) {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			var ev api.Event
			_, err := e.Wait(ctx, 1, &ev)
			cancel()
			if err == nil {
				return ev, true
			}
			select {
			case <-quit:
				return ev, false
			default:
			}
		}
	}
	if ev, ok := wait(s.connEVD); !ok || ev.Number != api.ConnectionEstablishedEvent {
		return
	}
	half := uint32(helperWindow)
	post := func() bool {
		return s.ep.PostRecv([]api.LMRTriplet{s.bufLMR.Triplet(0, half)}, 1, api.CompletionDefault) == nil
	}
	if !post() {
		return
	}
	info := s.buf[helperWindow:]
	binary.BigEndian.PutUint32(info[0:], uint32(s.winLMR.RMRContext))
	binary.BigEndian.PutUint64(info[4:], uint64(s.winLMR.RegisteredAddress))
	binary.BigEndian.PutUint32(info[12:], uint32(helperWindow))
	if s.ep.PostSend([]api.LMRTriplet{s.bufLMR.Triplet(helperWindow, 16)}, 2, api.CompletionDefault) != nil {
		return
	}
	if ev, ok := wait(s.req); !ok || ev.DTO.Status != api.DTOSuccess {
		return
	}
	for {
		ev, ok := wait(s.recv)
		if !ok || ev.DTO.Status != api.DTOSuccess {
			return
		}
		n := ev.DTO.Length
		copy(s.buf[helperWindow:], s.buf[:n])
		if !post() {
			return
		}
		if s.ep.PostSend([]api.LMRTriplet{s.bufLMR.Triplet(helperWindow, n)}, 3, api.CompletionDefault) != nil {
			return
		}
		if ev, ok := wait(s.req); !ok || ev.DTO.Status != api.DTOSuccess {
			return
		}
	}
}

// helperWin decodes the helper's window message at the start of b.
func helperWin(b []byte) api.RMRTriplet {
	return api.RMRTriplet{RMRContext: api.RMRContext(binary.BigEndian.Uint32(b[0:])),
		Addr: api.VAddr(binary.BigEndian.Uint64(b[4:])), Length: binary.BigEndian.Uint32(b[12:])}
}

// helperProc is a running helper server: the port it listens on, its
// stdin (closing it stops the helper), the process and its exit.
type helperProc struct {
	port  api.ConnQual
	stdin io.WriteCloser
	proc  *os.Process
	done  chan error
}

func readPort(r io.Reader) (api.ConnQual, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		return 0, err
	}
	var q api.ConnQual
	_, err = fmt.Sscanf(line, "PORT %d", &q)
	return q, err
}
