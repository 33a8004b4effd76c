"""gil_rng.py - two Python threads that deadlocked under stprof when a
tensor's Python frames were taken by waiting for the GIL: the main thread's
torch.multinomial allocates while holding the CPU generator's lock, with the
GIL released; the other thread holds the GIL and waits for that lock in
torch.get_rng_state.  Natively it ends in about a second."""
import threading

import torch

probs = torch.rand(1000)  # one Python thread yet: this tensor has its line
stop = False


def side():
    while not stop:
        torch.get_rng_state()


t = threading.Thread(target=side)
t.start()
for _ in range(3000):
    torch.multinomial(probs, 64, replacement=True)
stop = True
t.join()
print("done")
