package repo

import (
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// minimalDir is the example provider module, a module of its own that
// the root module's go test ./... does not enter (.ci/run tests it).
const minimalDir = "examples/minimal-provider"

// maxMinimalLines is what the example provider may take: lines with Go
// code (not blank, not only comments) in its non-test files.
const maxMinimalLines = 1000

// The example shows that a provider takes little code when it is built
// from the kit: its own code stays within maxMinimalLines.
func TestMinimalProviderIsSmall(t *testing.T) {
	total := 0
	err := filepath.WalkDir(filepath.Join(root, minimalDir), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n := codeLines(src)
		t.Logf("%s: %d lines of code", path, n)
		total += n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total == 0 || total > maxMinimalLines {
		t.Errorf("%s has %d lines of Go code outside its tests, want 1..%d", minimalDir, total, maxMinimalLines)
	}
}

// codeLines counts the lines of a Go source that hold a token other than
// a comment.
func codeLines(src []byte) int {
	fset := token.NewFileSet()
	f := fset.AddFile("", -1, len(src))
	var s scanner.Scanner
	s.Init(f, src, nil, 0)
	lines := map[int]bool{}
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return len(lines)
		}
		if tok == token.SEMICOLON && lit == "\n" {
			continue // inserted at a line's end, or at the end of the file
		}
		lines[f.Line(pos)] = true
	}
}

// The example provider is written as a third party's would be: its
// packages, tests included, import only godat's public packages, and the
// provider package reaches no other godat package even indirectly.
func TestMinimalProviderUsesOnlyPublicPackages(t *testing.T) {
	const godat = "github.com/godat/godat/"
	public := func(p string, provider bool) bool {
		if p == godat+"api" || p == godat+"provider" || p == godat+"provider/kit" || strings.HasPrefix(p, godat+"provider/kit/") {
			return !strings.Contains(p, "/internal")
		}
		switch strings.TrimPrefix(p, godat) {
		case "plugin", "plugin/host", "registry", "tests/conformance":
			return !provider
		}
		return false
	}
	list := func(args ...string) []string {
		cmd := exec.Command("go", append([]string{"list", "-e"}, args...)...)
		cmd.Dir = filepath.Join(root, minimalDir)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s in %s: %v", strings.Join(args, " "), minimalDir, err)
		}
		return strings.Fields(string(out))
	}
	imports := list("-f", "{{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")
	deps := list("-deps", ".")
	if len(imports) == 0 || len(deps) == 0 {
		t.Fatal("go list found no imports: has the module moved?")
	}
	for _, p := range imports {
		if strings.HasPrefix(p, godat) && !public(p, false) {
			t.Errorf("%s imports %s, which is not one of godat's public packages for providers", minimalDir, p)
		}
	}
	for _, p := range deps {
		if strings.HasPrefix(p, godat) && !public(p, true) {
			t.Errorf("the provider package of %s depends on %s", minimalDir, p)
		}
	}
}
