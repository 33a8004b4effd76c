"""torch_encoder_infer.py - inference as a server runs it with several
requests in flight (MemoMalloc's setting, seed 004): a transformer encoder
(2 layers, d_model 128, 4 heads, feed-forward 512, 32 tokens) in eval mode
under torch.inference_mode(), CLIENTS threads each answering its own
requests of batch BATCH one after another, THREADS intra-op threads
(torch.set_num_threads).  Prints a checksum of each request's output; with
--time, instead, the median latency of a request over every client's timed
requests (wall clock), the slowest client's median, requests per second,
and the process's page faults per request (bench/allocator/infer.sh).  Not
shaped for stprof (no markers).  Usage: torch_encoder_infer.py [REQUESTS]
[--time] [--warmup N] [--batch N] [--clients N] [--threads N]
(REQUESTS per client, 12; warmup 3; batch 4; clients 1; threads 1)"""
import resource, sys, threading, time
import torch, torch.nn as nn

opts = {"--warmup": 3, "--batch": 4, "--clients": 1, "--threads": 1}
args, i = [], 1
while i < len(sys.argv):
    a = sys.argv[i]
    if a in opts:
        opts[a] = int(sys.argv[i + 1])
        i += 2
        continue
    if not a.startswith("--"):
        args.append(a)
    i += 1
requests = int(args[0]) if args else 12
timed = "--time" in sys.argv
warm, bs, clients = opts["--warmup"], opts["--batch"], opts["--clients"]
torch.set_num_threads(opts["--threads"])
torch.manual_seed(0)

layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True)
model = nn.Sequential(nn.TransformerEncoder(layer, 2), nn.LayerNorm(128)).eval()
# each client its own inputs, all of the same shape
data = [torch.randn(4, bs, 32, 128) for _ in range(clients)]
lat = [[] for _ in range(clients)]
sums = [[] for _ in range(clients)]
start = threading.Barrier(clients)


def client(c):
    start.wait()
    with torch.inference_mode():
        for i in range(requests):
            t0 = time.perf_counter()
            out = model(data[c][i % 4])
            lat[c].append(time.perf_counter() - t0)
            if not timed:
                sums[c].append(f"{out.abs().sum().item():.3f}")


flt0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
t0 = time.perf_counter()
ts = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
for t in ts:
    t.start()
for t in ts:
    t.join()
wall = time.perf_counter() - t0
if not timed:
    for c in range(clients):
        print(c, " ".join(sums[c]))
else:
    flt = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - flt0) / (clients * requests)
    every = sorted(x for l in lat for x in l[warm:])
    per = sorted(sorted(l[warm:])[len(l[warm:]) // 2] for l in lat)
    print(f"median_ms={1000 * every[len(every) // 2]:.3f} min_ms={1000 * every[0]:.3f} "
          f"slowest_client_ms={1000 * per[-1]:.3f} rps={clients * requests / wall:.1f} "
          f"faults_per_request={flt:.0f} requests={len(every)}")
