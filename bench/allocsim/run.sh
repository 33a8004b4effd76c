#!/bin/sh
# Allocator models: events/s of each model, of the worst-moment replay, of
# the recommendations, and of the whole fragmentation report from a .stp
# trace; bytes of memory per event.  Prints figures; no pass/fail.
# Usage: bench/allocsim/run.sh [EVENTS]   (STPROF_BUILD = the build tree)
set -eu
build=${STPROF_BUILD:-build}
events=${1:-3000000}
exec "$build/bench_allocsim" "$events"
