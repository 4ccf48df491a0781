"""janus.amp.GradScaler: torch.amp.GradScaler in plain Python over table ops.

Loss scaling for float16 training: scale() multiplies the loss by the
current scale (a float32 0-d tensor), unscale_() divides the optimizer's
gradients by it and notes whether any is inf/nan, step() skips the
optimizer step when one was, and update() backs the scale off (x0.5) after
such a step or grows it (x2) after growth_interval clean steps in a row --
PyTorch's defaults and its _amp_update_scale_ rule.  Every tensor operation
goes through the dispatcher (recorded and replayed like any op); whether to
step costs one host read per step (found_inf.item()), as in PyTorch.
A skipped step still ends the recorder's training step (janus._step_hook).
"""
import warnings
from collections import defaultdict

import janus

__all__ = ["GradScaler", "OptState"]


class OptState:
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = str(device).split(":")[0]
        self._enabled = enabled
        if self._device == "cuda" and enabled and not janus.cuda.is_available():
            warnings.warn("janus.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None  # float32 0-d tensor, made on the first scale()
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None  # clean steps in a row (a Python int: read on the host anyway)
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # ---- scaling -----------------------------------------------------------
    def _lazy_init_scale_growth_tracker(self, dev):
        self._scale = janus.full((), float(self._init_scale), dtype=janus.float32, device=dev)
        self._growth_tracker = self._init_growth_tracker

    def scale(self, outputs):
        """outputs * scale (a tensor, or every tensor of a nested list/tuple)."""
        if not self._enabled:
            return outputs

        def apply(v):
            if isinstance(v, janus.Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(v.device)
                return v * self._scale.to(v.device)
            if isinstance(v, (list, tuple)):
                return type(v)(apply(x) for x in v)
            if hasattr(v, "__iter__"):
                return map(apply, v)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply(outputs)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        found = {}
        with janus.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if not allow_fp16 and g.dtype == janus.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    dev = str(g.device)
                    bad = janus.isfinite(g).logical_not().any().to(janus.float32)
                    found[dev] = janus.maximum(found.get(dev, found_inf.to(g.device)), bad.to(g.device))
                    g.mul_(inv_scale.to(g.device))
        return found

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale (in place), once per step."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] == OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in float64, as PyTorch (float32 division can be inexact)
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = janus.full((), 0.0, dtype=janus.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        hook = getattr(janus, "_step_hook", None)  # a skipped step still ends the recorded step
        if hook is not None:
            hook()
        return None

    def step(self, optimizer, *args, **kwargs):
        """unscale_() if not done yet, then optimizer.step() unless a gradient was inf/nan."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] == OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Back off after a step with inf/nan gradients, grow after growth_interval clean steps."""
        if not self._enabled:
            return
        _scale, _ = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element janus.FloatTensor with "
                          "requires_grad=False.")
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                self._scale.copy_(new_scale.reshape(()))
        else:
            found = [f for st in self._per_optimizer_states.values() for f in st["found_inf_per_device"].values()]
            if len(found) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            # PyTorch's _amp_update_scale_, in float32
            with janus.no_grad():
                if sum(f.item() for f in found):
                    self._scale.mul_(self._backoff_factor)
                    self._growth_tracker = 0
                else:
                    successful = self._growth_tracker + 1
                    if successful == self._growth_interval:
                        grown = self._scale * self._growth_factor
                        if janus.isfinite(grown).item():
                            self._scale.copy_(grown)
                        self._growth_tracker = 0
                    else:
                        self._growth_tracker = successful
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # ---- queries and state -------------------------------------------------
    def get_scale(self):
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker = state_dict["_growth_tracker"]
