package api

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// queueEVD is an EVD whose Wait hands out queued events and, when none is
// left, waits for the end of ctx as a provider's would.
type queueEVD struct {
	EVD
	q []Event
}

func (e *queueEVD) Wait(ctx context.Context, threshold int, ev *Event) (int, error) {
	if threshold != 1 {
		return 0, Errorf(InvalidParameter, SubArg3, "threshold is not 1")
	}
	if len(e.q) == 0 {
		<-ctx.Done()
		return 0, ContextError(ctx)
	}
	*ev, e.q = e.q[0], e.q[1:]
	return len(e.q), nil
}

func TestWaitFor(t *testing.T) {
	ctx := context.Background()
	est := Event{Number: ConnectionEstablishedEvent, Conn: ConnectionData{PrivateData: []byte("hi")}}
	rej := Event{Number: ConnectionPeerRejectedEvent}
	sent := Event{Number: DTOCompletionEvent, DTO: DTOCompletionData{Cookie: 7, Op: OpSend, Length: 5}}
	failed := Event{Number: DTOCompletionEvent, DTO: DTOCompletionData{Cookie: 8, Op: OpRDMAWrite, Status: DTOErrRemoteAccess}}
	unbound := Event{Number: RMRBindCompletionEvent, RMRBind: RMRBindCompletionData{Cookie: 9, Status: DTOErrFlushed}}
	for _, c := range []struct {
		name string
		ev   Event
		want []EventNumber
		err  string // "" for success, else words the error must contain
	}{
		{"the kind wanted", est, []EventNumber{ConnectionEstablishedEvent}, ""},
		{"one of the kinds wanted", rej, []EventNumber{ConnectionEstablishedEvent, ConnectionPeerRejectedEvent}, ""},
		{"any kind", sent, nil, ""},
		{"another kind", rej, []EventNumber{ConnectionEstablishedEvent},
			"the next event is CONNECTION_PEER_REJECTED (0 bytes of private data), not CONNECTION_ESTABLISHED"},
		{"another kind, several wanted", sent, []EventNumber{ConnectionEstablishedEvent, ConnectionBrokenEvent},
			"DTO_COMPLETION of SEND (cookie 7, 5 bytes), not one of CONNECTION_ESTABLISHED, CONNECTION_BROKEN"},
		{"a failed DTO", failed, []EventNumber{DTOCompletionEvent}, "RDMA_WRITE (cookie 8) with status ERR_REMOTE_ACCESS"},
		{"a failed DTO, any kind wanted", failed, nil, "RDMA_WRITE (cookie 8) with status ERR_REMOTE_ACCESS"},
		{"a failed bind", unbound, []EventNumber{RMRBindCompletionEvent}, "RMR_BIND_COMPLETION (cookie 9) with status ERR_FLUSHED"},
	} {
		evd := &queueEVD{q: []Event{c.ev, sent}}
		got, err := WaitFor(ctx, evd, c.want...)
		// The event is never dropped: it comes back with or without an error,
		// and the next one is still queued.
		if got.Number != c.ev.Number || got.DTO != c.ev.DTO || string(got.Conn.PrivateData) != string(c.ev.Conn.PrivateData) {
			t.Errorf("%s: returned %+v, want the event dequeued %+v", c.name, got, c.ev)
		}
		if len(evd.q) != 1 {
			t.Errorf("%s: %d events left, want 1", c.name, len(evd.q))
		}
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (!errors.Is(err, ErrInvalidState) || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want DAT_INVALID_STATE saying %q", c.name, err, c.err)
		}
	}

	// The end of the wait: the context's error as DAT's, with no event.
	tctx, cancel := context.WithTimeout(ctx, 0)
	defer cancel()
	if got, err := WaitFor(tctx, &queueEVD{}, DTOCompletionEvent); !errors.Is(err, ErrTimeoutExpired) || got.Number != 0 {
		t.Errorf("expired wait: %+v, %v", got, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if got, err := WaitFor(cctx, &queueEVD{}); !errors.Is(err, ErrInterruptedCall) || got.Number != 0 {
		t.Errorf("cancelled wait: %+v, %v", got, err)
	}
	if _, err := WaitFor(ctx, nil); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("nil EVD: %v", err)
	}
}
