#!/bin/bash
# The allocator report of a JAX run (docs/jax.md, "XLA's allocator"), its
# plumbing on the CPU: the program annotates XLA-style statistics for the
# host after each step (jax_train.py --fake-stats: bytes in use as BFC would
# count the live buffers, a 64 MiB pool and limit), which a GPU run gets
# from memory_stats(); the report compares XLA's BFC as run with them and
# simulates XLA_PYTHON_CLIENT_* settings at the device memory they imply
# (64 MiB / .75).  XLA_PYTHON_CLIENT_PREALLOCATE=false as run changes the
# reference model.  The real figures are checked on a GPU
# (tests/gpu/check_75_jax.sh).
. "$(dirname "$0")/lib.sh"
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers"
cd "$T"
"$STPROF" record -q -m 64k --host-depth 0 -o "$T/x.stp" -- "$JAXPY" "$TRAIN" --steps 6 --fake-stats >/dev/null
"$STPROF" report --no-progress --models-detail "$T/x.stp" >"$T/r.txt" 2>&1 || fail "report: $(tail -3 "$T/r.txt")"
sed -n '/^Allocator models/,$p' "$T/r.txt"
grep -q "^Fragmentation (JAX buffers, host, [0-9]* allocations):" "$T/r.txt" || fail "no JAX fragmentation section"
grep -qE "^  bfc preallocate \.75 \(as run\) +[0-9.]+ [KM]iB +64\.0 MiB" "$T/r.txt" || fail "as-run BFC not preallocating 64 MiB"
# no peak_bytes_in_use: M_a and E are unknown (a dash), not 0 B and 100% fragmentation
grep -qE "^  actual \(XLA's statistics, 6 samples\) +- +64\.0 MiB +- +-$" "$T/r.txt" || fail "actual line: $(grep '^  actual' "$T/r.txt")"
grep -qE "^  model error vs actual: M_a not measured \(no peak_bytes_in_use\), M_r \+0\.0% \(bfc preallocate \.75 \(as run\)\)" "$T/r.txt" || fail "no error line"
grep -qE "^  bytes in use at XLA's 6 samples: the model within [0-9.]+% of XLA's" "$T/r.txt" || fail "no in-use line"
grep -q "^XLA_PYTHON_CLIENT_\* settings (simulated on these buffers, 85.3 MiB of device memory):" "$T/r.txt" || fail "no settings"
grep -qE "^  XLA_PYTHON_CLIENT_MEM_FRACTION=\.[0-9]+$" "$T/r.txt" || fail "no fraction"
grep -q "^  XLA_PYTHON_CLIENT_PREALLOCATE=false$" "$T/r.txt" || fail "no preallocate advice"
grep -q "^  XLA_PYTHON_CLIENT_ALLOCATOR=platform$" "$T/r.txt" || fail "no platform advice"
"$STPROF" report --no-progress --format html -o "$T/r.html" "$T/x.stp" >/dev/null 2>&1 || fail "HTML report"
grep -q "<td><b>actual</b> (XLA's statistics)</td><td class=n>&ndash;</td>" "$T/r.html" || fail "HTML actual row"
# the JSON report carries the same (docs/report-json.md)
"$STPROF" report --no-progress --format json "$T/x.stp" >"$T/r.json"
python3 - "$T/r.json" <<'PY' || fail "JSON report"
import json, sys
r = json.load(open(sys.argv[1]))
jax = [s for s in r["spaces"] if s["jax"]]
assert len(jax) == 1 and jax[0]["primary"], r["spaces"]
dev = r["models"]["devices"][0]
x = dev["xla"]
assert x and x["samples"] == 6 and x["preallocate"] and abs(x["mem_fraction"] - 0.75) < 1e-9, x
assert x["bytes_limit"] == 64 << 20 and len(x["probes"]) == 6 and len(x["probes"][0]) == 8, x
assert dev["actual"]["peak_reserved"] == 64 << 20, dev["actual"]
assert any(rc["settings"] == "XLA_PYTHON_CLIENT_PREALLOCATE=false" for rc in dev["recommendations"])
PY
# the settings as run: growth
XLA_PYTHON_CLIENT_PREALLOCATE=false "$STPROF" record -q -m 64k --host-depth 0 -o "$T/g.stp" -- "$JAXPY" "$TRAIN" --steps 4 --fake-stats >/dev/null
"$STPROF" report --no-progress --models-detail "$T/g.stp" >"$T/g.txt" 2>&1
grep -qE "^  bfc allow_growth \.75 \(as run\)" "$T/g.txt" || fail "as-run growth: $(grep '(as run)' "$T/g.txt")"
grep -q "^  XLA_PYTHON_CLIENT_PREALLOCATE=true$" "$T/g.txt" || fail "no preallocate=true advice"
echo "ok"
