package main

import (
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The package doc states the warm-up the benchmarks run: what warmup
// computes.
func TestDocWarmup(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(f.Doc.Text()), " ")
	m := regexp.MustCompile(`warm-up of iters/(\d+) \(at least (\d+), at most (\d+)\)`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatal(`the package doc does not say "warm-up of iters/N (at least A, at most B)"`)
	}
	div, lo, hi := atoi(t, m[1]), atoi(t, m[2]), atoi(t, m[3])
	for _, iters := range []int{1, 10, 19, 20, 21, 99, 100, 1000, 1999, 2000, 2001, 5000, 100000} {
		if got, want := warmup(iters), min(max(iters/div, lo), hi); got != want {
			t.Errorf("warmup(%d) = %d; the package doc says iters/%d, at least %d, at most %d: %d", iters, got, div, lo, hi, want)
		}
	}
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
