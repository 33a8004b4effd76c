#!/bin/bash
# Every tensor points at the user's line, in the shapes training runs
# (docs/python.md, "Python lines"; collector/core/pylayout.c, detector/fold.c),
# on the real PyTorch here (CPU):
#  - threads_train.py: a ViT fed by DataLoader(num_workers=2) (feeder
#    threads in the main process), a second Python thread making tensors,
#    AdamW + LambdaLR + clip_grad_norm_, backward each step: every site live
#    at the tensor peak (of the 100 largest) is a line of the script, the
#    side thread's tensors carry its line, the workers' traces carry
#    __getitem__'s line; the Python frames were read in place (the probe
#    passed, so no thread ever waits for the GIL);
#  - the folded view: the user's line first with the operator that
#    allocated, no PyTorch frame; --all-frames shows them; rows that read the
#    same show the frame that tells them apart (AdamW's two state tensors);
#    JSON's user_frame, HTML; --group line; Perfetto's call paths folded
#    alike; a backward's tensors at the forward line and module whose
#    backward made them; host sites (no Python lines) say why in one line.
# The DataLoader's workers are persistent and forked before the side thread
# starts, and that thread draws from a generator of its own: a worker forked
# while another thread of the parent holds a lock waits on it forever, with
# or without stprof.  Two such hangs were seen here: the default CPU
# generator's mutex (a worker seeds it first thing; PyTorch 1.13, 2 threads
# drawing 256x256 randn: held at 30 of 600 forks natively, 24 of 600 under
# stprof record), then glibc's __exit_funcs_lock (the side thread's first
# ops register static destructors while the first workers fork).  One cost
# a CI run.
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
export OMP_NUM_THREADS=1
S="$STPROF_SRC/tests/python/threads_train.py"
SHARE="$STPROF_SRC/tests/python/line_share.py"
cd "$T"
hang_watch 200 # a run takes 5-25 s; the CI run that hung printed nothing of where
want=$(timeout 300 "$PY" "$S" 2 2>&1)
got=$(timeout 300 "$STPROF" record -q -o "$T/t.stp" -- "$PY" "$S" 2 2>&1)
expect_eq "output under stprof" "$got" "$want"
"$STPROF" report -f json -n 100 "$T/t.stp" >"$T/t.json" 2>"$T/err" || fail "report: $(cat "$T/err")"
share=$("$PY" "$SHARE" "$T/t.json" threads_train.py 100)
[ "$(printf '%s\n' "$share" | head -1)" = "100.0" ] ||
	fail "tensor bytes at the peak without the script's line: $share"
"$STPROF" report -n 1000 "$T/t.stp" >"$T/r.txt" 2>&1 || fail "report failed"
grep -q "at threads_train.py:64 in side (aten::" "$T/r.txt" || fail "the side thread's tensors lost their line"
grep -q "at threads_train.py:41 in Block.forward (aten::addmm)" "$T/r.txt" ||
	fail "no forward line with its operator: $(grep -m3 'Block.forward' "$T/r.txt")"
grep -v "(through " "$T/r.txt" | grep -q "at::detail::\|c10::\|libtorch" &&
	fail "framework frames in the folded report: $(grep -v '(through ' "$T/r.txt" | grep -m2 'at::detail::\|c10::\|libtorch')"
"$STPROF" dump -t marker "$T/t.stp" | grep -q 'name="stprof.python_frames" value=2' ||
	fail "Python frames not read in place: $("$STPROF" dump -t marker "$T/t.stp" | grep python_frames)"
# the two AdamW states of one parameter: the same line and operator, told apart
# (PyTorch 1.13 makes them in AdamW.step, 2.x in Adam._init_group, which AdamW inherits)
grep -A1 "at threads_train.py:83 in <module> (aten::zeros_like)" "$T/r.txt" |
	grep -Eq "\(through adamw?\.py:[0-9]* in (AdamW\.step|Adam\._init_group)\)" ||
	fail "rows that read the same do not say how they differ: $(grep -m2 -A1 'threads_train.py:83' "$T/r.txt")"
# a backward's tensors: at the forward line that called the module whose
# backward made them (the shim's node pre-hooks, collector/core/pybackward.c)
grep -q "at threads_train.py:41 in Block.forward (backward of blocks.[0-2].fc2: aten::mm)" "$T/r.txt" ||
	fail "no backward tensor at its module's forward line: $(grep -m3 'backward' "$T/r.txt")"
grep -q "at threads_train.py:37 in Block.forward (backward of blocks.[0-2].qkv: aten::mm)" "$T/r.txt" ||
	fail "no backward tensor of qkv at its forward line: $(grep -m3 'backward of' "$T/r.txt")"
# the HTML report folds alike
"$STPROF" report -f html -n 100 "$T/t.stp" >"$T/t.html" 2>/dev/null || fail "report -f html"
grep -q "threads_train.py:41 in Block.forward (aten::addmm)" "$T/t.html" || fail "HTML: no folded forward line"
grep -q "threads_train.py:41 in Block.forward (backward of blocks" "$T/t.html" || fail "HTML: no backward line"
grep -q "at::detail::\|c10::" "$T/t.html" && fail "HTML: framework frames shown"
# where a line cannot be had, the report says so and why, in one line
"$STPROF" report --space host -n 10 "$T/t.stp" >"$T/h.txt" 2>&1 || fail "report --space host"
grep -q "^  (no line of the program for [0-9]* of these sites, .*: host-heap paths are native frames" "$T/h.txt" ||
	fail "host sites without a line, not said: $(sed -n '/^Top call sites/,/^$/p' "$T/h.txt" | tail -3)"
# everything on request
"$STPROF" report --all-frames --frames 64 -n 3 "$T/t.stp" >"$T/a.txt" 2>&1
grep -q "<- at::detail::empty" "$T/a.txt" || fail "--all-frames hides the framework"
grep -q "c10::ArrayRef<long>" "$T/a.txt" || fail "--all-frames shortens names"
# the shim's own frames are in no path, a backward tensor's (under the
# module site the shim hands over) included
"$STPROF" report --all-frames --frames 64 -n 200 "$T/t.stp" >"$T/a200.txt" 2>&1
grep -q "<backward>:0 in " "$T/a200.txt" || fail "--all-frames: no backward path among 200 sites"
grep -q "torch_markers.py" "$T/a200.txt" && fail "the shim's frames in a path: $(grep -m2 torch_markers.py "$T/a200.txt")"
"$STPROF" report --group line -n 3 "$T/t.stp" | grep -qE "^ +1 .* threads_train\.py:[0-9]+ in " || fail "--group line"
# grouped by the user's frame's function and file, not PyTorch's
"$STPROF" report --group function -n 3 "$T/t.stp" | grep -qE "^ +1 .* [A-Za-z_.<>]+ in threads_train\.py$" ||
	fail "--group function: $("$STPROF" report --group function -n 3 "$T/t.stp" | sed -n '/^Top/,/^$/p')"
"$STPROF" report --group module -n 3 "$T/t.stp" | grep -qE "^ +1 .* threads_train\.py$" ||
	fail "--group module: $("$STPROF" report --group module -n 3 "$T/t.stp" | sed -n '/^Top/,/^$/p')"
# the timeline: an allocation's call path folded as in the report
"$STPROF" export -q -o "$T/t.pftrace" "$T/t.stp" || fail "export"
grep -aq "threads_train.py:41 in Block.forward (aten::addmm) <- threads_train.py:54 in ViT.forward" "$T/t.pftrace" ||
	fail "Perfetto's call paths are not folded"
# the DataLoader workers' own traces: their tensors at the dataset's line
found=0
for w in "$T"/t.stp.*; do
	"$STPROF" report "$w" 2>/dev/null | grep -q "at threads_train.py:25 in Images.__getitem__" && found=1
done
[ $found = 1 ] || fail "no worker trace with Images.__getitem__'s line"
# a main thread allocating under the CPU generator's lock while another
# Python thread holds the GIL (gil_rng.py: the GIL must never be waited for)
# still gets its line now
timeout 120 "$STPROF" record -q -o "$T/g.stp" -- "$PY" "$STPROF_SRC/tests/python/gil_rng.py" >/dev/null 2>&1 ||
	fail "gil_rng.py under stprof"
"$STPROF" report -n 10 "$T/g.stp" 2>&1 | grep -q "at gil_rng.py:22 in <module> (aten::multinomial)" ||
	fail "torch.multinomial beside a GIL holder lost its line"
echo ok
