package connreq

import (
	"errors"
	"testing"

	"github.com/godat/godat/api"
)

// A qualifier is in use while a point listens on it; Free skips those and
// wraps to first; Unlisten removes only the point that listens.
func TestQuals(t *testing.T) {
	type point struct{ n int }
	a, b := &point{1}, &point{2}
	q := NewQuals[*point](0xC000)
	if err := q.Check(7); err != nil {
		t.Fatalf("Check on a free qualifier: %v", err)
	}
	q.Listen(7, a)
	if err := q.Check(7); !errors.Is(err, api.ErrConnQualInUse) || q.At(7) != a || q.At(8) != nil {
		t.Fatalf("Check %v, At(7) %v, At(8) %v", err, q.At(7), q.At(8))
	}
	q.Listen(0xC000, b)
	if got, err := q.Free(4); err != nil || got != 0xC001 {
		t.Fatalf("Free = %#x, %v; want 0xc001 (0xc000 is taken)", got, err)
	}
	q.Unlisten(7, b) // b does not listen on 7
	if q.At(7) != a {
		t.Fatal("Unlisten removed another point")
	}
	q.Unlisten(7, a)
	if q.At(7) != nil {
		t.Fatal("Unlisten left the point")
	}
	top := ^api.ConnQual(0)
	w := NewQuals[*point](top - 1)
	w.Listen(top-1, a)
	for _, want := range []api.ConnQual{top, top} { // top-1 is taken; after top, Free wraps to first
		if got, err := w.Free(2); err != nil || got != want {
			t.Fatalf("Free = %#x, %v; want %#x", got, err, want)
		}
	}
	w.Listen(top, b)
	if got, err := w.Free(2); !errors.Is(err, api.ErrConnQualUnavailable) {
		t.Fatalf("Free with every tried qualifier taken = %#x, %v", got, err)
	}
}
