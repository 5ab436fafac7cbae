# bench/rxe-vm.sh: what bench/verbs.sh and bench/datnet-rxe.sh share to run
# a guest script in one boot of the rxe VM (../shared/tools/rxe-vm/run, or
# $RXE_VM_RUN). Sourced from the checkout's root; sets $run to the harness
# and exits if there is none.
export PATH="/usr/local/go/bin:$PATH"
export RXE_VM_NO_KVM="${RXE_VM_NO_KVM:-1}"
[ "$RXE_VM_NO_KVM" = 0 ] && unset RXE_VM_NO_KVM

run="${RXE_VM_RUN:-../shared/tools/rxe-vm/run}"
if [ ! -x "$run" ]; then
	where="$run"
	[ -n "${RXE_VM_RUN:-}" ] || where="$run (beside this checkout: $(cd .. && pwd)/shared/tools/rxe-vm/run)"
	echo "FAIL: no rxe-vm harness at $where; put the shared tools directory beside the checkout, or set RXE_VM_RUN to the harness's run script." >&2
	exit 1
fi

# rxe_vm_run TIMEOUT EXTRA_BINS SCRIPT [-e VAR=VALUE]...: runs the guest
# SCRIPT in the VM with the host's EXTRA_BINS packed in, its output to
# $WORK/guest.out and $WORK/guest.err; if the run fails, shows the end of
# guest.err and exits.
rxe_vm_run() {
	local timeout=$1 bins=$2 script=$3
	shift 3
	RXE_VM_EXTRA_BINS="$bins" nice -n 10 "$run" -q --timeout "$timeout" "$@" \
		-- bash "$script" >"$WORK/guest.out" 2>"$WORK/guest.err" || {
		echo "the VM run failed (exit $?):" >&2
		tail -40 "$WORK/guest.err" >&2
		exit 1
	}
}
