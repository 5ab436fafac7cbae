#!/usr/bin/env bash
# bench/cabi.sh — the C ABI's overhead: OFA's dtest over godat's
# libdat2.so.2 (tcp IA) beside godat's native dattest doing the same work
# in the same mode and size, two processes on 127.0.0.1, REPS repetitions
# (default 5), interleaved. Prints each row's median (min–max) and the
# ratio C ABI / native at the medians (latency: >1 is slower; bandwidth:
# <1 is slower).
#
#   pp-poll   send/recv ping-pong, polling     dtest -p        dattest -bench lat  -mode poll
#   pp-wait   send/recv ping-pong, blocking    dtest           dattest -bench lat  -mode wait
#   wpp       RDMA-write ping-pong, watching   dtest -W        dattest -bench wlat-watch -mode poll
#   wpp-evd   the same dtest row beside        dtest -W        dattest -bench wlat -mode poll
#             the native loop that reaps
#             completions while it watches
#   bw        RDMA-write streaming bandwidth   dtest -w        dattest -bench bw   -mode wait
#             (1,000 writes of 64 KiB)          -B 1000         -iters 1000 -warmup 0
#   pp-steady send/recv ping-pong, polling,    bench/cabipp.c  dattest -bench lat  -mode poll
#             20,000 round trips after 35,000                  -iters 20000 -warmup 1000
#             untimed ones (mean)                              (which primes about as many)
#
# Latency is one-way (half a round trip) in µs at 64 B; bandwidth in MB/s
# at 64 KiB messages. dtest times its ping-pongs from the first round
# trip: its message ping-pong is always 100 round trips (-B does not
# change it), its RDMA-write ping-pong -B. The native latency rows do the
# same work, 100 and 1000 round trips timed from the first (-warmup 0),
# so that both carry the first round trips' costs; so does the native
# bandwidth row (1,000 writes of 64 KiB, as dtest -w -B 1000 makes each
# way). dtest's RDMA-write
# ping-pong (2.1.10, -W) spins on dat_evd_dequeue for each write's
# completion and then watches memory without calling in, as dattest's
# wlat-watch does; dattest's wlat calls EVD.Dequeue while it watches,
# which lets the tcp provider place the peer's write from that call.
# dtest sleeps a second before its message ping-pong, and on a VM the
# first calls after an idle second can take milliseconds (docs/
# performance.md, "C ABI"); pp-steady is the same ping-pong in steady
# state, by a C program of our own (bench/cabipp.c). Its warm-up matches
# dattest's priming (250 ms of ping-pong before the first row, about
# 35,000 round trips here): a fresh process's first timed phase is slow
# whatever it runs (docs/performance.md).
# Needs dapl2-utils and a built library
# (./cabi/build). Not part of CI: timings depend on the machine.
set -u
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
REPS=${REPS:-5}
work=$(mktemp -d /tmp/godat-cabi-bench.XXXXXX)
./cabi/build >/dev/null # always: a library left from another tree would be measured instead
go build -o "$work/dattest" ./cmd/dattest
gcc -O2 -Wall -o "$work/cabipp" bench/cabipp.c -Lbuild -l:libdat2.so.2
conf="$work/dat.conf"
printf '[[ia]]\nname = "tcp"\nprovider = "tcp"\napi_version = "u2.0"\nthreadsafe = true\nia_params = "127.0.0.1"\n' > "$conf"
export DAT_OVERRIDE="$conf"

listening() { grep -q ":$(printf %04X "$1") 00000000:0000 0A" /proc/net/tcp; }

# dtestrow ARGS...: one dtest pair; prints the client's output.
dtestrow() {
	LD_LIBRARY_PATH="$PWD/build" timeout 300 dtest -P tcp -s "$@" > "$work/srv.log" 2>&1 &
	local s=$!
	for _ in $(seq 1 500); do listening 15828 && break; sleep 0.02; done
	LD_LIBRARY_PATH="$PWD/build" timeout 300 dtest -P tcp -h 127.0.0.1 "$@" 2>&1
	wait $s
}

"$work/dattest" -s -p 18650 -d tcp > "$work/dattest-srv.log" 2>&1 &
srv=$!
trap 'kill -INT $srv 2>/dev/null; wait $srv 2>/dev/null; rm -rf "$work"' EXIT
sleep 0.5
nat() { "$work/dattest" -h 127.0.0.1 -p 18650 -d tcp "$@" 2>/dev/null; }
# us ROW OP MODE / mbs ROW OP MODE: the godat column of dattest's table
# row for OP in MODE, in µs or MB/s whatever unit dattest chose.
us() {
	awk -v row="$1" -v op="$2" -v mode="$3" '$1 == op && $3 == mode {
		f = ($5 == "ns") ? 0.001 : ($5 == "ms") ? 1000 : ($5 == "s") ? 1e6 : ($5 == "us") ? 1 : 0
		if (f) print row "\tnative\t" $4 * f }'
}
mbs() {
	awk -v row="$1" -v op="$2" -v mode="$3" '$1 == op && $3 == mode {
		f = ($5 == "GB/s") ? 1000 : ($5 == "MB/s") ? 1 : ($5 == "kB/s") ? 0.001 : 0
		if (f) print row "\tnative\t" $4 * f }'
}

res="$work/results.tsv"
for r in $(seq 1 "$REPS"); do
	echo "repetition $r of $REPS" >&2
	dtestrow -p -b 64 -B 1000 | awk '/Message PingPong/ { for (i = 1; i <= NF; i++) if ($i == "latency") print "pp-poll\tcabi\t" $(i+1) }' >> "$res"
	nat -bench lat -size 64 -iters 100 -warmup 0 -mode poll | us pp-poll lat poll >> "$res"
	dtestrow -b 64 -B 1000 | awk '/Message PingPong/ { for (i = 1; i <= NF; i++) if ($i == "latency") print "pp-wait\tcabi\t" $(i+1) }' >> "$res"
	nat -bench lat -size 64 -iters 100 -warmup 0 -mode wait | us pp-wait lat wait >> "$res"
	dtestrow -W -b 64 -B 1000 | awk '/RDMA write PingPong/ { for (i = 1; i <= NF; i++) if ($i == "latency") print "wpp\tcabi\t" $(i+1) "\nwpp-evd\tcabi\t" $(i+1) }' >> "$res"
	nat -bench wlat-watch -size 64 -iters 1000 -warmup 0 -mode poll | us wpp wlat-watch poll >> "$res"
	nat -bench wlat -size 64 -iters 1000 -warmup 0 -mode poll | us wpp-evd wlat poll >> "$res"
	dtestrow -w -b 65536 -B 1000 | awk '/RDMA write \(bi-direction\)/ { for (i = 1; i <= NF; i++) if ($i == "MB/sec") print "bw\tcabi\t" $(i-1) }' >> "$res"
	nat -bench bw -size 64K -iters 1000 -warmup 0 -mode wait | mbs bw bw wait >> "$res"
	LD_LIBRARY_PATH="$PWD/build" timeout 300 "$work/cabipp" -s tcp 18651 20000 35000 > "$work/pp-srv.log" 2>&1 &
	s=$!
	for _ in $(seq 1 500); do listening 18651 && break; sleep 0.02; done
	LD_LIBRARY_PATH="$PWD/build" timeout 300 "$work/cabipp" -c tcp 18651 20000 35000 | awk '{ print "pp-steady\tcabi\t" $2 }' >> "$res"
	wait $s
	nat -bench lat -size 64 -iters 20000 -warmup 1000 -mode poll | us pp-steady lat poll >> "$res"
done

echo
echo "C ABI (dtest, and cabipp for pp-steady, over build/libdat2.so.2) against native (dattest), tcp IA, 127.0.0.1, $REPS repetitions"
printf '%-8s %-24s %-24s %s\n' row "C ABI median (min-max)" "native median (min-max)" "ratio"
for row in pp-poll pp-wait wpp wpp-evd bw pp-steady; do
	stat() { awk -F'\t' -v r="$row" -v w="$1" '$1 == r && $2 == w { print $3 }' "$res" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) { print "- - -"; exit } m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; print m, v[1], v[NR] }'; }
	read -r cm cmin cmax <<< "$(stat cabi)"
	read -r nm nmin nmax <<< "$(stat native)"
	ratio=$(awk -v a="$cm" -v b="$nm" 'BEGIN { if (b + 0 > 0 && a + 0 > 0) printf "%.2f", a / b; else print "-" }')
	printf '%-8s %-24s %-24s %s\n' "$row" "$cm ($cmin-$cmax)" "$nm ($nmin-$nmax)" "$ratio"
done
echo "(pp-*, wpp*: one-way µs, ratio >1 is slower; bw: MB/s, ratio <1 is slower)"
