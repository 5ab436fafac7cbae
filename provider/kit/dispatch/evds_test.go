package dispatch

import (
	"errors"
	"sync"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/completion"
)

// An EVDs set makes whole EVDs: created in the set, reporting overflows
// to the async EVD, freed out of it; the async EVD is not the consumer's
// to free, and a nil EVD takes deliveries and drops them.
func TestEVDs(t *testing.T) {
	var mu sync.Mutex
	self := &ownerIA{n: 1}
	var base kit.IA
	evds := NewEVDs(self, &base, &mu, 8, 2)
	async := evds.OpenAsync(4)
	base.InitIA(&mu, async)
	if evds.Len() != 0 || async.Flags() != api.EVDAsync {
		t.Fatalf("the async EVD: in the set %d, flags %v", evds.Len(), async.Flags())
	}
	if _, err := evds.Create(9, nil, api.EVDDTO); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("qlen above the limit: %v", err)
	}
	x, err := evds.Create(1, nil, api.EVDDTO)
	if err != nil {
		t.Fatal(err)
	}
	e := x.(*EVDObject)
	if !evds.Has(e) {
		t.Fatal("the new EVD is not in the set")
	}
	ev := api.Event{Number: api.DTOCompletionEvent}
	e.Deliver(&ev, true)
	e.Deliver(&ev, true) // overflows
	var got api.Event
	if err := async.Dequeue(&got); err != nil || got.Number != api.AsyncEVDOverflowEvent || got.Async.Object != api.Object(e) {
		t.Fatalf("overflow report %+v, %v", got, err)
	}
	(*EVDObject)(nil).Deliver(&ev, true)

	if err := async.Free(); !errors.Is(err, api.ErrInvalidState) {
		t.Fatalf("Free of the async EVD: %v", err)
	}
	if err := e.Free(); err != nil || evds.Has(e) {
		t.Fatalf("Free: %v; still in the set %v", err, evds.Has(e))
	}
	if err := e.Free(); !errors.Is(err, api.ErrInvalidHandle) {
		t.Fatalf("second Free: %v", err)
	}
}

// DeliverRecv and FlushRecv post a receive's completion as
// completion.Recv.Event fills it; a nil EVD drops it.
func TestDeliverRecv(t *testing.T) {
	var mu sync.Mutex
	self := &ownerIA{n: 1}
	var base kit.IA
	evds := NewEVDs(self, &base, &mu, 8, 0)
	base.InitIA(&mu, evds.OpenAsync(4))
	x, err := evds.Create(4, nil, api.EVDDTO)
	if err != nil {
		t.Fatal(err)
	}
	e := x.(*EVDObject)
	var ep api.EP
	rw := completion.Recv{Cookie: 7}
	e.DeliverRecv(&rw, ep, 0, api.DTOSuccess, 5, api.OpReceiveWithInvalidate, 0x99, false)
	e.FlushRecv(&completion.Recv{Cookie: 8}, ep)
	(*EVDObject)(nil).DeliverRecv(&rw, ep, 0, api.DTOSuccess, 5, api.OpReceive, 0, false)
	(*EVDObject)(nil).FlushRecv(&rw, ep)
	want := []api.DTOCompletionData{
		{Cookie: 7, Status: api.DTOSuccess, Length: 5, Op: api.OpReceiveWithInvalidate, RMRContext: 0x99},
		{Cookie: 8, Status: api.DTOErrFlushed, Op: api.OpReceive},
	}
	for i, w := range want {
		var ev api.Event
		if err := e.Dequeue(&ev); err != nil || ev.Number != api.DTOCompletionEvent || ev.DTO != w {
			t.Fatalf("event %d: %+v, %v; want %+v", i, ev.DTO, err, w)
		}
	}
	var ev api.Event
	if err := e.Dequeue(&ev); err == nil {
		t.Fatalf("an extra event %+v", ev)
	}
}
