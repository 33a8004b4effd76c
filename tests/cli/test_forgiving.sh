#!/bin/sh
# The CLI forgives: a mistyped subcommand gets "did you mean", a program on
# PATH given only traces is not run, `stprof help X` is X's --help, usage
# errors are one line plus a pointer to --help and name the option's limit.
set -eu
: "${STPROF_BUILD:?run through ctest}"
S="$STPROF_BUILD/stprof"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$T"
"$S" record -q -o a.stp /bin/true
cp a.stp b.stp

# a typo: no program runs, the subcommand is suggested, exit 2
rc=0; "$S" reprot a.stp 2>err || rc=$?
[ "$rc" = 2 ] || fail "reprot: exit $rc, want 2"
grep -q "did you mean 'stprof report'" err || fail "reprot: no suggestion: $(cat err)"
[ ! -e reprot.stp ] || fail "reprot was recorded"
# a prefix is close too
rc=0; "$S" expor a.stp 2>err || rc=$?
[ "$rc" = 2 ] && grep -q "'stprof export'" err || fail "expor: $(cat err)"
# a program on PATH given only traces: refused, pointer to run
rc=0; "$S" diff a.stp b.stp >out 2>err || rc=$?
[ "$rc" = 2 ] || fail "diff a.stp b.stp: exit $rc, want 2"
grep -q "stprof run diff" err || fail "diff: no pointer to stprof run: $(cat err)"
[ ! -e diff.stp ] || fail "diff was profiled"
# ... while a program with other arguments still runs, and run forces it
"$S" -q --no-report --no-plan --no-export /bin/echo hello >out 2>/dev/null
grep -qx hello out || fail "echo did not run"
# a word that is neither and is not close to a subcommand: the shell's 127
rc=0; "$S" no-such-program-xyz 2>err || rc=$?
[ "$rc" = 127 ] || fail "unknown program: exit $rc, want 127"

# help X is X's help
"$S" help report >out
head -1 out | grep -q "usage: stprof report" || fail "help report: $(head -1 out)"
"$S" help run | head -1 | grep -q "usage: stprof" || fail "help run"
"$S" --help | grep -q -- "--no-plan" || fail "--help does not list --no-plan"
"$S" --help | grep -q "^  run " || fail "--help does not list run"
"$S" run --help | grep -q -- "--no-plan" || fail "run --help does not list --no-plan"

# usage errors: short, naming the option and its limit
one_error() { # WHAT PATTERN CMD...
	what=$1 pat=$2; shift 2
	rc=0; "$@" >out 2>err || rc=$?
	[ "$rc" = 2 ] || fail "$what: exit $rc, want 2"
	[ "$(wc -l <err)" -le 2 ] || fail "$what: $(wc -l <err) lines of error, want at most 2"
	grep -q -- "$pat" err || fail "$what: '$pat' not in: $(cat err)"
	grep -q -- "--help" err || fail "$what: no pointer to --help"
}
one_error "report -n abc" "-n/--top wants a number from 0 to 1000000, not 'abc'" "$S" report -n abc a.stp
one_error "report --frames 65" "--frames wants a number from 0 to 64, not '65'" "$S" report --frames 65 a.stp
one_error "report --iterations x" "--iterations wants auto, markers, detect or none" "$S" report --iterations x a.stp
one_error "report no trace" "wants a TRACE" "$S" report
one_error "report --bogus" "bogus" "$S" report --bogus a.stp
one_error "export no trace" "no TRACE" "$S" export
one_error "plan two traces" "wants one TRACE" "$S" plan a.stp b.stp
one_error "info" "wants one TRACE" "$S" info
one_error "record" "no program" "$S" record
# a mistyped option: "stprof CMD:", the option, and the one meant
one_error "report --top-n" "^stprof report: unknown option '--top-n'; did you mean '--top'?" "$S" report --top-n 5 a.stp
one_error "report --framse" "did you mean '--frames'?" "$S" report --framse 3 a.stp
one_error "export --windwo" "^stprof export: unknown option '--windwo'; did you mean '--window'?" "$S" export --windwo 1s: a.stp
one_error "plan -Z" "^stprof plan: unknown option '-Z'" "$S" plan -Z a.stp
one_error "report -n" "^stprof report: option '-n' needs a value" "$S" report a.stp -n
one_error "run --no-repotr" "did you mean '--no-report'?" "$S" --no-repotr /bin/true
# help's own help
"$S" help --help >out || fail "help --help: exit $?"
head -1 out | grep -q "^usage: stprof" || fail "help --help: $(head -1 out)"
"$S" help help >/dev/null || fail "help help"
# --space for memory the trace does not have: said, not silently another
printf 'x = [bytearray(1000) for _ in range(50)]\n' >h.py
"$S" record -q -o h.stp python3 h.py
rc=0; "$S" report --space device h.stp >out 2>err || rc=$?
[ "$rc" = 1 ] || fail "report --space device on a host trace: exit $rc"
grep -q "h.stp[.0-9]*: --space device: the trace has no such memory (its spaces: host)" err || fail "--space device: $(cat err)"
echo ok
