"""CTC loss (torch.nn.functional.ctc_loss), composed from table ops.

The forward variables of Graves et al. run in log space over the extended
label sequence (blank, l1, blank, l2, ..., blank): at every time step each
position takes the logsumexp of staying, coming from the position before,
and skipping a blank from two before (odd positions past the first whose
label differs from the one two back, torch's rule), plus the log
probability of its label.  The recursion is vectorized over the batch and
the extended positions; per-sequence input lengths are masks (a sequence
keeps its variables once its input ends), so every step runs the same ops
whatever the lengths and no value is read on the host inside the loop.  The
extended length comes from the padded targets' width (the longest target
for concatenated ones), so a recorded step covers other lengths.  Lengths
are read on the host once for torch's checks (a host tensor or list: no
sync).

Autograd differentiates the composition; two terms make its gradient
torch's exactly.  torch's backward returns exp(log_probs) - exp(lcab + nll -
log_probs) for the steps within each input length, i.e. it presumes the
input went through log_softmax (the extra exp(log_probs) cancels there); a
zero-valued term exp(lp).detach() * (lp - lp.detach()) adds it.  And an
impossible alignment without zero_infinity has infinite loss and NaN
gradients in torch: that term enters through the likelihood's sum s as
s - s*U (value s exactly), so log(0)'s infinite derivative turns it into
NaN there, as torch's formula does.  The logsumexps guard their log and
shift with `where`, so no NaN reaches the gradient of a finite loss.
"""
import math

import janus
from janus import _C

_NEG_INF = -math.inf


def _tname(dt):
    return janus._dtype.scalar_type_name(dt)


def _host_lengths(v, name):
    """Lengths as a host list of ints (torch reads them on the host too)."""
    if isinstance(v, janus.Tensor):
        if v.dtype.is_floating_point or v.dtype.is_complex or v.dtype is janus.bool:
            raise RuntimeError(f"{name} must be integral")
        vals = _C._host_tolist(v)  # no sync for a host tensor (a DataLoader's, janus.tensor(list))
        return [int(x) for x in vals] if isinstance(vals, list) else [int(vals)]
    if isinstance(v, (list, tuple)):
        return [int(x) for x in v]
    if hasattr(v, "__index__") and not isinstance(v, (bool, float)):
        return [v.__index__()]
    raise TypeError(f"ctc_loss(): argument '{name}' must be a tuple of ints or a Tensor, not {type(v).__name__}")


def _device_lengths(v, values, device):
    if isinstance(v, janus.Tensor):
        return v.reshape(-1).to(device=device, dtype=janus.int64)
    return janus.tensor(values, dtype=janus.int64, device=device)


def _check_range(values, name, hi):
    for x in values:
        if x < 0:
            raise RuntimeError(f"Expected {name} to have value at least 0, but got value {x} "
                               "(while checking arguments for ctc_loss_allocate_outputs)")
        if hi is not None and x > hi:
            raise RuntimeError(f"Expected {name} to have value at most {hi}, but got value {x} "
                               "(while checking arguments for ctc_loss_allocate_outputs)")


def _padded_targets(targets, tl, n, batched):
    """(N, S) int64 targets and S; concatenated targets are gathered into rows."""
    if batched and targets.dim() == 2:
        if targets.shape[0] != n:
            raise RuntimeError(f"Expected tensor to have size {n} at dimension 0, but got size "
                               f"{targets.shape[0]} for argument #2 'targets' (while checking arguments for "
                               "ctc_loss_allocate_outputs)")
        s = targets.shape[1]
        if tl and max(tl) > s:
            raise RuntimeError(f"Expected tensor to have size at least {max(tl)} at dimension 1, but got size "
                               f"{s} for argument #2 'targets' (while checking arguments for "
                               "ctc_loss_allocate_outputs)")
        return targets.to(janus.int64), s
    if targets.dim() != 1:
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.dim()}-dimensional tensor for argument "
                           "#2 'targets' (while checking arguments for ctc_loss_allocate_outputs)")
    if not batched:
        s = targets.shape[0]
        if tl[0] > s:
            raise RuntimeError(f"Expected tensor to have size at least {tl[0]} at dimension 1, but got size {s} "
                               "for argument #2 'targets' (while checking arguments for ctc_loss_allocate_outputs)")
        return targets.to(janus.int64).unsqueeze(0), s
    total = sum(tl)
    if targets.shape[0] != total:
        raise RuntimeError(f"Expected tensor to have size {total} at dimension 0, but got size {targets.shape[0]} "
                           "for argument #2 'targets' (while checking arguments for ctc_loss_allocate_outputs)")
    s = max(tl) if tl else 0
    if s == 0:
        return janus.zeros((n, 0), dtype=janus.int64, device=targets.device), 0
    # row b, column k reads targets[offset_b + k] (k < length_b; element 0 past it, masked later)
    idx, off = [], 0
    for length in tl:
        idx.extend(off + k if k < length else 0 for k in range(s))
        off += length
    from janus._functions import _data_index  # a length the data decides (the longest target)
    flat = targets.to(janus.int64)[_data_index(idx, targets.device)]
    return flat.reshape(n, s), s


def _logsumexp3(stk):
    """logsumexp over dim 0, -inf where all three are -inf; the shift is a
    constant and the log sees 1 there, so no NaN enters the gradient."""
    m = stk.amax(0).detach()
    m = janus.where(m == _NEG_INF, 0.0, m)
    e = (stk - m).exp().sum(0)
    live = e > 0
    return janus.where(live, janus.where(live, e, 1.0).log() + m, _NEG_INF)


def _ctc(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if isinstance(input_lengths, janus.Tensor) != isinstance(target_lengths, janus.Tensor):
        raise TypeError("ctc_loss() received an invalid combination of arguments - input_lengths and "
                        "target_lengths must both be Tensors or both be tuples of ints")
    if not isinstance(log_probs, janus.Tensor) or not isinstance(targets, janus.Tensor):
        raise TypeError("ctc_loss(): argument 'log_probs' and 'targets' must be Tensors")
    batched = log_probs.dim() == 3
    if log_probs.dim() not in (2, 3):
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.dim()}-dimensional tensor for "
                           "argument #1 'log_probs' (while checking arguments for ctc_loss_allocate_outputs)")
    if log_probs.dtype not in (janus.float32, janus.float64):
        raise NotImplementedError(f"\"ctc_loss\" not implemented for '{_tname(log_probs.dtype)}'")
    if log_probs.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    lp = log_probs if batched else log_probs.unsqueeze(1)
    T, N, C = lp.shape
    il = _host_lengths(input_lengths, "input_lengths")
    tl = _host_lengths(target_lengths, "target_lengths")
    if len(il) != N:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tl) != N:
        raise RuntimeError("target_lengths must be of size batch_size")
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    _check_range(il, "input_lengths", T)
    _check_range(tl, "target_lengths", None)
    tg, S = _padded_targets(targets, tl, N, batched)
    dev, dt = lp.device, lp.dtype
    tg = tg.to(dev)  # torch takes host targets with device log_probs
    ilen = _device_lengths(input_lengths, il, dev)   # (N,)
    tlen = _device_lengths(target_lengths, tl, dev)  # (N,)
    X = 2 * S + 1

    # extended labels (N, X): blank at even positions, the target (blank past its length) at odd ones
    k = janus.arange(S, device=dev)
    lab = janus.where(k[None, :] < tlen[:, None], tg, blank)
    ext = janus.cat([janus.stack([janus.full((N, S), blank, dtype=janus.int64, device=dev), lab], 2)
                     .reshape(N, 2 * S), janus.full((N, 1), blank, dtype=janus.int64, device=dev)], 1)
    pos = janus.arange(X, device=dev)
    # skip from s-2: odd s past 1 whose label differs from the one two back (torch's test)
    back2 = janus.cat([janus.full((N, 2), -1, dtype=janus.int64, device=dev), ext], 1)[:, :X]
    skip = (ext != back2) & ((pos % 2 == 1) & (pos >= 2))[None, :]
    lpe = lp.gather(2, ext.unsqueeze(0).expand(T, N, X))         # (T, N, X): each position's label
    active = (janus.arange(T, device=dev)[:, None] < ilen[None, :])[:, :, None]  # (T, N, 1): t inside the input

    start = (pos[None, :] == 0) | ((pos[None, :] == 1) & (tlen[:, None] > 0))
    alpha = janus.where(start, lpe[0], _NEG_INF)
    ninf2 = janus.full((N, 2), _NEG_INF, dtype=dt, device=dev)
    for t in range(1, T):
        pad = janus.cat([ninf2, alpha], 1)
        two = janus.where(skip, pad[:, :-2], _NEG_INF)
        new = _logsumexp3(janus.stack([alpha, pad[:, 1:-1], two])) + lpe[t]
        alpha = janus.where(active[t], new, alpha)  # an ended sequence keeps its variables

    # log-likelihood: logsumexp of the last two extended positions at the input's end
    last = janus.stack([(2 * tlen - 1).clamp(min=0), 2 * tlen], 1)
    tail = alpha.gather(1, last)
    tail = janus.where(janus.stack([tlen > 0, janus.ones_like(tlen, dtype=janus.bool)], 1), tail, _NEG_INF)
    m = tail.amax(1).detach()
    m = janus.where(m == _NEG_INF, 0.0, m)
    s = (tail - m[:, None]).exp().sum(1)

    # torch's extra exp(log_probs) gradient for t < input length (a zero-valued term; see the docstring)
    w = lp.detach().exp()
    fin = active & janus.isfinite(w)
    w = janus.where(fin, w, 0.0)
    lpz = janus.where(janus.isfinite(lp), lp, 0.0)
    # masked after the product too: a NaN gradient of s (an impossible alignment) stays within t < length
    u = janus.where(fin, w * (lpz - lpz.detach()), 0.0).sum((0, 2))
    s = s - s * u

    nonempty = ilen > 0
    ok = nonempty & (s > 0) if zero_infinity else nonempty
    # input length 0: likelihood 1 for an empty target, else 0 (torch's rule)
    empty_ll = janus.where(tlen == 0, 0.0, _NEG_INF).to(dt)
    ll = janus.where(ok, janus.where(ok, s, 1.0).log() + m, janus.where(nonempty, _NEG_INF, empty_ll))
    nll = -ll
    if zero_infinity:
        nll = janus.where(nll == math.inf, 0.0, nll)
    if reduction == "none":
        return nll if batched else nll.squeeze(0)
    if reduction == "sum":
        return nll.sum()
    return (nll / tlen.clamp(min=1).to(dt)).mean()


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """The Connectionist Temporal Classification loss, as torch.nn.functional.ctc_loss.

    log_probs (T, N, C) or (T, C) (log_softmax outputs); targets (N, S) padded or the
    targets concatenated (sum(target_lengths),); input_lengths / target_lengths tensors
    or tuples of ints.  reduction 'mean' divides each loss by its target length
    (at least 1) and averages over the batch.  Under autocast it runs in float32."""
    if _C._autocast_active():  # torch's autocast lists ctc_loss as a float32 op
        if isinstance(log_probs, janus.Tensor) and log_probs.dtype in (janus.float16, janus.bfloat16):
            log_probs = log_probs.float()
        token = _C._autocast_suspend()
        try:
            return _ctc(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity)
        finally:
            _C._autocast_resume(token)
    return _ctc(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity)
