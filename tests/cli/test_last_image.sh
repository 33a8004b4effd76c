#!/bin/sh
# A command that reaches the program through images that replace themselves
# by execve (a script's `#!/usr/bin/env python3`, pyenv's shims): the first
# trace, FILE, is the wrapper's; report, export, plan and the one-shot mode
# read the last image of the command's process instead (FILE.<pid>, then
# FILE.<pid>.<n>), and say so in one line; info reads the file named; a
# trace not ended by execve is read as it is; when the command is a shell
# script, the largest trace of the programs it ran is read, and its plan is
# enforced through the script.  With PyTorch: a script run as ./train.py
# through its env shebang reports the script's iterations and lines; a
# wrapper's plan is enforced by the process that runs the training script;
# a launcher whose workers train (torch.multiprocessing.spawn: the parent
# makes no tensor) reports its largest worker, and that plan is enforced in
# each worker (before: the launcher's own host heap was reported and
# planned, and the plan enforced in the launcher, which made none of it);
# so is a Python launcher that runs the training script as a subprocess.
set -eu
: "${STPROF_BUILD:?run through ctest}"
S="$STPROF_BUILD/stprof"
L="$STPROF_BUILD/cli_alloc_loop"
PY="${STPROF_PYTHON:-/usr/bin/python3}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$T"
# the report's command line
cmd() { sed -n 's/^  command   //p' "$1"; }

# one exec: env runs the program
"$S" record -q -o e.stp -- env "$L" 20000
[ "$(ls e.stp.* | wc -l)" = 1 ] || fail "env: traces: $(ls)"
"$S" info e.stp | grep -q "replaced by execve" || fail "env's trace not ended by execve"
"$S" report e.stp >e.txt 2>e.err || fail "report: $(cat e.err)"
case "$(cmd e.txt)" in *cli_alloc_loop\ 20000*) ;; *) fail "report read $(cmd e.txt)" ;; esac
grep -q "e.stp is the trace of .*env, which execve replaced: reading e.stp.[0-9]* (.*cli_alloc_loop), the last image of its process" e.err ||
	fail "report's note: $(cat e.err)"
grep -q "allocated" e.txt || fail "report: $(head -12 e.txt)"
"$S" plan -o e.plan e.stp >/dev/null 2>p.err || fail "plan: $(cat p.err)"
grep -q "reading e.stp.[0-9]*" p.err || fail "plan's note: $(cat p.err)"
"$S" export -q -o e.pftrace e.stp 2>x.err || fail "export: $(cat x.err)"
"$S" lint-perfetto e.pftrace >/dev/null || fail "export's timeline"
# info reads the file named
"$S" info e.stp | grep -q "^command: *env " || fail "info: $("$S" info e.stp | grep command)"

# two execs: FILE, FILE.<pid>, FILE.<pid>.1
"$S" record -q -o ee.stp -- env env "$L" 20000
[ "$(ls ee.stp.* | wc -l)" = 2 ] || fail "env env: traces: $(ls ee.stp*)"
"$S" report ee.stp >ee.txt 2>ee.err || fail "report: $(cat ee.err)"
case "$(cmd ee.txt)" in *cli_alloc_loop\ 20000*) ;; *) fail "env env: report read $(cmd ee.txt)" ;; esac
grep -q "which execve replaced more than once: reading ee.stp.[0-9]*.1 " ee.err || fail "env env: note: $(cat ee.err)"

# no exec: as it is, no note
"$S" record -q -o n.stp -- "$L" 20000
"$S" report n.stp >n.txt 2>n.err
[ ! -s n.err ] || fail "a plain trace: $(cat n.err)"
# a shell script runs its programs as children: the largest trace of
# those that are not shells is read (a small step, then the big one)
printf '#!/bin/sh\n"%s" 200\n"%s" 50000\ntrue\n' "$L" "$L" >run.sh
chmod +x run.sh
"$S" record -q -o f.stp -- ./run.sh
"$S" report f.stp >f.txt 2>f.err
case "$(cmd f.txt)" in *cli_alloc_loop\ 50000*) ;; *) fail "a shell script: report read $(cmd f.txt)" ;; esac
grep -q "f.stp is the trace of .*sh, a shell: reading f.stp.[0-9]* (.*cli_alloc_loop), the largest trace of the processes it ran" f.err ||
	fail "a shell script: note: $(cat f.err)"
# the one-shot mode on the script: the plan is the program's, it keeps
# which program that is, and the line that says how to enforce it runs the
# script (libstalloc enforces the plan in the processes of its tree that
# run the program; before, the line said to edit the script: the plan was
# enforced in the process stprof ran, the shell)
"$S" --no-export --no-html ./run.sh >/dev/null 2>o.err || fail "one-shot ./run.sh: $(tail -3 o.err)"
grep -q "^enforce:        stprof run --plan $T/run.sh.plan -- ./run.sh$" o.err || fail "one-shot ./run.sh: $(grep -A1 '^enforce' o.err)"
grep -q "^                (in the process ./run.sh starts that runs cli_alloc_loop; the others run without the plan)" o.err ||
	fail "one-shot ./run.sh: $(grep -A1 '^enforce' o.err)"
"$S" plan --show run.sh.plan | grep -q "^program: *.*/cli_alloc_loop$" || fail "plan --show: $("$S" plan --show run.sh.plan | head -5)"
# a shell that ran nothing recorded: its own trace
"$S" record -q -o s.stp -- sh -c 'true; true'
"$S" report s.stp >s.txt 2>s.err
case "$(cmd s.txt)" in sh\ -c*) ;; *) fail "a lone shell: report read $(cmd s.txt)" ;; esac

# the one-shot mode, through a script's env shebang
"$PY" -c 'import torch' 2>/dev/null || { echo "ok (no torch for $PY: the shebang part skipped)"; exit 0; }
{ echo "#!/usr/bin/env $PY"; cat "$STPROF_SRC/tests/python/fold_loop.py"; } >train.py
chmod +x train.py
OMP_NUM_THREADS=1 "$S" --no-export --no-html ./train.py 30 >out 2>err || fail "one-shot: $(tail -3 err)"
[ -s train.plan ] || fail "one-shot: no plan (named after the script: train.plan): $(ls)"
grep -q "reading .*/train.stp.[0-9]* (.*python3[.0-9]*), the last image of its process" err || fail "one-shot: $(head -5 err)"
grep -q "^Iterations: 30 from markers" err || fail "one-shot: $(grep -A1 '^Iterations' err)"
grep -q "at train.py:[0-9]* in <module>" err || fail "one-shot: no row at the script's lines"
# a wrapper script whose shell runs one Python program that uses torch and
# then the training script: its plan, enforced through the script, is
# enforced by the process that runs the training script alone (one
# statistics block, its iterations, planned hits), not by the shell
# (before: the shell, no hit) nor by the other Python program
printf '#!/bin/sh\n"%s" -c "import torch; print(torch.ones(3).sum().item())"\nOMP_NUM_THREADS=1 "%s" "%s" 30 "$@"\n' \
	"$PY" "$PY" "$STPROF_SRC/tests/python/fold_loop.py" >w.sh
chmod +x w.sh
"$S" --no-export --no-html ./w.sh >/dev/null 2>w.err || fail "one-shot ./w.sh: $(tail -3 w.err)"
grep -q "^enforce:        stprof run --plan $T/w.sh.plan -- ./w.sh$" w.err || fail "one-shot ./w.sh: $(grep -A1 '^enforce' w.err)"
"$S" run --plan w.sh.plan -- ./w.sh >w.out 2>r.err || fail "run --plan ./w.sh: $(tail -3 r.err)"
grep -q "w.sh.plan is the plan of fold_loop.py: enforced in the process ./w.sh starts that runs it" r.err || fail "run --plan: $(head -3 r.err)"
[ "$(grep -c '^stalloc: pool' r.err)" = 1 ] || fail "run --plan ./w.sh: statistics blocks: $(grep -c '^stalloc: pool' r.err)"
grep -q "^stalloc: requests [0-9]*: planned hits [1-9]" r.err || fail "run --plan ./w.sh: $(grep '^stalloc: requests' r.err)"
grep -q ", 30 iterations$" r.err || fail "run --plan ./w.sh: $(grep '^stalloc: drift' r.err)"
# a launcher: torch.multiprocessing.spawn's workers train
P="$STPROF_SRC/tests/python/spawn_train.py"
OMP_NUM_THREADS=1 "$S" --no-export --no-html -o sp.stp "$PY" "$P" 2 30 >sp.out 2>sp.err || fail "one-shot spawn: $(tail -3 sp.err)"
grep -q "sp.stp is the trace of .*python3[.0-9]*, which ran no iteration and made no tensor: reading .*sp.stp.[0-9]* (.*python3[.0-9]*), the largest trace of the processes it started" sp.err ||
	fail "one-shot spawn: $(head -5 sp.err)"
grep -q "^Iterations: 30 from markers" sp.err || fail "one-shot spawn: $(grep -A1 '^Iterations' sp.err)"
grep -q "^      at spawn_train.py:[0-9]* in worker (" sp.err || fail "one-shot spawn: no row at the worker's lines"
grep -q "^                (in each worker .* starts with python -c, as torch.multiprocessing.spawn does" sp.err ||
	fail "one-shot spawn: $(grep -A1 '^enforce' sp.err)"
OMP_NUM_THREADS=1 "$S" run --plan sp.plan -- "$PY" "$P" 2 30 >sp.out 2>sp.run || fail "run --plan spawn: $(tail -3 sp.run)"
grep -q "sp.plan is the plan of a worker started with python -c" sp.run || fail "run --plan spawn: $(head -3 sp.run)"
# each worker: its 30 iterations, every request of the plan's sizes planned
expect_workers=$(grep -c "^stalloc: requests [1-9][0-9]*: planned hits [1-9][0-9]*.*(100.0% of the requests of the plan's sizes in the pool)" sp.run)
[ "$expect_workers" = 2 ] || fail "run --plan spawn: workers enforcing: $expect_workers: $(grep '^stalloc: requests' sp.run)"
[ "$(grep -c ', 30 iterations$' sp.run)" = 2 ] || fail "run --plan spawn: $(grep '^stalloc: drift' sp.run)"
# and no other process (multiprocessing's resource tracker runs python -c too)
[ "$(grep -c '^stalloc: pool' sp.run)" = 2 ] || fail "run --plan spawn: statistics blocks: $(grep -c '^stalloc: pool' sp.run)"
# a Python launcher that runs the training script as a subprocess (as
# accelerate launch does): the script's report and plan, enforced in the
# process that runs it (before: in the launcher)
printf 'import subprocess, sys\nsubprocess.run([sys.executable, sys.argv[1], "30"], check=True)\n' >launch.py
OMP_NUM_THREADS=1 "$S" --no-export --no-html -o la.stp "$PY" launch.py "$STPROF_SRC/tests/python/fold_loop.py" >la.out 2>la.err ||
	fail "one-shot launcher: $(tail -3 la.err)"
grep -q "which ran no iteration and made no tensor: reading .*la.stp.[0-9]*" la.err || fail "one-shot launcher: $(head -5 la.err)"
grep -q "^                (in the process .* starts that runs fold_loop.py; the others run without the plan)" la.err ||
	fail "one-shot launcher: $(grep -A1 '^enforce' la.err)"
OMP_NUM_THREADS=1 "$S" run --plan la.plan -- "$PY" launch.py "$STPROF_SRC/tests/python/fold_loop.py" >la.out 2>la.run ||
	fail "run --plan launcher: $(tail -3 la.run)"
grep -q "la.plan is the plan of fold_loop.py: enforced in the process .* starts that runs it" la.run || fail "run --plan launcher: $(head -3 la.run)"
[ "$(grep -c '^stalloc: pool' la.run)" = 1 ] || fail "run --plan launcher: statistics blocks: $(grep -c '^stalloc: pool' la.run)"
grep -q "^stalloc: requests [0-9]*: planned hits [1-9]" la.run || fail "run --plan launcher: $(grep '^stalloc: requests' la.run)"
grep -q ", 30 iterations$" la.run || fail "run --plan launcher: $(grep '^stalloc: drift' la.run)"
echo ok
