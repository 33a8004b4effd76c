#!/bin/sh
# test_lifetimes_alloc.sh - libstalloc's lifetime heap as a drop-in malloc,
# through `stprof run --plan MODEL`:
#   - a model learned from a recorded run of lt_stress (threads handing
#     blocks to each other; malloc, calloc, realloc, posix_memalign,
#     aligned_alloc, memalign, valloc, malloc_usable_size; 1 byte to 3 MiB)
#     predicts its contexts when it runs again: same output as natively,
#     exit 0, every block's contents, alignment and usable size checked,
#     a child forked midway allocating fine;
#   - the heap's statistics: the contexts were found in the model, huge
#     pages were given back to the OS;
#   - a bad model: one line naming the file and offset, exit 2, the program
#     not started; a program's exit status passes through.
set -eu
B=${STPROF_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
stat_of() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p"; }

"$B/stprof" record -q -o s.stp -- "$B/lt_stress" 2 20000 >/dev/null
"$B/stprof" plan --lifetimes s.stp -o s.lt >plan.out
cat plan.out
grep -q "calling contexts" plan.out

"$B/lt_stress" 4 100000 fork >native.out
"$B/stprof" run --plan s.lt --stalloc-stats st.txt -- "$B/lt_stress" 4 100000 fork >lt.out
cmp native.out lt.out || { echo "FAIL: output differs under the lifetime heap"; exit 1; }
head -7 st.txt
[ "$(stat_of st.txt mode)" = lifetimes ] || { echo "FAIL: not run in lifetime mode"; exit 1; }
[ "$(stat_of st.txt allocations)" -gt 100000 ] || { echo "FAIL: the heap served too few allocations"; exit 1; }
[ "$(stat_of st.txt known)" -gt 0 ] || { echo "FAIL: no context was found in the model"; exit 1; }
[ "$(stat_of st.txt hp_released)" -gt 0 ] || { echo "FAIL: no huge page was given back"; exit 1; }

# without transparent huge pages, the same
STALLOC_HUGEPAGES=0 "$B/stprof" run -q --plan s.lt -- "$B/lt_stress" 2 50000 fork >lt4k.out
grep -q "ok" lt4k.out

# a bad model: named with its offset, exit 2, nothing run
printf 'stprof-lifetimes 1\ndepth 8\nfallback 9\n' >bad.lt
set +e
"$B/stprof" run --plan bad.lt -- touch started 2>err.txt
rc=$?
set -e
cat err.txt
[ "$rc" = 2 ] || { echo "FAIL: a bad model gave exit $rc, not 2"; exit 1; }
[ "$(wc -l <err.txt)" = 1 ] && grep -q "bad.lt: offset 27:" err.txt || { echo "FAIL: bad model message"; exit 1; }
[ ! -e started ] || { echo "FAIL: the program was started with a bad model"; exit 1; }
set +e
"$B/stprof" run -q --plan s.lt -- sh -c 'exit 3'
rc=$?
set -e
[ "$rc" = 3 ] || { echo "FAIL: exit status $rc, not 3"; exit 1; }
echo "test_lifetimes_alloc: ok"
