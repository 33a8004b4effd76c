#!/bin/bash
# Round trips: a snapshot imported, exported (`export --format
# torch-snapshot`) and imported again gives the same events, call paths
# included (2.x layout, expandable segments, 1.13 layout); a real program's
# host trace exported and imported back keeps every allocation and free
# (address, requested size, order) and names its frames.
. "$(dirname "$0")/lib.sh"

for p in v2_p4 v2_expandable v113; do
  layout=2
  [ $p = v113 ] && layout=1.13
  "$STPROF" import -q "$T/$p.pickle" -o "$T/$p.a.stp" || fail "import $p"
  "$STPROF" export -q --format torch-snapshot --torch-layout $layout "$T/$p.a.stp" -o "$T/$p.b.pickle" ||
    fail "export $p"
  "$STPROF" import -q "$T/$p.b.pickle" -o "$T/$p.b.stp" || fail "import $p again"
  diff <(events "$T/$p.a.stp") <(events "$T/$p.b.stp") >"$T/diff" || { cat "$T/diff"; fail "$p: round trip differs"; }
  echo "$p: $(events "$T/$p.a.stp" | grep -c -e ' alloc ' -e ' free ' -e ' segment_') memory events, same after the round trip"
done

# a real program (Python building and dropping buffers) recorded on the host
# (every allocation: --full, a Python process's heap is sampled by default)
"$STPROF" record --full -q -o "$T/host.stp" -- "$PY" -c '
keep = []
for i in range(200):
    b = bytearray(1000 + 37 * i)
    if i % 3 == 0:
        keep.append(b)
' || fail "record"
"$STPROF" export -q --format torch-snapshot "$T/host.stp" -o "$T/host.pickle" || fail "export host trace"
"$STPROF" import "$T/host.pickle" -o "$T/host.b.stp" | grep -q "segments made by stprof's exporter: not imported" ||
  fail "synthetic segments not recognised"
alloc_key() { "$STPROF" dump -t alloc "$1" | awk '{ a = ""; r = ""; s = "";
  for (i = 4; i <= NF; i++) { if ($i ~ /^addr=/) a = $i; if ($i ~ /^requested=/) r = $i; if ($i ~ /^size=/) s = $i }
  if (r == "") r = "requested=" substr(s, 6); print a, r }'; }
free_key() { "$STPROF" dump -t free "$1" | awk '{ print $4 }'; }
diff <(alloc_key "$T/host.stp") <(alloc_key "$T/host.b.stp") >"$T/diff" || { head "$T/diff"; fail "host allocations differ"; }
n=$(alloc_key "$T/host.stp" | wc -l)
[ "$n" -gt 200 ] || fail "only $n host allocations"
# frees of memory the trace saw allocated (a free of an address allocated
# before recording started has no allocation to pair with)
"$STPROF" dump -t free "$T/host.b.stp" | wc -l >"$T/nb"
[ "$(cat "$T/nb")" -gt 100 ] || fail "frees lost: $(cat "$T/nb")"
free_key "$T/host.b.stp" >"$T/fb"
free_key "$T/host.stp" | grep -F -x -f "$T/fb" | wc -l >"$T/nmatch"
expect_eq "every imported free is an original free" "$(cat "$T/nmatch")" "$(cat "$T/nb")"
# call paths: the symbolized function names of the original's top call
# sites are frames of the import's (names that are not module+offset;
# "f (module+0x..)" for native frames, "file:line in f" for named ones)
names() { "$STPROF" report --no-progress --no-models --top 5 "$1" | sed -n '/^Top call sites/,/^$/p' |
  sed -n -e 's/^ *\(at\|<-\) .* in \([A-Za-z_][A-Za-z0-9_:]*\)$/\2/p' \
         -e 's/^ *\(at\|<-\) \([A-Za-z_][A-Za-z0-9_:]*\)\( .*\)\{0,1\}$/\2/p' | grep -v '+0x' | sort -u; }
names "$T/host.stp" >"$T/names.a"
names "$T/host.b.stp" >"$T/names.b"
common=$(comm -12 "$T/names.a" "$T/names.b" | wc -l)
[ "$common" -gt 0 ] || { cat "$T/names.a"; echo ---; cat "$T/names.b"; fail "no function name survived the round trip"; }
echo "host: $n allocations, $(cat "$T/nb") frees kept, $common function names of the top call sites shared"
echo ok
