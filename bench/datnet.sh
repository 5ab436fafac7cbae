#!/usr/bin/env bash
# bench/datnet.sh: datnet streams over godat's tcp IA beside a raw TCP
# net.Conn, two processes on 127.0.0.1, interleaved repetitions in one run.
# Prints the median (min-max) of each row and the ratio of the medians.
#
#   REPS=5 bash bench/datnet.sh          # BENCHTIME=2s by default
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-5}
benchtime=${BENCHTIME:-2s}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "running $reps interleaved repetitions of datnet's benchmarks ($benchtime each)..." >&2
go test -run '^$' -bench 'RequestResponse|Stream' -benchtime "$benchtime" -count "$reps" ./datnet | tee "$out" >&2
awk '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	for (i = 2; i <= NF; i++) {
		if ($i == "ns/op") ns[name] = ns[name] " " $(i-1)
		if ($i == "MB/s") mb[name] = mb[name] " " $(i-1)
		if ($i == "allocs/op") al[name] = $(i-1)
	}
}
function stats(s, arr,   n, i, j, t) {
	n = split(s, arr, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (arr[j] + 0 < arr[i] + 0) { t = arr[i]; arr[i] = arr[j]; arr[j] = t }
	return n
}
function med(s,   a, n) { n = stats(s, a); return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
function lo(s,   a, n) { n = stats(s, a); return a[1] }
function hi(s,   a, n) { n = stats(s, a); return a[n] }
END {
	rr = "BenchmarkRequestResponse"; st = "BenchmarkStream"
	printf "| row | datnet | raw TCP | ratio | goal | allocs/op (datnet) |\n|---|---|---|---|---|---|\n"
	d = med(ns[rr "/datnet"]) / 2000; r = med(ns[rr "/rawtcp"]) / 2000
	printf "| 64 B request/response, one way (µs) | %.1f (%.1f–%.1f) | %.1f (%.1f–%.1f) | %.2f× | ≤ 1.3× | %s |\n", d, lo(ns[rr "/datnet"]) / 2000, hi(ns[rr "/datnet"]) / 2000, r, lo(ns[rr "/rawtcp"]) / 2000, hi(ns[rr "/rawtcp"]) / 2000, d / r, al[rr "/datnet"]
	d = med(mb[st "/datnet"]); r = med(mb[st "/rawtcp"])
	printf "| 64 KiB stream (MB/s) | %.0f (%.0f–%.0f) | %.0f (%.0f–%.0f) | %.2f× | ≥ 0.8× | %s |\n", d, lo(mb[st "/datnet"]), hi(mb[st "/datnet"]), r, lo(mb[st "/rawtcp"]), hi(mb[st "/rawtcp"]), d / r, al[st "/datnet"]
}' "$out"
