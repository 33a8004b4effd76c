#!/bin/bash
# fork: the child writes its own trace (FILE.<pid>) with its own process
# event; exec: the image before execve ends with END(exec), the new image
# writes FILE.<pid>.1; the parent's trace is untouched by either.
. "$(dirname "$0")/lib.sh"
out=$("$STPROF" record -q -o "$T/f.stp" -- "$WORKLOAD" fork)
expect_eq "output" "$out" "$(printf 'basic: marker api active\nfork: child exited 0')"
ls "$T"/f.stp* >"$T/list"
expect_eq "trace files" "$(wc -l <"$T/list")" 3
"$STPROF" info "$T/f.stp" | grep -q "exited with status 0" || fail "parent trace not whole"
"$STPROF" dump "$T/f.stp" | grep -qE ' alloc .*size=3333( |$)' || fail "parent allocation missing"
"$STPROF" dump "$T/f.stp" | grep -qE ' alloc .*size=2222( |$)' && fail "child allocation in the parent trace"
child=$(ls "$T"/f.stp.* | grep -v '\.[0-9]*\.[0-9]*$')
"$STPROF" info "$child" | grep -q "replaced by execve" || fail "child trace does not end with exec"
"$STPROF" dump "$child" | grep -qE ' alloc .*size=2222( |$)' || fail "child allocation missing"
"$STPROF" dump "$child" | head -1 | grep -q "process pid=${child##*.} " || fail "child process event"
exec_img=$(ls "$T"/f.stp.*.1)
"$STPROF" info "$exec_img" | grep -q "exited with status 0" || fail "exec'd image trace not whole"
"$STPROF" dump "$exec_img" | grep -qE ' alloc .*size=1001( |$)' || fail "exec'd image allocations missing"
# every file is consistent on its own
for f in "$T"/f.stp*; do "$CHECK_HEAP" "$f" >/dev/null || fail "$f inconsistent"; done
echo ok
