#!/bin/sh
# test_lifetimes_alloc.sh - libstalloc's lifetime heap as a drop-in malloc,
# through `stprof run --plan MODEL`:
#   - a model learned from a recorded run of lt_stress (threads handing
#     blocks to each other; malloc, calloc, realloc, posix_memalign,
#     aligned_alloc, memalign, valloc, malloc_usable_size; 1 byte to 3 MiB)
#     predicts its contexts when it runs again: same output as natively,
#     exit 0, every block's contents, alignment and usable size checked,
#     a child forked midway allocating fine;
#   - the heap's statistics: the contexts were found in the model, huge
#     pages were given back to the OS;
#   - the report of the recorded run ends with the Lifetimes section, and
#     its JSON form (report --format json, "lifetimes") has the same figures;
#   - a bad model: one line naming the file and offset, exit 2, the program
#     not started; a program's exit status passes through.
set -eu
B=${STPROF_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
stat_of() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p"; }

"$B/stprof" record -q -o s.stp -- "$B/lt_stress" 2 20000 >/dev/null
"$B/stprof" plan --lifetimes s.stp -o s.lt >plan.out
cat plan.out
grep -q "calling contexts" plan.out

# the report of a program without iterations ends with the Lifetimes
# section; its JSON form carries the same figures (docs/report-json.md)
"$B/stprof" report --no-progress s.stp >report.txt
"$B/stprof" report --no-progress --format json s.stp -o report.json
grep -q "^Lifetimes (docs/lifetimes.md)" report.txt || { echo "FAIL: no Lifetimes section in the text report"; exit 1; }
"${STPROF_PYTHON:-python3}" - report.txt report.json <<'PY' || { echo "FAIL: the Lifetimes JSON"; exit 1; }
import json, re, sys
text = open(sys.argv[1]).read()
lt = json.load(open(sys.argv[2]))["lifetimes"]
assert lt["model"] is None and lt["allocs"] > 10000, lt["allocs"]
assert lt["page_bytes"] == 2 << 20 and lt["block_bytes"] == 8192
assert [m["key"] for m in lt["models"]] == ["size_classes", "glibc", "lifetime_predicted", "lifetime_own"]
assert len(lt["samples"]) == 10 and 1 <= len(lt["sites"]) <= 8
for site in lt["sites"]:
    assert sum(site["tenths"]) == site["allocs"] and site["frames"], site
    assert site["frames"] in text, site["frames"]
assert "%d host allocations" % lt["allocs"] in text
for m in lt["models"]:
    # the text row: pages at the live peak, at the end, and the most, in MiB
    row = re.search(r"^    %s +([0-9.]+) MiB .*? ([0-9.]+) MiB .*? ([0-9.]+) MiB$" % re.escape(m["name"]), text, re.M)
    assert row, m["name"]
    assert [float(x) for x in row.groups()] == [2.0 * m[k] for k in ("peak_pages", "end_pages", "max_pages")], m
    end = lt["samples"][-1]
    i = lt["models"].index(m)
    assert end["pages"][i] == m["end_pages"] and end["blocks"][i] == m["end_blocks"]
    assert m["max_pages"] >= max(s["pages"][i] for s in lt["samples"] + [lt["peak"]])
saved = lt["saved_pages"]
assert saved["end_vs_size_classes"] == lt["models"][0]["end_pages"] - lt["models"][2]["end_pages"]
assert saved["max_vs_glibc"] == lt["models"][1]["max_pages"] - lt["models"][2]["max_pages"]
PY
"$B/stprof" report --no-progress --no-lifetimes --format json s.stp -o nolt.json
grep -q '"lifetimes"' nolt.json && { echo "FAIL: --no-lifetimes kept the section"; exit 1; }

"$B/lt_stress" 4 100000 fork >native.out
"$B/stprof" run --plan s.lt --stalloc-stats st.txt -- "$B/lt_stress" 4 100000 fork >lt.out
cmp native.out lt.out || { echo "FAIL: output differs under the lifetime heap"; exit 1; }
head -7 st.txt
[ "$(stat_of st.txt mode)" = lifetimes ] || { echo "FAIL: not run in lifetime mode"; exit 1; }
[ "$(stat_of st.txt allocations)" -gt 100000 ] || { echo "FAIL: the heap served too few allocations"; exit 1; }
[ "$(stat_of st.txt known)" -gt 0 ] || { echo "FAIL: no context was found in the model"; exit 1; }
[ "$(stat_of st.txt hp_released)" -gt 0 ] || { echo "FAIL: no huge page was given back"; exit 1; }

# without transparent huge pages, the same
STALLOC_HUGEPAGES=0 "$B/stprof" run -q --plan s.lt -- "$B/lt_stress" 2 50000 fork >lt4k.out
grep -q "ok" lt4k.out

# a bad model: named with its offset, exit 2, nothing run
printf 'stprof-lifetimes 1\ndepth 8\nfallback 9\n' >bad.lt
set +e
"$B/stprof" run --plan bad.lt -- touch started 2>err.txt
rc=$?
set -e
cat err.txt
[ "$rc" = 2 ] || { echo "FAIL: a bad model gave exit $rc, not 2"; exit 1; }
[ "$(wc -l <err.txt)" = 1 ] && grep -q "bad.lt: offset 27:" err.txt || { echo "FAIL: bad model message"; exit 1; }
[ ! -e started ] || { echo "FAIL: the program was started with a bad model"; exit 1; }
set +e
"$B/stprof" run -q --plan s.lt -- sh -c 'exit 3'
rc=$?
set -e
[ "$rc" = 3 ] || { echo "FAIL: exit status $rc, not 3"; exit 1; }
echo "test_lifetimes_alloc: ok"
