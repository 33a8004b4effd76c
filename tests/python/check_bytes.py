"""check_bytes.py DUMP [POOL ANNOTATION] - compares, at each ANNOTATION
marker of a `stprof dump` listing ("torch_bytes" by default), the live bytes
of the trace's framework space POOL (1 by default: PyTorch's tensors; 2:
JAX's buffers, with "jax_bytes") with the value the framework counted.
Prints one line per point; exit 1 on any difference or when there is no
point."""
import sys

pool = sys.argv[2] if len(sys.argv) > 2 else "1"
name = '"%s"' % (sys.argv[3] if len(sys.argv) > 3 else "torch_bytes")
who = {"1": "pytorch", "2": "jax"}.get(pool, "framework")
live, points, bad = {}, 0, 0
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 4:
        continue
    kv = dict(x.split("=", 1) for x in f[4:] if "=" in x)
    if f[3] in ("alloc", "free") and kv.get("pool") == pool:
        if f[3] == "alloc":
            live[kv["addr"]] = int(kv["size"])
        else:
            live.pop(kv["addr"], None)
    elif f[3] == "marker" and kv.get("name") == name:
        points += 1
        got, want = sum(live.values()), int(kv["value"])
        print("point %d: trace %d bytes, %s %d bytes%s" % (points, got, who, want, "" if got == want else "  MISMATCH"))
        bad += got != want
sys.exit(1 if bad or not points else 0)
