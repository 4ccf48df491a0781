"""janus.jit: torch.jit's module path, so a script that uses TorchScript's
decorators and calls runs unchanged.  Janus compiles a training step by
recording it, optimizing the recording offline and replaying it (`janus
record`/`optimize`/`replay`), so nothing here compiles: the Python runs as
written, as PyTorch runs it with PYTORCH_JIT=0.

- script(obj) returns obj itself (a function, a Module instance or a class),
  also as the decorator @torch.jit.script.  Torch returns a ScriptFunction /
  ScriptModule instead, with .code, .graph and .save(); janus's result has
  only the object's own attributes, and no TorchScript type checks run.
- trace(func, example_inputs) and trace_module(mod, inputs) return func /
  mod itself without running it.  Torch runs the function on the example
  inputs while tracing (and again on them, or on check_inputs, to check the
  trace): a module in training mode updates its BatchNorm running
  statistics there and draws from the random generator.  Janus does
  neither.  Nor is the traced control flow frozen: the Python runs as
  written for every input (a torch trace replays the branch taken on the
  example inputs).
- ignore, unused, export, interface, _overload, _overload_method return
  their argument (ignore(drop=True) returns such a decorator).
- is_scripting() and is_tracing() are False; annotate(type, value) and
  Attribute(value, type) return value; Final is typing.Final.
- fork(func, *args, **kwargs) runs func at once (an exception raises from
  fork, as torch's eager fork does) and returns a Future whose wait()
  gives the result; wait(fut) is fut.wait().

ScriptModule, ScriptFunction, save, load, freeze, optimize_for_inference and
the rest of torch.jit are left out: a script using them gets janus's
unsupported-name error at that line (janus/_unsupported.py), rather than an
isinstance() that answers for a module that was never scripted or an
archive format janus cannot run.
"""
import types
from typing import Final

import janus

__all__ = ["script", "trace", "trace_module", "ignore", "unused", "export", "interface", "is_scripting",
           "is_tracing", "annotate", "Final", "Attribute", "Future", "fork", "wait"]


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """obj itself: a function, a Module instance or a class (see the module's docstring)."""
    # torch's own check, so a script that fails there fails here too
    if isinstance(obj, type) and issubclass(obj, janus.nn.Module):
        raise RuntimeError(f"Type '{obj}' cannot be compiled since it inherits from nn.Module, "
                           "pass an instance instead")
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    """func itself, not run: no BatchNorm statistics or random numbers are used
    up by tracing, and its control flow stays Python's for every input."""
    return func


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
                 strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
                 example_inputs_is_kwarg=False, _store_inputs=True):
    """mod itself, not run (as trace)."""
    return mod


def ignore(drop=False, **kwargs):
    """@ignore, @ignore(drop=...): the function itself."""
    if callable(drop):
        return drop
    if not isinstance(drop, bool):
        raise RuntimeError(f"Argument to @torch.jit.ignore must be a bool or a function but got {drop}")
    return lambda fn: fn


def unused(fn):
    return fn


def export(fn):
    return fn


def interface(obj):
    return obj


def _overload(func):
    # the overloads are declarations; the definition that follows them is the one that runs
    return func


def _overload_method(func):
    return func


def is_scripting():
    """False: janus never runs a script's code as TorchScript."""
    return False


def is_tracing():
    """False: trace() does not run the function."""
    return False


def annotate(the_type, the_value):
    return the_value


def Attribute(value, type):
    # torch's eager ScriptModule unpacks this into value; janus has no ScriptModule to do it
    return value


class Future:
    """fork()'s result, already computed."""
    __slots__ = ("_value",)
    __class_getitem__ = classmethod(types.GenericAlias)  # annotations spell torch.jit.Future[Tensor]

    def __init__(self, value):
        self._value = value

    def done(self):
        return True

    def value(self):
        return self._value

    def wait(self):
        return self._value


def fork(func, *args, **kwargs):
    """Runs func(*args, **kwargs) now; its Future holds the result."""
    return Future(func(*args, **kwargs))


def wait(future):
    return future.wait()
