"""Character-level LSTM language model over Python's own standard library.

    python examples/char_lstm.py [--steps 1500] [--batch 32] [--hidden 128]
                                 [--min-len 16] [--max-len 48] [--long-from N --long-max-len L]

The text is the .py files of the running interpreter's standard library.
Each batch has its own sequence length (a Python `for` loop over time steps
with an LSTMCell), so the training step is dynamic.  Prints the loss in
bits per character next to the unigram entropy of the text: a model that
learned nothing stays at the unigram entropy.  --long-from N --long-max-len L
is a length curriculum: from step N on, sequences up to L characters.
"""
import argparse
import glob
import math
import os
import random
import sys
import sysconfig
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import janus  # noqa: E402
import janus.nn as nn  # noqa: E402
from kernel_clock import kernel_figure, kernel_seconds  # noqa: E402


def corpus(max_bytes=2_000_000):
    libdir = sysconfig.get_paths()["stdlib"]
    files = sorted(glob.glob(os.path.join(libdir, "*.py")))
    if not files:
        raise FileNotFoundError(f"no .py files under {libdir}; is the Python standard library installed?")
    text, n = [], 0
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            s = fh.read()
        text.append(s)
        n += len(s)
        if n >= max_bytes:
            break
    return "".join(text)


class CharLSTM(nn.Module):
    def __init__(self, vocab, emb=32, hidden=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.cell = nn.LSTMCell(emb, hidden)
        self.head = nn.Linear(hidden, vocab)
        self.hidden = hidden

    def forward(self, x):  # x: [B, T] int64 -> logits [B*T, V]
        b, t = x.shape
        e = self.embed(x)
        h = janus.zeros(b, self.hidden)
        c = janus.zeros(b, self.hidden)
        outs = []
        for i in range(t):  # a Python loop over time steps
            h, c = self.cell(e[:, i], (h, c))
            outs.append(h)
        return self.head(janus.stack(outs, 1).reshape(b * t, self.hidden))


def main(argv=None):
    ap = argparse.ArgumentParser(description="character LSTM on the Python standard library")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--min-len", type=int, default=16)
    ap.add_argument("--max-len", type=int, default=48)
    ap.add_argument("--long-from", type=int, default=0, help="from this step on, sequences up to --long-max-len")
    ap.add_argument("--long-max-len", type=int, default=0)
    ap.add_argument("--print-every", type=int, default=50)
    ap.add_argument("--val-batches", type=int, default=10)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--warmup", type=int, default=0, help="leave the first N steps out of the steps/s figure")
    args = ap.parse_args(argv)
    janus.manual_seed(args.seed)
    rnd = random.Random(args.seed)

    text = corpus()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = janus.tensor([stoi[c] for c in text], dtype=janus.int64)
    counts = {}
    for c in text:
        counts[c] = counts.get(c, 0) + 1
    unigram = -sum(v / len(text) * math.log2(v / len(text)) for v in counts.values())
    split = int(len(text) * 0.95)
    print(f"corpus: {len(text)} characters, {len(chars)} symbols, unigram entropy {unigram:.3f} bits/char")

    model = CharLSTM(len(chars), hidden=args.hidden)
    opt = janus.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()

    def batch(lo, hi, step=0):
        longer = args.long_from and step >= args.long_from
        t = rnd.randint(args.min_len, args.long_max_len if longer else args.max_len)  # varies per batch
        starts = janus.tensor([rnd.randrange(lo, hi - t - 1) for _ in range(args.batch)])
        offs = janus.arange(t + 1)
        idx = starts.unsqueeze(1) + offs.unsqueeze(0)
        seq = data[idx]
        return seq[:, :-1], seq[:, 1:].reshape(-1)

    t0, c0, k0 = time.perf_counter(), time.process_time(), kernel_seconds()
    for step in range(1, args.steps + 1):
        x, y = batch(0, split, step)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % args.print_every == 0 or step == 1:
            print(f"step {step:5d}  loss {loss.item() / math.log(2):.3f} bits/char", flush=True)
        if step == args.warmup:
            t0, c0, k0 = time.perf_counter(), time.process_time(), kernel_seconds()
    dt, cpu, kern = time.perf_counter() - t0, time.process_time() - c0, kernel_seconds() - k0
    timed = args.steps - min(args.warmup, args.steps)

    with janus.no_grad():
        model.eval()
        vals = []
        for _ in range(args.val_batches):
            x, y = batch(split, len(text))
            vals.append(loss_fn(model(x), y).item() / math.log(2))
    val = sum(vals) / max(len(vals), 1)
    print(f"validation {val:.3f} bits/char vs unigram {unigram:.3f} "
          f"({timed / dt:.1f} steps/s over {timed} steps, {1e3 * cpu / max(timed, 1):.3f} ms CPU/step{kernel_figure(kern, timed)})")
    return val, unigram


if __name__ == "__main__":
    main()
