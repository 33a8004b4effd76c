#!/bin/sh
# test_train_valgrind.sh - examples/train under valgrind's memcheck: no
# invalid access or uninitialised read, no leak; with --plant-bugs exactly
# one leak record, the planted one (cache_batch_stats), one block per
# micro-batch.  Exit 77 (skipped) without valgrind, in a sanitizer build, or
# when valgrind cannot read the build's debug information.
set -eu
: "${STPROF_BUILD:?}"
if ! command -v valgrind >/dev/null 2>&1; then
  echo "skipped: no valgrind"
  exit 77
fi
if [ "${STPROF_SANITIZE:-0}" = 1 ]; then
  echo "skipped: sanitizer build"
  exit 77
fi
train="$STPROF_BUILD/train"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stprof-test-valgrind.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# an older valgrind cannot read some compilers' debug info (clang's DWARF 5)
if ! valgrind -q --error-exitcode=9 "$train" --help >/dev/null 2>"$tmp/probe"; then
  echo "skipped: valgrind cannot run this build of train:"
  head -3 "$tmp/probe"
  exit 77
fi
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
memcheck() {
  valgrind -q --leak-check=full --show-leak-kinds=all --errors-for-leak-kinds=all \
    --error-exitcode=9 --log-file="$tmp/log" "$train" "$@" >/dev/null
}

for opts in "-i 2" "-i 2 --recompute -m 2" "-i 1 --layers 2 --width 5 -b 3 -m 3"; do
  # shellcheck disable=SC2086
  memcheck $opts || { fail "memcheck errors with $opts:"; cat "$tmp/log"; }
done

rc=0
memcheck -i 2 --plant-bugs || rc=$?
[ "$rc" = 9 ] || fail "memcheck finds no leak with --plant-bugs (exit $rc)"
grep -q 'Invalid\|uninitialised' "$tmp/log" && fail "access errors with --plant-bugs"
records=$(grep -c 'in loss record' "$tmp/log" || true)
[ "$records" = 1 ] || fail "expected 1 leak record with --plant-bugs, got $records"
grep -q '8 blocks are definitely lost' "$tmp/log" || fail "expected 8 leaked blocks (2 iterations x 4)"
grep -q 'cache_batch_stats' "$tmp/log" || fail "the leak is not the planted one"
[ "$fails" = 0 ] || { cat "$tmp/log"; echo "$fails check(s) failed"; exit 1; }
echo "train under memcheck: clean; the planted leak found"
