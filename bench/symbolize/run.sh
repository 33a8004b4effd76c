#!/bin/sh
# Symbolization figures: time to symbolize N distinct addresses in one
# module file, the first lookup (which opens the file and reads its symbols)
# included.  Modules: libtorch_cpu.so (~120 MB, ELF symbols only), the
# python3 executable (libpython is linked into it on Debian), and libc with
# its DWARF from libc6-dbg when that is installed.  Addresses are random
# points inside the module's exported functions (from .dynsym), or anywhere
# in .text for libc, fixed by a seed.  Each run 3 times; the machine may be
# busy, so read the best of three.
# Needs: STPROF_BUILD (build tree with symbolize_bench), python3, readelf.
set -eu
: "${STPROF_BUILD:?set STPROF_BUILD to the build tree}"
bench=$STPROF_BUILD/symbolize_bench
[ -x "$bench" ] || { echo "symbolize: no $bench (build first)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# addresses N SEED MODE FILE: MODE funcs (inside .dynsym functions) or text
addresses() {
  if [ "$3" = funcs ]; then
    readelf -W --dyn-syms "$4" | awk '$4 == "FUNC" && $7 != "UND" && $3 > 1 {print $2, $3}'
  else
    readelf -SW "$4" | sed 's/\[ */[/' | awk '$2 == ".text" {print $4, $6, "text"}'
  fi | python3 -c '
import random, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
random.seed(seed)
rows = [l.split() for l in sys.stdin]
out = set()
if rows and len(rows[0]) == 3:
    start, size = int(rows[0][0], 16), int(rows[0][1], 16)
    while len(out) < n:
        out.add(start + random.randrange(size))
else:
    funcs = [(int(a, 16), int(s, 0)) for a, s in rows]
    while len(out) < n and funcs:
        a, s = random.choice(funcs)
        out.add(a + random.randrange(1, s))
for a in out:
    print("%x" % a)
' "$1" "$2"
}

run() { # label N MODE FILE [bench options]
  label=$1 n=$2 mode=$3 file=$4
  shift 4
  if [ ! -r "$file" ]; then
    echo "$label: $file not found, skipped"
    return
  fi
  addresses "$n" 1 "$mode" "$file" >"$work/addrs"
  echo "$label ($(du -Lh "$file" | cut -f1)):"
  for i in 1 2 3; do
    "$bench" -q -r "$@" "$file" "$work/addrs" 2>&1 | sed 's/^/  /'
  done
}

torch=$(/usr/bin/python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))' 2>/dev/null ||
        echo /usr/lib/python3/dist-packages/torch/lib/libtorch_cpu.so)
python=$(readlink -f /usr/bin/python3)
libc=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)
run "libtorch_cpu.so, 5000 addresses" 5000 funcs "$torch"
run "python3 (with libpython), 3000 addresses" 3000 funcs "$python"
run "libc, 2000 addresses, ELF symbols only" 2000 text "$libc" -n
run "libc, 2000 addresses, DWARF when libc6-dbg is installed" 2000 text "$libc"

# A real process: a small PyTorch training loop under symbolize_capture.so,
# which records the distinct return addresses of a sample of malloc stacks
# and the module map; all of them are then symbolized as one trace would be.
capture=$STPROF_BUILD/libsymbolize_capture.so
if [ -r "$capture" ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  STP_CAPTURE_OUT=$work/capture LD_PRELOAD=$capture /usr/bin/python3 -c '
import torch
m = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(20):
    loss = m(torch.randn(64, 256)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
'
  echo "PyTorch training loop, every distinct return address of sampled malloc stacks:"
  for i in 1 2 3; do
    "$bench" -m -q "$work/capture" 2>&1 | sed "s|^$work/capture|  capture|"
  done
  "$bench" -m "$work/capture" 2>/dev/null | python3 -c '
import collections, re, sys
total, named = collections.Counter(), collections.Counter()
for line in sys.stdin:
    last = line.rstrip("\n").split("\t")[-1]
    m = re.match(r"^([^ ]+)\+0x[0-9a-f]+$", last)
    if m:
        total[m.group(1)] += 1
        continue
    m = re.search(r"\(([^()]*?)(:\d+)?\)$", last)
    mod = m.group(1) if m else "?"
    if m and m.group(2):
        mod = "DWARF"
    total[mod] += 1
    named[mod] += 1
print("  frames with a function name, by module (top 5):")
for mod, n in total.most_common(5):
    print("    %-28s %6d of %6d" % (mod, named[mod], n))
'
else
  echo "PyTorch capture: no $capture or no torch for /usr/bin/python3, skipped"
fi
