#!/bin/sh
# make demo: profile the bundled training program (examples/train.c) with its
# planted leak and late free, in one go: record, report, timeline, plan.
# Everything lands in demo/ at the top of the source tree.
set -eu
build=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
out="$src/demo"
mkdir -p "$out"
cd "$out"
echo "== stprof $build/train --plant-bugs   (in $out)"
"$build/stprof" -o "$out/train.stp" -- "$build/train" --plant-bugs
"$build/stprof" report --format html -o "$out/train.html" "$out/train.stp"
echo
echo "Files in $out:"
for f in "$out"/*; do printf '  %-16s %10s bytes\n' "$(basename "$f")" "$(wc -c <"$f")"; done
cat <<EOT

Next:
  open $out/train.html in a browser (the report, with plots)
  open $out/train.pftrace at https://ui.perfetto.dev (the timeline; nothing is uploaded)
  $build/stprof info $out/train.stp   (what the trace holds)
EOT
