package epattr

import (
	"sync"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/dispatch"
)

type asyncEVD struct {
	api.ContextSlot
	dispatch.EVD
}

func (*asyncEVD) Free() error { return nil }

// The soft watermark posts its event once per SetWatermarks; the hard one
// breaks only a connected EP.
func TestSetWatermarksAndWatch(t *testing.T) {
	var mu sync.Mutex
	async := &asyncEVD{}
	async.Init(async, nil, &mu, 8, 8, api.EVDAsync, nil)
	self := new(struct{ api.EP })
	e := Endpoint{State: api.EPUnconnected}
	e.SetWatermarks(1, 2)
	if e.Attr.SRQSoftHighWatermark != 1 {
		t.Fatalf("the attributes report soft watermark %d, want 1", e.Attr.SRQSoftHighWatermark)
	}
	if e.Watch(1, self, &async.EVD) {
		t.Fatal("at the soft watermark: break")
	}
	var ev api.Event
	if err := async.Dequeue(&ev); err == nil {
		t.Fatalf("event %+v at the soft watermark, want none until it is passed", ev)
	}
	if e.Watch(3, self, &async.EVD) {
		t.Fatal("above the hard watermark, not connected: break")
	}
	if err := async.Dequeue(&ev); err != nil || ev.Number != SoftHighWatermarkEvent || ev.Async.Object != api.Object(self) || ev.Async.Reason != api.ReasonEPSoftHighWater {
		t.Fatalf("soft watermark event %+v, %v", ev, err)
	}
	e.State = api.EPConnected
	if !e.Watch(3, self, &async.EVD) {
		t.Fatal("above the hard watermark while connected: no break")
	}
	if err := async.Dequeue(&ev); err == nil {
		t.Fatalf("a second soft event %+v before SetWatermarks", ev)
	}
	e.SetWatermarks(api.WatermarkInfinite, api.WatermarkInfinite)
	if e.Watch(100, self, &async.EVD) {
		t.Fatal("infinite watermarks: break")
	}
}
