package main

import (
	"context"
	"testing"

	"github.com/godat/godat/api"
)

// scriptedEVD hands out the events it holds, in order, and then reports
// an empty queue.
type scriptedEVD struct {
	api.EVD
	evs []api.Event
}

func (e *scriptedEVD) Dequeue(ev *api.Event) error {
	if len(e.evs) == 0 {
		return api.ErrQueueEmpty
	}
	*ev, e.evs = e.evs[0], e.evs[1:]
	return nil
}

// landingEP accepts every RDMA write; onWrite, when set, runs after
// each, standing for the client's next ping arriving.
type landingEP struct {
	api.EP
	onWrite func()
}

func (p *landingEP) PostRDMAWrite([]api.LMRTriplet, api.Cookie, api.RMRTriplet, api.CompletionFlags) error {
	if p.onWrite != nil {
		p.onWrite()
	}
	return nil
}

// In dtest -W's mode the server awaits each pong's completion but the
// last: the client may send its next request as soon as it has that pong,
// with the pong's ACK riding on it, so that the request's receive
// completes ahead of the write. A server that awaited the last write took
// that receive's completion and dropped it, and the session then waited
// for a request it had already been given (TestTCPTwoProcesses hung so,
// now and then, under load).
func TestWLatWatchLeavesTheNextRequest(t *testing.T) {
	const size = 64
	mem, err := api.AllocMemory(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Free()
	land := mem.Bytes()[:size]
	request := api.Event{Number: api.DTOCompletionEvent, DTO: api.DTOCompletionData{Op: api.OpReceive, Cookie: 1, Status: api.DTOSuccess}}
	evd := &scriptedEVD{}
	ep := &landingEP{}
	s := &session{link: &link{dto: evd, ep: ep}, local: &buf{b: make([]byte, size)}, win: &buf{b: land}}
	first := s.cookie + 1
	land[size-1] = wlatTag(0) // ping 0 is there
	pongs := 0
	ep.onWrite = func() {
		pongs++
		write := api.Event{Number: api.DTOCompletionEvent, DTO: api.DTOCompletionData{Op: api.OpRDMAWrite, Cookie: first + api.Cookie(pongs-1), Status: api.DTOSuccess}}
		if pongs == 1 {
			evd.evs = append(evd.evs, write)
			land[size-1] = wlatTag(1) // ping 1 comes once pong 0 is out
			return
		}
		evd.evs = append(evd.evs, request, write)
	}
	if err := s.wlatServe(context.Background(), 2, api.RMRTriplet{Length: size}, wlatWatch); err != nil {
		t.Fatal(err)
	}
	if pongs != 2 {
		t.Fatalf("%d pongs written, want 2", pongs)
	}
	if len(evd.evs) != 2 || evd.evs[0].DTO.Op != api.OpReceive {
		t.Fatalf("after the ping-pong the EVD holds %+v; want the next request's receive and the last pong's write, for the request loop", evd.evs)
	}
}
