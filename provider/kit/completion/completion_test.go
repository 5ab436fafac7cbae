package completion

import (
	"testing"

	"github.com/godat/godat/api"
)

func TestRequest(t *testing.T) {
	for _, tc := range []struct {
		k            Kind
		flags        api.CompletionFlags
		st           api.DTOStatus
		post, notify bool
		num          api.EventNumber
		n            uint32
	}{
		{Send, 0, api.DTOSuccess, true, true, api.DTOCompletionEvent, 9},
		{Write, api.CompletionSuppress, api.DTOSuccess, false, false, 0, 0},
		{Write, api.CompletionSuppress, api.DTOErrFlushed, true, true, api.DTOCompletionEvent, 0},
		{Read, api.CompletionUnsignalled, api.DTOSuccess, true, false, api.DTOCompletionEvent, 9},
		{Read, api.CompletionUnsignalled, api.DTOErrLocalLength, true, true, api.DTOCompletionEvent, 0},
		{Bind, 0, api.DTOSuccess, true, true, api.RMRBindCompletionEvent, 0},
	} {
		var ev api.Event
		post, notify := Request(&ev, nil, nil, tc.k, 7, tc.flags, tc.st, 9)
		if post != tc.post || notify != tc.notify || ev.Number != tc.num || ev.DTO.Length != tc.n {
			t.Errorf("Request(%d, flags %#x, %v) = %v, %v, event %d length %d", tc.k, uint32(tc.flags), tc.st, post, notify, ev.Number, ev.DTO.Length)
		}
		if post && tc.k != Bind && (ev.DTO.Op != tc.k.Op() || ev.DTO.Cookie != 7) {
			t.Errorf("Request(%d): %+v", tc.k, ev.DTO)
		}
	}
	if ReadToRMR.Op() != api.OpRDMARead || Bind.Posting() != "binding an RMR" {
		t.Error("kind names")
	}
}

func TestReceive(t *testing.T) {
	for _, tc := range []struct {
		flags, epFlags api.CompletionFlags
		st             api.DTOStatus
		solicited      bool
		notify         bool
	}{
		{0, 0, api.DTOSuccess, false, true},
		{api.CompletionUnsignalled, 0, api.DTOSuccess, false, false},
		{0, api.CompletionSolicitedWait, api.DTOSuccess, false, false},
		{0, api.CompletionSolicitedWait, api.DTOSuccess, true, true},
		{api.CompletionUnsignalled, api.CompletionSolicitedWait, api.DTOErrFlushed, false, true},
	} {
		var ev api.Event
		notify := Receive(&ev, nil, 3, tc.flags, tc.epFlags, tc.st, 5, api.OpReceiveWithInvalidate, 11, tc.solicited)
		wantN, wantCtx := uint32(5), api.RMRContext(11)
		if tc.st != api.DTOSuccess {
			wantN, wantCtx = 0, 0
		}
		if notify != tc.notify || ev.DTO.Length != wantN || ev.DTO.RMRContext != wantCtx || ev.Number != api.DTOCompletionEvent {
			t.Errorf("Receive(%+v) = %v, %+v", tc, notify, ev.DTO)
		}
	}
}
