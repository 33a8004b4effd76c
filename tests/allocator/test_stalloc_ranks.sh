#!/bin/bash
# test_stalloc_ranks.sh - plans for a data-parallel job, one per rank, made
# and enforced per rank (docs/stalloc.md "Ranks", docs/record.md "Ranks").
# 1. On the bundled example (no torch; also under sanitizers), ranks started
#    by hand with RANK=R:
#    - `stprof run --plan J.plan` (no such file) with J.rank0.plan and
#      J.rank1.plan beside it: each process with RANK=R enforces its rank's
#      plan, with --stalloc-stats S writing S.rank<R>, and on stderr one
#      block per rank, whole, headed `stalloc: rank R (plan ...)`; the
#      launcher (no RANK) and a rank's children, spawned or forked, enforce
#      nothing, an image the rank's process execs is the rank's again;
#    - `--plan J.rank1.plan` names the set (and says so);
#    - a rank with no plan says one line and runs; a damaged rank plan: one
#      line naming it and the offset, exit 2, the program not started;
#    - a plain plan keeps today's behaviour: STALLOC_PLAN and STALLOC_PID
#      pinned to the program's pid, even with rank plans beside it;
#    - the one-shot mode ends with the command that enforces its plan, and
#      that command runs.
# 2. On real torchrun (python -m torch.distributed.run, gloo on the CPU, 2
#    ranks), with tests/allocator/torch_ddp.py (DDP, DistributedSampler and
#    a DataLoader worker, checkpointed blocks, 2 micro-batches, bf16
#    autocast, AdamW), 30 steps, recorded by default (the collector folds
#    the steady iterations: docs/record.md, "Long runs"):
#    - each rank's plan summary replays the folded iterations' allocations
#      that outlive them at the ranges they repeat: no steady iteration
#      sends a request to the fallback (33 did while those, the gradients
#      DDP makes in its backward, were fed to the matcher as a sequence of
#      their own);
#    - `stprof run --plan d.plan` on the same torchrun command: the same
#      output (each rank's loss); each rank's statistics (D.rank<R>) show
#      its own plan enforced (that plan's pool, most requests planned hits,
#      the peak reserved / pool its plan summary predicted, within 0.01,
#      and within 2% of the pool with nothing sent to the fallback: DDP's
#      first gradient bucket, made at start-up and freed in the first
#      iteration when DDP rebuilds its buckets, is placed over the slots of
#      the objects made after it (plan 1.4; it went to the fallback before:
#      1.1585x the pool);
#      the launcher and the DataLoader workers write none; on stderr, one
#      whole block per rank, named, also when torchrun starts stprof per
#      rank (--no_python); a rank without its plan says so and the job runs
#      as natively.
set -eu
. "$(dirname "$0")/../collector/lib.sh"
TRAIN="$STPROF_BUILD/train"
cd "$T"

# blocks FILE: every stats block on stderr whole (its header, then the
# statistics' lines up to "peak allocated", nothing between) and named;
# prints the ranks of the blocks, one a line
blocks() {
	awk '/^stalloc: rank [0-9]+ \(plan / { if (open) exit 1; open = 1; r = $3; n = 0; next }
		/^stalloc: (pool|requests|below|drift|fallback|[0-9]+ served|requests from)/ { if (!open) exit 1; n++; next }
		/^stalloc: peak allocated/ { if (!open || n < 5) exit 1; print r; open = 0; next }
		/^stalloc:/ { if (open) exit 1 }
		END { if (open) exit 1 }' "$1"
}

# ---- 1. the bundled example
"$STPROF" -o t.stp --no-html --no-export --no-report -- "$TRAIN" -i 5 >t.native 2>t.err ||
	fail "one-shot: $(tail -3 t.err)"
grep -qxF "enforce:        stprof run --plan $T/t.plan -- $TRAIN -i 5" t.err ||
	fail "one-shot: no enforce line: $(tail -3 t.err)"
# the line runs as printed (stprof being this build's)
cmd=$(sed -n 's/^enforce: *stprof //p' t.err)
eval "\"$STPROF\" $cmd" >t.out 2>t.err2 || fail "the enforce line: $(cat t.err2)"
cmp -s t.native t.out || fail "the enforce line: output differs"
grep -q "^stalloc: requests [1-9]" t.err2 || fail "the enforce line: no plan enforced: $(cat t.err2)"

cp t.plan j.rank0.plan
cp t.plan j.rank1.plan
pool=$(sed -n 's/^pool: .*(\([0-9]*\) bytes)$/\1/p' t.err)
[ -n "$pool" ] || fail "no pool in the summary: $(cat t.err)"
two_ranks() { # PLAN ARGS...: RANK=0 and RANK=1 at once, from a launcher without RANK
	"$STPROF" run --plan "$@" -- sh -c "RANK=1 '$TRAIN' -i 5 >r1.out & RANK=0 '$TRAIN' -i 5 >r0.out; wait"
}
two_ranks j.plan --stalloc-stats S 2>j.err || fail "rank plans: $(cat j.err)"
grep -q "^stprof: j.plan: no such file, but 2 rank plans beside it: each process with RANK=R .* enforces $T/j.rank<R>.plan (ranks 0-1)" j.err ||
	fail "rank plans: not said: $(cat j.err)"
for r in 0 1; do
	cmp -s t.native r$r.out || fail "rank $r: output differs"
	[ -f S.rank$r ] || fail "rank $r: no S.rank$r: $(ls)"
	sed -n 1p S.rank$r | grep -qxF "stalloc: rank $r (plan $T/j.rank$r.plan)" || fail "S.rank$r: $(head -2 S.rank$r)"
	expect_eq "rank $r: pool" "$(field pool "$(tail -1 S.rank$r)")" "$pool"
	expect_eq "rank $r: fallbacks" "$(field fallbacks "$(tail -1 S.rank$r)")" 0
	[ "$(field requests "$(tail -1 S.rank$r)")" -gt 0 ] || fail "rank $r: no requests"
done
[ ! -e S ] || fail "a process without RANK wrote S"
# on stderr: one whole block per rank, named
two_ranks j.plan 2>j.err || fail "rank plans: $(cat j.err)"
expect_eq "stderr's blocks" "$(blocks j.err | sort | tr '\n' ' ')" "0 1 "
expect_eq "stderr's pool lines" "$(grep -c '^stalloc: pool' j.err)" 2
# one rank's plan names the set
two_ranks j.rank1.plan --stalloc-stats S 2>j.err || fail "j.rank1.plan: $(cat j.err)"
grep -q "^stprof: j.rank1.plan is rank 1's plan of a set: each process with RANK=R .* enforces $T/j.rank<R>.plan (2 plans: ranks 0-1)" j.err ||
	fail "j.rank1.plan: not said: $(cat j.err)"
for r in 0 1; do sed -n 1p S.rank$r | grep -qxF "stalloc: rank $r (plan $T/j.rank$r.plan)" || fail "S.rank$r: $(head -1 S.rank$r)"; done
# a rank's child enforces nothing (its stderr has no statistics); an image
# the rank's process execs is the rank's (its statistics, whole)
RANK=1 "$STPROF" run --plan j.plan -- sh -c "'$TRAIN' -i 5 >c.out 2>c.err; exec '$TRAIN' -i 5 >e.out" 2>e.err ||
	fail "child and exec: $(cat e.err)"
cmp -s t.native c.out && cmp -s t.native e.out || fail "child and exec: output differs"
grep -q "^stalloc:" c.err && fail "a rank's child enforced a plan: $(cat c.err)"
expect_eq "the exec'd image's blocks" "$(blocks e.err | tr '\n' ' ')" "1 "
# a child the rank's process forks (a DataLoader worker) passes through: a
# 4 KiB block has glibc's usable size there, as without stprof, and the
# plan's in the rank; so does a plain plan's forked child (it kept the plan
# before, and its statistics could replace its parent's)
cat >fork.py <<'EOF'
import ctypes, os
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc_usable_size.argtypes = [ctypes.c_void_p]
libc.malloc_usable_size.restype = ctypes.c_size_t
def usable():
    return libc.malloc_usable_size(libc.malloc(4096))  # left allocated
pid = os.fork()
if pid == 0:
    print("child", usable(), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print("parent", usable(), flush=True)
EOF
native=$("$PY" fork.py | sed -n 's/^child //p')
expect_eq "a forked child of rank 0" "$(RANK=0 "$STPROF" run -q --plan j.plan -- "$PY" fork.py | tr '\n' ' ')" \
	"child $native parent 4096 "
expect_eq "a plain plan's forked child" "$("$STPROF" run -q --plan t.plan -- "$PY" fork.py | tr '\n' ' ')" \
	"child $native parent 4096 "
# and writes no statistics: the file is the parent's (one block; the
# parent's process asked for the 4 KiB block, the child's never shows)
"$STPROF" run -q --plan t.plan --stalloc-stats fs -- "$PY" fork.py >/dev/null
expect_eq "a plain plan's forked child: statistics" "$(grep -c '^stalloc: pool' fs)" 1
"$STPROF" run --plan t.plan -- "$PY" fork.py 2>fork.err >/dev/null
expect_eq "a plain plan's forked child: blocks on stderr" "$(grep -c '^stalloc: pool' fork.err)" 1
# a rank without a plan: one line, and it runs
RANK=2 "$STPROF" run --plan j.plan -- "$TRAIN" -i 5 >m.out 2>m.err || fail "rank 2: $(cat m.err)"
cmp -s t.native m.out || fail "rank 2: output differs"
expect_eq "rank 2's line" "$(grep '^stalloc:' m.err)" "stalloc: rank 2: no plan $T/j.rank2.plan; running without one"
# a damaged rank plan: one line naming it, exit 2, nothing started
head -c 100 t.plan >j.rank1.plan
set +e
"$STPROF" run --plan j.plan -- sh -c 'echo started' >bad.out 2>bad.err
rc=$?
set -e
expect_eq "damaged rank plan: exit" "$rc" 2
[ ! -s bad.out ] || fail "damaged rank plan: the program ran"
[ "$(wc -l <bad.err)" = 1 ] && grep -q "j.rank1.plan: offset" bad.err || fail "damaged rank plan: $(cat bad.err)"
cp t.plan j.rank1.plan
# a plain plan: as before, even with rank plans beside it (t.rank0.plan)
cp t.plan t.rank0.plan
# (a program that is not a shell: pinned to its pid)
env_of() { "$STPROF" run -q --plan "$1" -- "$PY" -c 'import os; e = os.environ.get
print(os.getpid(), e("STALLOC_PID", "-"), e("STALLOC_PLAN", "-"), e("STALLOC_RANK_PLANS", "none"), e("STALLOC_PROGRAM", "-") != "-")'; }
set -- $(env_of t.plan)
[ "$1" = "$2" ] && [ "$3" = "$T/t.plan" ] && [ "$4" = none ] && [ "$5" = False ] ||
	fail "plain plan: pid $1, STALLOC_PID=$2 STALLOC_PLAN=$3 STALLOC_RANK_PLANS=$4 STALLOC_PROGRAM set: $5"
set -- $(env_of j.plan)
[ "$2" = - ] && [ "$3" = - ] && [ "$4" = "$T/j" ] || fail "rank plans: STALLOC_PID or STALLOC_PLAN set, or no STALLOC_RANK_PLANS: $*"
# a shell that does not run the plan's program (a wrapper script): the
# process of its tree that runs it enforces the plan (STALLOC_PROGRAM), not
# the shell (docs/stalloc.md)
set -- $("$STPROF" run -q --plan t.plan -- sh -c 'echo "${STALLOC_PID:--} ${STALLOC_PROGRAM:+set}"')
[ "$1" = - ] && [ "${2:-}" = set ] || fail "a wrapper shell: STALLOC_PID=$1, STALLOC_PROGRAM ${2:-not set}"

# ---- 2. torchrun
if ! "$PY" -c 'import torch.distributed' 2>/dev/null; then
	echo "note: no torch.distributed for $PY: the torchrun part skipped"
	echo ok
	exit 0
fi
if [ "${STPROF_SANITIZE:-0}" = 1 ]; then
	echo "note: the torchrun part is too slow under sanitizers: skipped"
	echo ok
	exit 0
fi
export OMP_NUM_THREADS=1
# Debian's torch 1.13 on Python 3.11 cannot parse its default --redirects 0
# (test_ranks.sh); a free port, not the default 29500 that another job on
# the machine (another test's torchrun) may hold
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
RUN=(-m torch.distributed.run --nproc_per_node 2 --master_port "$port" --redirects 9:0 --tee 9:0)
P="$STPROF_SRC/tests/allocator/torch_ddp.py"

"$STPROF" record -q -o d.stp -- "$PY" "${RUN[@]}" "$P" 30 >d.native 2>d.err || fail "torchrun under stprof: $(tail -5 d.err)"
for r in 0 1; do
	grep -q "rank $r steps 30 loss" d.native || fail "rank $r: $(cat d.native)"
	"$STPROF" plan -o "d.rank$r.plan" "d.stp.rank$r" >"s$r.txt" 2>&1 || fail "plan of rank $r: $(cat "s$r.txt")"
	grep -A3 "^at run time" "s$r.txt"
	grep -q "over the trace's [0-9]* iterations written in full" "s$r.txt" || fail "rank $r: $(grep -A2 '^at run' "s$r.txt")"
	grep -q "and the [0-9]* the collector folded (what outlives each, at the ranges it repeats)" "s$r.txt" ||
		fail "rank $r: no folded iterations"
	grep -q " (0 in the [0-9]* steady iterations, at most 0 in one)" "s$r.txt" ||
		fail "rank $r: steady iterations send requests to the fallback: $(grep 'to the fallback' "s$r.txt")"
done
# each rank's line (the two ranks share stdout: their lines may be written
# in either order, and Python may write a line's newline apart from it)
losses() { grep -o "rank [0-9] steps [0-9]* loss [0-9.]*" "$1" | sort; }
losses d.native >d.native.sorted

# each rank's plan: the start-up bucket placed, a plan the runtime follows
for r in 0 1; do
	grep -q "^start-up:       1 temporary that outlives start-up placed over the slots" s$r.txt ||
		fail "rank $r: no start-up placement: $(cat s$r.txt)"
	grep -q "would not follow" s$r.txt && fail "rank $r: the plan says the runtime would not follow it"
done
# the plans enforced, each in its rank: the figures each plan predicted,
# within 2% of the pool, nothing to the fallback.  A rank that misses them
# is shown whole and the job run once more: once in about 25 runs (a make
# check at load ~6, 2026-11-28) a rank reserved 1.17x the pool, which no
# run since repeated (the cause not found); a second miss fails.
enforced() {
	rm -f D.rank*
	"$STPROF" run --plan d.plan --stalloc-stats D -- "$PY" "${RUN[@]}" "$P" 30 >d.out 2>d.err || fail "enforced: $(tail -5 d.err)"
	losses d.out | cmp -s d.native.sorted - || fail "enforced: output differs: $(cat d.out)"
	expect_eq "statistics files" "$(ls D* | tr '\n' ' ')" "D.rank0 D.rank1 "
	local miss=0
	for r in 0 1; do
		st=D.rank$r
		head -3 $st
		sed -n 1p $st | grep -qxF "stalloc: rank $r (plan $T/d.rank$r.plan)" || fail "$st: $(head -1 $st)"
		kv=$(tail -1 $st)
		want_pool=$(sed -n 's/^pool: .*(\([0-9]*\) bytes)$/\1/p' s$r.txt)
		expect_eq "rank $r: pool" "$(field pool "$kv")" "$want_pool"
		want=$(sed -n 's/.*peak reserved [^=]*= \([0-9.]*\) x pool.*/\1/p' s$r.txt)
		awk -v q="$(field requests "$kv")" -v s="$(field small "$kv")" -v h="$(field hits "$kv")" \
			-v sl="$(field slot_hits "$kv")" -v p="$(field pool "$kv")" -v pr="$(field peak_reserved "$kv")" \
			-v f="$(($(field fallbacks "$kv") - $(field small "$kv")))" -v w="$want" -v r=$r 'BEGIN {
			printf "rank %d: %d requests of the plan sizes, %.1f%% planned hits or slots, %d to the fallback; peak reserved %.4f x pool (the plan said %s)\n",
				r, q - s, 100 * (h + sl) / (q - s), f, pr / p, w
			exit !(q - s > 0 && h + sl > 0.5 * (q - s) && pr / p - w < 0.01 && w - pr / p < 0.01 && pr <= 1.02 * p && f == 0) }' ||
			{ echo "rank $r missed its plan's figures:"; cat $st; miss=1; }
	done
	return $miss
}
enforced || { echo "running the job once more"; enforced; } || fail "a rank missed its plan's figures twice (above)"
# stderr: one whole block per rank, named; none of the launcher's or the workers'
"$STPROF" run --plan d.plan -- "$PY" "${RUN[@]}" "$P" 30 >d.out 2>d.err || fail "enforced: $(tail -5 d.err)"
losses d.out | cmp -s d.native.sorted - || fail "enforced, stats on stderr: output differs"
expect_eq "stderr's blocks" "$(blocks d.err | sort | tr '\n' ' ')" "0 1 "
expect_eq "stderr's pool lines" "$(grep -c '^stalloc: pool' d.err)" 2
# a launcher that starts stprof per rank (torchrun --no_python): each stprof
# has RANK, and its program is the rank's
"$PY" "${RUN[@]}" --no_python "$STPROF" run --plan d.plan "$PY" "$P" 30 >d.out 2>d.err || fail "--no_python: $(tail -5 d.err)"
losses d.out | cmp -s d.native.sorted - || fail "--no_python: output differs"
expect_eq "--no_python: stderr's blocks" "$(blocks d.err | sort | tr '\n' ' ')" "0 1 "
# a rank without its plan says so and runs
mv d.rank1.plan kept.plan
"$STPROF" run --plan d.plan -- "$PY" "${RUN[@]}" "$P" 30 >d.out 2>d.err || fail "rank 1 without a plan: $(tail -5 d.err)"
losses d.out | cmp -s d.native.sorted - || fail "rank 1 without a plan: output differs"
grep -qxF "stalloc: rank 1: no plan $T/d.rank1.plan; running without one" d.err || fail "rank 1 without a plan: $(cat d.err)"
expect_eq "blocks with rank 1's plan missing" "$(blocks d.err | tr '\n' ' ')" "0 "
echo ok
