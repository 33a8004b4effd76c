#!/bin/sh
# make demo: profile the bundled training program (examples/train.c) with its
# planted leak and late free, in one go: record, report, timeline, plan.
# Everything lands in demo/ at the top of the source tree (DEMO_OUT: elsewhere).
# It ends with what to run next, PyTorch included (how to install it when
# STPROF_DEMO_PYTHON, default /usr/bin/python3, has no torch).
set -eu
build=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
out=${DEMO_OUT:-$src/demo}
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
# the quick start's PyTorch line needs a Python with torch: say how to get it
py=${STPROF_DEMO_PYTHON:-/usr/bin/python3}
if "$py" -c 'import torch' 2>/dev/null; then
  echo "  $build/stprof $py $src/examples/torch_transformer.py   (a PyTorch training run)"
else
  echo "  PyTorch scripts (stprof python3 train.py): install Debian's python3-torch first"
  echo "    (sudo apt-get install python3-torch, or scripts/deps.sh check), then"
  echo "    $build/stprof /usr/bin/python3 $src/examples/torch_transformer.py"
fi
