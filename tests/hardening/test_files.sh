#!/bin/bash
# The files stprof reads and writes (issue 26), one case per way they once
# went wrong; every case runs and the failures are listed together:
#   1  import -o naming its input replaced the snapshot;
#   2  export, plan, import and report followed a symbolic link planted at
#      their output (-o and default names) and overwrote a foreign file;
#   5  a FIFO hung every reader, a pipe (/dev/stdin) got "bad magic";
#   8  a trace cut inside a chunk gave no report, timeline or plan;
#   9  timelines and plans (which hold the command line) were made 0644;
#      (the same for reports, snapshots, CSVs and libstalloc's statistics)
#  11  a directory given to info, dump or plan got "bad magic".
# HARD_STPROF=/path/to/stprof checks another build (how the cases were shown
# to fail before).
. "$STPROF_SRC/tests/collector/lib.sh"
STPROF=${HARD_STPROF:-$STPROF}
failed=""
bad() { echo "FAIL [$case]: $*" >&2; failed="$failed $case"; }
cd "$T"

# a trace of a few chunks, a snapshot of it, a plan, a MiniMalloc instance
"$STPROF" record -q --flush-ms 1 -o t.stp "$STPROF_BUILD/cli_alloc_loop" 30000
"$STPROF" export -q -f torch-snapshot -o s.pickle t.stp
"$STPROF" plan -q -o p.plan t.stp
printf 'id,lower,upper,size\n0,0,2,16\n1,1,3,32\n' >in.csv

case=1-import-onto-input
cp s.pickle keep.pickle
s=0; "$STPROF" import s.pickle -o s.pickle 2>err || s=$?
[ "$s" = 2 ] || bad "import -o INPUT: status $s"
cmp -s s.pickle keep.pickle || bad "import -o INPUT changed the snapshot"
grep -q "is the input" err || bad "import -o INPUT: message '$(cat err)'"
[ -e s.pickle.old ] && bad "import -o INPUT left s.pickle.old"
ln -s s.pickle alias.stp
s=0; "$STPROF" import s.pickle -o alias.stp 2>err || s=$?
[ "$s" != 0 ] && cmp -s s.pickle keep.pickle || bad "import -o LINK-TO-INPUT: status $s, snapshot changed?"
rm -f alias.stp
cp keep.pickle s.pickle # for the cases below, whatever happened

# each output: COMMAND... with OUT where its output goes
outputs=(
  "export -q -o OUT t.stp"
  "export -q -f torch-snapshot -o OUT t.stp"
  "plan -q -o OUT t.stp"
  "plan -q --csv in.csv -o OUT"
  "import -q -o OUT s.pickle"
  "report -o OUT t.stp"
  "report -f json -o OUT t.stp"
  "report -f html -o OUT t.stp"
  "run --plan p.plan --stalloc-stats OUT -- $STPROF_BUILD/cli_alloc_loop 1000"
)
# default names: COMMAND... and the name it writes
defaults=("export -q t.stp|t.pftrace" "plan -q t.stp|t.plan" "import -q s.pickle|s.stp")

run_out() { # OUT COMMAND-TEMPLATE: the status
  local s=0 cmd=${2//OUT/$1}
  # shellcheck disable=SC2086
  "$STPROF" $cmd >out 2>err || s=$?
  return $s
}
no_temps() { # no hidden temporary file left beside the outputs
  local left; left=$(ls -A | grep '\.tmp$' || true)
  [ -z "$left" ] || bad "$1: temporary files left: $left"
}

case=2-planted-link
for tpl in "${outputs[@]}"; do
  echo "secret" >victim
  ln -sf victim o.out
  s=0; run_out o.out "$tpl" || s=$?
  [ "$s" != 0 ] || bad "$tpl through a link: status 0"
  [ "$(cat victim)" = secret ] || bad "$tpl wrote through a link planted at -o"
  [ -L o.out ] || bad "$tpl replaced the link"
  grep -q "symbolic link" err || bad "$tpl through a link: message '$(cat err)'"
  rm -f o.out
  echo "my notes" >o.out
  s=0; run_out o.out "$tpl" || s=$?
  [ "$s" != 0 ] && [ "$(cat o.out)" = "my notes" ] || bad "$tpl overwrote a foreign file (status $s)"
  grep -q "not overwriting it" err || bad "$tpl over a foreign file: message '$(cat err)'"
  rm -f o.out victim
  no_temps "$tpl"
done
for d in "${defaults[@]}"; do
  cmd=${d%|*} name=${d#*|}
  echo "secret" >victim
  ln -sf victim "$name"
  s=0
  # shellcheck disable=SC2086
  "$STPROF" $cmd >out 2>err || s=$?
  [ "$s" != 0 ] && [ "$(cat victim)" = secret ] && [ -L "$name" ] || bad "$cmd followed a link at $name (status $s)"
  rm -f "$name" victim
done

case=2-keep-old
for tpl in "${outputs[@]}"; do
  rm -f o.out o.out.old
  run_out o.out "$tpl" || bad "$tpl: status $? ($(head -2 err))"
  cp o.out first.out 2>/dev/null || : >first.out
  run_out o.out "$tpl" || bad "$tpl, again: status $? ($(head -2 err))"
  cmp -s o.out.old first.out || bad "$tpl: the earlier output is not kept as .old"
  # an .old that is not stprof's is not replaced either (the statistics are
  # written by the program at its exit: it says so, its status stays its own)
  echo "my notes" >o.out.old
  cp o.out second.out
  s=0; run_out o.out "$tpl" || s=$?
  case "$tpl" in run*) s=1; grep -q "statistics not written" err || bad "$tpl: no word on the .old" ;; esac
  [ "$s" != 0 ] && [ "$(cat o.out.old)" = "my notes" ] || bad "$tpl replaced a foreign .old (status $s)"
  cmp -s o.out second.out || bad "$tpl changed its output though it could not keep it"
  no_temps "$tpl"
done
# a device or a pipe is written in place
run_out /dev/null "${outputs[0]}" || bad "export -o /dev/null: status $? ($(cat err))"
"$STPROF" report -f json -o /dev/stdout t.stp 2>err | grep -q '"schema":"stprof-report"' ||
  bad "report -o /dev/stdout into a pipe: $(cat err)"
# an export that fails leaves the path as it was
printf 'not a trace' >bad.stp
echo "earlier" >e.pftrace.old
"$STPROF" export -q -o e.pftrace t.stp
cp e.pftrace e.first
s=0; "$STPROF" export -q -o e.pftrace bad.stp 2>err || s=$?
[ "$s" != 0 ] && cmp -s e.pftrace e.first || bad "a failed export changed its output (status $s)"
no_temps "failed export"

case=9-modes
for tpl in "${outputs[@]}"; do
  rm -f o.out
  run_out o.out "$tpl" || bad "$tpl: status $?"
  m=$(stat -c %a o.out); [ "$m" = 600 ] || bad "$tpl: output mode $m"
done
"$STPROF" -q -o one.stp "$STPROF_BUILD/cli_alloc_loop" 1000 >/dev/null
for f in one.stp one.plan one.pftrace one.html; do
  m=$(stat -c %a $f 2>/dev/null || echo none); [ "$m" = 600 ] || bad "one-shot $f: mode $m"
done

case=5-fifo-and-pipe
mkfifo f.stp
for cmd in "info" "dump" "report" "export -q -o ff.pftrace" "plan -q -o ff.plan"; do
  cat t.stp >f.stp &
  s=0
  # shellcheck disable=SC2086
  timeout 60 "$STPROF" $cmd f.stp >out 2>err || s=$?
  [ "$s" = 0 ] || bad "$cmd FIFO: status $s ($(head -2 err))"
  wait
  # shellcheck disable=SC2086
  s=0; cat t.stp | timeout 60 "$STPROF" $cmd /dev/stdin >out 2>err || s=$?
  [ "$s" = 0 ] || bad "$cmd /dev/stdin (a pipe): status $s ($(head -2 err))"
done
mkfifo f.pickle
cat s.pickle >f.pickle &
s=0; timeout 60 "$STPROF" import -q -o fifo.stp f.pickle 2>err || s=$?
[ "$s" = 0 ] || bad "import FIFO: status $s ($(head -2 err))"
wait

case=8-cut
size=$(stat -c %s t.stp)
for at in 30 100 $((size / 3)) $((size / 2)) $((size - 7)) $((size - 1)); do
  head -c "$at" t.stp >cut.stp
  s=0; "$STPROF" report cut.stp >out 2>err || s=$?
  [ "$s" = 0 ] && grep -q "^stprof report:" out || bad "report of a trace cut at $at: status $s, $(head -2 err)"
  grep -q "cut short" err || bad "report of a trace cut at $at: no warning ($(head -2 err))"
  s=0; "$STPROF" export -q -o cut.pftrace cut.stp 2>err || s=$?
  [ "$s" = 0 ] && [ -s cut.pftrace ] || bad "export of a trace cut at $at: status $s, $(head -2 err)"
  s=0; "$STPROF" info cut.stp >out 2>err || s=$?
  [ "$s" = 0 ] && grep -q "ends inside the chunk" out || bad "info of a trace cut at $at: status $s"
  s=0; "$STPROF" dump cut.stp >out 2>err || s=$?
  [ "$s" = 0 ] && grep -q "cut short" err || bad "dump of a trace cut at $at: status $s, $(head -2 err)"
  if "$STPROF" info cut.stp 2>/dev/null | grep -q '^  alloc '; then # with allocations in its whole chunks
    s=0; "$STPROF" plan -q -o cut.plan cut.stp 2>err || s=$?
    [ "$s" = 0 ] && [ -s cut.plan ] || bad "plan of a trace cut at $at: status $s, $(head -2 err)"
  fi
  rm -f cut.pftrace cut.pftrace.old cut.plan cut.plan.old
done

case=11-directory
mkdir adir
for cmd in info dump plan import "plan --show" "plan --verify"; do
  # shellcheck disable=SC2086
  s=0; "$STPROF" $cmd adir >out 2>err || s=$?
  [ "$s" != 0 ] && grep -q "is a directory" err && ! grep -q "bad magic" err ||
    bad "$cmd DIR: status $s, '$(cat err)'"
done

[ -z "$failed" ] || fail "cases failed:$failed"
echo ok
