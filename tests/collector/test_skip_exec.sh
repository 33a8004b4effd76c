#!/bin/bash
# The toolchain a program runs is not recorded (collector/core/skipexec.c):
# gcc and what it runs (cc1, as, collect2, ld) write no trace, and their
# work is done as without stprof; other programs are recorded; the
# recorded command itself always is (and its own execs: the same pid);
# shells and the utilities wrapper scripts run (cat, sed, env...) are not
# recorded either, forked subshells included (pyenv's shims ran 78 of them
# for one `python3 job.py`), but what they exec is;
# --skip-exec '' records every image, --skip-exec PATTERNS replaces the
# list; an image a skipped one runs is judged for itself; the same without
# the stprof command (LD_PRELOAD), and an inherited STPROF_COMMAND_PID does
# not make `stprof record` skip its command.
. "$(dirname "$0")/lib.sh"
command -v gcc >/dev/null || skip "no gcc"
cd "$T"
printf 'int main(void) { return 0; }\n' >x.c
# executables of the traces FILE, FILE.*: their base names, sorted, one line
images() {
	for f in "$1" "$1".*; do
		[ -e "$f" ] || continue
		e=$("$STPROF" info "$f" | sed -n 's/^executable: *//p')
		basename "$e"
	done | sort | tr '\n' ' '
}
has() { case " $1" in *" $2 "*) return 0 ;; esac; return 1; }
toolchain() { printf '%s\n' $1 | grep -E '(^|-)(gcc|g\+\+|cc1|as|collect2)(-[0-9.]+)?$|(^|-)ld(\.[a-z]+)?$' || true; }
run='gcc -o x x.c && ./x && cat x.c >/dev/null'

"$STPROF" record -q -o "$T/d.stp" -- sh -c "$run" || fail "default: the command failed"
[ -x x ] || fail "default: gcc made no program"
got=$(images "$T/d.stp")
[ -z "$(toolchain "$got")" ] || fail "default: toolchain recorded: $got"
has "$got" cat && fail "default: cat (a wrapper's helper) recorded: $got"
has "$got" x || fail "default: the program gcc built not recorded: $got"
rm -f x

"$STPROF" record -q --skip-exec '' -o "$T/a.stp" -- sh -c "$run" || fail "all: the command failed"
got=$(images "$T/a.stp")
for p in cc1 collect2; do has "$got" $p || fail "--skip-exec '': $p not recorded: $got"; done
[ "$(toolchain "$got" | wc -l)" -ge 5 ] || fail "--skip-exec '': toolchain: $got"

"$STPROF" record -q --skip-exec 'ca?,x' -o "$T/c.stp" -- sh -c "$run" || fail "ca?: the command failed"
got=$(images "$T/c.stp")
has "$got" cat && fail "--skip-exec 'ca?,x': cat recorded: $got"
has "$got" x && fail "--skip-exec 'ca?,x': x recorded: $got"
has "$got" cc1 || fail "--skip-exec 'ca?,x': the default list still in force: $got"

# the recorded command is recorded, whatever its name; its children are not
STPROF_COMMAND_PID=1 "$STPROF" record -q -o "$T/g.stp" -- gcc -c x.c || fail "gcc: failed"
[ -s x.o ] || fail "gcc: no object"
got=$(images "$T/g.stp")
case "$got" in *gcc*) ;; *) fail "the command (gcc) not recorded: $got" ;; esac
[ "$(toolchain "$got" | wc -l)" = 1 ] || fail "gcc's children recorded: $got"
"$STPROF" info "$T/g.stp" | grep -q "exited with status 0" || fail "gcc's trace not whole"

# an image a skipped one runs is judged for itself: env (skipped) execs cat
"$STPROF" record -q --skip-exec 'env' -o "$T/e.stp" -- sh -c 'env cat x.c >/dev/null; true' || fail "env: failed"
got=$(images "$T/e.stp")
has "$got" env && fail "env recorded: $got"
has "$got" cat || fail "the image env ran not recorded: $got"

# without the stprof command: the first image claims the command's pid
LD_PRELOAD="$STPROF_BUILD/libstprof.so" STPROF_OUTPUT="$T/p.stp" STPROF_QUIET=1 sh -c "$run" || fail "preload: failed"
got=$(images "$T/p.stp")
[ -z "$(toolchain "$got")" ] || fail "preload: toolchain recorded: $got"
has "$got" cat && fail "preload: cat recorded: $got"
# a wrapper script (as pyenv's shims are): subshells, helpers, then the
# program; only the command's images and the program are recorded, unless
# --skip-exec ''
cat >wrap.sh <<'SH'
v=$(cat x.c | head -1)
d=$(dirname "$0")
( : ) && (env cat x.c >/dev/null)
"$d/x"
SH
gcc -o x x.c || fail "gcc failed"
"$STPROF" record -q -o "$T/w.stp" -- sh wrap.sh || fail "wrapper: the command failed"
sh=$(basename "$(readlink -f /bin/sh)")
expect_eq "wrapper: images recorded" "$(images "$T/w.stp")" "$sh x "
"$STPROF" record -q --skip-exec '' -o "$T/w0.stp" -- sh wrap.sh || fail "wrapper '': the command failed"
got=$(images "$T/w0.stp")
for p in cat head dirname env; do has "$got" $p || fail "--skip-exec '': $p not recorded: $got"; done
[ "$(printf '%s\n' $got | grep -c "^$sh\$")" -ge 3 ] || fail "--skip-exec '': subshells not recorded: $got"
echo ok
