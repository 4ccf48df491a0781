"""nn.Module.__call__ is a C method descriptor (csrc/module_call.c) that
makes the choice the Python reference (janus.nn.module._py_call) makes:
janus record's hook, a replay's hook, or self.forward(*args, **kwargs).
Checked here: it calls what the reference calls, with the same arguments
(a tuple and a fresh dict for the hooks), binds like a function (unbound
calls, super().__call__, a patched instance forward), raises what Python
raises, and keeps no references."""
import sys

import pytest

import janus
import janus.nn as nn
from janus import _record
from janus.nn import module as module_py


class Echo(nn.Module):
    def forward(self, *args, **kwargs):
        return args, kwargs


def test_is_the_c_descriptor():
    assert type(nn.Module.__call__).__name__ == "ModuleCall"
    assert nn.Module.__call__.__name__ == "__call__"
    assert module_py._py_call.__code__.co_name == "__call__"  # the reference is kept


def test_calls_forward_with_args_and_kwargs():
    m = Echo()
    assert m(1, 2, a=3) == ((1, 2), {"a": 3})
    assert m() == ((), {})
    assert nn.Module.__call__(m, 4) == ((4,), {})  # unbound, from the class
    assert nn.Module.__call__.__get__(m, Echo)(5, b=6) == ((5,), {"b": 6})
    assert m.__call__(7) == ((7,), {})
    lin = nn.Linear(3, 2)
    x = janus.randn(4, 3)
    assert janus.equal(lin(x), lin.forward(x))


def test_instance_forward_and_subclass_call():
    m = Echo()
    m.forward = lambda x: x * 2  # an instance attribute wins, as for the Python __call__
    assert m(21) == 42

    class Wrap(Echo):
        def __call__(self, x):
            return "wrapped", super().__call__(x)

    assert Wrap()(1) == ("wrapped", ((1,), {}))


def test_errors_are_pythons():
    with pytest.raises(TypeError, match="needs the module"):
        nn.Module.__call__()

    class Bad(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        Bad()(1)
    with pytest.raises(NotImplementedError, match="has no forward"):
        nn.Module()(1)
    with pytest.raises(TypeError):
        nn.Linear(3, 2)(janus.randn(1, 3), janus.randn(1, 3))  # forward takes one input


@pytest.mark.parametrize("hook", ["replay", "record", "module_hooks"])
def test_hooks_get_what_the_reference_gives(monkeypatch, hook):
    seen = []

    def fn(mod, args, kwargs):
        seen.append((mod, args, kwargs, type(args), type(kwargs)))
        kwargs["mutated"] = True  # a fresh dict per call: the next call does not see it
        return "hooked"

    if hook != "module_hooks":  # hooks an earlier test registered stay counted (no handle removes them)
        monkeypatch.setattr(janus, "_module_hooks", 0)
    if hook == "replay":
        monkeypatch.setattr(janus, "_region_module", fn)
    elif hook == "module_hooks":  # forward hooks live somewhere: the hooked call comes first
        monkeypatch.setattr(janus, "_module_hooks", 1)
        monkeypatch.setattr(janus, "_module_hooked_call", fn)
        monkeypatch.setattr(janus, "_region_module", lambda *a: "not this")
    else:
        monkeypatch.setattr(_record, "regions", True)
        monkeypatch.setattr(_record, "module_call", fn)
    m = Echo()
    assert m(1, k=2) == "hooked"
    assert module_py._py_call(m, 1, k=2) == "hooked"
    assert m(3) == "hooked"
    assert [s[0] for s in seen] == [m, m, m]
    assert [s[1:] for s in seen] == [((1,), {"k": 2, "mutated": True}, tuple, dict)] * 2 + \
        [((3,), {"mutated": True}, tuple, dict)]


def test_no_references_kept(monkeypatch):
    m, x = Echo(), object()
    before = sys.getrefcount(x)
    for _ in range(1000):
        m(x, k=x)
    monkeypatch.setattr(janus, "_region_module", lambda mod, args, kwargs: None)
    for _ in range(1000):
        m(x, k=x)
    assert sys.getrefcount(x) == before
