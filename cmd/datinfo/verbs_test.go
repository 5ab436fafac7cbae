//go:build !verbs

package main

import (
	"strings"
	"testing"
)

// TestVerbsWithoutSupport checks that a build without the verbs tag lists a
// verbs IA as unavailable, with the reason and how to build with support.
func TestVerbsWithoutSupport(t *testing.T) {
	isolate(t)
	cfg := writeFile(t, "verbs.conf", iaEntry("rdma0", "verbs", `ia_params = "rxe0 1"`))
	out := runDatinfoOK(t, "-f", cfg)
	if r := row(t, out, "rdma0"); !strings.HasSuffix(r, "unavailable: built without verbs support (build with -tags verbs)") {
		t.Errorf("rdma0 row: %q", r)
	}
	// A classic line for rdma-core's uDAPL library is served by verbs too.
	cfg = writeFile(t, "classic.conf", "ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\"\n")
	out = runDatinfoOK(t, "-f", cfg)
	if r := row(t, out, "ofa-v2-ib0"); !strings.Contains(r, " verbs ") || !strings.HasSuffix(r, "unavailable: built without verbs support (build with -tags verbs)") {
		t.Errorf("ofa-v2-ib0 row: %q", r)
	}
}
