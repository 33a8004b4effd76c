#!/bin/sh
# `cmake --install` gives a working stprof: the binary, the collector
# (libstprof.so) it preloads and the Python shim beside it
# (lib/stprof-python, from collector/torch/python); the installed copy
# records, reports and plans a real program from its prefix, away from the
# build tree, and a Python program it records imports the installed shim.
set -eu
: "${STPROF_BUILD:?run through ctest}"
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
echo ok
