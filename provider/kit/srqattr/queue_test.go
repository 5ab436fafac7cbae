package srqattr

import (
	"errors"
	"testing"

	"github.com/godat/godat/api"
)

func TestQueue(t *testing.T) {
	var q Queue
	fired := 0
	q.Init(api.SRQAttr{MaxRecvDTOs: 3, MaxRecvIOV: 1, LowWatermark: 1}, 4, func() { fired++ })
	if fired != 1 {
		t.Fatalf("an armed low watermark on an empty SRQ fired %d times at Init, want 1", fired)
	}
	seg := []api.LMRTriplet{{Length: 8}}
	for c := range api.Cookie(3) {
		if err := q.Post(seg, c); err != nil {
			t.Fatalf("Post %d: %v", c, err)
		}
	}
	if err := q.Post(seg, 9); !errors.Is(err, api.ErrInsufficientResources) {
		t.Fatalf("Post to a full SRQ: %v", err)
	}
	if err := q.Resize(2); !errors.Is(err, api.ErrInvalidState) {
		t.Fatalf("Resize below the posted receives: %v", err)
	}
	if err := q.Resize(5); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("Resize above the provider's limit: %v", err)
	}
	if err := q.SetLW(2); err != nil || fired != 1 {
		t.Fatalf("SetLW(2) with 3 posted: %v, fired %d", err, fired)
	}
	if q.Front().Cookie != 0 || q.Take().Cookie != 0 || fired != 1 {
		t.Fatalf("first Take: fired %d", fired)
	}
	if w := q.Take(); w.Cookie != 1 || fired != 2 {
		t.Fatalf("the Take that leaves fewer than the watermark: cookie %d, fired %d", w.Cookie, fired)
	}
	q.Take()
	if q.Len() != 0 || q.Front() != nil || fired != 2 {
		t.Fatalf("the event is one-shot: fired %d", fired)
	}
	if p := q.Param(); p.MaxRecvDTOs != 3 || p.LowWatermark != 2 || p.AvailableDTOCount != 0 || p.State != api.SRQStateOperational {
		t.Fatalf("Param: %+v", p)
	}
	if err := q.SetLW(4); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("SetLW above the size: %v", err)
	}
}
