package repo

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFileLines is the most lines a Go source file of the project may
// have, tests, test data and generated code aside: a file past it holds
// more than one concern and is split by concern (issue 26).
const maxFileLines = 800

// generated is the line go generate's tools put at the top of their output.
var generated = []byte("// Code generated ")

func TestNoSourceFileIsTooLong(t *testing.T) {
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.HasPrefix(src, generated) || bytes.Contains(src, append([]byte("\n"), generated...)) {
			return nil
		}
		if n := bytes.Count(src, []byte("\n")); n > maxFileLines {
			t.Errorf("%s has %d lines, more than %d", path, n, maxFileLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
