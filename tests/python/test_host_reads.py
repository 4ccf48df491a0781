"""Values a training step reads on the host outside the dispatcher are sync
points in the recording exactly as under replay (csrc/index.c, ops_py.c,
jn_py_host_read: where an op of the current segment wrote the value, which
replay holds pending), or no read at all: a bool mask's values (indexing,
nonzero), a one-element tensor given where an op takes a number, a size
or a list element, a 0-d bool index.  Before, the recording saw no sync where replay had to stop,
so every replayed step's segment ended early and ran eagerly (0% hits);
x[mask] = number and clamp with a 0-d tensor bound now read nothing (a
masked fill; maximum/minimum), as in torch, nor does an index_put_ whose
value needs a cast or overlaps its target (a cast or clone op).  Each case: recorded 20
steps, replayed 40 with every graph, bitwise equal to eager, no fallback."""
import os

import pytest

from dynamic_runs import have_optimize

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")

SCRIPT = r'''
import sys
import janus, janus.nn as nn
janus.manual_seed(0)
net = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
opt = janus.optim.SGD(net.parameters(), lr=0.05)
X, Y = janus.randn(16, 6), janus.randn(16, 2)
keep = Y[:, 0] > -0.5
for step in range(int(sys.argv[1])):
    out = net(X)
    y, t = out, Y
    {case}
    loss = ((y - t) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, f"{{loss.item():.7f}}")
'''

CASES = {
    "mask_made_in_step": "m = out[:, 0] > -0.5; y, t = out[m], Y[m]",
    "mask_made_before": "y, t = out[keep], Y[keep]",
    "mask_setitem": "y = out.clone(); y[(y - Y).abs() > 1.0] = 0.0",
    "nonzero": "i = janus.nonzero(out[:, 0] > 0)[:, 0]; y, t = out[i], Y[i]",
    "bool_0d_index": "y = out[(out.sum() > -1e9)][0]",
    "clamp_0d_bound": "y = out.clamp(max=out.mean())",
    "alpha_0d": "y = out.add(out, alpha=out.mean())",
    "fill_0d": "y = out.masked_fill(out > 0, out.mean())",
    "tensor_of_0d": "y = out * janus.tensor([out.mean(), out.std()])",
    "size_from_0d": "y = out.reshape((out.sum() > -1e9).long() * 32).reshape(16, 2)",
    "sizes_from_1d": "y = out.reshape(((out.sum() > -1e9).long() * 32).reshape(1)).reshape(16, 2)",
    "factory_size": "y = janus.zeros((out.sum() > -1e9).long() * 16, 2) + out",
    "index_int32": "y = out[(janus.arange(16) + 0).int()]",  # cast to int64 by an op
    "dtype_arg": "y = out.softmax(1, dtype=janus.float64).float()",  # dtype=: a cast op (and differentiable)
    "one_hot_infer": "y = out * janus.nn.functional.one_hot((out[:, 0] > 0).long()).float()[:, :1].sum()",
    # index_put_'s value cast or copied (it overlaps the target) by ops, not read here
    "setitem_cast": "y = out.clone(); y[janus.tensor([0, 1])] = out[2:4].double()",
    "setitem_overlap": "y = out.clone(); y[janus.tensor([0, 1])] = y[2:4]",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_host_read_replays_like_eager(case, tmp_path):
    from test_replay import replay_whole
    _, _, s = replay_whole(SCRIPT.format(case=CASES[case]), ["20"], ["40"], tmp_path, f"{case}.py")
    assert s["segments"] >= 40, s
    if case == "mask_made_before":  # a value no op of the segment wrote is current: no sync, one segment a step
        assert s["segments"] <= 41, s


# A mask's count is the data's, not the program's: recorded while the mask
# kept every row (a batch of 16, 16 kept), replayed on data where it drops
# some.  The count is a symbol from that one value (JN_TR_DATAIDX,
# analyzer/generalize.c count_sym), and the dims and attributes that move
# with it are told from the batch's equal 16s by data flow (count_ties):
# before, the count was a constant and every step past the recording missed.
COUNT_SCRIPT = r'''
import sys
import janus, janus.nn as nn, janus.nn.functional as F
janus.manual_seed(0)
net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
opt = janus.optim.Adam(net.parameters(), lr=0.01)
X = janus.randn(60 * 16, 6)
# classes 0-2; past the 20 recorded steps also 3, the ignored one
Y = janus.cat([janus.randint(0, 3, (20 * 16,)), janus.randint(0, 4, (40 * 16,))])
for step in range(int(sys.argv[1])):
    x, y = X[step * 16:(step + 1) * 16], Y[step * 16:(step + 1) * 16]
    out = net(x)
    keep = y != 3
    {case}
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, f"{{loss.item():.7f}}")
'''

COUNT_CASES = {
    "index": "loss = F.cross_entropy(out[keep], y[keep])",
    "nonzero_index_select": "i = keep.nonzero().squeeze(1); "
                            "loss = F.cross_entropy(out.index_select(0, i), y.index_select(0, i))",
    "masked_select": "loss = (out.masked_select(keep[:, None]) ** 2).mean() + F.cross_entropy(out[keep], y[keep])",
    "where": "r, = janus.where(keep); loss = F.mse_loss(out[r, 0], y[r].float())",
    "sum_of_rows": "k = out[keep]; loss = (k - k.mean(0)).pow(2).sum() / k.shape[0]",
    # indices of a length the data decides, not a mask's: repeat_interleave's
    "repeat_interleave": "loss = janus.repeat_interleave(out, keep.long(), dim=0).pow(2).mean()",
}


@pytest.mark.parametrize("case", sorted(COUNT_CASES))
def test_mask_count_constant_while_recording(case, tmp_path):
    from test_replay import replay_whole
    _, _, s = replay_whole(COUNT_SCRIPT.format(case=COUNT_CASES[case]), ["20"], ["40"], tmp_path, f"count_{case}.py")
    assert s["segments"] >= 40, s
