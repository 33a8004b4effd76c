#!/bin/sh
# Regenerates the seeds of fuzz_symbolize_elf (tests/fuzz-corpus/
# fuzz_symbolize_elf/): small shared objects with DWARF (GCC DWARF 5 and 4,
# clang without .debug_aranges, C++ with mangled names and inlining), each
# followed by 64 bytes: eight addresses of its functions (+4), which the
# fuzz target looks up.  Usage: tests/symbolize/make_fuzz_seeds.sh
# The other files there are fuzz findings, kept as found (not regenerated):
# gxx-dwarf5-huge-directories is gxx-dwarf5 with a DWARF 5 line header
# claiming 0xfffe7ffffffffffe directories; gxx-dwarf5-sibling-loop has a
# DW_AT_sibling pointing at its own DIE (test_symbolize reads all three).
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$src/tests/fuzz-corpus/fuzz_symbolize_elf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cat >"$work/seed.c" <<'C'
static inline __attribute__((always_inline)) int sq(int x) { return x * x + 1; }
__attribute__((noinline)) int leaf(int x) { return sq(x) ^ 7; }
static __attribute__((noinline)) int hidden(int x) { return leaf(x) + sq(x + 1); }
int entry(int x) { return hidden(x) * 3; }
C
cat >"$work/seed.cpp" <<'C'
namespace ns {
template <typename T> static inline __attribute__((always_inline)) T sq(T x) { return x * x + 1; }
template <typename T> __attribute__((noinline)) T leaf(T x) { return sq(x) ^ 7; }
struct W { int n; __attribute__((noinline)) int poke(int x); };
int W::poke(int x) { return leaf<int>(x + n) + sq(x); }
}
extern "C" int entry(int x) { ns::W w{x}; return w.poke(x) + ns::leaf<long>(x); }
C
small="-O2 -shared -fPIC -nostdlib -Wl,--build-id -Wl,-z,max-page-size=0x1000 -Wl,-z,noseparate-code -Wl,-z,norelro"
build() { # name compiler flags source
  name=$1; shift
  "$@" $small -o "$work/$name.so"
  cp "$work/$name.so" "$out/$name"
  chmod 644 "$out/$name"
  nm "$work/$name.so" | awk '$2 ~ /^[tT]$/ {print $1}' | head -8 |
    python3 -c 'import sys, struct
a = [int(l, 16) + 4 for l in sys.stdin][:8]
a += [0] * (8 - len(a))
sys.stdout.buffer.write(struct.pack("<8Q", *a))' >>"$out/$name"
}
build gcc-dwarf5 gcc -g "$work/seed.c"
build gcc-dwarf4 gcc -gdwarf-4 "$work/seed.c"
build clang-dwarf5 clang -g "$work/seed.c"
build gxx-dwarf5 g++ -g -fno-exceptions -fno-asynchronous-unwind-tables "$work/seed.cpp"
ls -l "$out"
