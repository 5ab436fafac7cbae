package openfds

import (
	"os"
	"testing"
)

// A file opened and closed shows in the list and the count while it is
// open, and only then.
func TestListAndCount(t *testing.T) {
	before := Count(t)
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	l := List(t)
	if n := Count(t); n != before+1 || len(l) != n {
		t.Errorf("with %s open: Count %d, %d listed, want %d", os.DevNull, n, len(l), before+1)
	}
	found := false
	for _, target := range l {
		found = found || target == os.DevNull
	}
	if !found {
		t.Errorf("%s is not listed: %v", os.DevNull, l)
	}
	f.Close()
	if n := Count(t); n != before {
		t.Errorf("after the close: Count %d, want %d", n, before)
	}
}
