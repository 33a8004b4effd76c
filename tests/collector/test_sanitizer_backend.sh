#!/bin/sh
# libstprof.so with the Compute Sanitizer backend built in: programs run
# exactly as without stprof under `stprof record --accesses=exact` (same
# output and exit status), the backend says in the trace whether it started
# (annotation stprof.sanitizer), and a CUDA program - here without a GPU or
# driver, so its first CUDA call fails - fails the same way under it.  Also
# the option's errors.  Kernel accesses themselves need a GPU:
# tests/gpu/check_50_sanitizer.sh.
. "$(dirname "$0")/lib.sh"
NVCC=${1:-}
cd "$T"
"$STPROF" record --accesses=bogus -q -o x.stp -- true 2>err.txt && fail "--accesses=bogus accepted"
grep -q "not ops or exact" err.txt || fail "--accesses=bogus: $(cat err.txt)"
"$STPROF" record --accesses=exact --sample-launches 0 -q -o x.stp -- true 2>err.txt &&
	fail "--sample-launches 0 accepted"
if ! "$STPROF" record --accesses=exact -q -o probe.stp -- true 2>err.txt; then
	grep -q "built without the Compute Sanitizer API" err.txt || fail "--accesses=exact: $(cat err.txt)"
	skip "backend not built in"
fi

# an ordinary program: same output and status; the backend started or said why not
set +e
"$WORKLOAD" storm 4 2000 >native.txt 2>&1; st=$?
"$STPROF" record --accesses=exact --sample-launches 3 -q -o w.stp -- "$WORKLOAD" storm 4 2000 >rec.txt 2>&1; rst=$?
set -e
expect_eq "exit status" "$rst" "$st"
cmp -s native.txt rec.txt || fail "output differs under --accesses=exact"
"$STPROF" dump w.stp >w.txt
grep -q 'name="stprof.sanitizer" value=' w.txt || fail "no stprof.sanitizer annotation"
"$STPROF" info w.stp >/dev/null || fail "trace not whole"
# a program that exits with a status and one killed by a signal
set +e
"$STPROF" record --accesses=exact -q -o e.stp -- sh -c 'echo out; exit 3' >e.txt 2>&1; est=$?
"$STPROF" record --accesses=exact -q -o s.stp -- sh -c 'kill -TERM $$' >/dev/null 2>&1; sst=$?
set -e
expect_eq "exit status 3" "$est" 3
expect_eq "output" "$(cat e.txt)" "out"
expect_eq "killed by SIGTERM" "$sst" 143

# a CUDA program (no driver here: its CUDA calls fail) fails identically
if [ -n "$NVCC" ]; then
	"$NVCC" -O2 -o known "$STPROF_SRC/tests/sanitizer/known_objects.cu" 2>nvcc.txt || fail "nvcc: $(cat nvcc.txt)"
	set +e
	./known >kn.txt 2>&1; kst=$?
	"$STPROF" record --accesses=exact -q -o k.stp -- ./known >kr.txt 2>&1; krst=$?
	set -e
	expect_eq "CUDA program's status" "$krst" "$kst"
	cmp -s kn.txt kr.txt || fail "CUDA program's output differs: $(cat kn.txt) / $(cat kr.txt)"
	"$STPROF" info k.stp >/dev/null || fail "CUDA program's trace not whole"
	echo "CUDA program: status $kst, same under --accesses=exact"
fi
echo ok
