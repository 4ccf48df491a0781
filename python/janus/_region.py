"""Regions whose Python is skipped during `janus replay` (the C side is
replay/region.c and csrc/region_py.c; design in docs/ARCHITECTURE.md,
"Regions").

Three boundaries: Optimizer.step() (Regions.step, below), Module.__call__
(Regions.module: any module, nested, the outermost replaceable one wins;
its template's ops are dispatched under the grad mode each was observed
with, so autograd records them as eagerly; guards in one flat array over
dicts, csrc/region_py.c; up to _MAX_VARIANTS variants, one per argument
signature and guarded values, found by a hash of the signature) and Optimizer.zero_grad() (Regions.zero_grad: done
from C).  The optimizer step runs under no_grad, so it needs no graph-level
backward node.  Optimizer.step's wrapper (optim/optimizer.py) hands each
call without arguments to Regions.step:

- learning: a call runs its Python while the replay logs the ops it
  dispatches and the sync points it reaches (_C._rp_region_observe), under
  a profile function that collects the Python code objects it runs and the
  builtins it calls.  Then the proof: no sync inside; the bytecode of every
  user code object it ran (scanned once per code object) stores nothing
  (attributes, globals, closure cells, subscripts), reads no closure cell,
  no attribute of an object that is not guarded, and not the optimizer's
  param_groups/state; every builtin it called is on the pure allow-list;
  the optimizer's own dict, its param groups and its parameters' gradients
  are unchanged by the call, and the only change to optimizer state is a
  float counter += 1 that the template binds (Adam's `step`).  Two
  consecutive steady calls (state already made) must give the same op
  sequence with the same attributes and scalars, apart from the values the
  template binds per call: counters, and the param-group entries the
  optimizer class declares in _region_values (only when janus's own code
  runs: Adam's `lr`).  Anything else refuses the region with the reason
  and the file:line; it then runs its Python for the rest of the run.
- replaced: _C._rp_region_call checks every guard (class and its version
  tag, the step's code, the optimizer attributes and globals the bytecode
  reads, every param group entry, every parameter's gradient and state
  layout, dtype, device, shape and strides of every bound tensor, grad mode
  and autocast off), performs the counters' += 1 and dispatches the
  template's ops from C.  A guard that fails runs the Python (counted with
  the reason) and the region is learned again (at most _MAX_LEARN times).

JANUS_REPLAY_REGIONS=0 (runtime/settings.def) switches regions off.
"""
import dis
import hashlib
import inspect
import math
import sys
import weakref

from . import _C

_MAX_LEARN = 8

# builtins a region may call (results depend on their arguments only)
_PURE = frozenset("len float int bool abs min max isinstance issubclass type range enumerate zip tuple list dict "
                  "sorted reversed any all sum round divmod pow callable getattr hasattr iter next id hash".split())
# ... of which user code may call these (getattr/hasattr/iter/next/id read what no guard covers)
_PURE_USER = _PURE - {"getattr", "hasattr", "iter", "next", "id", "hash"}
_PURE_METHODS = {dict: {"get", "items", "keys", "values", "__contains__", "__getitem__", "copy", "__len__"},
                 list: {"__len__", "index", "count", "__getitem__", "copy"},
                 set: {"__contains__", "__len__", "copy"},
                 tuple: {"__len__", "index", "count", "__getitem__"}}
_STORES = {"STORE_ATTR": "stores attribute", "DELETE_ATTR": "deletes attribute", "STORE_GLOBAL": "stores global",
           "DELETE_GLOBAL": "deletes global", "STORE_DEREF": "stores closure variable",
           "DELETE_DEREF": "deletes closure variable", "STORE_SUBSCR": "stores into a container",
           "DELETE_SUBSCR": "deletes from a container", "IMPORT_NAME": "imports",
           "YIELD_VALUE": "yields", "RETURN_GENERATOR": "is a generator"}
_TENSOR_ATTRS = frozenset("shape dtype device grad data ndim is_leaf requires_grad T detach".split())


def _tensor_attr(name):
    """A name the Tensor class has (its C base's and the methods janus defines in
    Python, e.g. `view`, `relu`): a read of it is a tensor method or property,
    whose calls the proof checks like any other call."""
    from ._tensor import Tensor
    return hasattr(Tensor, name)


_KIND = {"params": 0, "val": 1, "eq": 2, "tensor": 3, "counter": 4}
_MISSING = object()
# module regions: the variants kept per module (csrc/region_py.c's set, looked up by a hash of
# the arguments' signature, least recently used evicted).  64: a model called with a
# sequence length or batch size that varies per batch (char_lstm: 33 lengths, times train /
# eval) keeps one per shape; each holds only its template (a few KB per hundred ops) and a
# call's lookup compares 64 hashes at most (a few ns), while a region called with more
# shapes than that would thrash anyway (a learning call costs more than its Python).
_MAX_VARIANTS = 64
# variants a module region learns in all before it is refused (its arguments keep changing:
# a new number every call), on top of the _MAX_LEARN relearns at signatures already learned
_MAX_LEARN_TOTAL = 4 * _MAX_VARIANTS
# learning observations kept per region while waiting for a second call at their key
_MAX_PENDING = 64
_G_IS, _G_EQ, _G_CONTENT, _G_ABSENT = 0, 1, 2, 3
# janus._C functions a module region may call (the rest have effects or read state a template
# does not reproduce), and tensor methods that change a tensor outside an op
# (grad mode switched inside, e.g. BatchNorm's no_grad block: each op runs under the mode
# it was observed with, and the mode at exit must be the one at entry)
# A tensor made outside the dispatcher (_from_buffer, ...) is refused anyway when an op or the
# output reads it (its id is neither bound nor logged); these read state or dispatch.  _detach is
# marked in the log where an op reads its result (the source's id: _template lets ops under no_grad
# read it, _outspec refuses returning it).
_PURE_C = frozenset("_op _op_into reshape is_grad_enabled _set_grad_enabled _autocast_active _autocast_get _detach "
                    "_grad_fn_name _is_leaf _requires_grad _has_derivative op_info op_names _device_num "
                    "get_num_threads _rp_active _rec_active _cuda_built _cuda_device_count".split())
_IMPURE_C = frozenset("requires_grad_ retain_grad register_hook register_post_accumulate_grad_hook backward "
                      "detach_ set_ resize_ share_memory_ _set_requires_grad _take_header".split())


class _Refused(Exception):
    """The region cannot be replaced: why, and where."""


class _NotSteady(Exception):
    """This call cannot teach the template (state made on it): learn on a later one."""


def _site(code, line):
    return f"{code.co_filename.rsplit('/', 1)[-1]}:{line}"


def _code_hash(code):
    """The bytecode, names and constants; a nested code object (a comprehension, a lambda)
    by its own hash, not its repr (which holds an address): the same in every process,
    so a recording's hash can be compared with a replay's."""
    h = hashlib.sha1(code.co_code)
    consts = tuple(_code_hash(c) if isinstance(c, type(code)) else c for c in code.co_consts)
    h.update(repr((code.co_names, code.co_varnames, code.co_freevars, consts)).encode())
    return h.hexdigest()[:16]


class _Scan:
    """What one code object's bytecode does, scanned once: stores (for user code),
    global names, attribute names, closure reads; and its hash."""

    def __init__(self, code):
        self.hash = _code_hash(code)
        self.effects, self.globals, self.attrs, self.closure = [], set(), [], []
        line = code.co_firstlineno
        for ins in dis.get_instructions(code):
            if ins.positions is not None and ins.positions.lineno is not None:
                line = ins.positions.lineno
            op = ins.opname
            if op in _STORES:
                what = f" {ins.argval}" if op.endswith(("ATTR", "GLOBAL", "DEREF")) or op == "IMPORT_NAME" else ""
                self.effects.append((f"{_STORES[op]}{what}", _site(code, line)))
            elif op == "LOAD_GLOBAL":
                self.globals.add(ins.argval)
            elif op in ("LOAD_ATTR", "LOAD_METHOD"):
                self.attrs.append((ins.argval, _site(code, line)))
            elif op in ("LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_CLOSURE"):
                self.closure.append((ins.argval, _site(code, line)))


def _meta(t):
    return _C._rp_region_meta(t)


def _walk(opt):
    """The optimizer's tensors in the order the C side binds them, and the layouts:
    (tensors, [(group, [params])], [(param, grad, state dict or None)])."""
    tensors, groups, params = [], [], []
    state = opt.state
    for g in opt.param_groups:
        ps = list(g["params"])
        groups.append((g, ps))
        for p in ps:
            tensors.append(p)
            gr = p.grad
            if gr is not None:
                tensors.append(gr)
            st = dict.get(state, p)
            if st is not None:
                for v in st.values():
                    if isinstance(v, _C.TensorBase):
                        tensors.append(v)
            params.append((p, gr, st))
    return tensors, groups, params


def _snapshot(opt):
    """Everything the call may not change except counters: the optimizer's dict,
    the groups' entries, per parameter its gradient and its state's entries."""
    tensors, groups, params = _walk(opt)
    return {"dict": dict(opt.__dict__),
            "groups": [list(g.items()) for g, _ in groups],
            "params": [(p, gr, None if st is None else list(st.items())) for p, gr, st in params],
            "ids": [_meta(t)[0] for t in tensors], "tensors": tensors}


class _Observed:
    """One learning call: the log, the code objects it ran, the builtins it called."""

    def __init__(self, regions, opt, fn):
        self.codes, self.calls = {}, []
        before = _snapshot(opt)
        profile = sys.getprofile()

        def prof(frame, event, arg):
            if frame.f_code is own:  # this function's own setprofile call
                return
            if event == "call":
                self.codes.setdefault(frame.f_code, frame.f_globals)
            elif event == "c_call":
                self.calls.append((arg, frame.f_code, frame.f_lineno))

        own = _Observed.__init__.__code__

        _C._rp_region_observe(True)
        regions._observing = {}  # a module called inside runs its Python: the log stays whole
        sys.setprofile(prof)
        try:
            self.out = fn(opt)
        finally:
            sys.setprofile(profile)
            regions._observing = None
            _C._rp_region_observe(False)
        self.nsync, self.log = _C._rp_region_log()
        self.before, self.after = before, _snapshot(opt)


class _Region:
    def __init__(self, name):
        self.name = name
        self.plan = None        # the capsule, once learned
        self.prev = None        # the previous steady observation
        self.refused = None
        self.learned = 0
        self.guards = None
        self.plans = None       # module regions: the learned variants (a csrc/region_py.c set)
        self.nplans = 0
        self.pending = {}       # module regions: learning key -> the first observed call's template
        self.sigs = {}          # argument signature -> variants learned at it (and live)
        self.vsig = {}          # variant number -> its argument signature (eviction)
        self.relearned = 0      # learns at a signature whose variant was not evicted
        self.proven = None      # (code objects, call sites) of its two-call proofs
        self.python_calls = 0   # module regions: calls that reached Regions.module / module_missed
                                # (learning, a miss, refused; the rest went from _C's entry to a variant)


class Regions:
    """The regions of one replay (held by janus._replay while it runs)."""

    def __init__(self):
        self._scans = {}        # code object -> _Scan
        self._regions = {}      # (id(opt), fn) -> (opt, _Region)
        self._mods = {}         # id(module) -> (weakref to it, _Region)
        self._observing = None  # while a module call is observed: {id: module} of the modules it calls
        self._zg_names = {}     # optimizer class -> its zero_grad region's name
        self._zg_base = _base_zero_grad()  # Optimizer.zero_grad (an import per call cost ~1-8 us)
        self._funcs = {}        # janus function -> _Region (nn.utils.clip_grad_norm_)
        self._verdicts = None   # (kind, qualname, site) -> the recording's verdict rows (read once)

    def plans(self):
        """(optimizer, region) of every region learned so far (benchmarks)."""
        return [(o(), r) for o, r in self._regions.values() if r.plan is not None and o() is not None]

    def module_plans(self):
        """(module, region) of every module region learned so far (benchmarks)."""
        return [(m(), r) for m, r in self._mods.values() if r.nplans and m() is not None]

    def zero_grad(self, opt, set_to_none):
        """Optimizer.zero_grad's body from C (_C._rp_zero_grad), when the optimizer's class
        does not override it and set_to_none is a bool; True when done."""
        if (type(set_to_none) is not bool or type(opt).zero_grad is not self._zg_base
                or self._observing is not None):  # inside an observed call: its Python, seen
            return False
        name = self._zg_names.get(type(opt))
        if name is None:
            name = self._zg_names[type(opt)] = f"{type(opt).__qualname__}.zero_grad"
        return _C._rp_zero_grad(name, opt.param_groups, set_to_none)

    # ------------------------------------------------------- module regions
    def module(self, m, args, kwargs):
        """Module.__call__'s body during a replay: the module's template, or its forward."""
        obs = self._observing
        if obs is not None:  # inside an observed call: the outer region learns these ops
            if id(m) not in obs:
                obs[id(m)] = (m, _msnap(m))
            return m.forward(*args, **kwargs)
        ent = self._mods.get(id(m))
        if ent is None or ent[0]() is not m:
            fwd = getattr(m.forward, "__code__", None)
            where = f" ({_site(fwd, fwd.co_firstlineno)})" if fwd is not None else ""
            key = id(m)
            ent = self._mods[key] = (weakref.ref(m, lambda _, k=key: self._mods.pop(k, None)),
                                     _Region(f"{type(m).__qualname__}.forward{where}"))
            ent[1].refused = self.recorded("module", type(m).__qualname__, fwd)
        ent[1].python_calls += 1
        if kwargs:  # bound like positional arguments, their names one more argument (by value)
            names, n, fwd = _KwNames(kwargs), len(args), m.forward

            def body(*a):
                return fwd(*a[:n], **dict(zip(names, a[n:-1])))
            return self._enter(ent[1], m, args + tuple(kwargs.values()) + (names,), body)
        return self._enter(ent[1], m, args, m.forward)

    def module_missed(self, m, args):
        """The rest of module(m, args, {}) after _C's entry (_rp_module_entry) found no
        variant whose guards held (the call is counted): learn, or run the forward."""
        r = self._mods[id(m)][1]
        r.python_calls += 1
        return self._enter(r, m, args, m.forward, tried=True)

    def function(self, fn, args, refuse=None):
        """A janus function's body during a replay (nn.utils.clip_grad_norm_): its template,
        or fn(*args).  Its arguments are bound like a module's; it has no module tree.
        refuse: why this call must run its Python (the caller knows: an argument that makes
        it read data), counted as a refused call of the region; later calls may still be
        replaced."""
        if self._observing is not None:
            return fn(*args)
        r = self._funcs.get(fn)
        if r is None:
            code = fn.__code__
            r = self._funcs[fn] = _Region(f"{fn.__qualname__} ({_site(code, code.co_firstlineno)})")
            pub = getattr(fn, "_recorded_as", None)  # (kind, the public function the recorder marked)
            if pub is not None:
                top = inspect.unwrap(pub[1])
                r.refused = self.recorded(pub[0], top.__qualname__, top.__code__)
        if refuse is not None:
            _C._rp_region_note(r.name, refuse, False)
            return fn(*args)
        return self._enter(r, fn, args, fn)

    def _enter(self, r, m, args, body, tried=False):
        """A call of region r on owner m (a module, or the function itself): a variant
        learned at its arguments' signature whose guards hold, else body(*args) (learning
        when it may: observed calls are compared per key, _learn_module).  tried: the
        variants were tried already and the miss counted (module_missed)."""
        noted = tried
        if r.nplans and not tried:
            out = _C._rp_module_call(r.plans, m, args)
            if out is not NotImplemented:
                return out
            noted = True  # counted with its reason: learn a variant
        if r.refused is None and r.relearned >= _MAX_LEARN:
            r.refused = f"its guards failed {_MAX_LEARN} times after learning: values it reads keep changing"
        if r.refused is None and r.learned >= _MAX_LEARN_TOTAL:
            r.refused = (f"learned {_MAX_LEARN_TOTAL} variants: the shapes or values of its arguments keep "
                         f"changing")
        if r.refused is not None:
            if not noted:
                _C._rp_region_note(r.name, r.refused, True)
            return body(*args)
        return self._learn_module(r, m, args, noted, body)

    def _learn_module(self, r, m, args, noted, body):
        if sys.getprofile() is not None:
            if not noted:
                _C._rp_region_note(r.name, "a profiler is active (sys.setprofile): not learned", False)
            return body(*args)

        def note(why, refused=False):
            if not noted:
                _C._rp_region_note(r.name, why, refused)

        grad = _C.is_grad_enabled()
        called = {}
        if type(m) is not type(_observe):  # a module: its tree (a function has none)
            called[id(m)] = (m, _msnap(m))
            for mm in m.modules():
                if id(mm) not in called:
                    called[id(mm)] = (mm, _msnap(mm))
        arg_ids = []
        try:
            argspec = tuple(_argspec(a, arg_ids) for a in args)
        except _Refused as e:  # this call's arguments only: a later call may bind
            note(f"learning ({e})")
            return body(*args)
        obs = _observe(lambda: body(*args), self, called)
        try:
            user = self._mprove(m, args, obs, called, grad)
            tmpl, plan = self._mplan(r, m, args, argspec, arg_ids, obs, called, grad, user)
            # calls are compared only at one key: the signature of the bound arguments and
            # the values of the guards (what the entry checks).  Another key is another
            # variant, not a contradiction: control flow on shapes or guarded values is keyed.
            sig = _hkey((plan[5], plan[8][:plan[6]]))
            key = (sig, grad, _hkey(tuple((g[0], id(plan[4][g[1]]), g[2], g[3] if g[0] == _G_EQ else id(g[3]),
                                           None if g[4] is None else tuple(map(id, g[4]))) for g in plan[3])))
            prev = r.pending.pop(key, None)
            one = prev is None and self._one_call(r, obs)
            if prev is None and one is not True:
                if len(r.pending) >= _MAX_PENDING:
                    r.pending.pop(next(iter(r.pending)))
                r.pending[key] = tmpl
                note("learning (first observed call)" if r.proven is None else
                     f"learning (first observed call at these arguments: {one})")
                return obs.out
            if prev is not None:
                self._same(prev, tmpl)
                for (o1, o2) in zip(prev["ops"], tmpl["ops"]):
                    for (_, n, v1), (_, _, v2) in zip(o1[4], o2[4]):
                        if v1.hex() != v2.hex():
                            raise _Refused(f"attribute {n} of op {obs.log[o2[0]][0]} changes from call to call "
                                           f"({v1} vs {v2}): derived from a value the region does not guard")
            try:
                cap = _C._rp_module_new(plan, tmpl["c"], r.learned + 1)  # its number: the misses name it
                if r.plans is None:
                    r.plans = _C._rp_module_set(_MAX_VARIANTS)
                gone = _C._rp_module_add(r.plans, cap, args)
            except (ValueError, TypeError, MemoryError) as e:
                raise _Refused(f"internal error, please report: {e}") from None
            r.learned += 1
            if gone is None:
                r.nplans += 1
            else:  # the least recently used variant made room: relearning its signature is no guard failure
                r.sigs[r.vsig.pop(gone)] -= 1
            if r.sigs.get(sig):
                r.relearned += 1  # another variant at a live signature: a guarded value changed
            r.sigs[sig] = r.sigs.get(sig, 0) + 1
            r.vsig[r.learned] = sig
            r.guards = {"guards": len(plan[3]), "dicts": len(plan[4]), "classes": len(plan[2]),
                        "bound": len(plan[8]), "ops": len(tmpl["ops"])}
            if prev is not None:  # what a one-call learning may run (_one_call)
                codes, sites = r.proven or (set(), set())
                r.proven = (codes | set(obs.codes), sites | {_call_site(c) for c in obs.calls})
                note("learning (second observed call)")
            else:
                note("learning (one observed call at a new signature of a proven region)")
        except _NotSteady as e:
            note(f"learning ({e})")
        except _Refused as e:
            r.refused, r.pending, r.plans, r.nplans = str(e), {}, None, 0
            note(r.refused, True)
        return obs.out

    def _one_call(self, r, obs):
        """True when this call, the first observed at its key, may teach the variant alone;
        else why not (docs/ARCHITECTURE.md 5.2).  Two calls at one key exist to catch a first
        call that makes state a second one reads (a cache keyed by shape: filled, then read,
        differs from call to call).  Once the region was proven by two calls, a call that ran
        only code objects and call sites those proofs ran, none of whose code stores
        anything (janus's own code included: user code was refused for it already), has no
        place to make such state: a store or call that fills a cache would have run in the
        proven calls, one filling and the next reading it, and been refused there."""
        if r.proven is None:
            return "the region is not proven yet"
        codes, sites = r.proven
        for code in obs.codes:
            if code not in codes:
                return f"it ran code the proof did not ({code.co_name} at {_site(code, code.co_firstlineno)})"
            if code.co_filename == __file__:  # this module's own bookkeeping while observing
                continue
            eff = [e for e in self.scan(code).effects if e[0].startswith(("stores", "deletes"))]
            if eff:
                return f"its code {eff[0][0]} at {eff[0][1]}"
        if any(_call_site(c) not in sites for c in obs.calls):
            return "it called a function the proof did not see called there"
        return True

    def _mprove(self, m, args, obs, called, grad):
        if obs.nsync:
            raise _Refused("reads tensor data inside the call (a sync point: item(), bool(), printing a tensor)")
        if _C.is_grad_enabled() != grad:
            raise _Refused("changes grad mode (set_grad_enabled without restoring it)")
        names = set()
        for mm, _ in called.values():
            names.update(mm.__dict__)
            for k in ("_parameters", "_buffers", "_modules"):
                names.update(mm.__dict__.get(k, ()))
        classes = tuple(type(mm) for mm, _ in called.values())
        any_user = False
        for code, g in obs.codes.items():
            s = self.scan(code)
            if not _is_user(code):
                for what, where in s.effects:  # janus's own code: what autograd would not see
                    if what.startswith("stores attribute ") and what.split()[-1] in ("requires_grad", "grad", "data"):
                        raise _Refused(f"{what} at {where}: a tensor's autograd state set outside an op")
                continue
            any_user = True
            if s.effects:
                what, where = s.effects[0]
                raise _Refused(f"{what} at {where}: an effect outside the call")
            if s.closure:
                raise _Refused(f"reads closure variable {s.closure[0][0]} at {s.closure[0][1]} (not guarded yet)")
            read = {n for n, _ in s.attrs}
            for name, where in s.attrs:
                if not (name in names or any(hasattr(c, name) for c in classes) or name in _TENSOR_ATTRS
                        or _tensor_attr(name) or hasattr(math, name) or _module_attr(g, s.globals, name, read)
                        or any(hasattr(c, name) for c in (list, dict, set, tuple))):  # calls: checked below
                    raise _Refused(f"reads attribute {name} at {where} of an object the region does not guard")
        pre = _outliving(called, obs, args)
        for f, code, line, where in obs.calls:
            owner = getattr(f, "__self__", None)
            if isinstance(owner, (list, dict, set)):
                name = getattr(f, "__name__", "?")
                base = next(b for b in (dict, list, set) if isinstance(owner, b))
                if id(owner) in pre and name not in _PURE_METHODS.get(base, ()):
                    raise _Refused(f"calls {type(owner).__name__}.{name} at {_site(code, line)} on a "
                                   f"{type(owner).__name__} that outlives the call")
                continue  # a container the call made, or a read
            if _is_user(code):
                self._check_call(f, code, line, module=True)
            else:
                _check_janus_call(f, code, line, where)
        for mm, snap in called.values():
            now = _msnap(mm)
            if now != snap:
                what = _snap_diff(snap, now)
                raise _Refused(f"changes {what} of {type(mm).__qualname__} (an effect outside the call)")
        return any_user

    def _mplan(self, r, m, args, argspec, arg_ids, obs, called, grad, user):
        # the tensors the call may read without being given them: parameters, buffers and
        # tensor attributes of every module it ran, held by the guards below
        fixed = {}
        for mm, _ in called.values():
            d = mm.__dict__
            for src in (d.get("_parameters", {}), d.get("_buffers", {}), d):
                for v in src.values():
                    if isinstance(v, _C.TensorBase):
                        fixed.setdefault(_meta(v)[0], v)
        ids = list(arg_ids)
        if len(set(ids)) != len(ids) or any(i in fixed for i in ids):
            raise _NotSteady("an argument is passed twice or is a parameter")
        what = "argument, parameter, buffer or tensor attribute of the module, or made in the call"
        tmpl, slot = _template(ids + list(fixed), obs.log, what)
        used = {s for op in tmpl["ops"] for s in op[2] + op[3] if 0 <= s < tmpl["nbound"]}
        leaves, leaf_of = [], {}
        outspec = _outspec(obs.out, slot, leaves, leaf_of)
        used.update(s for s in leaves if s < tmpl["nbound"])
        fixed_ids = [i for k, i in enumerate(fixed) if len(ids) + k in used]
        tmpl, slot = _template(ids + fixed_ids, obs.log, what)  # only what the template reads
        leaves, leaf_of = [], {}
        outspec = _outspec(obs.out, slot, leaves, leaf_of)
        tmpl["c"] = (tmpl["nslots"], tuple((li, mode, inn, oo, (-1,) * na) for li, mode, inn, oo, _, na in tmpl["ops"]),
                     tuple(tmpl["consts"]))
        bound = list(_flat_tensors(args)) + [fixed[i] for i in fixed_ids]
        metas = tuple(tuple(_meta(t)[1:]) + (bool(t.requires_grad),) for t in bound)
        guards, dicts, classes = self._mguards(m, obs, called)
        plan = (r.name, grad, classes, tuple(guards), tuple(dicts), argspec, len(ids),
                tuple(fixed[i] for i in fixed_ids), metas, outspec, tuple(leaves))
        return tmpl, plan

    def _mguards(self, m, obs, called):
        """The flat guard array: (kind, dict row, key, value, items) over the dicts."""
        dicts, drow, guards = [], {}, []

        def add(d, key, kind=None, val=None):
            if id(d) not in drow:
                drow[id(d)] = len(dicts)
                dicts.append(d)
            if kind is None:
                v = d.get(key, _MISSING)
                if v is _MISSING:
                    guards.append((_G_ABSENT, drow[id(d)], key, None, None))
                    return
                kind, val = _guard_kind(v), v
            items = None
            if kind == _G_CONTENT:
                items = tuple(val) if isinstance(val, list) else tuple(x for kv in val.items() for x in kv)
            guards.append((kind, drow[id(d)], key, val, items))

        names = {"forward"}
        for code in obs.codes:
            names.update(n for n, _ in self.scan(code).attrs)
        classes = [type(m)]
        for mm, _ in called.values():
            if type(mm) not in classes:
                classes.append(type(mm))
            d = mm.__dict__
            subs = [d[k] for k in ("_parameters", "_buffers", "_modules") if isinstance(d.get(k), dict)]
            for name in sorted(names):
                if not isinstance(name, str):
                    continue
                add(d, name)
                for sd in subs:
                    if name in sd:
                        add(sd, name)
        seen = set()
        for code, g in obs.codes.items():
            s = self.scan(code)
            attrs = {n for n, _ in s.attrs}
            for name in sorted(s.globals):
                if (id(g), name) in seen:
                    continue
                seen.add((id(g), name))
                v = g.get(name, _MISSING)
                add(g, name)
                if v is _MISSING:
                    b = g.get("__builtins__")
                    b = b if isinstance(b, dict) else getattr(b, "__dict__", {})
                    add(b, name)
                elif type(v) is type(sys):  # an imported module (and its submodules read): the names read
                    for mod in _reached_modules(v, attrs):
                        md = mod.__dict__
                        for a in sorted(attrs):
                            if a in md and (id(md), a) not in seen:
                                seen.add((id(md), a))
                                add(md, a)
        return guards, dicts, tuple(classes)

    def recorded(self, kind, qualname, code):
        """Why the recording forbids replacing this region, or None: the verdicts
        `janus optimize` stored with the bundle (analyzer/regions.c), keyed as the
        recorder keyed them (janus/_record.py: kind, class or function qualname, the
        top code object's file:line) and checked against the code's hash.  No row
        (an older store, regions not recorded, a region the recording never saw)
        leaves the decision to the proof made here."""
        if self._verdicts is None:
            self._verdicts = {}
            for v in _C._rp_region_verdicts():
                self._verdicts.setdefault((v["kind"], v["qualname"], v["site"]), []).append(v)
        if code is None or not self._verdicts:
            return None
        rows = self._verdicts.get((kind, qualname, _site(code, code.co_firstlineno)))
        if not rows:
            return None
        h = self.scan(code).hash
        same = [v for v in rows if v["code_hash"] == h]
        if not same:
            return ("its source changed since recording (the code hash differs from the recorded one): record "
                    "and optimize again to replace it")
        bad = next((v for v in same if v["verdict"] != "replaceable"), None)
        if bad is not None:
            return f"refused by the recording: {bad['reason']} at {bad['reason_site']}"
        return None

    def scan(self, code):
        s = self._scans.get(code)
        if s is None:
            s = self._scans[code] = _Scan(code)
        return s

    def step(self, opt, fn):
        """Optimizer.step's body for a call without arguments (returns what it returns)."""
        key = (id(opt), fn)
        ent = self._regions.get(key)
        if ent is None or ent[0]() is not opt:
            name = f"{type(opt).__qualname__}.step ({_site(fn.__code__, fn.__code__.co_firstlineno)})"
            # held weakly: an optimizer the script drops takes its region (and plan) with it
            ent = self._regions[key] = (weakref.ref(opt, lambda _, k=key: self._regions.pop(k, None)),
                                        _Region(name))
            ent[1].refused = self.recorded("step", type(opt).__qualname__, fn.__code__)
        r = ent[1]
        noted = False
        if r.plan is not None:
            if _C._rp_region_call(r.plan, opt):
                return None
            r.plan = None  # a guard failed (counted with its reason): learn again
            r.prev = None
            noted = True
        if r.refused is None and r.learned >= _MAX_LEARN:
            r.refused = f"its guards failed {_MAX_LEARN} times after learning: values it reads keep changing"
        if r.refused is not None:
            if not noted:
                _C._rp_region_note(r.name, r.refused, True)
            return fn(opt)
        return self._learn(r, opt, fn, noted)

    def _learn(self, r, opt, fn, noted):
        if sys.getprofile() is not None:  # learning needs the profile hook: leave a profiler alone
            if not noted:
                _C._rp_region_note(r.name, "a profiler is active (sys.setprofile): not learned", False)
            return fn(opt)
        def note(why, refused=False):  # once per call: a guard's miss may have counted it
            if not noted:
                _C._rp_region_note(r.name, why, refused)

        obs = _Observed(self, opt, fn)
        try:
            user = self._prove(opt, fn, obs)
            tmpl = self._template(opt, obs)
            if r.prev is None:
                r.prev = tmpl
                note("learning (first observed call)")
                return obs.out
            self._same(r.prev, tmpl)
            plan = self._plan(r, opt, fn, obs, tmpl, r.prev, user)
            try:
                r.plan = _C._rp_region_new(plan, tmpl["c"])
            except (ValueError, TypeError, MemoryError) as e:  # janus's own fault: never the script's
                raise _Refused(f"internal error, please report: {e}") from None
            # what the entry checks (benchmarks/bench_regions.py reports it)
            r.guards = {"attributes": len(plan[5]), "globals": len(plan[6]),
                        "group entries": sum(len(g) for g in plan[7]), "parameters": len(plan[8]),
                        "tensors": len(plan[9]), "ops": len(tmpl["ops"])}
            r.learned += 1
            note("learning (second observed call)")
        except _NotSteady as e:
            r.prev = None
            note(f"learning ({e})")
        except _Refused as e:
            r.refused, r.prev = str(e), None
            note(r.refused, True)
        return obs.out

    # ------------------------------------------------------------ the proof
    def _prove(self, opt, fn, obs):
        b, a = obs.before, obs.after
        if b["ids"] != a["ids"] or [len(x[2] or ()) for x in b["params"]] != [len(x[2] or ()) for x in a["params"]]:
            raise _NotSteady("the call made optimizer state or gradients")
        if obs.out is not None:
            raise _Refused(f"returns a value ({type(obs.out).__name__}); only a step returning None is replaced")
        if obs.nsync:
            raise _Refused("reads tensor data inside the call (a sync point: item(), bool(), printing a tensor)")
        cls_attrs = type(opt)
        any_user = False
        for code in obs.codes:
            s = self.scan(code)
            if not _is_user(code):
                continue
            any_user = True
            if s.effects:
                what, where = s.effects[0]
                raise _Refused(f"{what} at {where}: an effect outside the call")
            if s.closure:
                raise _Refused(f"reads closure variable {s.closure[0][0]} at {s.closure[0][1]} (not guarded yet)")
            for name, where in s.attrs:
                if name in ("state", "param_groups", "__dict__"):
                    raise _Refused(f"user code reads the optimizer's {name} at {where}: values bound per call "
                                   f"(counters, lr) cannot be followed through it")
                if not (name in opt.__dict__ or hasattr(cls_attrs, name) or name in _TENSOR_ATTRS
                        or _tensor_attr(name) or hasattr(math, name)):
                    raise _Refused(f"reads attribute {name} at {where} of an object the region does not guard")
        for f, code, line in obs.calls:
            self._check_call(f, code, line)
        for k, v in b["dict"].items():
            if a["dict"].get(k, _MISSING) is not v:
                raise _Refused(f"changes the optimizer's attribute {k}")
        if len(a["dict"]) != len(b["dict"]):
            raise _Refused("adds attributes to the optimizer")
        if len(b["groups"]) != len(a["groups"]) or any(
                len(x) != len(y) or any(kx is not ky or vx is not vy for (kx, vx), (ky, vy) in zip(x, y))
                for x, y in zip(b["groups"], a["groups"])):
            raise _Refused("changes its param groups")
        for (p, gr, st), (p2, gr2, st2) in zip(b["params"], a["params"]):
            if p is not p2 or gr is not gr2:
                raise _Refused("replaces a parameter or a gradient")
            for (k, v), (k2, v2) in zip(st or (), st2 or ()):
                if k is not k2 and k != k2:
                    raise _NotSteady("the optimizer state's keys changed")
                if v is v2:
                    continue
                if isinstance(v, _C.TensorBase):
                    raise _NotSteady(f"state {k} was replaced")
                if type(v) is not float or type(v2) is not float or v2 != v + 1.0:
                    raise _Refused(f"changes optimizer state {k!r} from {v!r} to {v2!r} (only a float counter "
                                   f"+= 1 is followed)")
        return any_user

    def _check_call(self, f, code, line, module=False):
        user = _is_user(code)
        owner = getattr(f, "__self__", None)
        name = getattr(f, "__name__", "?")
        mod = getattr(f, "__module__", None) or getattr(owner, "__name__", None)
        if module and (name in _IMPURE_C or (owner is _C or mod in ("janus._C", "_C")) and name not in _PURE_C):
            # under grad mode more of _C has effects a template would lose (autograd state, devices)
            raise _Refused(f"calls {name} at {_site(code, line)} (state a template does not reproduce)")
        if isinstance(owner, _C.TensorBase) or mod in ("math", "janus._C", "_C"):
            return
        if owner is _C or (type(owner).__name__ == "module" and getattr(owner, "__name__", "") in ("math", "janus._C")):
            return
        if owner is tuple and name == "__new__":  # a namedtuple made
            return
        if mod == "builtins" and (owner is None or type(owner).__name__ == "module"):
            if name in (_PURE_USER if user else _PURE):
                return
        elif type(owner) in _PURE_METHODS and name in _PURE_METHODS[type(owner)]:
            return
        qual = getattr(f, "__qualname__", name)
        raise _Refused(f"calls {qual} at {_site(code, line)} (not on the pure allow-list)")

    # ----------------------------------------------------------- template
    def _template(self, opt, obs):
        """Slots: the bound tensors (ids before the call), then each new output."""
        return _template(obs.before["ids"], obs.log, "parameter, gradient, optimizer state or made in the call")[0]

    def _same(self, t1, t2):
        if t1["key"] != t2["key"] or t1["nbound"] != t2["nbound"]:
            raise _Refused("two calls dispatched different ops (control flow on a value the region does not guard)")
        if [(v.hex(), d) for v, d in t1["consts"]] != [(v.hex(), d) for v, d in t2["consts"]]:
            raise _Refused(f"a Python number it passes to an op changes from call to call "
                           f"({t1['consts']} vs {t2['consts']}): derived from a value the region does not guard")

    def _plan(self, r, opt, fn, obs, tmpl, prev, user):
        """The guards (csrc/region_py.c's layout) and the template with attribute sources."""
        b = obs.before
        vals = {}   # ("g", group index, key) / ("c", param index, key) -> value index

        def val(k):
            if k not in vals:
                vals[k] = len(vals)
            return vals[k]

        # what janus's optimizer declares, for its fused ops only (user code in the step was
        # refused if it reads param_groups or state, so it cannot see the bound values)
        cls = type(opt)
        own = tmpl["names"] <= set(getattr(cls, "_region_ops", ()))
        declared = tuple(getattr(cls, "_region_values", ())) if own else ()
        counters = tuple(getattr(cls, "_region_counters", ())) if own else ()
        # (op, attribute) -> group value it is the negation of (SGD's p.add_(grad, alpha=-lr): op add)
        negated = dict(getattr(cls, "_region_negated", ())) if own else {}
        groups_l, params_l, metas = [], [], []
        after_state = obs.after["params"]
        for gi, (g, ps) in enumerate(_walk(opt)[1]):
            ent = []
            for k, v in b["groups"][gi]:
                if k == "params":
                    ent.append((k, _KIND["params"], len(ps)))
                elif k in declared and type(v) in (float, int):
                    ent.append((k, _KIND["val"], (val(("g", gi, k)), type(v))))
                else:
                    ent.append((k, _KIND["eq"], v))
            groups_l.append(tuple(ent))
        for pi, ((p, gr, st), (_, _, st2)) in enumerate(zip(b["params"], after_state)):
            if st is None:
                params_l.append((gr is not None, None))
                continue
            ent = []
            for (k, v), (_, v2) in zip(st, st2):
                if isinstance(v, _C.TensorBase):
                    ent.append((k, _KIND["tensor"], None))
                elif v is not v2:
                    if k not in counters:
                        raise _Refused(f"changes optimizer state {k!r} ({v!r} -> {v2!r}) and "
                                       f"only a fused step of a janus optimizer that declares the counter is followed")
                    if not (type(v) in (float, int) and v2 == v + 1):  # the region writes += 1
                        raise _Refused(f"changes optimizer state {k!r} ({v!r} -> {v2!r}) by other than 1")
                    ent.append((k, _KIND["counter"], val(("c", pi, k))))
                else:
                    ent.append((k, _KIND["eq"], v))
            params_l.append((gr is not None, tuple(ent)))
        for t in b["tensors"]:
            metas.append(tuple(_meta(t)[1:]))
        # attribute sources: a declared group value or a counter of a parameter the op reads, by name
        slot_param = {}
        k = 0
        for pi, (p, gr, st) in enumerate(b["params"]):
            n = 1 + (gr is not None) + sum(isinstance(v, _C.TensorBase) for _, v in (st or ()))
            for s in range(k, k + n):
                slot_param[s] = pi
            k += n
        group_of = []
        for gi, (g, ps) in enumerate(_walk(opt)[1]):
            group_of += [gi] * len(ps)
        ops = []
        for j, (li, mode, inn, oo, fl, nattrs) in enumerate(tmpl["ops"]):
            srcs = [-1] * nattrs
            pis = {slot_param[s] for s in inn if s in slot_param}
            for (ai, aname, aval), (_, _, pval) in zip(fl, prev["ops"][j][4]):
                src = -1
                for pi in pis:
                    if ("c", pi, aname) in vals and _state_value(after_state[pi][2], aname) == aval:
                        src = vals[("c", pi, aname)]
                    elif ("g", group_of[pi], aname) in vals and dict(b["groups"][group_of[pi]])[aname] == aval:
                        src = vals[("g", group_of[pi], aname)]
                    elif (key := ("g", group_of[pi], negated.get((obs.log[li][0], aname)))) in vals and \
                            (-dict(b["groups"][group_of[pi]])[key[2]]).hex() == float(aval).hex():
                        src = -2 - vals[key]  # replay/jn_region.h JN_RP_AVAL_NEG
                if src < 0 and pval.hex() != aval.hex():
                    raise _Refused(f"attribute {aname} of op {j} ({obs.log[li][0]}) changes from call to call "
                                   f"({pval} vs {aval}): derived from a value the region does not guard")
                srcs[ai] = src
            ops.append((li, mode, inn, oo, tuple(srcs)))
        tmpl["c"] = (tmpl["nslots"], tuple(ops), tuple(tmpl["consts"]))
        attrs, globs = self._reads(opt, obs)
        return (r.name, type(opt), fn, opt.param_groups, opt.state, attrs, globs, tuple(groups_l),
                tuple(params_l), tuple(metas), len(vals))

    def _reads(self, opt, obs):
        """Guards for what the bytecode reads: the optimizer's attributes, the globals."""
        attrs, globs, seen = [], [], set()
        d = opt.__dict__
        for code, g in obs.codes.items():
            s = self.scan(code)
            for name, _ in s.attrs:
                if name in d and name not in seen:
                    seen.add(name)
                    attrs.append((name, d[name]))
            for name in sorted(s.globals):
                if (id(g), name) in seen:
                    continue
                seen.add((id(g), name))
                v = g.get(name, _MISSING)
                globs.append((g, name, None if v is _MISSING else v, v is not _MISSING))
                if v is _MISSING:
                    b = g.get("__builtins__")
                    b = b if isinstance(b, dict) else getattr(b, "__dict__", {})
                    bv = b.get(name, _MISSING)
                    globs.append((b, name, None if bv is _MISSING else bv, bv is not _MISSING))
        for name in ("param_groups", "state"):
            if name not in seen:
                attrs.append((name, d[name]))
        return tuple(attrs), tuple(globs)


def _template(ids, log, what):
    """The template over slots: the bound tensors (ids, in order), then each new output;
    returns it and the slot of every tensor id it saw."""
    slot = {}
    for tid in ids:
        slot.setdefault(tid, len(slot))
    nbound = len(slot)
    ops, consts, cidx, key = [], [], {}, []
    for li, (name, inplace, grad, ins, scal, outs, attrs, det) in enumerate(log):
        if det and grad:
            # detach(x) keeps x's id: the template reads x, exact under no_grad only (an op
            # reading x with grad mode on records autograd where one reading detach(x) does not)
            raise _Refused(f"op {li} ({name}) reads a detached tensor with grad mode on (a detach is replayed "
                           f"where only no_grad ops read it)")
        inn = []
        for tid, sc in zip(ins, scal):
            if tid in slot:
                inn.append(slot[tid])
            elif sc is not None:
                ck = (sc[0].hex(), sc[1])  # -0.0 is not 0.0
                if ck not in cidx:
                    cidx[ck] = len(consts)
                    consts.append(sc)
                inn.append(-1 - cidx[ck])
            else:
                raise _Refused(f"op {li} ({name}) reads a tensor that is not a {what} (a global or attribute "
                               f"tensor)")
        if inplace:
            if any(o not in slot for o in outs):
                raise _Refused(f"op {li} ({name}) writes a tensor it was not given")
            mode, oo = 1, [slot[o] for o in outs]
        elif outs[0] in slot:
            if len(outs) != 1:
                raise _Refused(f"op {li} ({name}) writes several existing tensors")
            mode, oo = 2, [slot[outs[0]]]
        else:
            mode, oo = 0, []
            for o in outs:
                slot[o] = len(slot)
                oo.append(slot[o])
        fl = tuple((ai, n, v) for ai, (n, kind, v) in enumerate(attrs) if kind == "f")
        # a random op's seed and offset are filled by the dispatcher from the generator
        other = tuple(a for a in attrs if a[1] != "f" and not (a[0] in ("seed", "offset") and a[1] == "i"))
        ops.append((li, mode, tuple(inn), tuple(oo), fl, len(attrs)))
        key.append((name, mode, grad, tuple(inn), tuple(oo), other))
    return {"ops": ops, "consts": consts, "key": key, "nslots": len(slot), "nbound": nbound,
            "names": {o[0] for o in key}}, slot


def _observe(fn, regions, called):
    """Run fn observed: the op log, sync count, code objects run and builtins called;
    module calls inside run their Python and are added to `called`."""
    class O:
        pass
    o = O()
    o.codes, o.calls = {}, []
    profile = sys.getprofile()

    def prof(frame, event, arg):
        if event == "call":
            o.codes.setdefault(frame.f_code, frame.f_globals)
        elif event == "c_call":
            o.calls.append((arg, frame.f_code, frame.f_lineno, _user_site(frame)))

    regions._observing = called
    _C._rp_region_observe(True)
    sys.setprofile(prof)
    try:
        o.out = fn()
    finally:
        sys.setprofile(profile)
        _C._rp_region_observe(False)
        regions._observing = None
    o.nsync, o.log = _C._rp_region_log()
    # this function's own frames (the lambda, setprofile) are no part of the region
    o.codes.pop(fn.__code__, None)
    o.calls = [c for c in o.calls if c[1] is not _observe.__code__]
    return o


def _hkey(x):
    """x with its floats by their bits (-0.0 is not 0.0; a NaN equals itself): a dict key."""
    if type(x) is float:
        return ("f", x.hex())
    if type(x) in (tuple, list):
        return (type(x).__name__,) + tuple(_hkey(v) for v in x)
    return x


def _call_site(c):
    """(code, line, callee name) of a builtin call seen while observing."""
    f, code, line = c[:3]
    return code, line, getattr(f, "__qualname__", None) or getattr(f, "__name__", "?")


def _base_zero_grad():
    from .optim.optimizer import Optimizer
    return Optimizer.zero_grad


def _outliving(called, obs, args):
    """ids of the containers a module call can reach that outlive it: its modules'
    attributes (and their items), the globals its code reads, its arguments."""
    pre = set()

    def add(v, depth=0):
        if isinstance(v, (list, dict, set)) and id(v) not in pre:
            pre.add(id(v))
            if depth < 2:
                for x in (v.values() if isinstance(v, dict) else v):
                    add(x, depth + 1)
        elif isinstance(v, tuple) and depth < 2:
            for x in v:
                add(x, depth + 1)

    for mm, _ in called.values():
        for v in mm.__dict__.values():
            add(v)
    for code, g in obs.codes.items():
        for n in code.co_names:
            if n in g:
                add(g[n])
    for a in args:
        add(a)
    return pre


_JANUS_DENY = frozenset("print input open setattr delattr exec eval __import__ seed setstate write flush".split())


def _check_janus_call(f, code, line, where=None):
    """janus's own code is trusted like its bytecode, bar effects no template reproduces
    (where: the script's line that led there, named after janus's)."""
    name = getattr(f, "__name__", "?")
    owner = getattr(f, "__self__", None)
    mod = getattr(f, "__module__", None) or getattr(owner, "__name__", None) or ""
    if (name in _JANUS_DENY or name in _IMPURE_C or mod.split(".")[0] in ("random", "time", "os", "sys", "numpy", "io")
            or type(owner).__module__ in ("random", "numpy")
            or ((owner is _C or mod in ("janus._C", "_C")) and name not in _PURE_C)):
        raise _Refused(f"calls {getattr(f, '__qualname__', name)} at {_site(code, line)}"
                       f"{f' (from {where})' if where else ''} (an effect or state a template does not reproduce)")


def _msnap(m):
    """What a module call may not change: its dict's entries and its parameters,
    buffers and children, by identity."""
    d = m.__dict__
    return (tuple((k, id(v)) for k, v in d.items()),) + tuple(
        tuple((k, id(v)) for k, v in d[k2].items()) if isinstance(d.get(k2), dict) else ()
        for k2 in ("_parameters", "_buffers", "_modules"))


def _snap_diff(a, b):
    for part, (x, y) in zip(("attribute", "parameter", "buffer", "submodule"), zip(a, b)):
        if x != y:
            dx, dy = dict(x), dict(y)
            for k in list(dx) + list(dy):
                if dx.get(k) != dy.get(k):
                    return f"{part} {k}"
    return "its attributes"


def _guard_kind(v):
    if type(v) in (int, float, bool, str, bytes, type(None), complex):
        return _G_EQ
    if isinstance(v, (list, dict)):
        return _G_CONTENT
    return _G_IS


def _reached_modules(v, attrs, depth=3):
    """Module v and the modules reached from it through names in attrs, a few levels
    deep (`torch.jit.is_scripting()` reads jit of torch, then is_scripting of jit)."""
    out, todo = [], [(v, 0)]
    while todo:
        mod, k = todo.pop()
        if any(mod is o for o in out):
            continue
        out.append(mod)
        if k < depth:
            md = mod.__dict__
            todo.extend((md[a], k + 1) for a in attrs if type(md.get(a)) is type(sys))
    return out


def _module_attr(g, names, name, attrs=()):
    """Whether `name` is an attribute of a module among the globals `names` the code
    reads, or of a module reached from one through the names in attrs (guarded by
    Regions._mguards)."""
    return any(type(v) is type(sys) and any(name in m.__dict__ for m in _reached_modules(v, attrs))
               for v in (g.get(n) for n in names))


class _KwNames(tuple):
    """The keyword names of a module call, in order: its last bound argument, compared by
    value (csrc/region_py.c same_value: its type too), so a call with other names, or a
    positional call, misses.  No caller can pass one."""
    __slots__ = ()


def _argspec(a, ids):
    """An argument's spec (csrc/region_py.c): a tensor is its slot, a number or None its
    value, a tuple or list its items'."""
    if isinstance(a, _C.TensorBase):
        ids.append(_meta(a)[0])
        return len(ids) - 1
    if type(a) in (int, float, bool, str, type(None), _KwNames):
        return (0, a)
    if type(a) in (tuple, list):
        return (1, type(a), tuple(_argspec(x, ids) for x in a))
    raise _Refused(f"an argument is a {type(a).__name__} (tensors, numbers, None, tuples and lists are bound)")


def _flat_tensors(a):
    if isinstance(a, _C.TensorBase):
        yield a
    elif type(a) in (tuple, list):
        for x in a:
            yield from _flat_tensors(x)


def _outspec(out, slot, leaves, leaf_of):
    """The output's spec (csrc/region_py.c): a tensor is its leaf, None a constant, a
    tuple, list, namedtuple or dict its items'."""
    if isinstance(out, _C.TensorBase):
        tid = _meta(out)[0]
        if _C._rp_region_detached(out):  # the template would return its source, with its history
            raise _Refused("returns a tensor made by detach inside the call")
        if tid not in slot:
            raise _Refused("returns a tensor that is neither an argument, a parameter or buffer, nor made in the call")
        if tid not in leaf_of:
            leaf_of[tid] = len(leaves)
            leaves.append(slot[tid])
        return leaf_of[tid]
    if out is None:
        return (0, None)
    if type(out) in (tuple, list) or (isinstance(out, tuple) and hasattr(type(out), "_fields")):
        return (1, type(out), tuple(_outspec(x, slot, leaves, leaf_of) for x in out))
    if type(out) is dict or type(out).__name__ == "OrderedDict":
        return (2, type(out), tuple(out), tuple(_outspec(x, slot, leaves, leaf_of) for x in out.values()))
    raise _Refused(f"returns a {type(out).__name__} (tensors, None, tuples, lists, namedtuples and dicts are rebuilt)")


def _state_value(items, key):
    for k, v in items or ():
        if k == key:
            return v
    return None


_user_cache = {}


def _user_site(frame):
    """For a call in janus's own code: the script's line that led there ("file:line"),
    so a refusal names the line the user wrote, not only janus's; None in user code."""
    if _is_user(frame.f_code):
        return None
    f = frame.f_back
    while f is not None and not _is_user(f.f_code):
        f = f.f_back
    return None if f is None else _site(f.f_code, f.f_lineno)


def _is_user(code):
    u = _user_cache.get(code.co_filename)
    if u is None:
        from ._record import _is_user_file
        u = _user_cache[code.co_filename] = _is_user_file(code.co_filename)
    return u
