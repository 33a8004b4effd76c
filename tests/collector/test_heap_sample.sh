#!/bin/bash
# Host-heap sampling (collector/core/sample.c, docs/record.md "Host heap").
# 1. heap_sample_prog knows its true figures; recorded with --heap-sample 4k
#    (and 64k), the report's estimates of the bytes allocated and live at
#    the end are within 4 standard errors (sqrt(R * B)) of the truth, the
#    peak within -4..+6 (a maximum of noisy values leans up), the count of
#    allocations within 4 of its standard errors (the program computes it),
#    on the default trace, whose steady iterations are folded (FOLD events
#    carry the sampled allocations they leave out and what they stand for);
#    the trace is consistent (no free of a block not live, none lost).
#    Recorded without folding, every large block (>= R) is an event, and
#    every allocation of iterations 0 and 1 (the full ones).
# 2. A C program is recorded in full by default (no annotation).
# 3. Real PyTorch: the default (sampled) trace's estimated host bytes are
#    within 4 standard errors of a --full trace of the same run, its tensor
#    events are all there (never sampled), and it is far smaller.
. "$(dirname "$0")/lib.sh"
P="$STPROF_BUILD/heap_sample_prog"
cd "$T"
val() { sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" "$2"; }
json_space() { # TRACE FIELD [SPACE_INDEX]: a field of a space in the JSON report
	"$STPROF" report --format json --space host "$1" >"$1.json"
	python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['spaces'][int(sys.argv[3])]; print(round(s[sys.argv[2]]))" \
		"$1.json" "$2" "${3:-0}"
}
within() { # WHAT GOT WANT SE LO HI: LO*SE <= GOT-WANT <= HI*SE
	awk -v g="$2" -v w="$3" -v se="$4" -v lo="$5" -v hi="$6" 'BEGIN { d = g - w; exit !(d >= lo * se && d <= hi * se) }' ||
		fail "$1: $2 against the true $3 (one standard error $4, allowed $5..$6)"
	echo "  $1: $2 against $3 ($(awk -v g="$2" -v w="$3" -v se="$4" 'BEGIN { printf "%+.2f SE", (g - w) / se }'))"
}

for R in 4096 65536; do
	"$STPROF" record --heap-sample $R -q -o "s$R.stp" -- "$P" 50 4000 $R >"s$R.out"
	res=$("$CHECK_HEAP" "s$R.stp") || fail "R=$R: trace inconsistent: $res"
	case "$res" in *lost=0\ bad=0*) ;; *) fail "R=$R: $res" ;; esac
	"$STPROF" dump -t marker "s$R.stp" | grep -q "name=\"stprof.heap_sample_bytes\" value=$R" || fail "R=$R: no annotation"
	"$STPROF" info "s$R.stp" | grep -q "^folded: " || fail "R=$R: no steady iteration folded"
	for f in bytes_allocated:bytes live_bytes_end:end; do
		got=$(json_space "s$R.stp" "${f%%:*}")
		want=$(val "${f##*:}" "s$R.out")
		se=$(awk -v r=$R -v b="$want" 'BEGIN { printf "%.0f", sqrt(r * b) + 4096 }') # + libc's stdio buffer
		within "R=$R ${f%%:*}" "$got" "$want" "$se" -4 4
	done
	got=$(json_space "s$R.stp" peak_bytes); want=$(val peak "s$R.out")
	within "R=$R peak" "$got" "$want" "$(awk -v r=$R -v b="$want" 'BEGIN { printf "%.0f", sqrt(r * b) + 4096 }')" -4 6
	got=$(json_space "s$R.stp" est_allocs); want=$(val allocs "s$R.out")
	within "R=$R allocations" "$got" "$want" "$(($(val count_se "s$R.out") + 4))" -4 4
	# every large block, and every allocation of the two full iterations,
	# recorded as events (without the folding of steady iterations, which
	# leaves out the iterations' temporaries, large ones too: the estimates
	# above are of a folded trace)
	STPROF_FOLD_KEEP=0 "$STPROF" record --heap-sample $R -q -o "u$R.stp" -- "$P" 50 4000 $R >"u$R.out"
	"$STPROF" dump -t fold "u$R.stp" | grep -q . && fail "R=$R: STPROF_FOLD_KEEP=0 folded"
	large=$("$STPROF" dump -t alloc "u$R.stp" | awk '{ split($6, a, "="); if (a[2] == 262144) n++ } END { print n + 0 }')
	expect_eq "R=$R large blocks" "$large" "$(val large "u$R.out")"
	for it in 0 1; do
		n=$("$STPROF" dump "u$R.stp" | awk -v it=$it '$0 ~ "iteration_begin name=\"\" value=" it "$" { on = 1; next }
			$0 ~ "iteration_end name=\"\" value=" it "$" { on = 0 } on && / alloc / { n++ } END { print n + 0 }')
		expect_eq "R=$R allocations recorded in iteration $it" "$n" "$(val iter$it "u$R.out")"
	done
done

# 2. a C program: every allocation by default
"$STPROF" record -q -o c.stp -- "$P" 4 1000 >c.out
"$STPROF" dump -t marker c.stp | grep -q heap_sample_bytes && fail "a C program was sampled by default"
n=$(json_space c.stp allocs); want=$(val allocs c.out)
[ "$n" -ge "$want" ] && [ "$n" -le $((want + 4)) ] || fail "C program: $n allocations recorded, it made $want (and libc a few)"

# 3. real PyTorch: sampled by default, against --full
if "$PY" -c 'import torch' 2>/dev/null && [ "${STPROF_SANITIZE:-0}" != 1 ]; then
	export PYTHONHASHSEED=0 OMP_NUM_THREADS=1
	X="$STPROF_SRC/examples/torch_transformer.py --iters 6"
	"$STPROF" record -q -o f.stp --full -- "$PY" $X >/dev/null
	"$STPROF" record -q -o d.stp -- "$PY" $X >/dev/null
	"$STPROF" dump -t marker d.stp | grep -q 'name="stprof.heap_sample_bytes" value=65536' || fail "python: not sampled"
	"$STPROF" dump -t marker f.stp | grep -q heap_sample_bytes && fail "python --full: sampled"
	want=$(json_space f.stp bytes_allocated); got=$(json_space d.stp bytes_allocated)
	within "python host bytes allocated" "$got" "$want" "$(awk -v b="$want" 'BEGIN { printf "%.0f", sqrt(65536 * b) }')" -4 4
	# the tensors (space 1 in --space host's JSON: the host heap is 0) are all there
	tf=$("$STPROF" report --format json f.stp | python3 -c "import json,sys; print([s['allocs'] for s in json.load(sys.stdin)['spaces'] if s['tensors']][0])")
	td=$("$STPROF" report --format json d.stp | python3 -c "import json,sys; print([s['allocs'] for s in json.load(sys.stdin)['spaces'] if s['tensors']][0])")
	expect_eq "python: tensor allocations, sampled run vs --full" "$td" "$tf"
	sf=$(stat -c %s f.stp); sd=$(stat -c %s d.stp)
	echo "  python: trace $sd bytes sampled, $sf with --full"
	[ "$sd" -lt $((sf / 5)) ] || fail "python: the sampled trace is not 5x smaller: $sd vs $sf"
fi
echo ok
