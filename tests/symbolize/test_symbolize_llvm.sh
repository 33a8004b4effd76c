#!/bin/sh
# Cross-checks the symbolizer against llvm-addr2line (LLVM's symbolizer) on
# every third byte of the .text of libstp_symtest.so and of the
# symbolize_bench program (built from the project's sources, so real -O2
# code with inlining): function names, files, lines and inline chains must
# agree.  Two known, intended differences are allowed: LLVM names the
# outermost function by its ELF symbol where stprof keeps the DWARF name,
# and LLVM gives the nearest symbol for addresses in padding after a
# function where stprof gives module+offset.  Skipped (77) without
# llvm-addr2line or python3.
set -eu
: "${STPROF_BUILD:?}" "${STPROF_SRC:?}"
command -v python3 >/dev/null || exit 77
a2l=$(command -v llvm-addr2line || ls /usr/lib/llvm-*/bin/llvm-addr2line 2>/dev/null | tail -1 || true)
[ -n "$a2l" ] && [ -x "$a2l" ] || { echo "no llvm-addr2line: skipped"; exit 77; }
bench=$STPROF_BUILD/symbolize_bench
[ -x "$bench" ] || { echo "no $bench: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for obj in "$STPROF_BUILD/libstp_symtest.so" "$bench"; do
  readelf -SW "$obj" | python3 -c '
import sys
for l in sys.stdin:
    p = l.replace("[ ", "[").split()
    if len(p) > 5 and p[1] == ".text":
        start, size = int(p[3], 16), int(p[5], 16)
        for a in range(start, start + size, 3):
            print("%x" % a)
' >"$work/addrs"
  "$bench" "$obj" "$work/addrs" >"$work/ours" 2>"$work/err" || { cat "$work/err"; exit 1; }
  "$a2l" -f -i -C -a -e "$obj" <"$work/addrs" >"$work/llvm"
  python3 "$STPROF_SRC/tests/symbolize/compare_llvm.py" "$work/llvm" "$work/ours" "$obj" ||
    status=1
done
exit $status
