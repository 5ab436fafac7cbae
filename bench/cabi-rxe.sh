#!/usr/bin/env bash
# bench/cabi-rxe.sh — the C ABI on soft-RoCE in steady state: the same C
# program (bench/cabipp.c, a 64 B send/recv ping-pong that polls) over
# godat's libdat2.so.2 with the verbs provider and over OFA DAPL's own
# libdat2 and libdaplofa, beside dattest doing the same work natively, in
# one boot of the rxe VM (../shared/tools/rxe-vm/run). Server and client
# of each run in the same guest over rxe0 on $RXE_VM_IP; REPS repetitions
# (default 5), interleaved.
#
#   godat   cabipp over build's libdat2.so.2 (GODAT_TAGS=verbs), IA rxe-ip
#           of providers/verbs/testdata/datinfo.conf
#   ofa     cabipp over OFA's libdat2.so.2 and libdaplofa.so.2 (libdapl2),
#           IA ofa-rxe on rxe0's netdev
#   native  dattest -bench lat -size 64 -mode poll, IA rxe-ip
#
# Each runs ITERS round trips (default 2000) after WARM untimed ones
# (default 200) and reports the mean one-way latency (µs); cabipp warms
# 5,000 round trips more, about the 250 ms for which dattest primes its
# process before it times anything (cmd/dattest). dtest's own
# ping-pong (100 round trips after a second asleep, .ci/verbs runs it)
# measures mostly its start; this measures the data path. qemu runs in
# TCG emulation here: only the ratios within one boot mean anything.
#
# Usage:  bash bench/cabi-rxe.sh           (about a minute after the build)
# Environment: RXE_VM_RUN (see bench/rxe-vm.sh), REPS, ITERS, WARM,
# KEEP=1 keeps the raw output in $WORK.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

REPS=${REPS:-5}
ITERS=${ITERS:-2000}
WARM=${WARM:-200}
. bench/rxe-vm.sh
ofalib=/usr/lib/x86_64-linux-gnu
if [ ! -e "$ofalib/libdaplofa.so.2" ] || [ ! -f /usr/include/dat2/udat.h ]; then
	if [ "$(id -u)" -eq 0 ]; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libdapl2 libdapl-dev
	else
		echo "FAIL: OFA DAPL missing and not root: apt-get install libdapl2 libdapl-dev" >&2
		exit 1
	fi
fi

out=.vmbin
mkdir -p "$out/cabi" "$out/ofa"
echo "building the C ABI with the verbs provider, dattest -tags verbs and cabipp" >&2
GODAT_TAGS=verbs ./cabi/build "$out/cabi/libdat2.so.2" >/dev/null
go build -tags verbs -o "$out/dattest" ./cmd/dattest
gcc -O2 -Wall -o "$out/cabipp" bench/cabipp.c -L"$out/cabi" -l:libdat2.so.2
cp -L "$ofalib/libdat2.so.2" "$ofalib/libdaplofa.so.2" "$out/ofa/"
echo 'ofa-rxe u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "rxedummy0 0" ""' >"$out/ofa/dat.conf"
WORK=$(mktemp -d /tmp/godat-cabi-rxe.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT

# The guest's part: prints "R<TAB>tool<TAB>rep<TAB>µs" lines.
cat >"$out/cabi-rxe-guest.sh" <<'GUEST'
set -u
root=$PWD
base_ld=${LD_LIBRARY_PATH:-}
conf=$root/providers/verbs/testdata/datinfo.conf
# pp NAME LIBDIR DATCONF IA REP: one cabipp pair.
pp() {
	export LD_LIBRARY_PATH=$root/.vmbin/$2:$base_ld DAT_OVERRIDE=$3
	timeout 300 .vmbin/cabipp -s "$4" 18653 "$ITERS" "$((WARM + 5000))" >/tmp/pp-srv.out 2>&1 &
	local srv=$! i
	for i in $(seq 1 240); do grep -q listening /tmp/pp-srv.out && break; sleep 0.5; done
	timeout 240 .vmbin/cabipp -c "$4" 18653 "$ITERS" "$((WARM + 5000))" "$RXE_VM_IP" >/tmp/pp-cli.out 2>&1
	wait $srv || { echo "FAILED: cabipp server over $1" >&2; cat /tmp/pp-srv.out >&2; }
	export LD_LIBRARY_PATH=$base_ld
	awk -v t="$1" -v rep="$5" '$1 == "mean" { printf "R\t%s\t%s\t%s\n", t, rep, $2; ok = 1 } END { if (!ok) exit 1 }' /tmp/pp-cli.out ||
		{ echo "FAILED: cabipp client over $1" >&2; cat /tmp/pp-cli.out >&2; }
}
timeout 600 .vmbin/dattest -s -d rxe-ip -f "$conf" -p 18515 >/tmp/dattest-srv.out 2>&1 &
dsrv=$!
sleep 3
for rep in $(seq 1 "$REPS"); do
	echo "--- repetition $rep" >&2
	timeout 120 .vmbin/dattest -h "$RXE_VM_IP" -d rxe-ip -f "$conf" -p 18515 -bench lat -size 64 \
		-iters "$ITERS" -warmup "$WARM" -mode poll --json 2>/dev/null >/tmp/dattest.json ||
		{ echo "FAILED: dattest" >&2; cat /tmp/dattest.json >&2; }
	# dattest's JSON: "godat" in "unit".
	awk -v rep="$rep" '
		/"godat":/ { g = $2; sub(/,$/, "", g) }
		/"unit":/ { u = $2; gsub(/[",]/, "", u) }
		END { f = (u == "ns") ? 0.001 : (u == "ms") ? 1000 : (u == "us") ? 1 : 0
			if (f && g != "") printf "R\tnative\t%s\t%s\n", rep, g * f }' /tmp/dattest.json
	pp godat cabi "$conf" rxe-ip "$rep"
	pp ofa ofa "$root/.vmbin/ofa/dat.conf" ofa-rxe "$rep"
done
kill -INT $dsrv
wait $dsrv
GUEST

echo "running $REPS repetitions in the rxe VM" >&2
rxe_vm_run "${RXE_VM_TIMEOUT:-900}" "timeout" "$out/cabi-rxe-guest.sh" \
	--libs-for "$out/ofa/libdaplofa.so.2" --libs-for "$out/ofa/libdat2.so.2" \
	-e REPS="$REPS" -e ITERS="$ITERS" -e WARM="$WARM"
grep -E 'FAILED' -A 20 "$WORK/guest.err" >&2 || true

awk -F'\t' -f bench/table.awk -f /dev/stdin "$WORK/guest.out" <<'AWK'
END {
	rowhead()
	row("godat", "64 B send/recv ping-pong, polling, one way µs (mean)", "cabipp over godat's libdat2 (verbs)")
	row("ofa", "64 B send/recv ping-pong, polling, one way µs (mean)", "cabipp over OFA's libdat2 (libdaplofa)")
	row("native", "64 B send/recv ping-pong, polling, one way µs (mean)", "dattest, native Go (verbs)")
	ratiohead()
	ratio("godat", "ofa", "C ABI: godat ÷ OFA DAPL (goal ≤ 1)")
	ratio("native", "ofa", "native Go ÷ OFA DAPL")
	ratio("godat", "native", "C ABI ÷ native Go")
}
AWK
[ "${KEEP:-0}" = 1 ] && echo "raw output: $WORK" >&2
exit 0
