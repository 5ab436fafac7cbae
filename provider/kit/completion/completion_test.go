package completion

import (
	"reflect"
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
		r := Request{Kind: tc.k, Cookie: 7, Flags: tc.flags}
		post, notify := r.Event(&ev, nil, nil, tc.st, 9)
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

func TestRecv(t *testing.T) {
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
		r := Recv{Cookie: 3, Flags: tc.flags}
		notify := r.Event(&ev, nil, tc.epFlags, tc.st, 5, api.OpReceiveWithInvalidate, 11, tc.solicited)
		wantN, wantCtx := uint32(5), api.RMRContext(11)
		if tc.st != api.DTOSuccess {
			wantN, wantCtx = 0, 0
		}
		if notify != tc.notify || ev.DTO.Length != wantN || ev.DTO.RMRContext != wantCtx || ev.Number != api.DTOCompletionEvent {
			t.Errorf("Receive(%+v) = %v, %+v", tc, notify, ev.DTO)
		}
	}
}

// recorder is a Poster that keeps the last request.
type recorder struct{ last Request }

func (r *recorder) PostRequest(q Request) error { r.last = q; return nil }

func TestPosts(t *testing.T) {
	rec := &recorder{}
	s := Posts{To: rec}
	iov := []api.LMRTriplet{{LMRContext: 1, Length: 4}}
	remote := api.RMRTriplet{RMRContext: 2, Length: 4}
	local := api.RMRTriplet{RMRContext: 3, Length: 4}
	for _, tc := range []struct {
		name string
		post func() error
		want Request
	}{
		{"PostSend", func() error { return s.PostSend(iov, 5, api.CompletionSuppress) },
			Request{Kind: Send, Cookie: 5, Flags: api.CompletionSuppress, IOV: iov}},
		{"PostSendWithInvalidate", func() error { return s.PostSendWithInvalidate(iov, 6, 0, true, 9) },
			Request{Kind: Send, Cookie: 6, IOV: iov, Invalidate: true, RMRContext: 9}},
		{"PostRDMAWrite", func() error { return s.PostRDMAWrite(iov, 7, remote, 0) },
			Request{Kind: Write, Cookie: 7, IOV: iov, Remote: remote}},
		{"PostRDMARead", func() error { return s.PostRDMARead(iov, 8, remote, api.CompletionUnsignalled) },
			Request{Kind: Read, Cookie: 8, Flags: api.CompletionUnsignalled, IOV: iov, Remote: remote}},
		{"PostRDMAReadToRMR", func() error { return s.PostRDMAReadToRMR(local, 9, remote, 0) },
			Request{Kind: ReadToRMR, Cookie: 9, Local: local, Remote: remote}},
	} {
		rec.last = Request{}
		if err := tc.post(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := rec.last
		if len(got.IOV) != len(tc.want.IOV) || (len(got.IOV) > 0 && &got.IOV[0] != &tc.want.IOV[0]) {
			t.Errorf("%s: IOV %v, want the caller's %v", tc.name, got.IOV, tc.want.IOV)
		}
		got.IOV, tc.want.IOV = nil, nil
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s built %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.PostRDMAWrite(iov, 7, remote, 0) }); n != 0 {
		t.Errorf("PostRDMAWrite allocates %v times", n)
	}
}
