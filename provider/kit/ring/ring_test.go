package ring

import "testing"

func TestFIFOAndGrowth(t *testing.T) {
	var r Ring[int]
	if r.Front() != nil || r.Len() != 0 {
		t.Fatal("zero ring not empty")
	}
	r.PopFront() // no-op on empty
	next, want := 0, 0
	for round := 0; round < 5; round++ {
		for i := 0; i < 13; i++ {
			*r.PushBack() = next
			next++
		}
		for i := 0; i < 9; i++ {
			if got := *r.Front(); got != want {
				t.Fatalf("front = %d, want %d", got, want)
			}
			r.PopFront()
			want++
		}
	}
	if r.Len() != next-want {
		t.Fatalf("len = %d, want %d", r.Len(), next-want)
	}
	for i := 0; i < r.Len(); i++ {
		if got := *r.At(i); got != want+i {
			t.Fatalf("At(%d) = %d, want %d", i, got, want+i)
		}
	}
	r.Clear()
	if r.Len() != 0 || r.Front() != nil {
		t.Fatal("Clear left elements")
	}
}

func TestSlotReuseDoesNotAllocate(t *testing.T) {
	type slot struct{ iov []int }
	var r Ring[slot]
	src := []int{1, 2, 3, 4}
	for i := 0; i < 4; i++ { // warm up
		s := r.PushBack()
		s.iov = append(s.iov[:0], src...)
	}
	for r.Len() > 0 {
		r.PopFront()
	}
	allocs := testing.AllocsPerRun(100, func() {
		s := r.PushBack()
		s.iov = append(s.iov[:0], src...)
		r.PopFront()
	})
	if allocs != 0 {
		t.Fatalf("allocs/op = %v, want 0", allocs)
	}
}

func TestAtPanicsOutOfRange(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("At(0) on empty ring did not panic")
		}
	}()
	var r Ring[int]
	r.At(0)
}
