"""Seq2seq with attention: a GRU encoder, a GRU-cell decoder with additive
(Bahdanau) attention over the encoder states, teacher forcing chosen per
batch with Python's random, NLL of log_softmax outputs, Adam, and greedy
decoding under torch.no_grad() (argmax, exact-match accuracy).  The task:
reverse a sequence of digits."""
import os
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

INIT = os.environ.get("CORPUS_INIT")            # a torch.save file both libraries start from
EXACT = os.environ.get("CORPUS_EXACT") == "1"   # comparing with PyTorch: no dropout, no shuffling


def shared(make):
    """The initial state: made here, or loaded from INIT (and saved there the first time)."""
    if INIT and os.path.exists(INIT):
        return torch.load(INIT)
    state = make()
    if INIT:
        torch.save(state, INIT)
    return state


SOS, VOCAB, H, L = 10, 11, 32, 6


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, H)
        self.gru = nn.GRU(H, H, batch_first=True)

    def forward(self, src):
        return self.gru(self.embed(src))


class AttnDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, H)
        self.w_q, self.w_k = nn.Linear(H, H), nn.Linear(H, H, bias=False)
        self.v = nn.Linear(H, 1, bias=False)
        self.cell = nn.GRUCell(2 * H, H)
        self.out = nn.Linear(2 * H, VOCAB)

    def forward(self, tok, h, enc):
        scores = self.v(torch.tanh(self.w_q(h).unsqueeze(1) + self.w_k(enc))).squeeze(-1)
        attn = F.softmax(scores, dim=-1)
        context = torch.bmm(attn.unsqueeze(1), enc).squeeze(1)
        h = self.cell(torch.cat([self.embed(tok), context], dim=-1), h)
        return F.log_softmax(self.out(torch.cat([h, context], dim=-1)), dim=-1), h


def batch(rng, n):
    src = torch.tensor([[rng.randrange(10) for _ in range(L)] for _ in range(n)])
    return src, src.flip(1)


def decode(enc_out, h, tgt=None, teacher=False):
    tok = torch.full((enc_out.size(0),), SOS, dtype=torch.long)
    logps = []
    for t in range(L):
        logp, h = dec(tok, h, enc_out)
        logps.append(logp)
        tok = tgt[:, t] if teacher else logp.argmax(-1)
    return torch.stack(logps, 1)


torch.manual_seed(0)
enc, dec = Encoder(), AttnDecoder()
init = shared(lambda: {"enc": enc.state_dict(), "dec": dec.state_dict()})
enc.load_state_dict(init["enc"])
dec.load_state_dict(init["dec"])
opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=0.01)
rng = random.Random(0)
for step in range(15):
    src, tgt = batch(rng, 16)
    teacher = True if EXACT else rng.random() < 0.75
    enc_out, h = enc(src)
    logp = decode(enc_out, h[0], tgt, teacher)
    loss = F.nll_loss(logp.reshape(-1, VOCAB), tgt.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.9g}")
with torch.no_grad():
    src, tgt = batch(random.Random(1), 64)
    enc_out, h = enc(src)
    pred = decode(enc_out, h[0]).argmax(-1)
    print(f"exact-match accuracy {(pred == tgt).all(1).float().mean().item():.4f}")
