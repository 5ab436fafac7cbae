//go:build mutation

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
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

// Every mutant has an id of its own and makes an edit no other mutant
// makes: -only picks mutants by id, and a bug listed twice counts twice in
// the rate.
func TestMutantsDistinct(t *testing.T) {
	ids := map[string]bool{}
	edits := map[[3]string]string{}
	for _, m := range mutants {
		if ids[m.id] {
			t.Errorf("id %s is used twice", m.id)
		}
		ids[m.id] = true
		e := [3]string{m.file, m.old, m.new}
		if other, ok := edits[e]; ok {
			t.Errorf("%s makes the edit of %s", m.id, other)
		}
		edits[e] = m.id
	}
}

// Every mutant compiles: a mutant whose new text no longer builds (the
// code around it was renamed) would count as no-compile and test nothing.
// Each is built as an overlay of its package, vet's type check included,
// with the test files the mutation run compiles too.
func TestMutantsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every mutant's package")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for _, m := range mutants {
		path := filepath.Join(root, m.file)
		src, err := os.ReadFile(path)
		if err != nil || bytes.Count(src, []byte(m.old)) != 1 {
			continue // TestMutantsApply reports it
		}
		mut := filepath.Join(tmp, m.id+".go")
		ov := filepath.Join(tmp, m.id+".json")
		b, _ := json.Marshal(map[string]any{"Replace": map[string]string{path: mut}})
		if os.WriteFile(mut, bytes.Replace(src, []byte(m.old), []byte(m.new), 1), 0o644) != nil || os.WriteFile(ov, b, 0o644) != nil {
			t.Fatal("cannot write the overlay")
		}
		args := []string{"vet", "-overlay", ov}
		if tags := tests[m.area].tags; tags != "" {
			args = append(args, "-tags", tags)
		}
		cmd := exec.Command("go", append(args, "./"+filepath.Dir(m.file))...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s does not build: %v\n%s", m.id, err, out)
		}
	}
}

// Every mutant names an area the tests table knows, and the flags select
// what they say: an unknown area or id is an error, not an empty run.
func TestChoose(t *testing.T) {
	for _, m := range mutants {
		if _, ok := tests[m.area]; !ok {
			t.Errorf("%s: area %q has no tests", m.id, m.area)
		}
	}
	all, err := choose(mutants, "", "")
	if err != nil || len(all) != len(mutants) {
		t.Fatalf("no flags: %d mutants, %v; want all %d", len(all), err, len(mutants))
	}
	first := mutants[0]
	one, err := choose(mutants, first.id, "")
	if err != nil || len(one) != 1 || one[0].id != first.id {
		t.Errorf("-only %s: %v, %v", first.id, one, err)
	}
	byArea, err := choose(mutants, "", first.area)
	if err != nil || len(byArea) == 0 {
		t.Fatalf("-area %s: %d, %v", first.area, len(byArea), err)
	}
	for _, m := range byArea {
		if m.area != first.area {
			t.Errorf("-area %s chose %s of area %s", first.area, m.id, m.area)
		}
	}
	for _, bad := range [][2]string{{"no-such-id", ""}, {"", "no-such-area"}, {"", first.area + ",cabii"}} {
		if got, err := choose(mutants, bad[0], bad[1]); err == nil {
			t.Errorf("-only %q -area %q: %d mutants and no error", bad[0], bad[1], len(got))
		}
	}
	other := "loopback"
	if first.area == other {
		other = "cabi"
	}
	if got, err := choose(mutants, first.id, other); err == nil {
		t.Errorf("-only %s -area %s: %d mutants and no error", first.id, other, len(got))
	}
}
