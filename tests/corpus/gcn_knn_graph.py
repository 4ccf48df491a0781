"""A two-layer graph convolutional network (Kipf & Welling) for node
classification on a k-nearest-neighbour graph of 400 Fashion-MNIST test
images: the graph built here (torch.cdist, topk, the edges made symmetric
and deduplicated with torch.unique over src * N + dst, self loops added) as
an edge_index tensor; symmetric degree normalization D^-1/2 (A + I) D^-1/2
with the degrees counted by index_add_; messages gathered with
index_select and summed into the nodes with scatter_add_ (first layer) and
index_add_ (second); dropout; train/validation boolean masks; Adam with
weight decay; the best validation accuracy's weights kept with a
state_dict copy."""
import copy
import gzip
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

INIT = os.environ.get("CORPUS_INIT")            # a torch.save file both libraries start from
EXACT = os.environ.get("CORPUS_EXACT") == "1"   # comparing with PyTorch: no dropout, no shuffling
DATA = os.environ.get("FASHION_MNIST", "/usr/share/datasets/fashion-mnist")


def shared(make):
    """The initial state: made here, or loaded from INIT (and saved there the first time)."""
    if INIT and os.path.exists(INIT):
        return torch.load(INIT)
    state = make()
    if INIT:
        torch.save(state, INIT)
    return state


def fashion(n):
    out = []
    for name, off, shape in (("images-idx3", 16, (n, 784)), ("labels-idx1", 8, (n,))):
        with gzip.open(os.path.join(DATA, f"t10k-{name}-ubyte.gz")) as f:
            raw = f.read(off + n * (784 if len(shape) == 2 else 1))[off:]
        out.append(torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(*shape))
    return out[0].float() / 255.0, out[1].long()


def knn_graph(feats, k):
    """edge_index (2, E) of the symmetric k-nearest-neighbour graph, with self loops."""
    n = feats.size(0)
    dist = torch.cdist(feats, feats)
    dist.fill_diagonal_(float("inf"))
    nbrs = dist.topk(k, dim=1, largest=False).indices
    src = torch.arange(n).repeat_interleave(k)
    dst = nbrs.reshape(-1)
    keys = torch.unique(torch.cat([src * n + dst, dst * n + src]))
    loops = torch.arange(n)
    return torch.stack([torch.cat([keys // n, loops]), torch.cat([keys % n, loops])])


def gcn_norm(edge_index, n):
    src, dst = edge_index
    deg = torch.zeros(n).index_add_(0, dst, torch.ones(dst.size(0)))
    inv_sqrt = deg.pow(-0.5)
    inv_sqrt[torch.isinf(inv_sqrt)] = 0.0
    return inv_sqrt[src] * inv_sqrt[dst]


class GCNConv(nn.Module):
    def __init__(self, d_in, d_out, aggregate="scatter"):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out, bias=False)
        self.bias = nn.Parameter(torch.zeros(d_out))
        self.aggregate = aggregate

    def forward(self, h, edge_index, weight):
        h = self.lin(h)
        src, dst = edge_index
        msg = h.index_select(0, src) * weight.unsqueeze(1)
        if self.aggregate == "scatter":
            out = torch.zeros_like(h).scatter_add_(0, dst.unsqueeze(1).expand_as(msg), msg)
        else:
            out = torch.zeros_like(h).index_add_(0, dst, msg)
        return out + self.bias


class GCN(nn.Module):
    def __init__(self, d_in, hidden, classes, dropout):
        super().__init__()
        self.conv1 = GCNConv(d_in, hidden, "scatter")
        self.conv2 = GCNConv(hidden, classes, "index_add")
        self.dropout = dropout

    def forward(self, x, edge_index, weight):
        h = F.dropout(x, self.dropout, self.training)
        h = F.relu(self.conv1(h, edge_index, weight))
        h = F.dropout(h, self.dropout, self.training)
        return self.conv2(h, edge_index, weight)


N = 400
x, y = fashion(N)
edge_index = knn_graph(x, k=6)
weight = gcn_norm(edge_index, N)
print(f"{N} nodes, {edge_index.size(1)} edges")
train_mask = torch.zeros(N, dtype=torch.bool)
train_mask[torch.arange(0, N, 5)] = True  # 80 labelled nodes
val_mask = ~train_mask

torch.manual_seed(0)
model = GCN(784, 32, 10, dropout=0.0 if EXACT else 0.5)
init = shared(lambda: {"model": model.state_dict()})
model.load_state_dict(init["model"])
opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
best_acc, best_state = 0.0, None
for epoch in range(30):
    model.train()
    out = model(x, edge_index, weight)
    loss = F.cross_entropy(out[train_mask], y[train_mask])
    opt.zero_grad()
    loss.backward()
    opt.step()
    model.eval()
    with torch.no_grad():
        pred = model(x, edge_index, weight).argmax(dim=1)
        val_acc = (pred[val_mask] == y[val_mask]).float().mean().item()
    if val_acc > best_acc:
        best_acc, best_state = val_acc, copy.deepcopy(model.state_dict())
    print(f"epoch {epoch} loss {loss.item():.9g} val acc {val_acc:.4f}")
model.load_state_dict(best_state)
print(f"best val acc {best_acc:.4f}")
