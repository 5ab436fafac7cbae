//go:build mutation

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Every mutant applies to this tree: its old text is in its file exactly
// once. (Against an older tree, -root, one may not; here that is a mutant
// left behind by a change of the code it mutates.)
func TestMutantsApply(t *testing.T) {
	for _, m := range mutants {
		src, err := os.ReadFile(filepath.Join("../..", m.file))
		if err != nil {
			t.Errorf("%s: %v", m.id, err)
			continue
		}
		if n := bytes.Count(src, []byte(m.old)); n != 1 {
			t.Errorf("%s: its old text is in %s %d times, want once", m.id, m.file, n)
		}
	}
}
