#!/bin/bash
# Non-reentrant activation checkpointing (ckpt_train.py: 4 checkpointed
# blocks, 2 micro-batches): every "recompute" phase the shim begins it ends,
# and each iteration keeps its 5 phases (forward and backward of both
# micro-batches, the optimizer).  PyTorch 2.1 on stops a recomputation as
# soon as it has the tensors it needs (an exception inside the module), so
# the top module's post hook, which ended the phase, never runs; the phase
# left open swallowed the second micro-batch's phases and the optimizer's
# (2 phases an iteration on PyTorch 2.11).  PyTorch 1.13 recomputes whole
# modules: the same checks hold there.
# The module a stopped recomputation left entered took every tensor after
# it, the optimizer's included, and the node that unpacked the tensors lost
# its module (its mm went to the backward's line): on PyTorch 2.15 bytes by
# module read blocks.0.b 353 allocations, blocks.3.b 101, blocks.1.b and
# blocks.2.b 90.  The shim's post hook now runs when a forward raises
# (always_call, PyTorch 2.1 on): the four blocks' second Linear are charged
# alike, and the tensors of no module hold the optimizer's.
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers"
export OMP_NUM_THREADS=1
P="$STPROF_SRC/tests/python/ckpt_train.py"
cd "$T"
want=$("$PY" "$P" 2>&1)
got=$("$STPROF" record -q -o "$T/c.stp" -- "$PY" "$P" 2>&1)
expect_eq "output under stprof" "$got" "$want"
"$STPROF" dump -t marker "$T/c.stp" >"$T/m.txt"
begins=$(grep -c 'kind=phase_begin name="recompute"' "$T/m.txt" || true)
ends=$(grep -c 'kind=phase_end name="recompute"' "$T/m.txt" || true)
[ "$begins" -gt 0 ] || fail "no recompute phase"
expect_eq "recompute phases ended" "$ends" "$begins"
"$STPROF" report --format json "$T/c.stp" >"$T/r.json"
"$PY" - "$T/r.json" <<'PYEOF' || fail "phases of iteration 0: $(cat "$T/ph.txt" 2>/dev/null)"
import json, sys
ph = json.load(open(sys.argv[1]))["timeline"]["phases"]
got = [(p["name"], p["micro_batch"]) for p in ph if p["iteration"] == 0]
want = [("forward", 0), ("backward", 0), ("forward", 1), ("backward", 1), ("optimizer", 0)]
print(got)
sys.exit(0 if got == want else 1)
PYEOF
"$PY" - "$T/r.json" <<'PYEOF' || fail "bytes by module differ between the blocks"
import json, sys
rows = {m["name"]: (m["allocs"], m["bytes"]) for m in json.load(open(sys.argv[1]))["modules"]}
b = [rows.get("blocks.%d.b" % i) for i in range(4)]
print(b, rows.get("(no module)"))
sys.exit(0 if b[0] and b.count(b[0]) == 4 else 1)
PYEOF
echo ok
