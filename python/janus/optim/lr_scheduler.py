"""janus.optim.lr_scheduler: learning-rate schedules that rewrite the 'lr' of
an optimizer's param groups, with torch's exact formulas and bookkeeping.

LRScheduler(optimizer, last_epoch=-1) records group['initial_lr'] (as
base_lrs) and takes an initial step at construction, so right after
construction the groups hold the epoch-0 rates.  step() advances last_epoch
and applies get_lr() -- the recursive (chainable) form torch uses; step(epoch)
(deprecated in torch) jumps to an epoch with the closed form.
state_dict()/load_state_dict() save everything but the optimizer (and, for
LambdaLR, the functions themselves, only callable objects' __dict__).
"""
import math
import types
import warnings
from bisect import bisect_right
from collections import Counter

from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)


class _enable_get_lr_call:
    def __init__(self, o):
        self.o = o

    def __enter__(self):
        self.o._get_lr_called_within_step = True
        return self

    def __exit__(self, *exc):
        self.o._get_lr_called_within_step = False


def _warn_get_lr_called_within_step(sched):
    if not sched._get_lr_called_within_step:
        warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                      UserWarning, stacklevel=3)


class LRScheduler:
    """Base class: subclasses implement get_lr() (and optionally _get_closed_form_lr())."""

    _get_lr_called_within_step = False

    def __init__(self, optimizer, last_epoch=-1, verbose="deprecated"):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                                   "an optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.verbose = verbose
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self.step()

    def state_dict(self):
        """Everything but the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        """The learning rates (one per group) set by the last step()."""
        return self._last_lr

    def get_lr(self):
        raise NotImplementedError

    def step(self, epoch=None):
        # torch's warning for the old order (scheduler.step() before optimizer.step())
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, "
                "you should call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  "
                "Failure to do this will result in PyTorch skipping the first value of the learning rate "
                "schedule. See more details at https://pytorch.org/docs/stable/optim.html"
                "#how-to-adjust-learning-rate", UserWarning, stacklevel=2)
        self._step_count += 1
        with _enable_get_lr_call(self):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
                self.last_epoch = epoch
                if hasattr(self, "_get_closed_form_lr"):
                    values = self._get_closed_form_lr()
                else:
                    values = self.get_lr()
        for param_group, lr in zip(self.optimizer.param_groups, values):
            param_group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


_LRScheduler = LRScheduler  # torch's old name


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(epoch); one function, or a list with one per group."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1, verbose="deprecated"):
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch, verbose)

    def state_dict(self):
        """Plain functions and lambdas are not saved; callable objects' __dict__ is."""
        state_dict = {key: value for key, value in self.__dict__.items()
                      if key not in ("optimizer", "lr_lambdas")}
        state_dict["lr_lambdas"] = [None] * len(self.lr_lambdas)
        for idx, fn in enumerate(self.lr_lambdas):
            if not isinstance(fn, types.FunctionType):
                state_dict["lr_lambdas"][idx] = fn.__dict__.copy()
        return state_dict

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for idx, fn in enumerate(lr_lambdas):
            if fn is not None:
                self.lr_lambdas[idx].__dict__.update(fn)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        return [base_lr * lmbda(self.last_epoch) for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class StepLR(LRScheduler):
    """Multiply the lr by gamma every step_size epochs."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1, verbose="deprecated"):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if (self.last_epoch == 0) or (self.last_epoch % self.step_size != 0):
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by gamma at each milestone epoch (repeated milestones compound)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1, verbose="deprecated"):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        if not isinstance(self.milestones, Counter):  # e.g. a plain dict from a JSON-ish round trip
            self.milestones = Counter({int(k): v for k, v in dict(self.milestones).items()})

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self.last_epoch not in self.milestones:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch]
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by gamma every epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1, verbose="deprecated"):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial lr down to eta_min over T_max epochs
    (then back up: the recursive form is periodic with period 2 * T_max)."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1, verbose="deprecated"):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        elif self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min)
                    * (1 + math.cos((self.last_epoch) * math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, self.optimizer.param_groups)]
        elif (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, self.optimizer.param_groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (group["lr"] - self.eta_min) + self.eta_min
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]
