"""A time-series forecaster: a noisy sum of two sines cut into sliding
windows with Tensor.unfold, a two-layer nn.LSTM (batch_first=True,
dropout between the layers) with a Linear head on the last step, MSELoss,
Adam, a train/validation split in time, the validation loss computed under
model.eval() and torch.no_grad() each epoch, ReduceLROnPlateau on it, and
early stopping that keeps copy.deepcopy(model.state_dict()) of the best
epoch and loads it back with load_state_dict at the end."""
import copy
import math
import os

import torch
import torch.nn as nn

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


class Forecaster(nn.Module):
    def __init__(self, hidden=32, layers=2, dropout=0.2, horizon=4):
        super().__init__()
        self.lstm = nn.LSTM(input_size=1, hidden_size=hidden, num_layers=layers, batch_first=True,
                            dropout=dropout)
        self.head = nn.Linear(hidden, horizon)

    def forward(self, x):                 # x: (B, T, 1)
        out, (h, c) = self.lstm(x)
        return self.head(out[:, -1, :])   # (B, horizon)


WINDOW, HORIZON = 24, 4
torch.manual_seed(0)
t = torch.arange(0, 700, dtype=torch.float32)
noise = torch.randn(700)
model = Forecaster(dropout=0.0 if EXACT else 0.2, horizon=HORIZON)
init = shared(lambda: {"model": model.state_dict(), "noise": noise})
model.load_state_dict(init["model"])
series = torch.sin(2 * math.pi * t / 50) + 0.5 * torch.sin(2 * math.pi * t / 13) + 0.1 * init["noise"]
mean, std = series[:500].mean(), series[:500].std()
series = (series - mean) / std

windows = series.unfold(0, WINDOW + HORIZON, 2)           # (N, WINDOW + HORIZON), stride 2
x_all, y_all = windows[:, :WINDOW].unsqueeze(-1), windows[:, WINDOW:]
split = int(0.8 * len(windows))
x_train, y_train, x_val, y_val = x_all[:split], y_all[:split], x_all[split:], y_all[split:]

criterion = nn.MSELoss()
opt = torch.optim.Adam(model.parameters(), lr=3e-2)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
best_loss, best_state, best_epoch, bad, PATIENCE = float("inf"), None, -1, 0, 3
B = 64
for epoch in range(12):
    model.train()
    order = torch.arange(split) if EXACT else torch.randperm(split)
    total = 0.0
    for i in range(0, split - B + 1, B):
        idx = order[i:i + B]
        pred = model(x_train[idx])
        loss = criterion(pred, y_train[idx])
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.item()
        print(f"epoch {epoch} loss {loss.item():.9g}")
    model.eval()
    with torch.no_grad():
        val = criterion(model(x_val), y_val).item()
    sched.step(val)
    print(f"epoch {epoch} train {total / (split // B):.6f} val {val:.6f} lr {opt.param_groups[0]['lr']:.4g}")
    if val < best_loss - 1e-4:
        best_loss, best_state, best_epoch, bad = val, copy.deepcopy(model.state_dict()), epoch, 0
    else:
        bad += 1
        if bad >= PATIENCE:
            print(f"early stop at epoch {epoch}")
            break
model.load_state_dict(best_state)
model.eval()
with torch.no_grad():
    val = criterion(model(x_val), y_val).item()
    print(f"restored epoch {best_epoch} val {val:.6f} (best {best_loss:.6f})")
