#!/bin/sh
# stprof run (the one-shot mode) takes every option of record as record does:
# its own options must not shadow one (--sample-launches N was read as
# --stalloc-stats N, a statistics file name, and silently dropped).
set -eu
: "${STPROF_BUILD:?run through ctest}"
S="$STPROF_BUILD/stprof"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$T"
# (--sample-launches is passed on with --accesses=exact, which needs a build
# with the Compute Sanitizer API)
if ! "$S" record -q --accesses=exact -o probe.stp -- true 2>/dev/null; then
	echo "skipped: built without the Compute Sanitizer API"; exit 0
fi
"$S" run -q --no-report --no-plan --no-export --no-html --accesses=exact --sample-launches 7 -o t.stp -- \
	sh -c 'echo "launches=${STPROF_SAMPLE_LAUNCHES:-unset}"' >out 2>err || fail "run failed: $(cat err)"
grep -qx 'launches=7' out || fail "--sample-launches not passed on by run: $(cat out)"
# and run's own options still work beside record's
"$S" run -q --no-report --no-plan --no-export --no-html -o u.stp -- true || fail "run's own options"
[ -s u.stp ] || fail "u.stp not written"
echo ok
