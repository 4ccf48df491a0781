"""`janus optimize` on real training loops: a recorded char_lstm training
step (a Python `for` over time steps with an LSTMCell, the sequence length
varying per batch) must mine into ONE graph whose forward time loop and
backward time loop are IR loops with a trip count that is a symbol
expression, the forward state (h, c) and the backward gradient
accumulations as carries, and the backward reading the forward's saved
values in reverse (select on a collect at (trip-1-c)-i), instead of one
variant per sequence length.  Skips when the janus command was built
without the analyzer."""
import os
import re
import sys

import pytest

from dynamic_runs import JANUS, ROOT  # noqa: E402
from dynamic_runs import janus as _janus  # noqa: E402


def janus(*args, timeout=300):
    return _janus(*args, timeout=timeout)


def _have_analyzer():
    if not os.path.exists(JANUS):
        return False
    r = janus("optimize", "/nonexistent/janus-probe.db")
    return "built without the analyzer" not in r.stderr


pytestmark = pytest.mark.skipif(not _have_analyzer(), reason=f"{JANUS} not built with the analyzer")

SUMMARY = re.compile(r"janus optimize: (\d+) graphs? in (\d+) groups? \((\d+) variants?\), (\d+) loops?")


def graphs(text):
    """{name: (header line, [body lines])} of an IR dump."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"graph (\S+) ", line)
        if m:
            cur = m.group(1)
            out[cur] = (line, [])
        elif cur:
            out[cur][1].append(line)
    return out


def loops(body):
    """[(header, [lines inside])] of the top-level loops of a graph body."""
    out, cur = [], None
    for line in body:
        s = line.strip()
        if s.startswith("loop L"):
            cur = (s, [])
            out.append(cur)
        elif s == "}" and cur is not None:
            cur = None
        elif cur is not None:
            cur[1].append(s)
    return out


@pytest.fixture(scope="module")
def char_lstm(tmp_path_factory):
    db = tmp_path_factory.mktemp("lstm") / "run.db"
    r = janus("record", "--db", str(db), "--", sys.executable, os.path.join(ROOT, "examples", "char_lstm.py"),
              "--steps", "12", "--hidden", "32", "--batch", "4")
    assert r.returncode == 0, r.stderr
    r = janus("optimize", str(db), "--dump-ir")
    assert r.returncode == 0, r.stderr
    return r


def test_char_lstm_step_is_one_graph_with_time_loops(char_lstm):
    m = SUMMARY.search(char_lstm.stderr)
    assert m, char_lstm.stderr
    assert int(m.group(3)) <= 2, char_lstm.stderr       # was one variant per sequence length
    assert "one variant per trip count instead" not in char_lstm.stderr, char_lstm.stderr
    gs = graphs(char_lstm.stdout)
    # the steady-state training step: the graph with a dim symbol (the sequence length)
    steady = [(h, b) for h, b in gs.values() if any(re.match(r"\s*sym s\d+ dim ", x) for x in b)
              and len(loops(b)) >= 2]
    assert steady, char_lstm.stdout[:4000]
    head, body = max(steady, key=lambda hb: int(re.search(r"support=(\d+)", hb[0]).group(1)))
    ls = loops(body)
    # every time loop's trip count is an expression of the sequence-length symbol
    for h, _ in ls:
        assert re.search(r"trip=\(?s\d+", h), h
    fwd = [(h, b) for h, b in ls if any("lstm_cell(" in x for x in b)]
    bwd = [(h, b) for h, b in ls if any("lstm_cell_backward(" in x for x in b)]
    assert len(fwd) == 1 and len(bwd) == 1, [h for h, _ in ls]
    fh, fb = fwd[0]
    assert sum(x.startswith("carry ") for x in fb) == 2          # h and c
    assert any(x.startswith("collect ") for x in fb)             # outputs and saved workspaces
    bh, bb = bwd[0]
    # dh, dc and the weight-gradient accumulations dW = dW + ... are carries
    assert sum(x.startswith("carry ") for x in bb) >= 4, bb
    assert sum(re.search(r"= add\(%\d+, %\d+\)", x) is not None for x in bb) >= 4, bb
    # the backward reads the forward's saved values in reverse: select(collect, 0, (trip-1-c)-i)
    iv = re.search(r"ivar=(\S+)", bh).group(1)
    rev = [x for x in bb if re.search(r"= select\(%\d+\) dim=0 index=\(.*-" + re.escape(iv) + r"\)", x)]
    assert len(rev) >= 2, bb
    # the backward trip count is the forward one minus the peeled first and last iterations
    ft = re.search(r"trip=(\S+)", fh).group(1)
    bt = re.search(r"trip=(\S+)", bh).group(1)
    assert ft != bt


# the same RNNCell script the golden tests record (sequence length 3..8)
RNN_SCRIPT = os.path.join(ROOT, "tests", "dynamic", "seq_len_varies.py")


def test_rnn_cell_sequence_length_varies(tmp_path):
    db = tmp_path / "run.db"
    r = janus("record", "--db", str(db), "--", sys.executable, RNN_SCRIPT)
    assert r.returncode == 0, r.stderr
    r = janus("optimize", str(db), "--dump-ir")
    assert r.returncode == 0, r.stderr
    gs = graphs(r.stdout)
    # one graph covers sequence lengths 3..8 (every step after the first), T =
    # 3 too, where the backward loop between the peeled first and last time
    # steps runs once
    best = max(gs.values(), key=lambda hb: int(re.search(r"support=(\d+)", hb[0]).group(1)))
    assert int(re.search(r"support=(\d+)", best[0]).group(1)) == 23, r.stdout[:3000]
    assert any(re.match(r"\s*guard trip L\d+ in 1\.\.", x) for x in best[1]), best[1]
    ls = loops(best[1])
    assert len(ls) >= 2 and all(re.search(r"trip=\(?s\d+", h) for h, _ in ls), [h for h, _ in ls]
    assert any(x.startswith("carry ") for _, b in ls for x in b)
    m = SUMMARY.search(r.stderr)
    assert m and int(m.group(3)) == 0, r.stderr


SEQ2SEQ = r'''
import sys
sys.path.insert(0, {python!r})
import janus as torch
import janus.nn as nn, janus.nn.functional as F
torch.manual_seed(0)
V, D, B = 24, 16, 8
emb, enc, dec = nn.Embedding(V, D), nn.GRU(D, D, batch_first=True), nn.GRUCell(2 * D, D)
attn, out = nn.Linear(D, D, bias=False), nn.Linear(2 * D, V)
params = [p for m in (emb, enc, dec, attn, out) for p in m.parameters()]
opt = torch.optim.Adam(params, lr=1e-2)
for s in range(20):
    S, T = 4 + (s * 3) % 7, 3 + (s * 5) % 6    # source and target lengths
    src, tgt = torch.randint(1, V, (B, S)), torch.randint(1, V, (B, T))
    mem, h = enc(emb(src))
    h, ctx, loss = h[0], torch.zeros(B, D), 0
    for t in range(T - 1):     # attention decoder, teacher forcing
        h = dec(torch.cat([emb(tgt[:, t]), ctx], 1), h)
        a = F.softmax(torch.bmm(mem, attn(h).unsqueeze(2)).squeeze(2), dim=1)
        ctx = torch.bmm(a.unsqueeze(1), mem).squeeze(1)
        loss = loss + F.cross_entropy(out(torch.cat([h, ctx], 1)), tgt[:, t + 1])
    loss = loss / (T - 1)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"loss {{loss.item():.6f}}")
'''


def test_lengths_that_move_together_make_loops(tmp_path):
    """An attention seq2seq whose source and target lengths vary together
    (S = 4 + 3s mod 7, T = 3 + 5s mod 6).  Dims were told apart by their
    occurrence among the ops of their line and op, of how many: two steps
    whose encoder and decoder loops ran other counts with the same total
    compared an input gradient [8, 16] with a weight gradient [48, 16], the
    batch became a symbol, and the loop graphs did not verify (a carry
    typed unlike its seed): before that check, `janus optimize` failed
    with an internal error; with it, one variant per trip count.  Places
    are now counted on the folded sequence: every loop forms, and replay
    runs every step as a graph, bitwise equal to eager."""
    from test_replay import replay_whole
    _, _, s = replay_whole(SEQ2SEQ.format(python=os.path.join(ROOT, "python")), [], [], tmp_path, "s2s.py")
    assert s["pct"] == 100 and s["graphs"] <= 4, s
    r = janus("optimize", "--no-compile", str(tmp_path / "run.db"))
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "no loop at" not in out, out
    assert int(SUMMARY.search(out).group(4)) >= 4, out


SUM_IN_LOOP = r'''
import sys
sys.path.insert(0, {python!r})
import janus, janus.nn as nn
janus.manual_seed(0)
cell, head = nn.RNNCell(4, 8), nn.Linear(8, 2)
opt = janus.optim.SGD(list(cell.parameters()) + list(head.parameters()), lr=0.1)
xs = janus.randn(16, 3, 4)
for s in range(12):
    h, loss = janus.zeros(3, 8), 0
    for t in range(3 + s % 3):
        h = cell(xs[t], h)
        loss = loss + head(h).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("weight", float(head.weight.sum()))
'''


def test_a_sum_made_in_a_loop_and_never_read_is_kept(tmp_path):
    """A loss summed inside the time loop that the script never reads: alive
    at each segment's end (a Python variable holds it) but never read.  Such a
    value is kept outside loops; in a loop it was not (other body values
    would need every iteration's), so replay built a deferred slice of the
    whole forward every step.  The carried sum's out is kept now."""
    script = tmp_path / "sum.py"
    script.write_text(SUM_IN_LOOP.format(python=os.path.join(ROOT, "python")))
    db = tmp_path / "run.db"
    r = janus("record", "--db", str(db), "--", sys.executable, str(script))
    assert r.returncode == 0, r.stderr
    r = janus("optimize", "--no-compile", str(db), "--dump-ir")
    assert r.returncode == 0, r.stderr
    head, body = max(graphs(r.stdout).values(), key=lambda hb: int(re.search(r"support=(\d+)", hb[0]).group(1)))
    outs = {re.search(r"=> (%\d+)", x).group(1) for _, b in loops(body) for x in b if x.startswith("carry ")}
    kept = {m.group(1) for x in body for m in [re.match(r"\s*out (%\d+) keep", x)] if m}
    assert outs and kept & outs, (outs, kept)
