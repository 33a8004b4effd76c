"""torch_lstm_varlen.py - an LSTM language model (2 layers, embedding and
decoder) trained with RMSprop on batches of a different sequence length
every step (16 to 48 tokens, drawn at random), gradients clipped: the
tensors of the recurrence change size with the length.  Not shaped for
stprof: the default plan must hold it within 10% of the pool
(test_stalloc_loops.sh), also on a run whose lengths come in another
order than the recorded one's (--seed: the lengths' draw).
Usage: torch_lstm_varlen.py [STEPS] [--seed N]"""
import argparse
import torch, torch.nn as nn

ap = argparse.ArgumentParser()
ap.add_argument("steps", type=int, nargs="?", default=16)
ap.add_argument("--seed", type=int, default=7)
args = ap.parse_args()
steps = args.steps
torch.manual_seed(1)
V, E, HID, B = 400, 64, 128, 16


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, E)
        self.rnn = nn.LSTM(E, HID, num_layers=2, batch_first=True, dropout=0.1)
        self.dec = nn.Linear(HID, V)

    def forward(self, x):
        out, _ = self.rnn(self.emb(x))
        return self.dec(out)


model = LM()
opt = torch.optim.RMSprop(model.parameters(), lr=2e-3, alpha=0.95)
gen = torch.Generator().manual_seed(args.seed)
for step in range(steps):
    t = int(torch.randint(16, 49, (1,), generator=gen))
    seq = torch.randint(0, V, (B, t + 1), generator=gen)
    opt.zero_grad()
    logits = model(seq[:, :-1])
    loss = nn.functional.cross_entropy(logits.reshape(-1, V), seq[:, 1:].reshape(-1))
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step()
    print(step, t, f"{loss.item():.6f}")
