#!/bin/sh
# test_torch_transformer.sh - examples/torch_transformer.py trains on the
# CPU with real PyTorch: 2 iterations, finite loss, the same output with and
# without markers being recorded (mark_recorder.so standing in for the
# collector), and well-formed iteration, phase and module markers.
# Exit 77 (skipped) when there is no Python with torch.
set -eu
: "${STPROF_BUILD:?}" "${STPROF_SRC:?}"
py=${STPROF_PYTHON:-/usr/bin/python3}
if [ ! -x "$py" ] || ! "$py" -c 'import torch' 2>/dev/null; then
  echo "skipped: $py has no torch"
  exit 77
fi
script="$STPROF_SRC/examples/torch_transformer.py"
recorder="$STPROF_BUILD/libtest_mark_recorder.so"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stprof-test-torch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$py" "$script" --iters 2 >"$tmp/plain" || fail "torch_transformer.py exits non-zero"
cat "$tmp/plain"
[ "$(grep -c '^iter ' "$tmp/plain")" = 2 ] || fail "expected 2 loss lines"
grep '^iter ' "$tmp/plain" | awk '{ if (!($4 + 0 > 0 && $4 + 0 < 100)) bad = 1 } END { exit bad }' ||
  fail "loss is not a finite positive number"

STPROF_MARK_LOG="$tmp/marks" LD_PRELOAD="$recorder" "$py" "$script" --iters 2 >"$tmp/marked" ||
  fail "torch_transformer.py under the recorder exits non-zero"
cmp -s "$tmp/plain" "$tmp/marked" || fail "output differs when markers are recorded"
"$py" "$STPROF_SRC/tests/examples/check_markers.py" "$tmp/marks" --iters 2 --micro-batches 2 \
  --module tokens --module layers.0.attn --module layers.0.attn.qkv --module layers.1.mlp.fc2 \
  --module norm --modules-in forward || fail "markers are not well formed"

rc=0
"$py" "$script" --batch 16 --micro-batches 3 >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] || fail "a bad option exits $rc, expected 2"

[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "torch_transformer: all checks passed"
