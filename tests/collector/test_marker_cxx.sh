#!/bin/bash
# The marker API works from C++: without stprof it is inactive and the program
# links nothing of ours; under stprof the module markers are recorded.
. "$(dirname "$0")/lib.sh"
expect_eq "native" "$("$STPROF_BUILD/marker_cxx")" inactive
! ldd "$STPROF_BUILD/marker_cxx" | grep -q stprof || fail "links libstprof"
expect_eq "under stprof" "$("$STPROF" record -q -o "$T/m.stp" -- "$STPROF_BUILD/marker_cxx")" active
got=$("$STPROF" dump -t marker "$T/m.stp" | awk '{print $5 $6}' | tr '\n' ' ')
expect_eq "markers" "$got" 'kind=iteration_beginname="" kind=module_entername="layers.0" kind=module_exitname="layers.0" kind=module_entername="layers.1" kind=module_exitname="layers.1" kind=iteration_endname="" '
echo ok
