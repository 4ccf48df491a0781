"""nn.Module's state_dict protocol (janus/nn/module.py): state_dict /
_save_to_state_dict, load_state_dict / _load_from_state_dict (strict,
assign), get_extra_state / set_extra_state, the version _metadata, the four
state-dict hooks (order, arguments, return conventions, removal, deepcopy
and pickling), and the small methods get_buffer, set_submodule,
share_memory, to_empty, type and compile; the old weight_norm checkpoint
loading into the parametrization weight_norm.  Each scenario runs on janus
and, where PyTorch imports, on PyTorch with the same result (keys, values,
hook logs, error messages)."""
import copy
import io
import pickle

import numpy as np
import pytest

import janus
import janus.nn as nn


@pytest.fixture(autouse=True)
def no_module_hooks_counted():
    before = janus._module_hooks
    yield
    assert janus._module_hooks == before  # state-dict hooks never route module calls through the hook path


def _torch():
    return pytest.importorskip("torch")


def _np(t):
    return t.detach().cpu().numpy()


def _to_janus(sd):
    out = {k: janus.tensor(_np(v)) if hasattr(v, "detach") else v for k, v in sd.items()}
    return out


def _to_torch(torch, sd):
    return {k: torch.tensor(_np(v)) if hasattr(v, "detach") else v for k, v in sd.items()}


def _net(lib):
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.ReLU(),
                            lib.nn.Sequential(lib.nn.Linear(4, 2, bias=False)))
    net[1].register_buffer("scratch", lib.zeros(2), persistent=False)
    net[3].register_buffer("absent", None)
    return net


def _err(fn):
    with pytest.raises(Exception) as ei:
        fn()
    return type(ei.value).__name__, str(ei.value).replace("torch.Size", "janus.Size")


# ---- keys, values, metadata ------------------------------------------------
def test_state_dict_keys_values_and_metadata():
    net = _net(janus)
    sd = net.state_dict()
    assert list(sd) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                        "1.num_batches_tracked", "3.0.weight"]
    assert not sd["0.weight"].requires_grad and net[0].weight.requires_grad
    assert sd._metadata == {"": {"version": 1}, "0": {"version": 1}, "1": {"version": 2}, "2": {"version": 1},
                            "3": {"version": 1}, "3.0": {"version": 1}}
    kv = net.state_dict(keep_vars=True)
    assert kv["0.weight"] is net[0].weight
    assert net.state_dict(prefix="m.")["m.0.bias"] is not None
    dest = {}
    assert net.state_dict(destination=dest) is dest and len(dest) == 8 and not hasattr(dest, "_metadata")
    with pytest.warns(FutureWarning, match="Positional args are being deprecated"):
        pos = net.state_dict(None, "p.", True)
    assert list(pos)[0] == "p.0.weight" and pos["p.0.weight"] is net[0].weight


def test_state_dict_matches_torch():
    torch = _torch()
    jn, tn = _net(janus), _net(torch)
    tn.load_state_dict(_to_torch(torch, jn.state_dict()))
    js, ts = jn.state_dict(), tn.state_dict()
    assert list(js) == list(ts)
    assert js._metadata == ts._metadata
    for k in js:
        np.testing.assert_array_equal(_np(js[k]), _np(ts[k]))
    # and back: torch's checkpoint (with its metadata) loads into janus
    jn2 = _net(janus)
    ck = _to_janus(ts)
    assert repr(jn2.load_state_dict(ck)) == repr(tn.load_state_dict(ts)) == "<All keys matched successfully>"


def _custom_classes(lib):
    class Scaled(lib.nn.Module):
        """Overrides the per-module protocol: saves weight*2 as 'w2', loads it back halved."""
        _version = 3

        def __init__(self):
            super().__init__()
            self.weight = lib.nn.Parameter(lib.ones(2))

        def _save_to_state_dict(self, destination, prefix, keep_vars):
            destination[prefix + "w2"] = self.weight.detach() * 2

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                  error_msgs):
            self.seen_metadata = dict(local_metadata)
            if prefix + "w2" in state_dict:
                state_dict[prefix + "weight"] = state_dict.pop(prefix + "w2") / 2
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                          unexpected_keys, error_msgs)

    class Extra(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)
            self.step = 5

        def get_extra_state(self):
            return {"step": self.step}

        def set_extra_state(self, state):
            self.step = state["step"]

    class SaveOnly(lib.nn.Module):  # get_extra_state without set_extra_state
        def get_extra_state(self):
            return "x"

    return Scaled, Extra, SaveOnly


def _custom_scenario(lib):
    Scaled, Extra, SaveOnly = _custom_classes(lib)
    out = {}
    outer = lib.nn.Sequential(Scaled(), Extra())
    with lib.no_grad():
        outer[0].weight.mul_(3)
    sd = outer.state_dict()
    out["keys"] = list(sd)
    out["w2"] = _np(sd["0.w2"]).tolist()
    out["extra"] = sd["1._extra_state"]
    out["meta"] = dict(sd._metadata)
    fresh = lib.nn.Sequential(Scaled(), Extra())
    fresh[1].step = 0
    out["load"] = repr(fresh.load_state_dict(sd))
    out["loaded_w"] = _np(fresh[0].weight).tolist()
    out["step"] = fresh[1].step
    out["seen_metadata"] = fresh[0].seen_metadata
    del sd["1._extra_state"]
    out["missing_extra"] = _err(lambda: fresh.load_state_dict(sd))
    out["nonstrict"] = repr(fresh.load_state_dict(sd, strict=False))
    out["saveonly_keys"] = list(SaveOnly().state_dict())
    out["saveonly_load"] = _err(lambda: SaveOnly().load_state_dict({"_extra_state": "x"}))
    out["plain_unexpected"] = _err(lambda: lib.nn.Linear(1, 1).load_state_dict(
        {"weight": lib.ones(1, 1), "bias": lib.ones(1), "_extra_state": 1}))
    return out


def test_overridden_protocol_and_extra_state():
    out = _custom_scenario(janus)
    assert out["keys"] == ["0.w2", "1._extra_state", "1.lin.weight", "1.lin.bias"]  # a module's own first
    assert out["w2"] == [6.0, 6.0] and out["loaded_w"] == [3.0, 3.0] and out["step"] == 5
    assert out["meta"][""] == {"version": 1} and out["meta"]["0"] == {"version": 3}
    assert out["seen_metadata"] == {"version": 3}
    assert out["missing_extra"] == ("RuntimeError", 'Error(s) in loading state_dict for Sequential:\n\t'
                                    'Missing key(s) in state_dict: "1._extra_state". ')
    assert "1._extra_state" in out["nonstrict"]
    assert out["saveonly_keys"] == ["_extra_state"]
    assert "Unexpected key(s) in state_dict: \"_extra_state\"" in out["plain_unexpected"][1]


def test_overridden_protocol_and_extra_state_match_torch():
    torch = _torch()
    assert _custom_scenario(janus) == _custom_scenario(torch)


def test_base_extra_state_methods_are_never_called():
    with pytest.raises(RuntimeError, match=r"Reached a code path in Module.get_extra_state\(\) that should never"):
        nn.Module().get_extra_state()
    with pytest.raises(RuntimeError, match=r"Reached a code path in Module.set_extra_state\(\)"):
        nn.Module().set_extra_state(1)


# ---- load_state_dict errors and options ------------------------------------
def _errors_scenario(lib):
    net = _net(lib)
    good = net.state_dict()
    out = {}
    bad = dict(good)
    del bad["0.bias"]
    bad["extra"] = lib.ones(1)
    bad["3.0.nope"] = lib.ones(1)
    bad["3.9.weight"] = lib.ones(1)
    bad["0.weight"] = lib.ones(2, 2)
    bad["1.weight"] = 3
    out["strict"] = _err(lambda: net.load_state_dict(bad))
    out["nonstrict"] = _err(lambda: net.load_state_dict(bad, strict=False))
    del bad["0.weight"], bad["1.weight"]
    r = net.load_state_dict(bad, strict=False)
    out["incompatible"] = (r.missing_keys, r.unexpected_keys, repr(r), list(r))
    out["type"] = _err(lambda: net.load_state_dict([("0.weight", lib.ones(4, 3))]))
    scalar = lib.nn.BatchNorm1d(2)
    sd = scalar.state_dict()
    sd["num_batches_tracked"] = lib.tensor([7])  # a 1-element 1-d entry into a 0-d buffer
    scalar.load_state_dict(sd)
    out["scalar"] = int(scalar.num_batches_tracked)
    return out


def test_load_errors():
    out = _errors_scenario(janus)
    kind, msg = out["strict"]
    assert kind == "RuntimeError"
    assert msg == ('Error(s) in loading state_dict for Sequential:\n\t'
                   'Missing key(s) in state_dict: "0.bias". \n\t'
                   'Unexpected key(s) in state_dict: "extra", "3.9.weight", "3.0.nope". \n\t'
                   'size mismatch for 0.weight: copying a param with shape janus.Size([2, 2]) from checkpoint, '
                   'the shape in current model is janus.Size([4, 3]).\n\t'
                   'While copying the parameter named "1.weight", expected torch.Tensor or Tensor-like object '
                   "from checkpoint but received <class 'int'>")
    assert out["incompatible"][0] == ["0.weight", "0.bias", "1.weight"]
    assert out["type"] == ("TypeError", "Expected state_dict to be dict-like, got <class 'list'>.")
    assert out["scalar"] == 7


def test_load_errors_match_torch():
    torch = _torch()
    assert _errors_scenario(janus) == _errors_scenario(torch)


def test_batchnorm_version_metadata():
    bn = nn.BatchNorm1d(3)
    with janus.no_grad():
        bn.num_batches_tracked.fill_(4)
    sd = bn.state_dict()
    old = {k: v for k, v in sd.items() if k != "num_batches_tracked"}  # no _metadata: a version-1 checkpoint
    assert repr(bn.load_state_dict(old)) == "<All keys matched successfully>"
    assert int(bn.num_batches_tracked) == 4  # its own kept, as torch
    del sd["num_batches_tracked"]  # version 2 in _metadata: really missing
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "num_batches_tracked"'):
        bn.load_state_dict(sd)
    inorm = nn.InstanceNorm1d(2)
    with pytest.raises(RuntimeError, match="Unexpected running stats buffer\\(s\\) \"running_mean\" for "
                                           "InstanceNorm1d with track_running_stats=False"):
        inorm.load_state_dict({"running_mean": janus.zeros(2)})


def test_assign():
    lin = nn.Linear(2, 3)
    lin.weight.requires_grad_(False)
    bn = nn.BatchNorm1d(3)
    net = nn.Sequential(lin, bn)
    w, b, rm = janus.ones(3, 2), nn.Parameter(janus.zeros(3), requires_grad=False), janus.full((3,), 2.0)
    sd = dict(net.state_dict())
    sd.update({"0.weight": w, "0.bias": b, "1.running_mean": rm})
    net.load_state_dict(sd, assign=True)
    assert isinstance(lin.weight, nn.Parameter) and not lin.weight.requires_grad  # the module's requires_grad
    assert lin.bias is b and b.requires_grad  # a Parameter in the checkpoint is taken, requires_grad set
    assert bn.running_mean is rm and not isinstance(bn.running_mean, nn.Parameter)
    with janus.no_grad():
        w.fill_(5.0)
    assert _np(lin.weight).tolist() == [[5.0, 5.0]] * 3  # the checkpoint's tensor itself
    # without assign: copied in place, the objects stay
    p = lin.weight
    net.load_state_dict(net.state_dict())
    assert lin.weight is p


def test_assign_matches_torch():
    torch = _torch()

    def run(lib):
        lin = lib.nn.Linear(2, 3)
        lin.weight.requires_grad_(False)
        sd = {"weight": lib.ones(3, 2), "bias": lib.nn.Parameter(lib.zeros(3), requires_grad=False)}
        lin.load_state_dict(sd, assign=True)
        return (type(lin.weight).__name__, lin.weight.requires_grad, lin.bias is sd["bias"], lin.bias.requires_grad,
                sorted(n for n, _ in lin.named_parameters()))
    assert run(janus) == run(torch)


# ---- hooks -------------------------------------------------------------------
def _hooks_scenario(lib):
    log = []
    net = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.Linear(2, 1)))
    inner = net[1]

    def sd_pre(name):
        return lambda m, prefix, keep_vars: log.append(("sd_pre", name, type(m).__name__, prefix, keep_vars))

    def sd_post(name):
        def hook(m, state_dict, prefix, local_metadata):
            log.append(("sd_post", name, prefix, sorted(state_dict), dict(local_metadata)))
            state_dict[prefix + "tag"] = name  # in place
        return hook

    def load_pre(name):
        def hook(m, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
            log.append(("load_pre", name, type(m).__name__, prefix, sorted(state_dict), dict(local_metadata), strict,
                        list(missing), list(unexpected), list(errors)))
            state_dict.pop(prefix + "tag", None)
        return hook

    def load_post(name):
        def hook(m, incompatible):
            log.append(("load_post", name, type(m).__name__, list(incompatible.missing_keys),
                        list(incompatible.unexpected_keys)))
        return hook

    handles = [net.register_state_dict_pre_hook(sd_pre("root")), inner.register_state_dict_pre_hook(sd_pre("inner")),
               net.register_state_dict_post_hook(sd_post("root")), inner.register_state_dict_post_hook(sd_post("in")),
               net.register_load_state_dict_pre_hook(load_pre("root")),
               inner.register_load_state_dict_pre_hook(load_pre("inner")),
               net.register_load_state_dict_post_hook(load_post("root")),
               inner.register_load_state_dict_post_hook(load_post("inner"))]
    sd = net.state_dict(keep_vars=True)
    log.append(("keys", list(sd)))
    log.append(("load", repr(net.load_state_dict(sd))))
    for h in handles:
        h.remove()
    handles[0].remove()  # idempotent
    net.state_dict()
    net.load_state_dict(net.state_dict())
    log.append(("after removal", len(log)))
    # a post hook may edit the lists: clearing them makes a strict load pass; adding fails it
    h = net.register_load_state_dict_post_hook(lambda m, ik: ik.unexpected_keys.clear())
    sd = net.state_dict()
    sd["junk"] = lib.ones(1)
    log.append(("cleared", repr(net.load_state_dict(sd))))
    h.remove()
    with net.register_load_state_dict_post_hook(lambda m, ik: ik.missing_keys.append("made.up")):
        log.append(("added", _err(lambda: net.load_state_dict(net.state_dict()))))
    log.append(("after with", repr(net.load_state_dict(net.state_dict()))))
    # return conventions
    h = net.register_load_state_dict_post_hook(lambda m, ik: 1)
    log.append(("post returns", _err(lambda: net.load_state_dict(net.state_dict()))))
    h.remove()
    h = inner.register_state_dict_post_hook(lambda m, sd, p, md: {})
    log.append(("sd post returns", _err(lambda: net.state_dict())))
    h.remove()

    def replace(m, sd, prefix, md):
        return {"replaced": prefix}
    h = inner._register_state_dict_hook(replace)
    log.append(("private, child", list(net.state_dict())))  # a child's return value is dropped
    log.append(("private, root", dict(inner.state_dict(prefix="x."))))  # the root's is returned
    h.remove()

    def public(m, sd, prefix, md):
        pass
    net.register_state_dict_post_hook(public).remove()
    log.append(("same fn", _err(lambda: net._register_state_dict_hook(public))))
    # the private load pre hook: without the module
    h = inner._register_load_state_dict_pre_hook(lambda *a: log.append(("private load pre", len(a), a[1])))
    net.load_state_dict(net.state_dict())
    h.remove()
    h = inner._register_load_state_dict_pre_hook(lambda *a: log.append(("with module", type(a[0]).__name__)),
                                                 with_module=True)
    net.load_state_dict(net.state_dict())
    h.remove()
    return log


def test_hooks():
    log = _hooks_scenario(janus)
    assert log[0] == ("sd_pre", "root", "Sequential", "", True)
    assert log[1] == ("sd_pre", "inner", "Sequential", "1.", True)
    assert log[2] == ("sd_post", "in", "1.", ["0.bias", "0.weight", "1.0.bias", "1.0.weight"], {"version": 1})
    assert log[3][:3] == ("sd_post", "root", "")
    assert log[4] == ("keys", ["0.weight", "0.bias", "1.0.weight", "1.0.bias", "1.tag", "tag"])
    assert log[5][:4] == ("load_pre", "root", "Sequential", "")
    assert log[6][:5] == ("load_pre", "inner", "Sequential", "1.", ["1.0.bias", "1.0.weight", "1.tag"])
    assert [e[:2] for e in log[7:9]] == [("load_post", "inner"), ("load_post", "root")]
    assert log[9] == ("load", "<All keys matched successfully>")
    assert log[10] == ("after removal", 10)
    assert log[11] == ("cleared", "<All keys matched successfully>")
    assert log[12] == ("added", ("RuntimeError", "Error(s) in loading state_dict for Sequential:\n\t"
                                 'Missing key(s) in state_dict: "made.up". '))
    assert log[14][1] == ("AssertionError", "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                          "expected to return new values, if incompatible_keys need to be modified, it should be "
                          "done inplace.")
    assert log[15][1] == ("RuntimeError", "state_dict post-hook must return None")
    assert log[16] == ("private, child", ["0.weight", "0.bias", "1.0.weight", "1.0.bias"])
    assert log[17] == ("private, root", {"replaced": "x."})
    assert log[18][1] == ("RuntimeError", "Cannot register the same function as the state dict post hook that "
                          "was previously registered via register_state_dict_post_hook")
    assert log[19] == ("private load pre", 7, "1.")
    assert log[20] == ("with module", "Sequential")


def test_hooks_match_torch():
    torch = _torch()
    assert _hooks_scenario(janus) == _hooks_scenario(torch)


def _hook_a(module, state_dict, prefix, *rest):
    state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")


def _post_b(module, state_dict, prefix, local_metadata):
    state_dict[prefix + "w"] = state_dict.pop(prefix + "weight")


def _renaming(lib):
    lin = lib.nn.Linear(2, 2)
    lin.register_load_state_dict_pre_hook(_hook_a)
    lin.register_state_dict_post_hook(_post_b)
    return lin


def test_hooks_survive_deepcopy_and_pickling():
    lin = _renaming(janus)
    sd = lin.state_dict()
    assert list(sd) == ["bias", "w"]
    dup = copy.deepcopy(lin)
    assert list(dup.state_dict()) == ["bias", "w"]
    dup.load_state_dict({"w": janus.full((2, 2), 3.0), "bias": janus.zeros(2)})
    assert _np(dup.weight).tolist() == [[3.0, 3.0]] * 2 and _np(lin.weight).tolist() != [[3.0, 3.0]] * 2
    # the copy's load pre hook is bound to the copy (torch's _WrappedHook keeps the module weakly)
    hook = next(iter(dup.__dict__["_load_state_dict_pre_hooks"].values()))
    assert hook.module() is dup
    back = pickle.loads(pickle.dumps(lin))
    assert list(back.state_dict()) == ["bias", "w"]
    back.load_state_dict({"w": janus.ones(2, 2), "bias": janus.zeros(2)})
    assert _np(back.weight).tolist() == [[1.0, 1.0]] * 2
    buf = io.BytesIO()
    janus.save(lin, buf)
    buf.seek(0)
    assert list(janus.load(buf, weights_only=False).state_dict()) == ["bias", "w"]


def test_pickled_hooks_cross_to_torch_and_back():
    torch = _torch()
    buf = io.BytesIO()
    janus.save(_renaming(janus), buf)
    buf.seek(0)
    tl = torch.load(buf, weights_only=False)  # janus's _WrappedHook is torch's
    assert type(tl) is torch.nn.Linear and list(tl.state_dict()) == ["bias", "w"]
    tl.load_state_dict({"w": torch.ones(2, 2), "bias": torch.zeros(2)})
    buf = io.BytesIO()
    torch.save(_renaming(torch), buf)
    buf.seek(0)
    jl = janus.load(buf, weights_only=False)
    assert type(jl) is nn.Linear and list(jl.state_dict()) == ["bias", "w"]
    jl.load_state_dict({"w": janus.ones(2, 2), "bias": janus.zeros(2)})
    assert _np(jl.weight).tolist() == [[1.0, 1.0]] * 2


def test_state_dict_hooks_are_not_unsupported_any_more():
    lin = nn.Linear(1, 1)
    for name in ("register_state_dict_pre_hook", "register_state_dict_post_hook", "register_load_state_dict_pre_hook",
                 "register_load_state_dict_post_hook", "share_memory", "to_empty", "compile", "get_buffer",
                 "set_submodule", "get_extra_state", "set_extra_state", "type"):
        assert callable(getattr(lin, name)), name


# ---- small methods -------------------------------------------------------------
def _lookup_scenario(lib):
    net = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.BatchNorm1d(2)))
    net.plain = 3
    out = []
    for fn in (lambda: tuple(net.get_buffer("1.0.running_mean").shape),
               lambda: net.get_buffer("1.0.nope"),
               lambda: net.get_buffer("1.0.weight"),
               lambda: net.get_buffer("2.x"),
               lambda: net.get_buffer("plain.x"),
               lambda: tuple(net.get_parameter("0.weight").shape),
               lambda: net.get_parameter("1.0.running_var"),
               lambda: net.get_parameter("0.nope"),
               lambda: type(net.get_submodule("1.0")).__name__,
               lambda: net.get_submodule("0.weight"),
               lambda: net.set_submodule("", lib.nn.ReLU()),
               lambda: net.set_submodule("1.1", 3),
               lambda: net.set_submodule("1.1", lib.nn.ReLU(), strict=True),
               lambda: net.set_submodule("0.weight", lib.nn.ReLU()),
               lambda: net.set_submodule("9.1", lib.nn.ReLU()),
               lambda: net.set_submodule("1.1", lib.nn.ReLU()),
               lambda: net.set_submodule("1.0", lib.nn.Tanh(), strict=True),
               lambda: repr(net)):
        try:
            out.append(fn())
        except Exception as e:
            out.append((type(e).__name__, str(e)))
    return out


def test_get_buffer_and_set_submodule():
    out = _lookup_scenario(janus)
    assert out[0] == (2,)
    assert out[1] == ("AttributeError", "BatchNorm1d has no attribute `nope`")
    assert out[2] == ("AttributeError", "`weight` is not a buffer")
    assert out[3] == ("AttributeError", "Sequential has no attribute `2`")
    assert out[4] == ("AttributeError", "`plain` is not an nn.Module")
    assert out[6] == ("AttributeError", "`running_var` is not an nn.Parameter")
    assert out[10] == ("ValueError", "Cannot set the submodule without a target name!")
    assert out[11] == ("ValueError", "`module` is not an nn.Module, found <class 'int'>")
    assert out[12] == ("AttributeError", "Sequential has no attribute `1`")
    assert out[13] == ("AttributeError", "`weight` is not an nn.Module")
    assert "(0): Tanh()\n    (1): ReLU()" in out[-1]


def test_get_buffer_and_set_submodule_match_torch():
    torch = _torch()
    assert _lookup_scenario(janus) == _lookup_scenario(torch)


def test_share_memory_to_empty_type_compile():
    net = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    net[0].weight.requires_grad_(False)
    assert net.share_memory() is net
    old = net[0].bias
    net[0].bias.grad = janus.ones(3)
    assert net.to_empty(device="cpu") is net
    b = net[0].bias
    assert isinstance(b, nn.Parameter) and b is not old and b.requires_grad and tuple(b.shape) == (3,)
    assert b.grad is not None and tuple(b.grad.shape) == (3,)
    assert isinstance(net[0].weight, nn.Parameter) and not net[0].weight.requires_grad
    assert net[1].num_batches_tracked.dtype == janus.int64
    top = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.Linear(1, 1)))
    inner_w = top[1][0].weight
    top.to_empty(device="cpu", recurse=False)  # the root has no tensors of its own
    assert top[1][0].weight is inner_w
    assert net.type(janus.float64) is net
    assert net[0].weight.dtype == janus.float64 and isinstance(net[0].weight, nn.Parameter)
    assert net[1].num_batches_tracked.dtype == janus.float64  # torch's Module.type casts every tensor
    net.type("torch.FloatTensor")
    assert net[1].running_mean.dtype == janus.float32
    # tied parameters stay tied
    a, b2 = nn.Linear(2, 2), nn.Linear(2, 2)
    b2.weight = a.weight
    tied = nn.Sequential(a, b2).type(janus.float64)
    assert tied[0].weight is tied[1].weight
    forward = net.forward
    assert net.compile() is None and net.compile(fullgraph=True, mode="max-autotune") is None
    assert net.forward == forward
    with pytest.raises(TypeError):
        net.compile(not_an_option=1)


def test_small_methods_match_torch():
    torch = _torch()

    def run(lib):
        net = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))
        net[0].weight.requires_grad_(False)
        r = [net.share_memory() is net, net.to_empty(device="cpu") is net]
        r += [(type(p).__name__, str(p.dtype).split(".")[1], p.requires_grad, tuple(p.shape))
              for p in net.state_dict(keep_vars=True).values()]
        net.type(lib.float64)
        r += [str(t.dtype).split(".")[1] for t in net.state_dict().values()]
        r.append(net.compile())
        return r
    assert run(janus) == run(torch)


def test_non_persistent_buffers_set_alias():
    bn = nn.BatchNorm1d(2)
    bn.register_buffer("tmp", janus.zeros(1), persistent=False)
    assert bn._non_persistent_buffers_set == {"tmp"}
    bn._non_persistent_buffers_set = set()
    assert "tmp" in bn.state_dict()


# ---- lazy modules and parametrizations ---------------------------------------------
def test_lazy_module_in_a_container_takes_the_checkpoint_shapes():
    src = nn.Sequential(nn.Linear(3, 2))
    dst = nn.Sequential(nn.LazyLinear(2))
    dst.load_state_dict(src.state_dict())
    assert tuple(dst[0].weight.shape) == (2, 3)
    np.testing.assert_array_equal(_np(dst[0].weight), _np(src[0].weight))
    x = janus.randn(4, 3)
    np.testing.assert_allclose(_np(dst(x)), _np(src(x)), rtol=1e-6)


@pytest.mark.filterwarnings("ignore:.*weight_norm. is deprecated:FutureWarning")
def test_parametrization_keys_and_old_weight_norm_checkpoint():
    from janus.nn.utils import parametrizations as PZ, remove_weight_norm, weight_norm as old_weight_norm
    janus.manual_seed(0)
    old = old_weight_norm(nn.Linear(3, 4))
    with janus.no_grad():
        old.weight_g.mul_(1.5)
    sd = old.state_dict()
    assert list(sd) == ["bias", "weight_g", "weight_v"]
    new = PZ.weight_norm(nn.Linear(3, 4))
    assert list(new.state_dict()) == ["bias", "parametrizations.weight.original0",
                                      "parametrizations.weight.original1"]
    assert repr(new.load_state_dict(sd)) == "<All keys matched successfully>"
    x = janus.randn(2, 3)
    np.testing.assert_allclose(_np(new(x)), _np(old(x)), rtol=1e-6)
    remove_weight_norm(old)
    # nested: the prefix is the module's
    outer = nn.Sequential(PZ.weight_norm(nn.Linear(3, 4), dim=None))
    old2 = old_weight_norm(nn.Linear(3, 4), dim=None)
    ck = nn.Sequential(old2).state_dict()
    remove_weight_norm(old2)  # the old API's forward pre-hooks
    outer.load_state_dict(ck)
    np.testing.assert_array_equal(_np(outer[0].parametrizations.weight.original1), _np(ck["0.weight_v"]))
    # the hook goes along with a deepcopy
    dup = copy.deepcopy(new)
    dup.load_state_dict(sd)
    sn = PZ.spectral_norm(nn.Linear(3, 4))
    assert list(sn.state_dict()) == ["bias", "parametrizations.weight.original", "parametrizations.weight.0._u",
                                     "parametrizations.weight.0._v"]


@pytest.mark.filterwarnings("ignore:.*weight_norm. is deprecated:FutureWarning")
def test_parametrization_state_dicts_match_torch():
    torch = _torch()
    for lib in (janus, torch):
        lib.manual_seed(0)
    tn_old = torch.nn.utils.weight_norm(torch.nn.Conv1d(2, 3, 3))  # the deprecated API
    tn_new = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv1d(2, 3, 3))
    jn_new = janus.nn.utils.parametrizations.weight_norm(nn.Conv1d(2, 3, 3))
    assert list(jn_new.state_dict()) == list(tn_new.state_dict())
    assert jn_new.state_dict()._metadata == tn_new.state_dict()._metadata
    ck = tn_old.state_dict()
    assert list(ck) == ["bias", "weight_g", "weight_v"]
    tn_new.load_state_dict(ck)
    jn_new.load_state_dict(_to_janus(ck))
    x = np.random.RandomState(0).randn(2, 2, 5).astype(np.float32)
    np.testing.assert_allclose(_np(jn_new(janus.tensor(x))), _np(tn_new(torch.tensor(x))), rtol=1e-5, atol=1e-6)
    tsn = torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(3, 4))
    jsn = janus.nn.utils.parametrizations.spectral_norm(nn.Linear(3, 4))
    assert list(jsn.state_dict()) == list(tsn.state_dict())
