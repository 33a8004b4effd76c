#!/bin/sh
# `cmake --install` gives a working stprof: the binary, the collector
# (libstprof.so) it preloads and the Python shim beside it
# (lib/stprof-python, from collector/torch/python); the installed copy
# records, reports and plans a real program from its prefix, away from the
# build tree, a Python program it records imports the installed shim, and a
# PyTorch script gets the shim's iteration markers exactly as from the build
# tree; without the shim a Python run warns once.
set -eu
: "${STPROF_BUILD:?run through ctest}"
: "${STPROF_SRC:?run through ctest}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cmake --install "$STPROF_BUILD" --prefix "$T/prefix" >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "install"; }
[ -x "$T/prefix/bin/stprof" ] || fail "no bin/stprof"
[ -f "$T/prefix/lib/libstprof.so" ] || fail "no lib/libstprof.so: $(find "$T/prefix" -type f | head)"
[ -f "$T/prefix/lib/stprof-python/sitecustomize.py" ] && [ -f "$T/prefix/lib/stprof-python/stprof/__init__.py" ] ||
  fail "no lib/stprof-python (the Python shim): $(find "$T/prefix" -type f | head)"
cd "$T"
env -u STPROF_LIB "$T/prefix/bin/stprof" -q --no-export -o ls.stp /bin/ls / >out 2>err || fail "the installed stprof cannot record: $(cat err)"
grep -q "^bin" out || fail "ls output changed"
env -u STPROF_LIB "$T/prefix/bin/stprof" info ls.stp >/dev/null || fail "info"
[ -s ls.plan ] || fail "no plan"
PY=${STPROF_PYTHON:-python3}
shim=$(env -u STPROF_LIB -u STPROF_PYTHON_DIR "$T/prefix/bin/stprof" record -q -o py.stp -- "$PY" -c \
  'import stprof; print(stprof.__file__)' 2>err) || fail "the installed stprof cannot record Python: $(cat err)"
case "$shim" in
"$T/prefix/lib/stprof-python/"*) ;;
*) fail "the recorded Python program imported the shim from '$shim', not the prefix" ;;
esac

# a PyTorch script that marks nothing itself (tests/python/known_model.py:
# 3 optimizer steps) under the installed copy: the shim marks its iterations
PY="${STPROF_PYTHON:-/usr/bin/python3}"
if "$PY" -c 'import torch' 2>/dev/null; then
  cp "$STPROF_SRC/tests/python/known_model.py" t.py
  env -u STPROF_LIB -u STPROF_PYTHON_DIR OMP_NUM_THREADS=1 "$T/prefix/bin/stprof" record -q -o t.stp -- \
    "$PY" t.py >/dev/null 2>err || fail "record a PyTorch script: $(cat err)"
  env -u STPROF_LIB "$T/prefix/bin/stprof" report --no-models t.stp >rep 2>&1 || fail "report: $(cat rep)"
  grep -q "^Iterations: 3 from markers" rep || fail "the installed copy lost the shim's markers: $(grep '^Iterations' rep)"
  grep -q "^Memory (cpu tensors)" rep || fail "no tensor space: $(grep '^Memory' rep)"
else
  echo "no torch for $PY: the PyTorch half is skipped"
fi
# without the shim a Python run says what it loses, in one warning line
rm -rf "$T/prefix/lib/stprof-python"
env -u STPROF_LIB -u STPROF_PYTHON_DIR "$T/prefix/bin/stprof" record -q -o p.stp -- "$PY" -c 'print(1)' >out 2>err ||
  fail "record python without the shim: $(cat err)"
grep -q "^stprof: warning: the Python shim is missing" err || fail "no warning without the shim: '$(cat err)'"
echo ok
