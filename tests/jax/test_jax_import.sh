#!/bin/bash
# JAX device memory profiles (jax.profiler.save_device_memory_profile,
# gzip'd pprof; docs/jax.md) into stprof: every live buffer imported with
# the bytes and count JAX reported, in the JAX space of the CPU, at the
# Python line that made it; report and plan take the profile directly;
# damaged profiles get a one-line error naming the file and offset and
# exit 1.
. "$(dirname "$0")/lib.sh"
cd "$T"
live=$("$JAXPY" "$TRAIN" --steps 3 --profile "$T/mem.prof" | sed -n 's/^live //p')
[ -n "$live" ] || fail "the program printed no live arrays"
n=${live% *}
bytes=${live#* }
out=$("$STPROF" import "$T/mem.prof" -o "$T/mem.stp") || fail "import: $out"
echo "$out"
echo "$out" | grep -q "^wrote $T/mem.stp from $T/mem.prof (JAX device memory profile, pprof)$" || fail "import summary"
echo "$out" | grep -qE "^  [0-9]+ samples: $n buffers, [0-9]+ executables" || fail "buffers: want $n"
echo "$out" | grep -qE "^  $n allocations, $bytes bytes on 1 device;" || fail "bytes: want $bytes"
# each allocation is host memory in pool 2
"$STPROF" dump "$T/mem.stp" >"$T/d.txt"
expect_eq "allocations" "$(grep -c ' alloc ' "$T/d.txt")" "$n"
expect_eq "host pool 2" "$(grep ' alloc ' "$T/d.txt" | grep -c 'kind=host device=-1 .*pool=2')" "$n"
# report and plan take the profile itself
"$STPROF" report --no-progress "$T/mem.prof" >"$T/r.txt" 2>&1 || fail "report: $(tail -3 "$T/r.txt")"
grep -q "^Memory (jax buffers (cpu))" "$T/r.txt" || fail "report: no JAX space"
first=$(grep -m1 '^      at ' "$T/r.txt")
case "$first" in *"at jax_train.py:"*) ;; *) fail "first site is not a line of the program: $first" ;; esac
"$STPROF" plan -q -o "$T/p.plan" "$T/mem.prof" || fail "plan on a profile"
[ -s "$T/p.plan" ] || fail "plan wrote nothing"
# damaged: cut short, not a profile, corrupt inside
head -c 200 "$T/mem.prof" >"$T/cut.prof"
err=$("$STPROF" import "$T/cut.prof" -o "$T/x.stp" 2>&1) && fail "a cut profile imported"
[ "$(echo "$err" | wc -l)" = 1 ] || fail "more than one line: $err"
echo "$err" | grep -q "cut.prof: offset [0-9]*: gzip stream cut short" || fail "cut: $err"
echo "hello, not a profile" | gzip >"$T/text.prof"
err=$("$STPROF" report "$T/text.prof" 2>&1) && fail "a text file reported"
echo "$err" | grep -q "text.prof: offset [0-9]* (uncompressed): " || fail "text: $err"
zcat "$T/mem.prof" | python3 -c 'import sys; b = bytearray(sys.stdin.buffer.read()); b[len(b)//2] = 0xff; b[len(b)//2 + 1] = 0xff; sys.stdout.buffer.write(b)' | gzip >"$T/bad.prof"
if err=$("$STPROF" import "$T/bad.prof" -o "$T/x.stp" 2>&1); then
	: # the bytes may still decode to a valid profile
else
	[ "$(echo "$err" | wc -l)" = 1 ] || fail "more than one line: $err"
	echo "$err" | grep -q "bad.prof: offset [0-9]* (uncompressed): " || fail "bad: $err"
fi
echo "ok"
