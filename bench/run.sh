#!/usr/bin/env bash
# bench/run.sh — godat side by side with raw TCP, libfabric and UCX, two
# processes on 127.0.0.1, REPS repetitions each (default 5), interleaved
# (the repetition is the outer loop, so drift hits every tool alike).
#
#   godat      dattest -bench over the tcp IA (send/recv ping-pong latency,
#              streaming RDMA-write bandwidth, windowed RDMA-read bandwidth),
#              -mode wait and -mode poll
#   rawtcp     the raw TCP baseline dattest measures in the same run (plain
#              blocking Go I/O for wait, RawConn busy-polling for poll); its
#              "pull" rows are the read baseline: the server sends messages
#              to the client, one small request each, as many outstanding
#              as the godat read run had reads
#   libfabric  fi_pingpong -p tcp -e msg (send/recv ping-pong; busy-polls)
#   ucx        ucx_perftest -t tag_lat and -t tag_bw over UCX_TLS=tcp (busy-polls)
#
# Sizes 64 B, 4 KiB, 1 MiB (reads: 64 KiB, 1 MiB). "lat" is one-way
# latency (half a round trip) in µs; "GB/s" is 10^9 B/s: streaming for
# bw/read/stream/pull/tag_bw rows, size ÷ one-way latency for ping-pong
# rows (fi_pingpong's convention).
#
# Usage:  bash bench/run.sh             (about 3 minutes; root for apt-get)
#         REPS=1 bash bench/run.sh      (a quick look)
#         PIN=1 bash bench/run.sh       (every tool's server on CPU 0, its
#                                        client on CPU 1, with taskset)
#
# Pinning: unpinned, two busy-polling processes on a two-core machine
# share the cores with every other thread of theirs (a Go process runs
# GOMAXPROCS = 2 threads, and its idle P's thread wakes for timers and
# scheduling), and where the scheduler puts them changes a poll latency
# by half from one run to the next. Pinned, each process has one core
# (a Go process then runs with GOMAXPROCS = 1): the spread shrinks. All
# tools are pinned alike.
# Not part of CI: timings depend on the machine. The table goes to stdout,
# then the tcp issue's goals, each as godat's ratio to its baseline per
# repetition and at the medians; logs and the raw results (results.tsv)
# stay in $WORK (printed at the end).
# Missing tools are installed with apt-get; a tool that still is missing,
# or a godat without the tcp provider, is skipped with a note.
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
REPS=${REPS:-5}
PIN=${PIN:-0}
SRV=() CLI=()
if [ "$PIN" = 1 ]; then
	SRV=(taskset -c 0) CLI=(taskset -c 1)
fi
WORK=${WORK:-$(mktemp -d /tmp/godat-bench.XXXXXX)}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
mkdir -p "$WORK/logs"
RES=$WORK/results.tsv
: >"$RES"
T0=$(date +%s)

log() { printf '[%4ds] %s\n' $(($(date +%s) - T0)) "$*" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }

# Pin libfabric and UCX to the loopback interface: without this they pick
# the first interface (eth0) as the source address even towards 127.0.0.1.
export FI_TCP_IFACE=lo UCX_NET_DEVICES=lo
# UCX over TCP, the transport every other tool here uses.
export UCX_TLS=tcp

# ------------------------------------------------------------------ install
missing=
have fi_pingpong || missing="$missing libfabric-bin"
have ucx_perftest || missing="$missing ucx-utils"
have jq || missing="$missing jq"
have ss || missing="$missing iproute2"
if [ -n "$missing" ]; then
	log "installing$missing"
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing; } \
		>"$WORK/logs/apt.log" 2>&1 || log "apt-get failed (see $WORK/logs/apt.log); missing tools are skipped"
fi
have jq || { log "jq is required"; exit 1; }

# ------------------------------------------------------------------ helpers
PORT=$((40000 + RANDOM % 8000))
next_port() { # sets PORT to a port nobody uses
	local i
	for i in $(seq 100); do
		PORT=$((PORT + 1))
		[ $PORT -gt 48999 ] && PORT=40001
		ss -Htan "( sport = :$PORT or dport = :$PORT )" 2>/dev/null | grep -q . || return 0
	done
}
wait_listen() { # port: up to 5 s for a listener
	local i
	for i in $(seq 250); do
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.02
	done
	return 1
}
stop() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
# record tool transport test size rep lat_us GBps status
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RES"; }
gbps_of_lat() { awk -v s="$1" -v l="$2" 'BEGIN { printf "%.6g", s / l / 1000 }'; }

# ------------------------------------------------------------------ godat
log "building dattest"
(cd "$ROOT" && "$GO" build -o "$WORK/dattest" ./cmd/dattest) >"$WORK/logs/build.log" 2>&1 || {
	log "go build failed: $(cat "$WORK/logs/build.log")"
	exit 1
}
CONF=$WORK/dat.conf
cat >"$CONF" <<'EOF'
[[ia]]
name        = "tcp"
provider    = "tcp"
api_version = "u2.0"
threadsafe  = true
default     = true
ia_params   = "127.0.0.1"
EOF

GODAT=1
SERVER_PID=
start_server() { # starts a dattest server; sets SERVER_PID and PORT
	next_port
	"${SRV[@]}" "$WORK/dattest" -s -f "$CONF" -d tcp -p $PORT >"$WORK/logs/dattest-server.log" 2>&1 &
	SERVER_PID=$!
	local i
	for i in $(seq 250); do
		grep -q "serving IA" "$WORK/logs/dattest-server.log" && return 0
		kill -0 $SERVER_PID 2>/dev/null || break
		sleep 0.02
	done
	stop $SERVER_PID
	return 1
}
if ! start_server; then
	log "dattest cannot serve the tcp IA, godat rows skipped: $(head -c 300 "$WORK/logs/dattest-server.log")"
	GODAT=0
else
	stop $SERVER_PID
fi

# tool_pair PATTERN TOOL SERVER-ARGS... -- CLIENT-ARGS...: runs TOOL as a
# server in the background and, once something listens on $PORT, as its
# client, each pinned like every server and client and bounded to 60 s.
# The client's output is appended to $WORK/logs/TOOL.log. Prints the last
# line of that output that matches the extended regular expression
# PATTERN, and returns the client's exit status.
tool_pair() {
	local pat=$1 tool=$2 srv=() sp rc
	shift 2
	while [ "$1" != -- ]; do
		srv+=("$1")
		shift
	done
	shift
	timeout 60 "${SRV[@]}" "$tool" "${srv[@]}" >"$WORK/logs/$tool-s.log" 2>&1 &
	sp=$!
	wait_listen $PORT
	timeout 60 "${CLI[@]}" "$tool" "$@" >"$WORK/logs/$tool-c.log" 2>&1
	rc=$?
	[ $rc = 0 ] && wait $sp || stop $sp
	cat "$WORK/logs/$tool-c.log" >>"$WORK/logs/$tool.log"
	grep -E "$pat" "$WORK/logs/$tool-c.log" | tail -1
	return $rc
}

dattest_run() { # rep mode op sizes iters
	local rep=$1 mode=$2 op=$3 sizes=$4 iters=$5 out rc
	out=$(timeout 120 "${CLI[@]}" "$WORK/dattest" -h 127.0.0.1 -f "$CONF" -d tcp -p $PORT \
		-bench $op -size $sizes -iters $iters -mode $mode --json 2>>"$WORK/logs/dattest-client.log")
	rc=$?
	echo "$out" >>"$WORK/logs/dattest.json"
	if [ $rc != 0 ]; then
		local s
		for s in ${sizes//,/ }; do
			record godat "tcp/$mode" $op "$s" $rep - - "FAIL(rc=$rc)"
		done
		return
	fi
	echo "$out" | jq -r '.[] | [.op, .size, .mode, .godat, .raw] | @tsv' |
		while IFS=$'\t' read -r o size m g r; do
			case $o in
			lat)
				record godat "tcp/$m" lat "$size" $rep "$g" "$(gbps_of_lat "$size" "$g")" ok
				record rawtcp "go/$m" pingpong "$size" $rep "$r" "$(gbps_of_lat "$size" "$r")" ok
				;;
			read)
				record godat "tcp/$m" read "$size" $rep - "$g" ok
				record rawtcp "go/$m" pull "$size" $rep - "$r" ok
				;;
			*)
				record godat "tcp/$m" bw "$size" $rep - "$g" ok
				record rawtcp "go/$m" stream "$size" $rep - "$r" ok
				;;
			esac
		done
}

godat_rep() { # rep
	[ $GODAT = 1 ] || return 0
	start_server || {
		log "dattest server did not start"
		return 0
	}
	local mode
	for mode in wait poll; do
		dattest_run $1 $mode lat 64,4K 20000
		dattest_run $1 $mode lat 1M 500
		dattest_run $1 $mode bw 64,4K 50000
		dattest_run $1 $mode bw 1M 2000
		dattest_run $1 $mode read 64K 10000
		dattest_run $1 $mode read 1M 2000
	done
	stop $SERVER_PID
}

# ------------------------------------------------------------------ libfabric
fi_run() { # size iters rep
	local size=$1 iters=$2 rep=$3 rc line
	have fi_pingpong || return 0
	next_port
	# columns: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec;
	# usec/xfer is half a round trip
	line=$(tool_pair '^[0-9.]+[kmg]? +[0-9.]+[kmb]? ' fi_pingpong -p tcp -e msg -I $iters -S $size -B $PORT -- \
		-p tcp -e msg -I $iters -S $size -P $PORT 127.0.0.1)
	rc=$?
	if [ $rc = 0 ] && [ -n "$line" ]; then
		set -- $line
		record libfabric tcp/msg pingpong $size $rep "$7" "$(gbps_of_lat $size "$7")" ok
	else
		record libfabric tcp/msg pingpong $size $rep - - "FAIL(rc=$rc)"
	fi
}

# ------------------------------------------------------------------ UCX
ucx_run() { # test size iters warmup rep
	local t=$1 size=$2 iters=$3 warm=$4 rep=$5 rc line
	have ucx_perftest || return 0
	next_port
	# final line: iterations p50 avg overall (latency, one way, usec)
	#             avg overall (bandwidth, MiB/s) avg overall (msg/s)
	line=$(tool_pair '^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ ' ucx_perftest -p $PORT -- \
		127.0.0.1 -p $PORT -t $t -s $size -n $iters -w $warm -f)
	rc=$?
	if [ $rc = 0 ] && [ -n "$line" ]; then
		set -- $line
		local bw
		bw=$(awk -v m="$6" 'BEGIN { printf "%.6g", m * 1048576 / 1e9 }')
		case $t in
		tag_lat) record ucx tcp tag_lat $size $rep "$4" "$(gbps_of_lat $size "$4")" ok ;;
		*) record ucx tcp $t $size $rep - "$bw" ok ;;
		esac
	else
		record ucx tcp $t $size $rep - - "FAIL(rc=$rc)"
	fi
}

# ------------------------------------------------------------------ main loop
for rep in $(seq 1 "$REPS"); do
	log "repetition $rep/$REPS: godat and raw TCP (dattest)"
	godat_rep $rep
	log "repetition $rep/$REPS: libfabric fi_pingpong"
	fi_run 64 20000 $rep
	fi_run 4096 20000 $rep
	fi_run 1048576 500 $rep
	log "repetition $rep/$REPS: UCX ucx_perftest"
	for s in 64 4096; do
		ucx_run tag_lat $s 20000 1000 $rep
		ucx_run tag_bw $s 50000 1000 $rep
	done
	ucx_run tag_lat 1048576 300 20 $rep
	ucx_run tag_bw 1048576 500 20 $rep
done

# ------------------------------------------------------------------ summary
summary() {
	awk -F'\t' '
	function isort(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t } }
	function num(x) {
		if (x >= 100) return sprintf("%.0f", x)
		if (x >= 10) return sprintf("%.1f", x)
		if (x >= 1) return sprintf("%.2f", x)
		return sprintf("%.2g", x)
	}
	function stat(kind, key,   n, i, a, med) {
		n = cnt[kind, key]
		if (n == 0) return "-"
		for (i = 1; i <= n; i++) a[i] = val[kind, key, i]
		isort(a, n)
		med = (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
		return num(a[1]) " / " num(med) " / " num(a[n])
	}
	{
		key = $1 FS $2 FS $3 FS $4
		if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
		tot[key]++
		if ($8 != "ok") { why[key] = " " $8; next }
		ok[key]++
		if ($6 != "-") val["lat", key, ++cnt["lat", key]] = $6 + 0
		if ($7 != "-") val["bw", key, ++cnt["bw", key]] = $7 + 0
	}
	END {
		fmt = "%-9s | %-9s | %-8s | %8s | %-22s | %-22s | %s\n"
		printf fmt, "tool", "transport", "test", "size", "lat us min/med/max", "GB/s min/med/max", "ok"
		for (k = 1; k <= nk; k++) {
			split(order[k], f, FS)
			printf fmt, f[1], f[2], f[3], f[4], stat("lat", order[k]), stat("bw", order[k]), (ok[order[k]] + 0) "/" tot[order[k]] why[order[k]]
		}
	}' "$RES"
}

# goals prints, for each goal of the tcp issue, godat's ratio to the
# baseline per repetition (both measured in the same repetition) and at
# the medians, and whether the medians meet it.
goals() {
	awk -F'\t' '
	function isort(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t } }
	function med(a, n) { isort(a, n); return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
	$8 == "ok" {
		k = $1 FS $2 FS $3 FS $4
		if ($6 != "-") v[k, "lat", $5] = $6 + 0
		if ($7 != "-") v[k, "bw", $5] = $7 + 0
		if ($5 > reps) reps = $5
	}
	# goal: what, godat key, baseline key, lat or bw, le or ge, bound
	function goal(what, g, b, kind, cmp, bound,   r, n, list, x, gs, bs, ng, nb, gm, bm, ratio, ok) {
		n = 0; ng = 0; nb = 0; list = ""
		for (r = 1; r <= reps; r++) {
			if ((g, kind, r) in v) gs[++ng] = v[g, kind, r]
			if ((b, kind, r) in v) bs[++nb] = v[b, kind, r]
			if (((g, kind, r) in v) && ((b, kind, r) in v)) {
				x = v[g, kind, r] / v[b, kind, r]
				list = list sprintf(" %.2f", x)
				n++
				if ((cmp == "le" && x <= bound) || (cmp == "ge" && x >= bound)) ok++
			}
		}
		if (n == 0) { printf "%-44s  no data\n", what; return }
		gm = med(gs, ng); bm = med(bs, nb); ratio = gm / bm
		printf "%-44s  %s %.2f  %-9s  at medians %.3f  %d/%d reps  per rep:%s\n", what, (cmp == "le" ? "<=" : ">="), bound,
			(((cmp == "le" && ratio <= bound) || (cmp == "ge" && ratio >= bound)) ? "met" : "NOT MET"), ratio, ok + 0, n, list
	}
	END {
		P = "godat" FS "tcp/poll" FS; W = "godat" FS "tcp/wait" FS
		goal("64 B poll latency / raw TCP poll", P "lat" FS "64", "rawtcp" FS "go/poll" FS "pingpong" FS "64", "lat", "le", 1.1)
		goal("64 B poll latency / libfabric", P "lat" FS "64", "libfabric" FS "tcp/msg" FS "pingpong" FS "64", "lat", "le", 1)
		goal("64 B poll latency / UCX tag_lat", P "lat" FS "64", "ucx" FS "tcp" FS "tag_lat" FS "64", "lat", "le", 1)
		goal("64 B wait latency / raw TCP (netpoller)", W "lat" FS "64", "rawtcp" FS "go/wait" FS "pingpong" FS "64", "lat", "le", 1.15)
		goal("1 MiB poll write stream / raw TCP stream", P "bw" FS "1048576", "rawtcp" FS "go/poll" FS "stream" FS "1048576", "bw", "ge", 0.9)
		goal("1 MiB wait write stream / raw TCP stream", W "bw" FS "1048576", "rawtcp" FS "go/wait" FS "stream" FS "1048576", "bw", "ge", 0.9)
		goal("1 MiB poll write stream / UCX tag_bw", P "bw" FS "1048576", "ucx" FS "tcp" FS "tag_bw" FS "1048576", "bw", "ge", 1)
		goal("1 MiB wait write stream / UCX tag_bw", W "bw" FS "1048576", "ucx" FS "tcp" FS "tag_bw" FS "1048576", "bw", "ge", 1)
		goal("1 MiB poll read / raw TCP pull", P "read" FS "1048576", "rawtcp" FS "go/poll" FS "pull" FS "1048576", "bw", "ge", 0.8)
		goal("1 MiB wait read / raw TCP pull", W "read" FS "1048576", "rawtcp" FS "go/wait" FS "pull" FS "1048576", "bw", "ge", 0.8)
	}' "$RES"
}

{
	echo
	pin="unpinned"
	[ "$PIN" = 1 ] && pin="servers on CPU 0, clients on CPU 1"
	echo "== godat vs raw TCP, libfabric, UCX on 127.0.0.1: $REPS repetitions, $(nproc) cores, $pin, $(uname -r) =="
	echo "lat: one-way (half round trip) µs; GB/s: 10^9 B/s, streaming for bw/stream/read/pull/tag_bw, size/lat for ping-pong rows"
	echo "modes: godat/rawtcp 'wait' block, 'poll' busy-poll; fi_pingpong and ucx_perftest busy-poll"
	[ $GODAT = 1 ] || echo "(godat rows skipped: dattest could not serve the tcp IA; see $WORK/logs/dattest-server.log)"
	echo
	summary
	echo
	echo "== the tcp issue's goals: godat / baseline, same repetition (latency: lower is better; bandwidth: higher) =="
	goals
	echo
	echo "total $(($(date +%s) - T0)) s; results: $RES; logs: $WORK/logs"
} | tee "$WORK/summary.txt"
