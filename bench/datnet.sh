#!/usr/bin/env bash
# bench/datnet.sh: datnet streams over godat's tcp IA beside a raw TCP
# net.Conn, two processes on 127.0.0.1, interleaved repetitions in one run.
# Prints the median (min-max) of each row and the ratio of the medians
# (bench/table.awk); a nonzero allocs/op is noted on standard error.
#
#   REPS=5 bash bench/datnet.sh          # BENCHTIME=2s by default
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-5}
benchtime=${BENCHTIME:-2s}
out=$(mktemp)
trap 'rm -f "$out" "$out.r"' EXIT
echo "running $reps interleaved repetitions of datnet's benchmarks ($benchtime each)..." >&2
go test -run '^$' -bench 'RequestResponse|Stream' -benchtime "$benchtime" -count "$reps" ./datnet | tee "$out" >&2
# One R record per benchmark line (see bench/table.awk), then the table.
awk '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	for (i = 2; i <= NF; i++) {
		if ($i == "ns/op" && name ~ /^RequestResponse/) printf "R\trr.%s\t%d\t%s\n", substr(name, 17), ++n[name], $(i-1) / 2000
		if ($i == "MB/s" && name ~ /^Stream/) printf "R\tstream.%s\t%d\t%s\n", substr(name, 8), ++n[name], $(i-1)
		if ($i == "allocs/op" && $(i-1) != 0) printf "note: %s allocates %s times per op\n", name, $(i-1) > "/dev/stderr"
	}
}' "$out" > "$out.r"
awk -F'\t' -f bench/table.awk -f /dev/stdin "$out.r" <<'AWK'
END {
	rowhead()
	row("rr.datnet", "64 B request/response, one way µs", "datnet over the tcp IA")
	row("rr.rawtcp", "64 B request/response, one way µs", "raw TCP net.Conn")
	row("stream.datnet", "64 KiB stream, MB/s", "datnet over the tcp IA")
	row("stream.rawtcp", "64 KiB stream, MB/s", "raw TCP net.Conn")
	ratiohead()
	ratio("rr.datnet", "rr.rawtcp", "64 B one way: datnet ÷ raw TCP (goal ≤ 1.3)")
	ratio("stream.datnet", "stream.rawtcp", "64 KiB stream: datnet ÷ raw TCP (goal ≥ 0.8)")
}
AWK
