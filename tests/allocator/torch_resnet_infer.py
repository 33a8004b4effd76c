"""torch_resnet_infer.py - inference as a server runs it (MemoMalloc's
setting): a small residual CNN (ResNet-style blocks with batch norm and
downsampling shortcuts) in eval mode under torch.inference_mode(), batch 8,
one thread, the same input shape every request.  Prints a checksum of each
batch's outputs; with --time, instead, the median latency per batch over
the timed batches, wall clock and the thread's CPU time (which the load of
a shared machine moves less; page faults count in it), and the thread's
page faults per batch (bench/allocator).  Not shaped for stprof (no markers, no
optimizer).  Usage: torch_resnet_infer.py [BATCHES] [--time] [--warmup N]
[--batch N] (8; another size than the recorded one: every request is
outside the plan) [--threads N] (intra-op threads, 1; the thread CPU time
is then the calling thread's only)"""
import resource, sys, time
import torch, torch.nn as nn, torch.nn.functional as F

args = [a for i, a in enumerate(sys.argv[1:]) if not a.startswith("--") and sys.argv[i] not in ("--warmup", "--batch", "--threads")]
batches = int(args[0]) if args else 12
timed = "--time" in sys.argv
warm = int(sys.argv[sys.argv.index("--warmup") + 1]) if "--warmup" in sys.argv else 3
bs = int(sys.argv[sys.argv.index("--batch") + 1]) if "--batch" in sys.argv else 8
torch.set_num_threads(int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 1)
torch.manual_seed(0)


class Res(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.short is None else self.short(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU())
        self.layers = nn.Sequential(Res(32, 32, 1), Res(32, 32, 1), Res(32, 64, 2), Res(64, 64, 1),
                                    Res(64, 128, 2), Res(128, 128, 1), Res(128, 256, 2))
        self.fc = nn.Linear(256, 100)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1).flatten(1))


model = Net().eval()
for m in model.modules():  # trained-looking batch-norm statistics
    if isinstance(m, nn.BatchNorm2d):
        m.running_mean.uniform_(-0.1, 0.1)
        m.running_var.uniform_(0.5, 1.5)
data = torch.randn(4, bs, 3, 64, 64)
lat, cpu = [], []
thread = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
with torch.inference_mode():
    for i in range(batches):
        if i == warm:
            flt0 = resource.getrusage(thread).ru_minflt
        t0, c0 = time.perf_counter(), time.thread_time()
        out = model(data[i % 4])
        lat.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
        if not timed:
            print(i, f"{out.sum().item():.5f} {out.argmax(1).tolist()}")
if timed:
    flt = (resource.getrusage(thread).ru_minflt - flt0) / (batches - warm)
    lat, cpu = sorted(lat[warm:]), sorted(cpu[warm:])
    print(f"median_ms={1000 * lat[len(lat) // 2]:.3f} min_ms={1000 * lat[0]:.3f} "
          f"cpu_median_ms={1000 * cpu[len(cpu) // 2]:.3f} faults_per_batch={flt:.0f} batches={len(lat)}")
