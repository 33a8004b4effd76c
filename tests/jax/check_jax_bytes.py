"""check_jax_bytes.py DUMP - compares, at each "jax_bytes" annotation of a
`stprof dump` listing, the live bytes of the trace's JAX space (pool 2) with
the bytes JAX counted in its live arrays.  Prints one line per point; exit 1
on any difference or when there is no point."""
import sys

live, points, bad = {}, 0, 0
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 4:
        continue
    kv = dict(x.split("=", 1) for x in f[4:] if "=" in x)
    if f[3] in ("alloc", "free") and kv.get("pool") == "2":
        if f[3] == "alloc":
            live[kv["addr"]] = int(kv["size"])
        else:
            live.pop(kv["addr"], None)
    elif f[3] == "marker" and kv.get("name") == '"jax_bytes"':
        points += 1
        got, want = sum(live.values()), int(kv["value"])
        print("point %d: trace %d bytes, jax %d bytes%s" % (points, got, want, "" if got == want else "  MISMATCH"))
        bad += got != want
sys.exit(1 if bad or not points else 0)
