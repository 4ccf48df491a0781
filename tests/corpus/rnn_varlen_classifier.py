"""An LSTM classifier over variable-length token sequences: a collate_fn
that pads with nn.utils.rnn.pad_sequence and returns lengths, a padding
index in nn.Embedding, the LSTM run on a PackedSequence
(pack_padded_sequence with enforce_sorted=False, pad_packed_sequence back),
h_n as each sequence's last state, a boolean mask from the lengths
(arange < lengths) for masked mean pooling, dropout, Adam, and accuracy
under torch.no_grad().  The task: does a sequence hold more 1s than 2s?"""
import os
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from torch.utils.data import DataLoader

INIT = os.environ.get("CORPUS_INIT")            # a torch.save file both libraries start from
EXACT = os.environ.get("CORPUS_EXACT") == "1"   # comparing with PyTorch: no dropout, no shuffling

PAD = 0


def shared(make):
    """The initial state: made here, or loaded from INIT (and saved there the first time)."""
    if INIT and os.path.exists(INIT):
        return torch.load(INIT)
    state = make()
    if INIT:
        torch.save(state, INIT)
    return state


def make_data(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        seq = [rng.randrange(1, 6) for _ in range(rng.randrange(3, 13))]
        out.append((torch.tensor(seq), int(seq.count(1) > seq.count(2))))
    return out


def collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    return pad_sequence(seqs, batch_first=True, padding_value=PAD), lengths, torch.tensor(labels)


class Classifier(nn.Module):
    def __init__(self, vocab=6, emb=16, hidden=32, dropout=0.2):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb, padding_idx=PAD)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(2 * hidden, 2)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(self.embed(x), lengths, batch_first=True, enforce_sorted=False)
        out, (h_n, _) = self.lstm(packed)
        h, _ = pad_packed_sequence(out, batch_first=True)
        mask = torch.arange(h.size(1)).unsqueeze(0) < lengths.unsqueeze(1)
        mean = (h * mask.unsqueeze(-1)).sum(1) / lengths.unsqueeze(1).float()
        return self.out(self.drop(torch.cat([mean, h_n[-1]], dim=1)))


train, test = make_data(256, 0), make_data(128, 1)
torch.manual_seed(0)
model = Classifier(dropout=0.0 if EXACT else 0.2)
init = shared(lambda: {"model": model.state_dict()})
model.load_state_dict(init["model"])
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
loader = DataLoader(train, batch_size=32, shuffle=not EXACT, collate_fn=collate)
for epoch in range(2):
    model.train()
    for x, lengths, y in loader:
        loss = F.cross_entropy(model(x, lengths), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"epoch {epoch} loss {loss.item():.9g}")
model.eval()
with torch.no_grad():
    x, lengths, y = collate(test)
    acc = (model(x, lengths).argmax(1) == y).float().mean()
print(f"test accuracy {acc.item():.4f}")
