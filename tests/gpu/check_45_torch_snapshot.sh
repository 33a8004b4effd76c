#!/bin/sh
# check_45_torch_snapshot.sh - a real PyTorch 2.x CUDA memory snapshot
# (torch.cuda.memory._record_memory_history from the first allocation, then
# _dump_snapshot in the middle of an iteration, its activations live), read
# by stprof as a user does (docs/snapshot.md):
#   - it imports without a warning (a consistent snapshot: every allocation
#     inside a segment), and `report --check` finds its figures add up;
#   - its reserved peak is the run's max_memory_reserved() and what is live
#     at the snapshot is the snapshot's active blocks, counted in the pickle;
#   - the report calls it a snapshot (no pid, no exit status), its live
#     blocks live, not leaked, and its efficiency is not above 100%.
# Run by tests/gpu/run.sh (S, B, T, PY, CUDA set).
set -eu
echo "  a real CUDA memory snapshot (torch.cuda.memory._dump_snapshot) imported"
cat >"$T/snap.py" <<'PY'
import json, sys
import torch
try:
    torch.cuda.memory._record_memory_history(max_entries=100000)
except TypeError:  # PyTorch 2.0
    torch.cuda.memory._record_memory_history(True, trace_alloc_max_entries=100000)
torch.manual_seed(0)
dev = "cuda"
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).to(dev)
opt = torch.optim.Adam(model.parameters())
for it in range(10):
    x = torch.randn(256, 1024, device=dev)
    loss = model(x).square().mean()
    if it == 9:  # mid-iteration: the activations are live
        torch.cuda.synchronize()
        torch.cuda.memory._dump_snapshot(sys.argv[1])
        s = torch.cuda.memory._snapshot()
        active = sum(1 for seg in s["segments"] for b in seg["blocks"] if b["state"] == "active_allocated")
        json.dump({"max_reserved": torch.cuda.max_memory_reserved(), "allocated": torch.cuda.memory_allocated(),
                   "active_blocks": active, "torch": torch.__version__}, open(sys.argv[2], "w"))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
PY
fail=0
"$PY" "$T/snap.py" "$T/s.pickle" "$T/s.json" >/dev/null || { echo "FAIL: the snapshot script"; exit 1; }
jget() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
echo "  PyTorch $(jget "$T/s.json" torch): max_memory_reserved $(jget "$T/s.json" max_reserved), memory_allocated $(jget "$T/s.json" allocated), $(jget "$T/s.json" active_blocks) active blocks at the snapshot; pickle $(wc -c <"$T/s.pickle") bytes"
"$B/stprof" import "$T/s.pickle" -o "$T/s.stp" >"$T/imp" 2>&1 || { cat "$T/imp"; echo "FAIL: import"; exit 1; }
sed 's/^/    /' "$T/imp"
grep -q "warning" "$T/imp" && { echo "FAIL: a real snapshot imported with a warning"; fail=1; }
"$B/stprof" report --check "$T/s.pickle" 2>&1 | sed 's/^/    /'
"$B/stprof" report --check "$T/s.pickle" >/dev/null 2>&1 || { echo "FAIL: the report's figures do not add up"; fail=1; }
"$B/stprof" report "$T/s.pickle" >"$T/r.txt" 2>&1 || { echo "FAIL: report"; fail=1; }
"$B/stprof" report -f json --no-models "$T/s.pickle" -o "$T/r.json" 2>/dev/null || { echo "FAIL: report json"; fail=1; }
sed -n '/^Memory (device 0)/,/^$/p' "$T/r.txt" | sed 's/^/    /'
grep "model error vs actual" "$T/r.txt" | sed 's/^/    /' || true
set -- $("$PY" -c "import json,sys
d = json.load(open(sys.argv[1])); s = [x for x in d['spaces'] if x['kind'] == 'device'][0]
print(s['reserved_peak'], s['live_objects_end'], s['over_reserved'], d['trace'].get('segments_dropped', 0))" "$T/r.json")
[ "$1" = "$(jget "$T/s.json" max_reserved)" ] || { echo "FAIL: reserved peak $1, max_memory_reserved $(jget "$T/s.json" max_reserved)"; fail=1; }
[ "$2" = "$(jget "$T/s.json" active_blocks)" ] || { echo "FAIL: $2 objects live at the snapshot, $(jget "$T/s.json" active_blocks) active blocks in it"; fail=1; }
[ "$3" = 0 ] && [ "$4" = 0 ] || { echo "FAIL: inconsistent: over_reserved $3, segments dropped $4"; fail=1; }
grep -q "^  trace     a memory snapshot" "$T/r.txt" || { echo "FAIL: not called a snapshot: $(grep '^  trace' "$T/r.txt")"; fail=1; }
grep -q "(pid \|exited with status" "$T/r.txt" && { echo "FAIL: a pid or exit status the snapshot does not name"; fail=1; }
grep -q "Memory leak" "$T/r.txt" && { echo "FAIL: blocks live at the snapshot called a leak"; fail=1; }
eff=$(sed -n 's/.*(allocator segments); efficiency \([0-9.]*\)%.*/\1/p' "$T/r.txt" | head -1)
[ -n "$eff" ] && awk "BEGIN { exit !($eff <= 100) }" || { echo "FAIL: efficiency '$eff'"; fail=1; }
exit $fail
