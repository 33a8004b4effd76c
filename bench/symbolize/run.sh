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
