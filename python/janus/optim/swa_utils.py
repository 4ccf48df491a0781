"""janus.optim.swa_utils: Stochastic Weight Averaging and exponential moving
averages of a model's weights (torch.optim.swa_utils).

AveragedModel keeps a deep copy of a model whose parameters (and, with
use_buffers=True, buffers) are running averages of the model's, updated by
update_parameters(model); get_ema_multi_avg_fn / get_swa_multi_avg_fn (in
place, lists of tensors) and get_ema_avg_fn / get_swa_avg_fn (one tensor,
returning the new value) are the averaging rules; update_bn recomputes
BatchNorm statistics with one pass over a loader; SWALR anneals each
group's learning rate to a fixed swa_lr.

torch's multi-tensor rules call its _foreach kernels, grouped by device and
dtype; janus has no foreach ops, so the same updates run one tensor at a
time with in-place ops under no_grad (lerp_ for floating tensors, as
_foreach_lerp_ computes; add_ / copy_ of the formula otherwise).  The
results are torch's up to float rounding.  Where torch picks the rule by
device (the default SWA average: _foreach_lerp_ on CUDA, the one-tensor
formula on the CPU), janus does the same.
"""
import itertools
import math
import warnings
from copy import deepcopy

import janus
from janus import Tensor
from janus.nn import Module
from janus.nn.modules.batchnorm import _BatchNorm

from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]

_INTEGER_ADDCDIV = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform "
    "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
    "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
    "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter "
    "implementation: (input + value * tensor1 / tensor2), for all dtypes.")


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """The in-place EMA rule over lists of tensors:
    W_ema <- decay * W_ema + (1 - decay) * W_model (lerp with weight 1 - decay
    for floating tensors, as torch's _foreach_lerp_)."""
    _check_decay(decay)

    @janus.no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        if janus.is_floating_point(ema_param_list[0]):
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.lerp_(p_model, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """The in-place equal-weight (SWA) rule over lists of tensors:
    W_avg <- W_avg + (W_model - W_avg) / (num_averaged + 1)."""

    @janus.no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        if janus.is_floating_point(averaged_param_list[0]):
            weight = 1 / (num_averaged + 1)  # a 0-d tensor when num_averaged is one, as in torch
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                p_avg.lerp_(p_model, weight)
        else:
            # torch: _foreach_addcdiv_ (a tensor count) / _foreach_add_(alpha=float): both
            # refuse integer tensors
            if isinstance(num_averaged, Tensor):
                raise RuntimeError(_INTEGER_ADDCDIV)
            raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """The EMA rule for one tensor: returns decay * W_ema + (1 - decay) * W_model."""
    _check_decay(decay)

    @janus.no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """The equal-weight (SWA) rule for one tensor: returns
    W_avg + (W_model - W_avg) / (num_averaged + 1)."""

    @janus.no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _group_by_device_and_dtype(avg, cur):
    """torch's _group_tensors_by_device_and_dtype for two aligned lists:
    {(device, dtype): ([avg...], [cur...])} in first-seen order."""
    groups = {}
    for a, c in zip(avg, cur):
        g = groups.setdefault((a.device, a.dtype), ([], []))
        g[0].append(a)
        g[1].append(c)
    return groups


class AveragedModel(Module):
    """A running average of a model's weights, for Stochastic Weight Averaging
    (SWA) and exponential moving averages (EMA), as torch.optim.swa_utils.
    AveragedModel.

    model is deep-copied (to device when given); n_averaged (a long buffer)
    counts the models averaged.  update_parameters(model): the first call
    copies model's parameters, later ones apply avg_fn (one tensor at a time,
    returning the new value) or multi_avg_fn (lists, in place), by default the
    equal-weight SWA average.  With use_buffers=True the buffers are averaged
    too; otherwise they are copied from model.  forward calls the averaged
    module.  avg_fn and multi_avg_fn are not saved in the state_dict.
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", janus.tensor(0, dtype=janus.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Average model's parameters (and buffers, with use_buffers) into this one's."""
        self_param = (itertools.chain(self.module.parameters(), self.module.buffers())
                      if self.use_buffers else self.parameters())
        model_param = (itertools.chain(model.parameters(), model.buffers())
                       if self.use_buffers else model.parameters())
        self_param_detached = []
        model_param_detached = []
        copy_param = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_param, model_param):
            p_model_ = p_model.detach().to(p_averaged.device)
            self_param_detached.append(p_averaged.detach())
            model_param_detached.append(p_model_)
            if copy_param:
                p_averaged.detach().copy_(p_model_)

        if not copy_param:  # n_averaged > 0 (read once: a count is never negative)
            if self.multi_avg_fn is not None or self.avg_fn is None:
                groups = _group_by_device_and_dtype(self_param_detached, model_param_detached)
                for (device, _), (self_params, model_params) in groups.items():
                    n_averaged = self.n_averaged.to(device)
                    if self.multi_avg_fn:
                        self.multi_avg_fn(self_params, model_params, n_averaged)
                    elif device.type == "cuda":  # torch's foreach devices
                        get_swa_multi_avg_fn()(self_params, model_params, n_averaged)
                    else:
                        avg_fn = get_swa_avg_fn()
                        for p_averaged, p_model in zip(self_params, model_params, strict=True):
                            p_averaged.copy_(avg_fn(p_averaged, p_model, n_averaged))
            else:
                for p_averaged, p_model in zip(self_param_detached, model_param_detached, strict=True):
                    n_averaged = self.n_averaged.to(p_averaged.device)
                    p_averaged.detach().copy_(self.avg_fn(p_averaged.detach(), p_model, n_averaged))

        if not self.use_buffers:
            # buffers not averaged: kept in sync with the source model
            for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1


@janus.no_grad()
def update_bn(loader, model, device=None):
    """Recompute the running_mean / running_var of every BatchNorm layer of
    model with one pass over loader (batches: tensors, or lists/tuples whose
    first element is the input), as a cumulative average (momentum None);
    the momenta and the training flag are restored afterwards."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum

    if not momenta:
        return

    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None

    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)

    for bn_module in momenta:
        bn_module.momentum = momenta[bn_module]
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's learning rate to a fixed swa_lr (a float, or a list
    with one per group) over anneal_epochs epochs, by cosine ("cos") or linear
    ("linear") annealing, then keeps it there (torch.optim.swa_utils.SWALR).
    Each group gets group['swa_lr']."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for swa_lr, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = swa_lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        """The next rates: each group's lr interpolated towards swa_lr by the
        anneal function of step / anneal_epochs (swa_lr from then on)."""
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        """Everything but the optimizer and the anneal function."""
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
