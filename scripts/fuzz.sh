#!/bin/sh
# Runs every libFuzzer target in a build tree for SECONDS each, starting from
# its seed corpus (tests/fuzz-corpus/NAME/) when there is one.  A crash stops
# the run with the fuzzer's report and a non-zero exit.
#
# With CORPUS_DIR (the long pass, docs/fuzzing.md) each target keeps its
# corpus in CORPUS_DIR/NAME/ from one run to the next (seeded from
# tests/fuzz-corpus/NAME/ when first made), saves what it finds as
# CORPUS_DIR/NAME-crash-* etc., and appends one line of figures (wall and CPU
# seconds, executions, corpus size) to CORPUS_DIR/passes.txt.  TARGETS
# (space-separated names) limits the run to those targets.
# Usage: scripts/fuzz.sh BUILD_DIR [SECONDS [CORPUS_DIR]]
set -eu
build=$(cd "$1" && pwd)
secs=${2:-20}
keep=${3:-}
src=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "$keep" ]; then mkdir -p "$keep"; keep=$(cd "$keep" && pwd); fi
# CPU seconds of this script's finished children so far (cutime + cstime)
children_cpu() { awk '{ printf "%d", ($16 + $17) / 100 }' /proc/$$/stat 2>/dev/null || echo 0; }
found=0
for t in "$build"/fuzz_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  case " ${TARGETS:-$name} " in *" $name "*) ;; *) continue ;; esac
  found=1
  fresh=1
  if [ -n "$keep" ]; then
    work=$keep/$name log=$keep/$name.log prefix=$keep/$name-
    if [ -d "$work" ]; then fresh=; else mkdir "$work"; fi
  else
    work=$(mktemp -d); log=$work.log prefix=$work/
  fi
  if [ -n "$fresh" ] && [ -d "$src/tests/fuzz-corpus/$name" ]; then
    cp -r "$src/tests/fuzz-corpus/$name/." "$work/"
  fi
  echo "fuzz: $name for ${secs}s"
  start=$(date +%s); cpu0=$(children_cpu)
  (cd "$work" && "$t" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 \
     -print_final_stats=1 -close_fd_mask=3 -artifact_prefix="$prefix" "$work" >"$log" 2>&1) || {
    echo "fuzz: $name FAILED; its log:"; tail -60 "$log"; exit 1; }
  grep -a -v '^stat::' "$log" | tail -1
  if [ -n "$keep" ]; then
    execs=$(grep -a 'stat::number_of_executed_units' "$log" | awk '{ print $2 }')
    echo "$(date -u '+%Y-%m-%d %H:%M') $name wall=$(( $(date +%s) - start ))s cpu=$(( $(children_cpu) - cpu0 ))s execs=$execs corpus=$(ls "$work" | wc -l)" >>"$keep/passes.txt"
  else
    rm -rf "$work" "$log"
  fi
done
[ "$found" = 1 ] || { echo "fuzz: no targets${TARGETS:+ named $TARGETS} in $build" >&2; exit 1; }
