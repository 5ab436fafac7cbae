#!/usr/bin/env bash
# bench/verbs.sh — godat's verbs provider beside rdma-core's own tools, on
# soft-RoCE (rdma_rxe) in one boot of the rxe VM
# (../shared/tools/rxe-vm/run): server and client of every tool run in
# the same guest over rxe0, REPS repetitions (default 5), interleaved (the
# repetition is the outer loop, so drift hits every tool alike).
#
#   ibv_rc_pingpong  send/recv ping-pong, busy-polling the CQ; 64 B and
#                    1 MiB (usec/iter is a round trip)
#   ib_write_lat     perftest: RDMA-write ping-pong, each side spinning on
#                    the last byte of its buffer; 64 B (one-way, t_avg)
#   ib_send_lat      perftest: send/recv ping-pong; 64 B (one-way, t_avg)
#   ib_write_bw      perftest: streaming RDMA writes; 1 MiB (BW average)
#   dattest          -bench wlat (RDMA-write ping-pong spinning on memory,
#                    every write's completion reaped, as ib_write_lat does),
#                    -bench wlat-suppress (the same with the writes posted
#                    with CompletionSuppress: only a failure completes),
#                    -bench lat (send/recv ping-pong) at 64 B, and
#                    -bench bw (streaming RDMA writes, 16 in flight) at
#                    1 MiB, all -mode poll, server and client over the
#                    verbs IA on $RXE_VM_IP; also bw in -mode wait.
#                    Each dattest row runs twice: with GOMAXPROCS=1 for
#                    server and client (one thread per side, as the C tools
#                    have), and with Go's default (GOMAXPROCS = the 2
#                    vCPUs): two spinning Go processes with two Ps each
#                    share the guest's two vCPUs with rxe's kernel work
#
# perftest's tools are packed into the VM image from the host
# (RXE_VM_EXTRA_BINS) when the host has them (apt-get install perftest);
# without them their rows are skipped. qemu runs in TCG emulation here:
# absolute numbers mean little, the ratios in the same run are what counts.
#
# Usage:  bash bench/verbs.sh            (about 3 minutes)
#         REPS=1 bash bench/verbs.sh     (a quick look)
#         (about 45 s per repetition plus the boot)
#         PIN=1 bash bench/verbs.sh      (every tool's server on vCPU 0, its
#                                        client on vCPU 1, with taskset)
#         BASE=<git rev> bash bench/verbs.sh
#                                        (also measures dattest built from
#                                        that revision, in the same boot:
#                                        before/after rows)
# Pinning: unpinned, the guest's scheduler places the two spinning
# processes of a pair and rxe's kernel work on its two vCPUs as it likes,
# and the same binary's one-way latency moved between 15 and 24 µs from
# one run to the next. PIN=1 treats every tool alike (a dattest process
# with GOMAXPROCS=2 then has both Ps on its one vCPU).
#
# Environment: RXE_VM_RUN (the harness's run script; by default
# ../shared/tools/rxe-vm/run beside the checkout), LAT_ITERS (default 2000),
# BW_ITERS (1 MiB messages per bw run, default 100), PP_BW_ITERS
# (ibv_rc_pingpong 1 MiB exchanges, default 50), KEEP=1 keeps the raw
# output in $WORK.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
ROOT=$PWD

REPS=${REPS:-5}
PIN=${PIN:-0}
LAT_ITERS=${LAT_ITERS:-2000}
BW_ITERS=${BW_ITERS:-100}
PP_BW_ITERS=${PP_BW_ITERS:-50}
. bench/rxe-vm.sh

extra=
for b in ib_write_lat ib_write_bw ib_send_lat; do
	command -v "$b" >/dev/null 2>&1 && extra="$extra $b"
done
[ -n "$extra" ] || echo "note: perftest is not installed on the host (apt-get install perftest): its rows are skipped" >&2

out=.vmbin
mkdir -p "$out"
echo "building dattest -tags verbs" >&2
go build -tags verbs -o "$out/dattest" ./cmd/dattest
WORK=$(mktemp -d /tmp/godat-verbs-bench.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT
rm -f "$out/dattest-base"
if [ -n "${BASE:-}" ]; then
	echo "building dattest -tags verbs at $BASE" >&2
	mkdir -p "$WORK/base"
	git archive "$BASE" | tar -x -C "$WORK/base"
	(cd "$WORK/base" && go build -tags verbs -o "$ROOT/$out/dattest-base" ./cmd/dattest)
fi

# The guest's part: prints "R<TAB>metric<TAB>rep<TAB>value" lines.
cat >"$out/verbs-bench-guest.sh" <<'GUEST'
set -u
ip=$RXE_VM_IP g=$RXE_VM_GID_INDEX
conf=providers/verbs/testdata/datinfo.conf
S= C=
if [ "${PIN:-0}" = 1 ]; then S="taskset -c 0" C="taskset -c 1"; fi
dt=.vmbin/dattest
have() { command -v "$1" >/dev/null 2>&1; }
r() { printf 'R\t%s\t%s\t%s\n' "$1" "$2" "$3"; }
pair() { # tool args...: run the tool's server with args, and its client with args and $ip; client output on stdout
	$S "$@" >/tmp/srv.out 2>&1 &
	local pid=$!
	sleep 0.5
	timeout 120 $C "$@" "$ip" 2>/tmp/cli.err
	local rc=$?
	wait $pid
	[ $rc = 0 ] || { echo "FAILED ($rc): $* $ip" >&2; cat /tmp/cli.err /tmp/srv.out >&2; }
}
$S $dt -s -d rxe-ip -f $conf -p 7471 >/tmp/dattest-server.log 2>&1 &
dsrv=$!
GOMAXPROCS=1 $S $dt -s -d rxe-ip -f $conf -p 7473 >/tmp/dattest-server1.log 2>&1 &
dsrv1=$!
bsrv=
if [ -x .vmbin/dattest-base ]; then
	$S .vmbin/dattest-base -s -d rxe-ip -f $conf -p 7472 >/tmp/dattest-base-server.log 2>&1 &
	bsrv=$!
fi
sleep 2
dattest_row() { # name rep args...: the godat and raw values of a one-row bench
	local name=$1 rep=$2 bin=$dt port=7471 procs=
	shift 2
	case $name in
	base.*) bin=.vmbin/dattest-base port=7472 ;;
	*.p1) port=7473 procs=1 ;;
	esac
	local j
	j=$(GOMAXPROCS=$procs timeout 300 $C $bin -h "$ip" -d rxe-ip -f $conf -p $port --json "$@" 2>/tmp/dt.err) || {
		echo "FAILED: dattest $*" >&2; cat /tmp/dt.err /tmp/dattest-server.log >&2; return; }
	r "$name" "$rep" "$(echo "$j" | awk -F'[:,]' '/"godat"/ { gsub(/ /, "", $2); print $2 }')"
	r "$name.rawtcp" "$rep" "$(echo "$j" | awk -F'[:,]' '/"raw"/ { gsub(/ /, "", $2); print $2 }')"
}
dattest_rows() { # name rep args...: dattest_row with Go's default GOMAXPROCS (name), then with 1 (name.p1)
	dattest_row "$1" "$2" "${@:3}"
	dattest_row "$1.p1" "$2" "${@:3}"
}
for rep in $(seq 1 "$REPS"); do
	echo "--- repetition $rep" >&2
	v=$(pair ibv_rc_pingpong -d rxe0 -g "$g" -p 18517 -s 64 -n "$LAT_ITERS" | awk '/usec\/iter/ { print $(NF-1) }')
	r pp64.rtt_us "$rep" "$v"
	dattest_rows wlat64.oneway_us "$rep" -bench wlat -size 64 -iters "$LAT_ITERS" -mode poll
	dattest_rows swlat64.oneway_us "$rep" -bench wlat-suppress -size 64 -iters "$LAT_ITERS" -mode poll
	[ -n "$bsrv" ] && dattest_row base.wlat64.oneway_us "$rep" -bench wlat -size 64 -iters "$LAT_ITERS" -mode poll
	if have ib_write_lat; then
		v=$(pair ib_write_lat -d rxe0 -x "$g" -p 18516 -s 64 -n "$LAT_ITERS" | awk '$1 == 64 && NF >= 6 { print $6 }')
		r write_lat64.oneway_us "$rep" "$v"
	fi
	dattest_rows lat64.oneway_us "$rep" -bench lat -size 64 -iters "$LAT_ITERS" -mode poll
	[ -n "$bsrv" ] && dattest_row base.lat64.oneway_us "$rep" -bench lat -size 64 -iters "$LAT_ITERS" -mode poll
	if have ib_send_lat; then
		v=$(pair ib_send_lat -d rxe0 -x "$g" -p 18516 -s 64 -n "$LAT_ITERS" | awk '$1 == 64 && NF >= 6 { print $6 }')
		r send_lat64.oneway_us "$rep" "$v"
	fi
	if have ib_write_bw; then
		v=$(pair ib_write_bw -d rxe0 -x "$g" -p 18516 -s 1048576 -n "$BW_ITERS" | awk '$1 == 1048576 { print $4 * 1.048576 / 1000 }')
		r write_bw1M.GBps "$rep" "$v"
	fi
	dattest_rows bw1M.poll.GBps "$rep" -bench bw -size 1M -iters "$BW_ITERS" -mode poll
	dattest_row bw1M.wait.GBps "$rep" -bench bw -size 1M -iters "$BW_ITERS" -mode wait
	if [ -n "$bsrv" ]; then
		dattest_row base.bw1M.poll.GBps "$rep" -bench bw -size 1M -iters "$BW_ITERS" -mode poll
		dattest_row base.bw1M.wait.GBps "$rep" -bench bw -size 1M -iters "$BW_ITERS" -mode wait
	fi
	v=$(pair ibv_rc_pingpong -d rxe0 -g "$g" -p 18517 -s 1048576 -n "$PP_BW_ITERS" | awk '/Mbit\/sec/ { print $(NF-1) / 8000 }')
	r pp1M.GBps "$rep" "$v"
done
kill -INT $dsrv $dsrv1
wait $dsrv || { echo "dattest server exit $?" >&2; cat /tmp/dattest-server.log >&2; }
wait $dsrv1 || { echo "dattest server (GOMAXPROCS=1) exit $?" >&2; cat /tmp/dattest-server1.log >&2; }
if [ -n "$bsrv" ]; then
	kill -INT $bsrv
	wait $bsrv || { echo "dattest base server exit $?" >&2; cat /tmp/dattest-base-server.log >&2; }
fi
GUEST

pin=unpinned; [ "$PIN" = 1 ] && pin="servers on vCPU 0, clients on vCPU 1"
echo "running $REPS repetitions in the rxe VM (perftest:${extra:- none}; $pin)" >&2
rxe_vm_run "${RXE_VM_TIMEOUT:-900}" "${extra# }" "$out/verbs-bench-guest.sh" \
	-e REPS="$REPS" -e PIN="$PIN" -e LAT_ITERS="$LAT_ITERS" -e BW_ITERS="$BW_ITERS" -e PP_BW_ITERS="$PP_BW_ITERS"
grep -v '^R' "$WORK/guest.err" | grep -E 'FAILED|exit' >&2 || true

# median (min–max) per metric, then the ratios of the medians.
awk -F'\t' -v reps="$REPS" -f bench/table.awk -f /dev/stdin "$WORK/guest.out" <<'AWK'
# procs prints the rows of dattest metric k run with GOMAXPROCS=1 (k.p1),
# then with 2.
function procs(k, what, tool) {
	row(k ".p1", what, tool ", GOMAXPROCS=1")
	row(k, what, tool ", GOMAXPROCS=2")
}
# procsratio prints the ratios to b of dattest metric a with GOMAXPROCS=1
# (a.p1), then with 2: "dattest, GOMAXPROCS=n ÷ other".
function procsratio(a, b, dattest, other) {
	ratio(a ".p1", b, dattest ", GOMAXPROCS=1 ÷ " other)
	ratio(a, b, dattest ", GOMAXPROCS=2 ÷ " other)
}
END {
	rowhead()
	procs("wlat64.oneway_us", "64 B RDMA-write ping-pong, one-way µs", "dattest -bench wlat -mode poll")
	procs("swlat64.oneway_us", "64 B RDMA-write ping-pong, one-way µs", "dattest -bench wlat-suppress -mode poll")
	row("write_lat64.oneway_us", "64 B RDMA-write ping-pong, one-way µs", "ib_write_lat (t_avg)")
	row("pp64.rtt_us", "64 B send/recv ping-pong, round trip µs", "ibv_rc_pingpong")
	procs("lat64.oneway_us", "64 B send/recv ping-pong, one-way µs", "dattest -bench lat -mode poll")
	row("send_lat64.oneway_us", "64 B send/recv ping-pong, one-way µs", "ib_send_lat (t_avg)")
	row("wlat64.oneway_us.rawtcp", "64 B ping-pong, one-way µs", "raw TCP (dattest baseline, poll)")
	procs("bw1M.poll.GBps", "1 MiB RDMA-write stream, GB/s", "dattest -bench bw -mode poll")
	row("bw1M.wait.GBps", "1 MiB RDMA-write stream, GB/s", "dattest -bench bw -mode wait, GOMAXPROCS=2")
	row("write_bw1M.GBps", "1 MiB RDMA-write stream, GB/s", "ib_write_bw (BW average; its MB is 2^20 B)")
	row("pp1M.GBps", "1 MiB send/recv ping-pong, GB/s", "ibv_rc_pingpong")
	row("bw1M.poll.GBps.rawtcp", "1 MiB stream, GB/s", "raw TCP (dattest baseline, poll)")
	if ("base.wlat64.oneway_us" in v) {
		row("base.wlat64.oneway_us", "64 B RDMA-write ping-pong, one-way µs", "dattest at BASE, -mode poll")
		row("base.lat64.oneway_us", "64 B send/recv ping-pong, one-way µs", "dattest at BASE, -mode poll")
		row("base.bw1M.poll.GBps", "1 MiB RDMA-write stream, GB/s", "dattest at BASE, -mode poll")
		row("base.bw1M.wait.GBps", "1 MiB RDMA-write stream, GB/s", "dattest at BASE, -mode wait")
	}
	ratiohead()
	# dattest wlat is one-way; ibv_rc_pingpong gives the round trip.
	nk = split("wlat64.oneway_us wlat64.oneway_us.p1 swlat64.oneway_us swlat64.oneway_us.p1 lat64.oneway_us lat64.oneway_us.p1", ks, " ")
	for (i = 1; i <= nk; i++) if (ks[i] in med) { r = ks[i]; sub(/oneway/, "rtt", r); med[r] = 2 * med[ks[i]] }
	procsratio("wlat64.rtt_us", "pp64.rtt_us", "dattest wlat 64 B", "ibv_rc_pingpong 64 B (round trips; goal ≤ 1.1)")
	procsratio("wlat64.oneway_us", "write_lat64.oneway_us", "dattest wlat 64 B", "ib_write_lat 64 B")
	procsratio("swlat64.rtt_us", "pp64.rtt_us", "dattest wlat-suppress 64 B", "ibv_rc_pingpong 64 B (round trips; goal ≤ 1.1)")
	ratio("swlat64.oneway_us.p1", "write_lat64.oneway_us", "dattest wlat-suppress 64 B, GOMAXPROCS=1 ÷ ib_write_lat 64 B")
	ratio("swlat64.oneway_us.p1", "wlat64.oneway_us.p1", "dattest wlat-suppress ÷ wlat 64 B, GOMAXPROCS=1")
	ratio("lat64.rtt_us.p1", "pp64.rtt_us", "dattest lat 64 B, GOMAXPROCS=1 ÷ ibv_rc_pingpong 64 B (round trips)")
	procsratio("lat64.oneway_us", "send_lat64.oneway_us", "dattest lat 64 B", "ib_send_lat 64 B")
	procsratio("bw1M.poll.GBps", "write_bw1M.GBps", "dattest bw 1 MiB poll", "ib_write_bw 1 MiB (goal ≥ 0.9)")
	ratio("bw1M.wait.GBps", "write_bw1M.GBps", "dattest bw 1 MiB wait, GOMAXPROCS=2 ÷ ib_write_bw 1 MiB")
	if ("base.wlat64.oneway_us" in med) {
		ratio("wlat64.oneway_us", "base.wlat64.oneway_us", "dattest wlat 64 B: this tree ÷ BASE")
		ratio("lat64.oneway_us", "base.lat64.oneway_us", "dattest lat 64 B: this tree ÷ BASE")
		ratio("bw1M.poll.GBps", "base.bw1M.poll.GBps", "dattest bw 1 MiB poll: this tree ÷ BASE")
		ratio("bw1M.wait.GBps", "base.bw1M.wait.GBps", "dattest bw 1 MiB wait: this tree ÷ BASE")
	}
}
AWK
[ "${KEEP:-0}" = 1 ] && echo "raw output: $WORK" >&2
exit 0
