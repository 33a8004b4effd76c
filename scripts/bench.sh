#!/bin/sh
# Runs every benchmark area (bench/*/run.sh) against a build tree and prints
# their figures.  Usage: scripts/bench.sh BUILD_DIR [AREA...]
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
shift || true
export STPROF_BUILD="$build" STPROF_SRC="$src"
areas=${*:-$(for d in "$src"/bench/*/; do [ -x "$d/run.sh" ] && basename "$d"; done)}
for a in $areas; do
  echo "== bench/$a"
  "$src/bench/$a/run.sh"
done
