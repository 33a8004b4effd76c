#!/bin/sh
# test_stalloc_programs.sh - libstalloc enforcing plans on real programs,
# through `stprof run --plan`: each program is recorded, planned, then run
# again with its plan enforced, and must print exactly what it prints
# natively (bit-identical losses), with the exit status unchanged.
#   - the bundled example in two shapes (plain; recomputation with 2
#     micro-batches and 6 layers): every request of the plan's sizes is
#     served by the plan and peak reserved equals the pool;
#   - the example run with another batch size than planned (every size
#     differs): the fallback serves it, output still identical;
#   - real PyTorch CPU: examples/torch_transformer.py and the planner's
#     tests/planner/torch_train.py (Adam, 2 micro-batches), and three loops
#     not written for stprof (a CNN with SGD momentum; an MLP whose batch
#     size varies; an autoencoder whose batch, prediction and loss stay
#     bound into the next iteration), plans of their tensor storages:
#     identical outputs; peak reserved within 1% of the pool (10% for the
#     varying MLP, 3% for the held outputs; docs/stalloc.md; skipped
#     without torch);
#   - a bad plan: one line naming the file, exit 2, program not started;
#     exit status and a program the planned one executes.
set -eu
B=${STPROF_BUILD:?}
S=${STPROF_SRC:?}
PY=${STPROF_PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"

stat_of() { # FILE KEY
	tr ' ' '\n' <"$1" | sed -n "s/^$2=//p"
}

enforce() { # NAME MINSIZE PLAN_ARGS -- PROGRAM...
	name=$1 min=$2
	shift 2
	"$B/stprof" record -q -o "$name.stp" -- "$@" >"$name.native"
	"$B/stprof" plan -q --min-size "$min" -a 64 -o "$name.plan" "$name.stp"
	"$B/stprof" run --plan "$name.plan" --stalloc-stats "$name.stats" -- "$@" >"$name.out"
	cmp "$name.native" "$name.out" || { echo "FAIL: $name: output differs with the plan enforced"; exit 1; }
	head -5 "$name.stats"
}

check_exact() { # NAME: the plan serves every request of its sizes, reserved == pool
	st=$1.stats
	fb=$(stat_of "$st" fallbacks) pool=$(stat_of "$st" pool) pr=$(stat_of "$st" peak_reserved)
	[ "$fb" = 0 ] || { echo "FAIL: $1: $fb requests went to the fallback"; exit 1; }
	[ "$pr" = "$pool" ] || { echo "FAIL: $1: peak reserved $pr != pool $pool"; exit 1; }
}

enforce train 1024 "$B/train" -i 20
check_exact train
# a host plan's small requests go to glibc uncounted: said, not "0"
grep -q "^stalloc: below the plan's min size (1.0 KiB): passed to glibc, not planned (not counted)" train.stats ||
	{ echo "FAIL: small requests: $(grep 'min size' train.stats)"; exit 1; }
enforce train_rc 1024 "$B/train" -i 12 -r -m 2 -l 6
check_exact train_rc

# another batch size than planned: nothing matches, results unchanged
"$B/train" -i 8 -b 48 >other.native
"$B/stprof" run --plan train.plan --stalloc-stats other.stats -- "$B/train" -i 8 -b 48 >other.out
cmp other.native other.out || { echo "FAIL: unplanned shape: output differs"; exit 1; }
[ "$(stat_of other.stats fallbacks)" -gt 0 ] || { echo "FAIL: unplanned shape: no fallback?"; exit 1; }

# a bad plan: one line, exit 2, the program is not started
head -c 100 train.plan >bad.plan
set +e
"$B/stprof" run --plan bad.plan -- sh -c 'echo started' >bad.out 2>bad.err
rc=$?
set -e
[ "$rc" = 2 ] || { echo "FAIL: bad plan: exit $rc"; exit 1; }
[ ! -s bad.out ] || { echo "FAIL: bad plan: the program ran"; exit 1; }
[ "$(wc -l <bad.err)" = 1 ] && grep -q "bad.plan: offset" bad.err || { echo "FAIL: bad plan message:"; cat bad.err; exit 1; }

# exit status, and programs it executes run as usual
set +e
"$B/stprof" run -q --plan train.plan -- sh -c "'$B/train' -i 2 >/dev/null; exit 3"
rc=$?
set -e
[ "$rc" = 3 ] || { echo "FAIL: exit status $rc, not 3"; exit 1; }

if "$PY" -c "import torch" 2>/dev/null; then
	for prog in "$S/examples/torch_transformer.py --iters 5" "$S/tests/planner/torch_train.py 4 2" \
		"$S/tests/allocator/torch_cnn.py" "$S/tests/allocator/torch_mlp_varying.py" \
		"$S/tests/allocator/torch_held_outputs.py"; do
		name=$(basename "${prog%% *}" .py)
		# shellcheck disable=SC2086
		enforce "$name" 4096 "$PY" $prog
		pool=$(stat_of "$name.stats" pool) pr=$(stat_of "$name.stats" peak_reserved)
		# the plans are of the tensor storages (the shim's tensor space),
		# enforced on c10::alloc_cpu.  Measured: torch_train 1.0000,
		# torch_transformer 1.0007, torch_cnn 1.0000 (all four 1.07-1.27
		# before persistent slots waited for their turn); the MLP's batches
		# vary in size, its dynamic requests find no room 131 times: 1.05.
		# torch_held_outputs: 1.0271, its first batch (3 x 96 KiB, made
		# before the first iteration's marker) is the fallback's
		lim=1.01
		[ "$name" != torch_mlp_varying ] || lim=1.10
		[ "$name" != torch_held_outputs ] || lim=1.03
		awk -v p="$pool" -v r="$pr" -v n="$name" -v l="$lim" 'BEGIN {
			printf "%s: peak reserved %.4f x pool (at most %s)\n", n, r / p, l; exit !(r <= l * p) }' ||
			{ echo "FAIL: $name: peak reserved $pr above $lim x pool $pool"; exit 1; }
	done
	# batch, prediction and loss outlive their iteration: each instance is
	# served at its range or its spare, in turn; the last gradient of the
	# first backward pass leaves Adam's state its slot.  Before: 28
	# requests at other entries' ranges
	# tensors under the plan's min size (4 KiB: biases, norms, the loss) go
	# to c10's own allocation, and the statistics count them (they once
	# said "below its min size 0")
	st=torch_transformer.stats
	small=$(stat_of $st small_passed)
	[ "${small:-0}" -gt 0 ] && grep -q "^stalloc: below the plan's min size (4.0 KiB): $small requests, not planned" $st ||
		{ echo "FAIL: small tensors not counted: small_passed=$small; $(grep 'min size' $st)"; exit 1; }
	st=torch_held_outputs.stats
	[ "$(stat_of $st occupied)" = 0 ] && [ "$(stat_of $st rehomed)" = 0 ] && [ "$(stat_of $st spare_hits)" -gt 0 ] ||
		{ echo "FAIL: torch_held_outputs: $(tail -1 $st)"; exit 1; }
else
	echo "note: no torch for $PY: PyTorch runs skipped"
fi
echo "test_stalloc_programs: passed"
