#!/bin/sh
# The report's "allocation wrapper" header names only frames a user can act
# on: six allocations at their own lines of main, all through a function
# that is framework by its name (framework_wrapper.c) are shown at those
# lines, and the header does not name the framework's function (it named
# it before: "(paths are shown below the allocation wrapper these sites go
# through: cuFakeMalloc (framework_wrapper.c:14))", as it named the CUDA
# runtime's, driver's or sanitizer's frames that a CUDA program's
# allocations all pass, which the folded paths hide).
# Two allocations of one line that part inside the framework
# (through_paths.c: a dispatcher calling a meta function for one, a kernel
# for the other) are told apart by those functions, not by the
# dispatcher's two lines (the text said "(through cuFakeDispatch
# (through_paths.c:39))" and ":41)"; a PyTorch 2.15 mm's output and its
# scratch read "(through c10::impl::wrap_kernel_functor_unboxed_<...>::call"
# at +0x2ea663d and +0x2ea6650).
. "$(dirname "$0")/lib.sh"
P="$STPROF_BUILD/framework_wrapper"
"$STPROF" record -q -o "$T/w.stp" -- "$P" || fail "framework_wrapper under stprof"
"$STPROF" report -n 10 "$T/w.stp" | sed -n '/^Top call sites/,/^$/p' >"$T/sites.txt" || fail "report"
for l in 23 24 25 26 27 28; do
	grep -q "^      at main (framework_wrapper.c:$l)$" "$T/sites.txt" || fail "line $l: $(cat "$T/sites.txt")"
done
grep -q "cuFakeMalloc\|allocation wrapper" "$T/sites.txt" && fail "framework frames named: $(cat "$T/sites.txt")"
# --all-frames shows them all
"$STPROF" report --all-frames -n 10 "$T/w.stp" | grep -q "cuFakeMalloc" || fail "--all-frames hides the wrapper"
P="$STPROF_BUILD/through_paths"
"$STPROF" record -q -o "$T/t.stp" -- "$P" || fail "through_paths under stprof"
"$STPROF" report -n 10 "$T/t.stp" | sed -n '/^Top call sites/,/^$/p' >"$T/through.txt" || fail "report"
[ "$(grep -c "^      at main (through_paths.c:51)$" "$T/through.txt")" = 2 ] || fail "through_paths: $(cat "$T/through.txt")"
grep -q "(through cuFakeMeta (through_paths.c:[0-9]*))" "$T/through.txt" &&
	grep -q "(through cuFakeKernel (through_paths.c:[0-9]*))" "$T/through.txt" ||
	fail "through_paths: not told apart by their functions: $(cat "$T/through.txt")"
echo ok
