//go:build cabi

package main

import (
	"slices"
	"testing"
)

// An entry put back goes first: events kept for want of C memory come out
// in the EVD's order, however often handing one out fails.
func TestFirstsKeepsOrder(t *testing.T) {
	var f firsts[int]
	f.push(1)
	f.push(2)
	x, left, ok := f.pop()
	if x != 1 || left != 1 || !ok {
		t.Fatalf("pop = %d, %d left, %v", x, left, ok)
	}
	f.pushFront(x) // handing 1 out failed again
	f.push(3)
	var got []int
	for {
		x, _, ok := f.pop()
		if !ok {
			break
		}
		got = append(got, x)
	}
	if !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("order %v, want [1 2 3]", got)
	}
	if _, _, ok := f.pop(); ok || f.n.Load() != 0 {
		t.Fatal("an empty queue pops something")
	}
}
