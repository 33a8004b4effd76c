#!/bin/bash
# Exit paths: exit(N), _exit(N), a segfault, abort() and a raised signal end
# the program under stprof exactly as without it (same status, same output),
# and each trace records how the program ended.
. "$(dirname "$0")/lib.sh"
check() { # MODE ARG... : compares status and output, prints the trace's end line
  set +e
  "$WORKLOAD" "$@" >"$T/n.out" 2>"$T/n.err"
  ns=$?
  "$STPROF" record -q -o "$T/s.stp" -- "$WORKLOAD" "$@" >"$T/s.out" 2>"$T/s.err"
  ss=$?
  set -e
  expect_eq "status of $*" "$ss" "$ns"
  cmp -s "$T/n.out" "$T/s.out" || fail "stdout differs for $*"
  cmp -s "$T/n.err" "$T/s.err" || fail "stderr differs for $*"
  "$STPROF" info "$T/s.stp" | sed -n 's/^whole: *//p'
}
ulimit -c 0
expect_eq "exit 3" "$(check exit 3)" "yes (exited with status 3)"
expect_eq "_exit 5" "$(check _exit 5)" "yes (exited with status 5)"
expect_eq "segv" "$(check segv)" "yes (killed by signal 11 (Segmentation fault))"
expect_eq "abort" "$(check abort)" "yes (killed by signal 6 (Aborted))"
expect_eq "raise TERM" "$(check raise 15)" "yes (killed by signal 15 (Terminated))"
# a vfork child (a subprocess) reset SIGINT: the parent's SIG_DFL still holds
expect_eq "vfork then SIGINT" "$(check vforkint)" "yes (killed by signal 2 (Interrupt))"
expect_eq "raise USR1" "$(check raise 10)" "yes (killed by signal 10 (User defined signal 1))"
# stprof itself dies of the program's signal (a shell sees 128+N)
set +e
"$STPROF" record -q -o "$T/x.stp" -- "$WORKLOAD" segv 2>/dev/null
expect_eq "stprof status after SIGSEGV" $? 139
"$STPROF" "$WORKLOAD" exit 7 >/dev/null 2>&1
expect_eq "stprof PROGRAM status" $? 7
set -e
# the program sees the dispositions it would see without stprof
expect_eq "sigaction view" "$("$STPROF" record -q -o "$T/q.stp" -- "$WORKLOAD" sigquery)" "$("$WORKLOAD" sigquery)"
echo ok
