#!/bin/sh
# The Compute Sanitizer patch (collector/sanitizer/sanitizer_patch.cu) compiles with
# this machine's nvcc as a tools patch for every architecture of the build,
# and the build put it beside libstprof.so with the callback the backend
# patches in (stprof_sz_access).  Registered only where nvcc exists.
. "$(dirname "$0")/lib.sh"
NVCC=${1:?nvcc path}
"$NVCC" --fatbin --compile-as-tools-patch -I"$STPROF_SRC/collector/sanitizer" -gencode arch=compute_90,code=sm_90 \
	-o "$T/p.fatbin" "$STPROF_SRC/collector/sanitizer/sanitizer_patch.cu" || fail "nvcc could not build the patch"
grep -q stprof_sz_access "$T/p.fatbin" || fail "the patch has no stprof_sz_access"
F="$STPROF_BUILD/stprof_sanitizer_patch.fatbin"
[ -s "$F" ] || fail "$F was not built"
grep -q stprof_sz_access "$F" || fail "$F has no stprof_sz_access"
for a in 75 80 86 89 90 100 120; do
	grep -aq "sm_$a" "$F" || fail "$F has no sm_$a code"
done
echo ok
