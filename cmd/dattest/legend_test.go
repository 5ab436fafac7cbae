package main

import (
	"bytes"
	"strings"
	"testing"
)

// The legend under the benchmark table explains the ops of its rows and
// no other.
func TestBenchLegendListsOpsRun(t *testing.T) {
	all := []string{"lat", "bw", "read", "wlat", "wlat-suppress", "wlat-watch"}
	for _, ran := range [][]string{{"bw"}, {"lat", "read"}, {"wlat-suppress"}, all} {
		var rows []benchRow
		for _, op := range ran {
			rows = append(rows, benchRow{Op: op, Size: 64, Mode: "poll", Godat: 1, Raw: 1, Ratio: 1, Unit: "us", Iters: 10})
		}
		var out bytes.Buffer
		if err := writeBench(&out, rows); err != nil {
			t.Fatal(err)
		}
		_, legend, _ := strings.Cut(out.String(), "\n\n")
		var explained []string
		for _, line := range strings.Split(strings.TrimSpace(legend), "\n") {
			op, _, _ := strings.Cut(line, ":")
			explained = append(explained, op)
		}
		if strings.Join(explained, ",") != strings.Join(ran, ",") {
			t.Errorf("rows of %q: the legend explains %q:\n%s", ran, explained, out.String())
		}
	}
}
