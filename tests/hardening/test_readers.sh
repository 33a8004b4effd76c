#!/bin/bash
# Readers of outside input on legal-but-extreme and endless input (issue 12):
# a whole, well-formed trace holding one allocation of 8 TiB .. 2^64-1 bytes
# is reported, exported and planned (it once died of SIGFPE in the PyTorch
# simulator, and overflowed a Perfetto counter); /dev/zero given to every
# reader ends in a one-line error within a memory bound (plan --verify once
# grew without end).  HARD_STPROF=/path/to/stprof checks another build.
. "$STPROF_SRC/tests/collector/lib.sh"
STPROF=${HARD_STPROF:-$STPROF}
MK="$STPROF_BUILD/hard_mkextreme"
failed=""
# the memory bound (ASan reserves terabytes of shadow: no bound under it)
ASLIMIT="prlimit --as=$((2 << 30))"
[ "${STPROF_SANITIZE:-0}" = 1 ] && ASLIMIT=""
bad() { echo "FAIL: $*" >&2; failed=1; }
# ok_or_error WHAT CMD...: exits 0 or with a one-line error (status 1 or 2),
# never a signal, within 60 s and 2 GiB of address space.
ok_or_error() {
  local what=$1 s=0; shift
  $ASLIMIT timeout 60 "$@" >"$T/out" 2>"$T/err" || s=$?
  if [ "$s" -gt 2 ]; then
    bad "$what: status $s $(head -c 300 "$T/err")"
  elif [ "$s" != 0 ] && [ "$(wc -l <"$T/err")" -gt 1 ]; then
    bad "$what: status $s with $(wc -l <"$T/err") lines of error"
  fi
  return 0
}
for size in $((1 << 43)) $((3 << 44)) $((1 << 46)) $((1 << 47)) $((1 << 62)) 9223372036854775808 \
            18446744073709547520 18446744073709551615; do
  "$MK" "$T/x.stp" "$size"
  ok_or_error "report, $size bytes" "$STPROF" report "$T/x.stp"
  ok_or_error "report --format json, $size bytes" "$STPROF" report --format json "$T/x.stp"
  ok_or_error "report --format html, $size bytes" "$STPROF" report --format html "$T/x.stp"
  ok_or_error "export, $size bytes" "$STPROF" export -o "$T/x.pftrace" "$T/x.stp"
  ok_or_error "plan, $size bytes" "$STPROF" plan -o "$T/x.plan" "$T/x.stp"
  ok_or_error "info, $size bytes" "$STPROF" info "$T/x.stp"
done
# several at once, two of which overflow any sum
"$MK" "$T/y.stp" 18446744073709551615 9223372036854775808 $((1 << 46)) 1
ok_or_error "report, sizes summing past 2^64" "$STPROF" report "$T/y.stp"
ok_or_error "export, sizes summing past 2^64" "$STPROF" export -o "$T/y.pftrace" "$T/y.stp"
for cmd in "plan --verify" "plan --show" "report" "info" "dump" "lint-perfetto" "plan -o $T/z.plan"; do
  # shellcheck disable=SC2086
  ok_or_error "$cmd /dev/zero" "$STPROF" $cmd /dev/zero
  cat "$T/out" "$T/err" | grep -q "/dev/zero" || bad "$cmd /dev/zero: the error does not name the file: $(cat "$T/err")"
done
# endless input is refused for what it is, at once, not when memory runs out
ok_or_error "plan --verify /dev/zero" "$STPROF" plan --verify /dev/zero
grep -q "offset 0" "$T/err" || bad "plan --verify /dev/zero: not refused at offset 0: $(cat "$T/err")"
[ -z "$failed" ] || fail "some readers failed"
echo ok
