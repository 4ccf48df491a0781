"""A word-level LSTM language model trained with truncated backpropagation
through time, timed under janus replay, janus eager and PyTorch (issue 23's
"word-level LSTM of our own": embedding, 2-layer LSTM, linear decoder,
gradient clipping; target: replay >= 1.5x janus eager).

The corpus is Python's own source (argparse.py, the collections and json
packages of the running interpreter's standard library), split into words
and punctuation; the 1,000 most frequent tokens form the vocabulary, the
rest map to <unk>.  The script is written against `torch` as a PyTorch user
would: the janus command serves `import torch` as janus, a plain `python`
runs it on PyTorch.  Batch 8 columns, 20 time steps per training step, 64
units, hidden state carried across steps with detach(), clip_grad_norm_
0.25, SGD; the loss is read (.item(), a sync) every 50 steps only.

Records a short run, `janus optimize`s it, then runs the script under
`janus replay`, `janus replay` with every graph compiled
(JANUS_REPLAY_ADAPT=0), `janus replay --eager` and, when PyTorch imports,
plain PyTorch (and torch.compile with --torch-compile), rotated so no mode
always runs first; reports the median CPU time per step, the median of the
back-to-back eager/replay ratios, and checks that the janus modes printed
the same losses.  With --kernel-clock the janus processes also time their
kernels (JANUS_KERNEL_CLOCK) and the host time per step outside them is
printed, with the most replay could gain were its host time zero (janus
eager's CPU per step over replay's time inside kernels).

    JANUS_BUILD_DIR=build python3 benchmarks/bench_word_lm.py [--repeats 5] [--steps 300] [--kernel-clock]
"""
import argparse
import importlib.util
import os
import re
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# os.environ, not janus's settings table: JANUS_BUILD_DIR says which build to import
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_env import child_env, print_kernel_split, run  # noqa: E402

SCRIPT = r'''
import collections, os, re, sys, time
import torch
import torch.nn as nn

steps, compiled = int(sys.argv[1]), len(sys.argv) > 2 and sys.argv[2] == "compile"
lib = os.path.dirname(os.__file__)
text = ""
for rel in ("argparse.py", "collections/__init__.py", "json/decoder.py", "json/encoder.py"):
    with open(os.path.join(lib, rel), encoding="utf-8") as f:
        text += f.read()
words = re.findall(r"[A-Za-z_]+|\d+|[^\sA-Za-z_\d]", text)
vocab = ["<unk>"] + [w for w, _ in collections.Counter(words).most_common(999)]
index = {{w: i for i, w in enumerate(vocab)}}
ids = torch.tensor([index.get(w, 0) for w in words], dtype=torch.int64)
B, T, H = 8, 20, 64
ncol = ids.shape[0] // B
data = ids[:ncol * B].view(B, ncol).t().contiguous()    # [ncol, B]: column b is one stream


class WordLM(nn.Module):
    def __init__(self, ntok, nin, nhid):
        super().__init__()
        self.encoder = nn.Embedding(ntok, nin)
        self.rnn = nn.LSTM(nin, nhid, num_layers=2)
        self.decoder = nn.Linear(nhid, ntok)

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.encoder(x), hidden)
        return self.decoder(out).view(-1, self.decoder.out_features), hidden


torch.manual_seed(0)
model = WordLM(len(vocab), H, H)
crit = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=1.0)
run = torch.compile(model) if compiled else model
hidden = (torch.zeros(2, B, H), torch.zeros(2, B, H))
t0 = None
for s in range(steps):
    if s == 20:
        t0 = time.process_time()
        k0 = torch._C._kernel_clock()[0] if hasattr(torch._C, "_kernel_clock") else None  # janus only
    i = (s * T) % (ncol - T - 1)
    x, y = data[i:i + T], data[i + 1:i + 1 + T].reshape(-1)
    hidden = (hidden[0].detach(), hidden[1].detach())
    opt.zero_grad()
    out, hidden = run(x, hidden)
    loss = crit(out, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    opt.step()
    if s % 50 == 0:
        print(f"step {{s}} loss {{loss.item():.6f}}")
print(f"{{1e3 * (time.process_time() - t0) / (steps - 20):.4f}} ms CPU/step")
if k0 is not None:  # JANUS_KERNEL_CLOCK
    print(f"{{1e3 * (torch._C._kernel_clock()[0] - k0) / (steps - 20):.4f}} ms in kernels/step")
'''



def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--record-steps", type=int, default=60)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--torch-compile", action="store_true", help="also time torch.compile (slow to compile)")
    ap.add_argument("--kernel-clock", action="store_true",
                    help="also time janus's kernels (JANUS_KERNEL_CLOCK) and print the host time per step "
                         "outside them")
    args = ap.parse_args()
    if not os.path.exists(JANUS):
        sys.exit(f"no {JANUS}: build first (scripts/setup.sh)")
    e = child_env(BUILD, args.threads)
    if args.kernel_clock:
        e["JANUS_KERNEL_CLOCK"] = "1"
    je = dict(e, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python")] + [e.get("PYTHONPATH", "")]))
    has_torch = importlib.util.find_spec("torch") is not None
    with tempfile.TemporaryDirectory() as d:
        script, db = os.path.join(d, "word_lm.py"), os.path.join(d, "run.db")
        with open(script, "w") as f:
            f.write(SCRIPT.format())
        run([JANUS, "record", "--db", db, "--", sys.executable, script, str(args.record_steps)], je)
        run([JANUS, "optimize", "--quiet", db], je)
        janus_modes = ["replay", "every graph", "eager"]
        modes = janus_modes + (["pytorch"] if has_torch else []) + (["torch.compile"] if has_torch and
                                                                    args.torch_compile else [])
        cpu = {m: [] for m in modes}
        kern = {m: [] for m in janus_modes}
        losses, hit = {}, {}
        for r in range(args.repeats):
            k = r % len(modes)
            for m in modes[k:] + modes[:k]:
                if m in janus_modes:
                    cmd = [JANUS, "replay"] + (["--eager"] if m == "eager" else []) + ["--db", db, "--",
                                                                                       sys.executable, script,
                                                                                       str(args.steps)]
                    env = dict(je, JANUS_REPLAY_ADAPT="0" if m == "every graph" else "1")
                else:
                    cmd = [sys.executable, script, str(args.steps)] + (["compile"] if m == "torch.compile" else [])
                    env = e
                out = run(cmd, env)
                cpu[m].append(float(re.search(r"([\d.]+) ms CPU/step", out).group(1)))
                kc = re.search(r"([\d.]+) ms in kernels/step", out)
                if kc and m in kern:
                    kern[m].append(float(kc.group(1)))
                losses[m] = re.findall(r"step \d+ loss \S+", out)
                h = re.search(r"([\d.]+)% hit rate", out)
                hit[m] = h.group(1) + "%" if h else "-"
    same = all(losses[m] == losses["eager"] for m in janus_modes)
    print(f"word-level LSTM LM (vocab 1000, batch 8, 20 steps of time, 2 layers of 64), {args.threads} thread(s), "
          f"{args.steps} steps, median of {args.repeats}")
    print("  CPU ms/step: " + ", ".join(f"{m} {statistics.median(cpu[m]):.3f}"
                                         + (f" (hit rate {hit[m]})" if m in janus_modes[:2] else "") for m in modes))
    for m in [x for x in modes if x != "eager"]:
        ratios = [b / a for a, b in zip(cpu[m], cpu["eager"])]
        print(f"  janus eager / {m} CPU per step, per run of the rotation: {statistics.median(ratios):.2f}x "
              f"(runs {min(ratios):.2f}-{max(ratios):.2f}x; above 1: {m} is faster than janus eager)")
    if args.kernel_clock:
        print_kernel_split(cpu, kern, janus_modes, "janus eager")
    print(f"  losses printed by the janus modes: {'identical' if same else 'DIFFER'}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
