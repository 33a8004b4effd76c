#!/bin/bash
# Every interposed function is recorded with its size, in order, with a call
# path that starts in the caller; markers arrive; the trace is whole.
. "$(dirname "$0")/lib.sh"
out=$("$STPROF" record -q -o "$T/b.stp" -- "$WORKLOAD" basic)
expect_eq "program output" "$out" "basic: marker api active"
"$STPROF" info "$T/b.stp" | grep -q "whole:        yes (exited with status 0)" || fail "not whole"
"$STPROF" dump -s "$T/b.stp" >"$T/dump"
# sizes 1001..1010 (1004 is the realloc of 1003; 1006 is aligned_alloc's 1024)
sizes=$(awk '$4=="alloc"{for(i=5;i<=NF;i++) if ($i ~ /^size=/) {sub("size=","",$i); if ($i>1000 && $i<1100) printf "%s ", $i}}' "$T/dump")
expect_eq "allocation sizes in order" "$sizes" "1001 1002 1003 1004 1005 1024 1007 1008 1009 1010 "
# the realloc 1003 -> 1004 frees 1003's block first
awk '$4=="alloc" && /size=1003 /{a=$0} $4=="free"{f=f" "$5} END{exit !(a!="")}' "$T/dump" || fail "no alloc of 1003"
n_free=$(grep -c ' free ' "$T/dump")
[ "$n_free" -ge 10 ] || fail "expected at least 10 frees, got $n_free"
# call path: the first frame of the 1001 allocation is inside site_malloc
line=$(grep ' alloc .*size=1001 ' "$T/dump")
frame0=$(printf '%s\n' "$line" | sed 's/.*stack=//; s/;.*//')
bias=$(awk -v exe="$WORKLOAD" '$4=="module" && index($0, "path=\"" exe "\"") {print $0}' "$T/dump" | sed 's/.*bias=0x\([0-9a-f]*\).*/\1/')
[ -n "$bias" ] || fail "no module event for $WORKLOAD"
read -r sym_lo sym_size < <(nm -S "$WORKLOAD" | awk '$4=="site_malloc"{print $1, $2}')
off=$(( frame0 - 0x$bias ))
[ $off -ge $((0x$sym_lo)) ] && [ $off -lt $((0x$sym_lo + 0x$sym_size)) ] ||
  fail "first frame $frame0 (offset $off) not in site_malloc at 0x$sym_lo+0x$sym_size"
# markers, in order, with names and values
marks=$(awk '$4=="marker"{print $5, $6, $7}' "$T/dump" | tr '\n' '|')
expect_eq "markers" "$marks" 'kind=iteration_begin name="" value=0|kind=phase_begin name="forward" value=0|kind=phase_end name="forward" value=0|kind=module_enter name="layers.0" value=0|kind=module_exit name="layers.0" value=0|kind=annotation name="answer" value=42|kind=iteration_end name="" value=0|'
# process, thread and module events come first
head -1 "$T/dump" | grep -q '^0 0 [0-9]* process pid=' || fail "first event is not the process"
grep -q ' thread thread=' "$T/dump" || fail "no thread event"
grep -q 'module .*build_id=[0-9a-f]\{40\} path=".*libc.so.6"' "$T/dump" || fail "no libc module with build-id"
# without stprof the marker API is inactive and costs nothing else
expect_eq "native output" "$("$WORKLOAD" basic)" "basic: marker api inactive"
# the fast unwinder agrees with libunwind on every call path
STPROF_UNWIND=check "$STPROF" record -q -o "$T/c.stp" -- "$WORKLOAD" basic >/dev/null
"$STPROF" dump -t marker "$T/c.stp" | grep -q 'name="stprof.unwind_mismatches" value=0' || fail "unwinders disagree"
echo ok
