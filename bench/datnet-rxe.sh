#!/usr/bin/env bash
# bench/datnet-rxe.sh — datnet (net.Conn over DAT) on the verbs provider
# beside rdma-core's rstream (rsocket, sockets over RDMA) on the same
# soft-RoCE device, in one boot of the rxe VM (../shared/tools/rxe-vm/run).
# Server and client of each tool run in the same guest over rxe0 on
# $RXE_VM_IP; REPS repetitions (default 5), interleaved (the repetition is
# the outer loop, so drift hits every tool alike).
#
#   datnet   datnet's own benchmarks (datnet/bench_test.go), built without
#            the race detector, on the verbs IA rxe-ip of
#            providers/verbs/testdata/datinfo.conf ($GODAT_DATNET_IA):
#            BenchmarkRequestResponse, a 64 B ping-pong (ns/op is a round
#            trip), and BenchmarkStream, 64 KiB writes to a reader that
#            discards them (MB/s), each against a server process that is
#            the test binary re-executed; one -test.count per repetition.
#            The same benchmarks' raw TCP rows (the same two processes, on
#            $RXE_VM_IP) come along as a reference.
#   rstream  custom runs: -S 64 -C 1 -I LAT_ITERS (a 64 B ping-pong; its
#            usec/xfer is half a round trip) and -S 65536 -C BW_COUNT -I 1
#            (BW_COUNT messages of 64 KiB one way, then back; its Gb/sec
#            counts both halves over their total time, which is the one-way
#            streaming rate), each with rstream's default, non-blocking
#            calls that spin, and with -T b, blocking calls (rsocket polls
#            a while, then sleeps on the completion channel).
#
# datnet's Read and Write spin on the EVD (20 µs, or up to 1 ms while
# their recent waits were shorter than that), then wait on it: between
# rstream's two modes. qemu runs in TCG emulation here: absolute numbers
# mean little, the ratios in the same boot are what counts.
#
# Usage:  bash bench/datnet-rxe.sh            (about 6 minutes)
#         REPS=1 bash bench/datnet-rxe.sh     (a quick look)
#
# Environment: RXE_VM_RUN (the harness's run script; by default
# ../shared/tools/rxe-vm/run beside the checkout), LAT_ITERS (rstream's
# ping-pong round trips, default 5000), BW_COUNT (rstream's 64 KiB
# messages each way, default 500), BENCHTIME (datnet's -test.benchtime,
# default 1s), KEEP=1 keeps the raw output in $WORK.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

REPS=${REPS:-5}
LAT_ITERS=${LAT_ITERS:-5000}
BW_COUNT=${BW_COUNT:-500}
BENCHTIME=${BENCHTIME:-1s}
. bench/rxe-vm.sh
if ! command -v rstream >/dev/null 2>&1; then
	if [ "$(id -u)" -eq 0 ]; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rdmacm-utils
	else
		echo "FAIL: rstream missing and not root: apt-get install rdmacm-utils" >&2
		exit 1
	fi
fi

out=.vmbin
mkdir -p "$out"
echo "building datnet's benchmarks -tags verbs (no race detector) and the example plugin" >&2
go test -c -tags verbs -o "$out/datnet-bench.test" ./datnet
# datnet's TestMain wants the plugin its tests use; the VM cannot build it.
go build -o "$out/loopback-plugin" ./examples/loopback-plugin
WORK=$(mktemp -d /tmp/godat-datnet-rxe.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT

# The guest's part: prints "R<TAB>metric<TAB>rep<TAB>value" lines.
cat >"$out/datnet-rxe-guest.sh" <<'GUEST'
set -u
ip=$RXE_VM_IP
root=$PWD
export GODAT_DATNET_IA=rxe-ip
export DAT_OVERRIDE=$root/providers/verbs/testdata/datinfo.conf
export GODAT_DATNET_PLUGIN=$root/.vmbin/loopback-plugin
r() { printf 'R\t%s\t%s\t%s\n' "$1" "$2" "$3"; }
# rs ARGS...: an rstream server and client with the same ARGS; prints the
# client's result line. The client retries until the server listens.
rs() {
	timeout 300 rstream -b "$ip" -p 7471 "$@" >/tmp/rs-srv.out 2>&1 &
	local srv=$! i rc=1
	for i in $(seq 1 40); do
		sleep 0.5
		timeout 300 rstream -s "$ip" -p 7471 "$@" >/tmp/rs-cli.out 2>&1 && { rc=0; break; }
		grep -q -i refused /tmp/rs-cli.out || break
	done
	wait $srv || rc=1
	if [ $rc != 0 ]; then
		echo "FAILED: rstream $*" >&2
		cat /tmp/rs-cli.out /tmp/rs-srv.out >&2
		return
	fi
	tail -1 /tmp/rs-cli.out
}
for rep in $(seq 1 "$REPS"); do
	echo "--- repetition $rep" >&2
	(cd datnet && ../.vmbin/datnet-bench.test -test.run '^$' -test.bench 'RequestResponse|Stream' \
		-test.benchtime "$BENCHTIME" -test.count 1 -test.timeout 10m) >/tmp/bench.out 2>/tmp/bench.err ||
		{ echo "FAILED: datnet benchmarks" >&2; cat /tmp/bench.out /tmp/bench.err >&2; }
	cat /tmp/bench.out >&2
	awk -v rep="$rep" '
		function unit(u,   i) { for (i = 3; i < NF; i++) if ($(i+1) == u) return $i; return "" }
		$1 ~ /^BenchmarkRequestResponse\// { k = $1; sub(/^[^\/]*\//, "", k); sub(/-[0-9]+$/, "", k)
			printf "R\trr.%s\t%s\t%s\n", k, rep, unit("ns/op") / 1000 }
		$1 ~ /^BenchmarkStream\// { k = $1; sub(/^[^\/]*\//, "", k); sub(/-[0-9]+$/, "", k)
			printf "R\tstream.%s\t%s\t%s\n", k, rep, unit("MB/s") }' /tmp/bench.out
	for mode in spin block; do
		t=; [ $mode = block ] && t="-T b"
		# usec/xfer is half a round trip. MB/s from the bytes moved (both
		# halves) and the time (its Gb/sec has two decimals only).
		v=$(rs -S 64 -C 1 -I "$LAT_ITERS" $t | awk '{ print 2 * $NF }')
		[ -n "$v" ] && r "rr.rstream-$mode" "$rep" "$v"
		v=$(rs -S 65536 -C "$BW_COUNT" -I 1 $t | awk -v n="$BW_COUNT" '{ s = $(NF-2); sub(/s$/, "", s); if (s > 0) print 2 * n * 65536 / s / 1e6 }')
		[ -n "$v" ] && r "stream.rstream-$mode" "$rep" "$v"
	done
done
GUEST

echo "running $REPS repetitions in the rxe VM" >&2
rxe_vm_run "${RXE_VM_TIMEOUT:-1800}" "rstream timeout" "$out/datnet-rxe-guest.sh" \
	-e REPS="$REPS" -e LAT_ITERS="$LAT_ITERS" -e BW_COUNT="$BW_COUNT" -e BENCHTIME="$BENCHTIME"
grep -E 'FAILED' -A 20 "$WORK/guest.err" >&2 || true

# median (min–max) per metric, then the ratios of the medians.
awk -F'\t' -f bench/table.awk -f /dev/stdin "$WORK/guest.out" <<'AWK'
END {
	rowhead()
	row("rr.datnet", "64 B request/response, round trip µs", "datnet on verbs (BenchmarkRequestResponse)")
	row("rr.rstream-spin", "64 B request/response, round trip µs", "rstream (non-blocking, spinning)")
	row("rr.rstream-block", "64 B request/response, round trip µs", "rstream -T b (blocking)")
	row("rr.rawtcp", "64 B request/response, round trip µs", "raw TCP (BenchmarkRequestResponse)")
	row("stream.datnet", "64 KiB stream, MB/s", "datnet on verbs (BenchmarkStream)")
	row("stream.rstream-spin", "64 KiB stream, MB/s", "rstream (non-blocking, spinning)")
	row("stream.rstream-block", "64 KiB stream, MB/s", "rstream -T b (blocking)")
	row("stream.rawtcp", "64 KiB stream, MB/s", "raw TCP (BenchmarkStream)")
	ratiohead()
	ratio("rr.datnet", "rr.rstream-spin", "64 B round trip: datnet ÷ rstream (goal ≤ 1)")
	ratio("rr.datnet", "rr.rstream-block", "64 B round trip: datnet ÷ rstream -T b (goal ≤ 1)")
	ratio("stream.datnet", "stream.rstream-spin", "64 KiB stream: datnet ÷ rstream (goal ≥ 1)")
	ratio("stream.datnet", "stream.rstream-block", "64 KiB stream: datnet ÷ rstream -T b (goal ≥ 1)")
	ratio("rr.datnet", "rr.rawtcp", "64 B round trip: datnet ÷ raw TCP")
	ratio("stream.datnet", "stream.rawtcp", "64 KiB stream: datnet ÷ raw TCP")
}
AWK
[ "${KEEP:-0}" = 1 ] && echo "raw output: $WORK" >&2
exit 0
