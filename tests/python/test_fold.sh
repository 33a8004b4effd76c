#!/bin/bash
# Steady-state folding (collector/core/fold.c; docs/trace-format.md,
# "Folded iterations"; docs/record.md, "Long runs").
# 1. The bundled C example (train -i 50: iteration and phase markers, every
#    heap allocation recorded): by default 46 of its 50 iterations are
#    folded (the first 2 and the last 2 kept); the report's totals of the
#    folded trace equal a --full recording's (allocations, frees, bytes,
#    peak, live at the end; the objects live at each iteration's peak,
#    a folded one's from its FOLD's count), the report and the timeline say what was
#    folded, the plan is the same, the torch snapshot export works, the
#    trace is consistent and far smaller; --full has no FOLD event.
# 2. Real PyTorch (fold_loop.py, 1,000 steps of an MLP, step 500 making a
#    1 MiB temporary): the output is the native one; every iteration but
#    0-1, 500 and 998-999 folded; the tensor space's totals and peak equal
#    a --full recording's; a steady iteration adds at most 1 KiB to the
#    trace (the 1,000-step trace against a 200-step one); a host-heap block
#    from before the loop freed in a step does not keep it from folding; a
#    run killed by SIGTERM loses nothing that folding held.
# 3. An old (format 1.0) trace still reads.
# 4. A loop whose lengths vary (varlen_loop.py step: 600 steps drawing 81
#    lengths, more than a small table of digests holds; each step frees the
#    last step's batch and loss, of the last step's sizes): every iteration
#    whose length an earlier one had is folded, but for at most one more
#    of each length first drawn as the largest so far (its first step may
#    grow a library's buffers: MKL's); a steady iteration adds at most 1 KiB.
# 5. The same lengths through a loader that fetches one batch ahead
#    (varlen_loop.py ahead, as accelerate's under Hugging Face's Trainer):
#    each step makes the next step's batch before its own forward, so its
#    tensors have two lengths; what comes ahead of the forward counts
#    without its sizes (the loose digest), so the same iterations fold as
#    in 4 (before: 27 of 600, 2,447 bytes a step), at most 1 KiB each.
. "$(dirname "$0")/../collector/lib.sh"
cd "$T"
json_spaces() { # TRACE: per space, the totals the report gives, one line each
	"$STPROF" report --format json "$1" | python3 -c '
import json, sys
for s in json.load(sys.stdin)["spaces"]:
    print(" ".join("%s=%s" % (k, s[k]) for k in
          ("allocs", "frees", "bytes_allocated", "bytes_freed", "peak_bytes", "live_bytes_end", "live_objects_end")))'
}

# 1. C
"$STPROF" record -q -o c.stp -- "$STPROF_BUILD/train" -i 50 >c.out
"$STPROF" record --full -q -o cf.stp -- "$STPROF_BUILD/train" -i 50 >cf.out
"$STPROF_BUILD/train" -i 50 >cn.out
cmp -s c.out cn.out || fail "train: output differs under stprof"
"$STPROF" info c.stp | grep -q "^folded:       46 steady iterations" || fail "train: $("$STPROF" info c.stp | grep folded)"
expect_eq "train --full: FOLD events" "$("$STPROF" dump -t fold cf.stp | wc -l)" 0
expect_eq "train: folded iterations" "$("$STPROF" dump -t fold c.stp | sed 's/.* iteration=\([0-9]*\) like=.*/\1/' | tr '\n' ' ')" \
	"$(seq -s ' ' 2 47) "
res=$("$CHECK_HEAP" c.stp) || fail "train: folded trace inconsistent: $res"
case "$res" in *lost=0\ bad=0*) ;; *) fail "train: $res" ;; esac
expect_eq "train: report totals, folded vs --full" "$(json_spaces c.stp)" "$(json_spaces cf.stp)"
# the objects live at each folded iteration's peak (format 1.3): those
# with events live at its FOLD and the FOLD's peak_objects are the --full
# trace's at that iteration's peak
peak_objects() { # TRACE: "ITERATION=OBJECTS" at each iteration's heap peak, the folded ones
	"$STPROF" dump "$1" | python3 -c '
import re, sys
live, it, base, cur, peak, at, folded = {}, None, 0, 0, {}, {}, {}
for line in sys.stdin:
    f = line.split()
    kv = dict(x.split("=", 1) for x in f[4:] if "=" in x)
    if f[3] == "alloc" and kv.get("pool", "0") == "0":
        live[kv["addr"]] = int(kv["size"]); cur += int(kv["size"])
        if it is not None and cur - base > peak[it]:
            peak[it], at[it] = cur - base, len(live)
    elif f[3] == "free" and kv["addr"] in live:
        cur -= live.pop(kv["addr"])
    elif f[3] == "marker" and kv["kind"] == "iteration_begin":
        it, base, peak[it], at[it] = int(kv["value"]), cur, 0, len(live)
    elif f[3] == "fold":
        folded[it] = len(live) + int(re.search(r"host/-1/0:\S*peak_objects=(\d+)", line).group(1))
print(" ".join("%d=%d" % (i, folded.get(i, at[i])) for i in sorted(at)))'
}
expect_eq "train: objects at each iteration's peak, folded vs --full" "$(peak_objects c.stp)" "$(peak_objects cf.stp)"
"$STPROF" report c.stp >c.txt
grep -q "folded    46 steady iterations kept as counters by the collector, each like iteration 0" c.txt ||
	fail "train: report: $(grep -A2 folded c.txt)"
grep -q "every event of iterations 0-1, 48-49" c.txt || fail "train: report: $(grep -A2 folded c.txt)"
expect_eq "train: JSON timeline.folded, iterations 10 and 48" "$("$STPROF" report --format json c.stp | python3 -c '
import json, sys
t = json.load(sys.stdin)["timeline"]
print(t["folded"]["iterations"], t["iterations"][10].get("folded_like"), t["iterations"][48].get("folded_like"))')" "46 0 None"
# the steady line's median: over the iterations with the steady one's
# allocation count, folded ones included, those recorded in full detail
# left out (counted here from the JSON; part 2 has such iterations)
expect_eq "train: steady median's iterations" "$(sed -n 's/^ *\([0-9,]*\) iterations with its allocation count: median [0-9.]* [mun]*s$/\1/p' c.txt)" \
	"$("$STPROF" report --format json c.stp | python3 -c '
import json, sys
t = json.load(sys.stdin)["timeline"]
its = t["iterations"]
a = its[t["steady"]]["allocs"]
print(sum(1 for i in its if i["allocs"] == a and i["end_ns"] > i["begin_ns"] and not i.get("detail")))')"
"$STPROF" report --format html -o c.html c.stp
grep -q "steady state: iteration [0-9]* ([^<]*); [0-9,]* iterations with its allocation count: median" c.html ||
	fail "train: HTML report: $(grep -o 'steady state: [^<]*' c.html)"
grep -q "^Findings.*" c.txt && ! grep -q "Late free" c.txt || fail "train: findings: $(grep -A3 Findings c.txt)"
"$STPROF" plan -q -o c.plan c.stp
"$STPROF" plan -q -o cf.plan cf.stp
expect_eq "train: plan, folded vs --full" "$("$STPROF" plan --show c.plan | sed 1,3d)" "$("$STPROF" plan --show cf.plan | sed 1,3d)"
"$STPROF" export -q -o c.pftrace c.stp || fail "train: export"
"$STPROF" lint-perfetto c.pftrace >/dev/null || fail "train: the timeline: $("$STPROF" lint-perfetto c.pftrace)"
grep -aq "folded: like iteration 0" c.pftrace || fail "train: no folded iterations on the timeline"
"$STPROF" export --format torch-snapshot -q -o c.pickle c.stp || fail "train: torch snapshot export"
sc=$(stat -c %s c.stp) sf=$(stat -c %s cf.stp)
echo "  train -i 50: trace $sc bytes folded, $sf with --full"
[ "$sc" -lt $((sf / 4)) ] || fail "train: the folded trace is not 4x smaller: $sc vs $sf"

# 3. an old trace (format 1.0)
"$STPROF" info "$STPROF_SRC/tests/fuzz-corpus/fuzz_trace/small.stp" | grep -q "^format:       1.0" ||
	fail "a 1.0 trace: $("$STPROF" info "$STPROF_SRC/tests/fuzz-corpus/fuzz_trace/small.stp" 2>&1 | head -3)"

# 2. PyTorch
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
[ "${STPROF_SANITIZE:-0}" = 1 ] && { echo "ok (PyTorch part skipped under sanitizers)"; exit 0; }
export OMP_NUM_THREADS=1 PYTHONHASHSEED=0
P="$STPROF_SRC/tests/python/fold_loop.py"
"$STPROF" record -q -o d.stp -- "$PY" "$P" 1000 500 >d.out
"$STPROF" record --full -q -o f.stp -- "$PY" "$P" 1000 500 >f.out
expect_eq "python: output under stprof" "$(cat d.out)" "$("$PY" "$P" 1000 500)"
expect_eq "python --full: output" "$(cat f.out)" "$(cat d.out)"
"$STPROF" dump -t fold d.stp | sed 's/.* iteration=\([0-9]*\) like=.*/\1/' >folded.txt
expect_eq "python: folded iterations" "$(tr '\n' ' ' <folded.txt)" "$(seq -s ' ' 2 499) $(seq -s ' ' 501 997) "
"$STPROF" report d.stp >d.txt
# the loop's first iterations, before the collector went lean (every
# host allocation in 0-1, module markers and walked call paths to 4), are
# recorded in full detail: the steady iteration (1) is one, its own time on
# a line of its own, the median leaving them out (before, its time was the
# steady line's: 2.4x the median on a Hugging Face Trainer's GPT-2)
expect_eq "python: iterations recorded in full detail" "$("$STPROF" report --format json d.stp | python3 -c '
import json, sys
its = json.load(sys.stdin)["timeline"]["iterations"]
print(" ".join(str(i["index"]) for i in its if i.get("detail"))[:9])')" "0 1 2 3 4"
grep -q "^            (iteration [0-9]* itself: [0-9.]* [mun]*s, recorded in full detail" d.txt ||
	fail "python: no line for the steady iteration's own time: $(sed -n '/^  steady/,/^  phases/p' d.txt)"
grep -q "every event of iterations 0-1, 500, 998-999" d.txt || fail "python: report: $(grep -A2 folded d.txt)"
# bytes by module says what it leaves out
grep -A2 "^Bytes by module" d.txt | grep -q "of folded iterations repeat them" || fail "python: bytes by module: $(grep -A3 '^Bytes by module' d.txt)"
# no late-free finding (the loss tensor, freed when the next iteration
# remakes it, is listed among the expected ones, as with --full)
sed -n '/^Findings/,/^  expected, not counted/p' d.txt | grep -q "Late free" && fail "python: findings: $(grep -A3 Findings d.txt)"
# the tensor space (never sampled): the same totals and peak
tens() { json_spaces "$1" | sed -n 2p; }
expect_eq "python: cpu tensors, folded vs --full" "$(tens d.stp)" "$(tens f.stp)"
# a host-heap block from before the loop given back in step 150 (the
# interpreter's buffers go when its collector runs): with the heap sampled
# that is no deviation, the step is folded (the free is still written)
"$STPROF" record -q -o drop.stp -- "$PY" "$P" 300 150 drop >/dev/null
"$STPROF" report drop.stp | grep -q "every event of iterations 0-1, 298-299 " ||
	fail "python: a pre-loop host block freed in step 150: $("$STPROF" report drop.stp | grep 'every event of')"
# killed mid-run (SIGTERM at step 300, after its backward): the status is
# the program's; what folding held is written, folded where it was decided
# so (the iteration before it left out its frees of the objects they
# share): no event lost, the tensors' totals those of a --full recording
# killed there
set +e
"$STPROF" record -q -o k.stp -- "$PY" "$P" 1000 300 kill >/dev/null 2>&1
ks=$?
"$STPROF" record --full -q -o kf.stp -- "$PY" "$P" 1000 300 kill >/dev/null 2>&1
kfs=$?
set -e
expect_eq "python killed: statuses" "$ks $kfs" "143 143"
"$STPROF" info k.stp | grep -q "^whole: *yes (killed by signal 15" || fail "python killed: $("$STPROF" info k.stp | grep whole)"
"$STPROF" info k.stp | grep -q "^folded:" || fail "python killed: nothing folded before the kill"
"$STPROF" info k.stp | grep "^lost events" && fail "python killed: events lost"
res=$("$CHECK_HEAP" k.stp) || fail "python killed: trace inconsistent: $res"
case "$res" in *lost=0\ bad=0*) ;; *) fail "python killed: $res" ;; esac
expect_eq "python killed: cpu tensors, folded vs --full" "$(tens k.stp)" "$(tens kf.stp)"
"$STPROF" record -q -o s200.stp -- "$PY" "$P" 200 >/dev/null
"$STPROF" record -q -o s1000.stp -- "$PY" "$P" 1000 >/dev/null
a=$(stat -c %s s200.stp) b=$(stat -c %s s1000.stp)
per=$(((b - a) / 800))
echo "  python: 200 steps $a bytes, 1,000 steps $b bytes: $per bytes per steady iteration; --full $(stat -c %s f.stp) bytes"
[ "$per" -le 1024 ] || fail "python: a steady iteration adds $per bytes (at most 1 KiB)"

# 4. lengths that vary; 5. the same, fetched one batch ahead
V="$STPROF_SRC/tests/python/varlen_loop.py"
# (the next step of a length first drawn as the largest so far may be
# written in full too: that step may grow a library's buffers, which the
# next one of its length does not repeat.  Unfolded, by the length's first
# step: PyTorch 1.13, 0 and 1 (the loop's first steps, both the largest
# then); PyTorch 2.15, also 4, 10, 17 and 44, whose steps grew MKL's
# sgemm packing buffers, 4.3 MB a thread)
set -- $("$PY" -c 'import random
random.seed(0)  # varlen_loop.py draws its lengths so
n, seen, it, top, tops = 600, set(), 0, 0, set()
for i in range(n):
    t = random.randint(16, 96)
    it += t in seen and 2 <= i < n - 2
    if t > top:
        top = t
        tops.add(t)
    seen.add(t)
print(it, len(tops))')
seen=$1 grew=$2
varlen() { # MODE NAME: 300 and 600 steps of varlen_loop.py MODE, folded as their lengths allow
	"$STPROF" record -q -o "$2"300.stp -- "$PY" "$V" 300 "$1" >/dev/null
	"$STPROF" record -q -o "$2"600.stp -- "$PY" "$V" 600 "$1" >/dev/null
	local got a b per
	got=$("$STPROF" dump -t fold "$2"600.stp | wc -l)
	echo "  varlen $1: $got of 600 iterations folded; $seen have a length an earlier one had ($grew first drawn as the largest)"
	[ "$got" -ge $((seen - grew)) ] && [ "$got" -le "$seen" ] ||
		fail "varlen $1: $got iterations folded, not $seen (or up to $grew fewer)"
	a=$(stat -c %s "$2"300.stp) b=$(stat -c %s "$2"600.stp)
	per=$(((b - a) / 300))
	echo "  varlen $1: 300 steps $a bytes, 600 steps $b bytes: $per bytes per iteration"
	[ "$per" -le 1024 ] || fail "varlen $1: an iteration adds $per bytes (at most 1 KiB)"
	"$STPROF" report "$2"600.stp >"$2".txt || fail "varlen $1: report failed"
	! grep -q "no two consecutive iterations agree" "$2".txt || fail "varlen $1: $(grep steady "$2".txt)"
	# a peak inside a folded step: the objects, sites and classes of the
	# step it repeats at that one's highest moment, in text, HTML and JSON
	"$STPROF" report --format json "$2"600.stp >"$2".json || fail "varlen $1: JSON report failed"
	"$STPROF" report --format html --no-viewer "$2"600.stp >"$2".html || fail "varlen $1: HTML report failed"
	like=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
s = [x for x in r["spaces"] if x["primary"]][0]
if "peak_like" in s:
    classes = sum(c["bytes_at_peak"] for c in r["classes"].values())
    assert classes == s["peak_like_bytes"] <= s["peak_bytes"], (classes, s)
    print(s["peak_like"])' "$2".json) || fail "varlen $1: the folded peak's objects: $like"
	if [ -n "$like" ]; then
		echo "  varlen $1: the peak is in a folded step, its objects those of iteration $like"
		for f in "$2".txt "$2".html; do
			grep -q "its objects are those of iteration $like, which it repeats" "$f" ||
				fail "varlen $1: $f does not say whose objects the folded peak has"
		done
	fi
}
varlen step v
varlen ahead w
echo ok
