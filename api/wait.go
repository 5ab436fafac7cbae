package api

import (
	"context"
	"fmt"
	"strings"
)

// WaitFor waits on evd for its next event (EVD.Wait with a threshold of
// one) and returns it when it is of one of the kinds in want, or of any
// kind when want is empty. It is the loop every program writes around
// EVD.Wait: "wait for the connection", "wait for this completion".
//
// WaitFor never drops an event. Whatever event ends the wait is returned,
// also when it comes with an error:
//
//   - an event of a kind not in want is returned with an error of type
//     DAT_INVALID_STATE that names it and the kinds wanted (a peer that
//     rejects a connection, say, when the program waits for
//     CONNECTION_ESTABLISHED);
//   - a DTO or RMR bind completion whose status is not DTOSuccess is
//     returned with an error of type DAT_INVALID_STATE that names the
//     operation, its cookie and the status, so that a failed transfer is
//     never mistaken for a done one.
//
// An error of the wait itself is EVD.Wait's (DAT_TIMEOUT_EXPIRED when ctx's
// deadline passes, DAT_INTERRUPTED_CALL when ctx is cancelled, and the
// others of dat_evd_wait(3DAT)) and comes with the zero Event: an Event
// whose Number is not zero was dequeued. Events already queued are taken
// one at a time, in order; WaitFor does not look past the first.
func WaitFor(ctx context.Context, evd EVD, want ...EventNumber) (Event, error) {
	var ev Event
	if evd == nil {
		return ev, Errorf(InvalidHandle, SubHandleEVDRequest, "WaitFor: the EVD handle is nil")
	}
	if _, err := evd.Wait(ctx, 1, &ev); err != nil {
		return Event{}, err
	}
	if len(want) > 0 && !wanted(ev.Number, want) {
		return ev, Errorf(InvalidState, NoSubtype, fmt.Sprintf("WaitFor: the next event is %s, not %s", describe(&ev), kinds(want)))
	}
	switch {
	case ev.Number == DTOCompletionEvent && ev.DTO.Status != DTOSuccess:
		return ev, Errorf(InvalidState, NoSubtype, "WaitFor: "+describe(&ev))
	case ev.Number == RMRBindCompletionEvent && ev.RMRBind.Status != DTOSuccess:
		return ev, Errorf(InvalidState, NoSubtype, "WaitFor: "+describe(&ev))
	}
	return ev, nil
}

func wanted(n EventNumber, want []EventNumber) bool {
	for _, w := range want {
		if n == w {
			return true
		}
	}
	return false
}

// kinds formats the wanted kinds: "CONNECTION_ESTABLISHED" or "one of A, B".
func kinds(want []EventNumber) string {
	if len(want) == 1 {
		return want[0].String()
	}
	s := make([]string, len(want))
	for i, w := range want {
		s[i] = w.String()
	}
	return "one of " + strings.Join(s, ", ")
}

// describe says what an event is, with the data that tells one event of
// its kind from another.
func describe(ev *Event) string {
	switch ev.Number.Stream() {
	case EVDDTO:
		d := &ev.DTO
		if d.Status != DTOSuccess {
			return fmt.Sprintf("%v of %v (cookie %d) with status %v", ev.Number, d.Op, d.Cookie, d.Status)
		}
		return fmt.Sprintf("%v of %v (cookie %d, %d bytes)", ev.Number, d.Op, d.Cookie, d.Length)
	case EVDRMRBind:
		return fmt.Sprintf("%v (cookie %d) with status %v", ev.Number, ev.RMRBind.Cookie, ev.RMRBind.Status)
	case EVDConnection:
		return fmt.Sprintf("%v (%d bytes of private data)", ev.Number, len(ev.Conn.PrivateData))
	case EVDAsync:
		return fmt.Sprintf("%v (reason %d)", ev.Number, ev.Async.Reason)
	case EVDSoftware:
		return fmt.Sprintf("%v (%v)", ev.Number, ev.Software)
	}
	return ev.Number.String()
}
