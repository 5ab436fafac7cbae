// Package openfds tells a test which file descriptors its process has
// open, so that it can check that what it did left none behind. It reads
// /proc/self/fd, so it works on Linux only, as godat does.
package openfds

import (
	"os"
	"testing"
)

// List returns the process's open descriptors: what each points to, by
// number. The descriptor that read the directory is not among them.
func List(t testing.TB) map[string]string {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("listing /proc/self/fd: %v", err)
	}
	m := make(map[string]string, len(es))
	for _, e := range es {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			// Closed since it was listed: the directory's own
			// descriptor, or one another goroutine closed.
			continue
		}
		m[e.Name()] = target
	}
	return m
}

// Count returns how many descriptors the process has open, not counting
// the one that read the list.
func Count(t testing.TB) int {
	t.Helper()
	return len(List(t))
}
