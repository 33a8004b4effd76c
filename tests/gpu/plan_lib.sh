# tests/gpu/plan_lib.sh - what the checks that enforce a device plan on a
# PyTorch program share (check_25, check_26); sourced by them, with S, B,
# T and PY set (tests/gpu/run.sh).  Not a check itself (run.sh runs
# check_*.sh only).
jget() { "$PY" -c "import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print('' if v is None else v)" "$1" "$2"; }
stat_of() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# enforce_plan PROG: PROG (a python file that writes a JSON of its device
# figures to its first argument and prints its losses) natively (PyTorch's
# caching allocator: $T/native.out, .json), recorded with
# --torch-cuda=pluggable (one cudaMalloc per tensor at its requested size,
# what libstalloc later sees: $T/p.stp), planned by `stprof plan` with no
# options ($T/p.plan, its summary $T/summary), then run with the plan
# enforced (the shim installs libstalloc.so as PyTorch's
# CUDAPluggableAllocator: $T/plan.out, statistics $T/stats).  Prints the
# plan's and libstalloc's figures; sets fail=1 when the recorded or
# planned run's losses differ from the native ones, when the plan is not a
# device plan, or when libstalloc was not installed.
enforce_plan() {
	"$PY" "$1" "$T/native.json" >"$T/native.out"
	"$B/stprof" record -q --torch-cuda=pluggable -o "$T/p.stp" -- "$PY" "$1" "$T/rec.json" >"$T/rec.out"
	cmp -s "$T/native.out" "$T/rec.out" || { echo "FAIL: recorded run's losses differ"; fail=1; }
	"$B/stprof" plan -o "$T/p.plan" "$T/p.stp" >"$T/summary"
	sed -n '/^requests:/p;/^pool:/p;/^min size:/,/^                [0-9]* of/p' "$T/summary" | sed 's/^/    /'
	"$B/stprof" plan --show "$T/p.plan" | grep -q '^memory:.*device' || { echo "FAIL: not a device plan"; fail=1; }
	"$B/stprof" run --plan "$T/p.plan" --stalloc-stats "$T/stats" -- "$PY" "$1" "$T/plan.json" >"$T/plan.out" 2>"$T/plan.err"
	grep -q "stprof run --plan" "$T/plan.err" && { echo "FAIL: libstalloc not installed: $(cat "$T/plan.err")"; fail=1; }
	sed -n '1,5p' "$T/stats" | sed 's/^/    /'
	if cmp -s "$T/native.out" "$T/plan.out"; then
		echo "  losses identical to the native run ($(tail -1 "$T/plan.out"))"
	else
		echo "FAIL: losses differ with the plan enforced"
		diff "$T/native.out" "$T/plan.out" | head -5
		fail=1
	fi
}

# plan_said: the peak reserved / pool that `stprof plan` predicted by
# replaying the trace through libstalloc's allocator
plan_said() { sed -n 's/.*peak reserved [^=]*= \([0-9.]*\) x pool.*/\1/p' "$T/summary"; }
