package sgl

import (
	"bytes"
	"testing"
)

func split(b []byte, sizes ...int) [][]byte {
	var out [][]byte
	for _, n := range sizes {
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

func TestCopyAcrossSegmentBoundaries(t *testing.T) {
	src := []byte("abcdefghijklmnopqrstuvwxyz")
	for _, tc := range []struct {
		name       string
		srcSizes   []int
		dstSizes   []int
		wantCopied int
	}{
		{"one to one", []int{26}, []int{26}, 26},
		{"many to one", []int{3, 0, 10, 13}, []int{26}, 26},
		{"one to many", []int{26}, []int{1, 5, 0, 20}, 26},
		{"many to many", []int{7, 7, 12}, []int{5, 5, 5, 11}, 26},
		{"dst short", []int{13, 13}, []int{4, 6}, 10},
		{"src short", []int{4}, []int{10, 10}, 4},
		{"empty", nil, []int{3}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			for _, s := range tc.srcSizes {
				n += s
			}
			s := split(src[:n], tc.srcSizes...)
			dbuf := make([]byte, 40)
			d := split(dbuf, tc.dstSizes...)
			if got := Copy(d, s); got != tc.wantCopied {
				t.Fatalf("Copy = %d, want %d", got, tc.wantCopied)
			}
			if !bytes.Equal(dbuf[:tc.wantCopied], src[:tc.wantCopied]) {
				t.Fatalf("dst = %q", dbuf[:tc.wantCopied])
			}
			if Len(d) != Len(split(dbuf, tc.dstSizes...)) {
				t.Fatal("Len changed")
			}
		})
	}
}

func TestGatherScatter(t *testing.T) {
	src := []byte("0123456789")
	g := make([]byte, 10)
	if n := Gather(g, split(src, 3, 3, 4)); n != 10 || !bytes.Equal(g, src) {
		t.Fatalf("Gather = %d %q", n, g)
	}
	short := make([]byte, 5)
	if n := Gather(short, split(src, 3, 3, 4)); n != 5 || string(short) != "01234" {
		t.Fatalf("short Gather = %d %q", n, short)
	}
	d := make([]byte, 12)
	if n := Scatter(split(d, 2, 2, 8), src); n != 10 || !bytes.Equal(d[:10], src) {
		t.Fatalf("Scatter = %d %q", n, d)
	}
	if n := Scatter(split(d, 2, 2), src); n != 4 {
		t.Fatalf("short Scatter = %d", n)
	}
}

func TestCopyAllocatesNothing(t *testing.T) {
	s := split(make([]byte, 100), 10, 40, 50)
	d := split(make([]byte, 100), 33, 33, 34)
	if a := testing.AllocsPerRun(100, func() { Copy(d, s) }); a != 0 {
		t.Fatalf("allocs = %v", a)
	}
}

func TestDrop(t *testing.T) {
	s := split(make([]byte, 10), 3, 3, 4)
	Drop(s[:2])
	if len(s) != 3 || s[0] != nil || s[1] != nil || len(s[2]) != 4 {
		t.Fatalf("after Drop of two: %v", s)
	}
	Drop(nil) // no segments: nothing to do
}
