"""janus.autograd.functional: jacobian, vjp and jvp of a function of tensors
(torch.autograd.functional), first order.

Built on janus.autograd.grad: jacobian runs the function once and then one
backward per output element (retain_graph), as torch's reverse mode does
without vectorize; vjp is one backward.  The inputs are detached copies
that require grad (a function that reads its input from elsewhere is not
differentiated through it), and results come back detached, with torch's
argument checks, strict-mode errors and tuple conventions (a tensor given,
a tensor returned; a tuple given, a tuple returned; jacobian[i][j] for
output i and input j).

Janus has no double backward (janus.autograd.grad(create_graph=True)), so
create_graph=True, hessian, hvp and vhp raise NotImplementedError.  janus
has no vmap nor forward-mode AD either: vectorize=True computes the same
Jacobian by the per-element loop, strategy="forward-mode" (which torch
allows only with vectorize=True) computes it by reverse mode too, with the
output's dtype as torch's forward mode gives, and jvp is the Jacobian
contracted with v (one backward per output element, where torch uses the
double-backward trick).
"""
import janus

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

_NO_DOUBLE_BACKWARD = ("janus.autograd.functional.{}: {} needs higher-order gradients (double backward: "
                       "janus.autograd.grad(create_graph=True)), which janus does not support; "
                       "{}")


def _no_create_graph(fn_name, create_graph):
    if create_graph:
        raise NotImplementedError(_NO_DOUBLE_BACKWARD.format(
            fn_name, "create_graph=True", "call it with create_graph=False (first-order results)"))


def _as_tuple(inp, arg_name=None, fn_name=None):
    """(was it a tuple, the tuple): a tensor or a tuple of tensors, checked."""
    if arg_name is None and fn_name is None:
        return inp if isinstance(inp, tuple) else tuple(inp) if isinstance(inp, list) else (inp,)
    is_tuple = True
    if not isinstance(inp, tuple):
        inp = (inp,)
        is_tuple = False
    for i, el in enumerate(inp):
        if not isinstance(el, janus.Tensor):
            if is_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                                f"the value at index {i} has type {type(el)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the "
                            f"given {arg_name} has type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undo _as_tuple: unpack the levels that were not tuples (to_unpack: one
    bool, or (outer, inner) for a nested result)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, need_graph):
    """New leaf tensors: detached copies requiring grad when need_graph (so the
    function's inputs are told apart from the same tensors captured by it)."""
    return tuple(inp.detach().requires_grad_(need_graph) for inp in inputs)


def _grad_postprocess(inputs):
    if isinstance(inputs[0], janus.Tensor):
        return tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp) for inp in inputs)


def _vector(v, other, is_other_tuple, fn_name, what):
    """v (vjp: per output; jvp: per input) as a tuple of detached tensors shaped as other's;
    None only where other is one one-element tensor (what: torch's words for it), then
    ones, as torch's."""
    if v is None:
        if len(other) != 1 or other[0].nelement() != 1:
            raise RuntimeError(f"The vector v can only be None if {what} a single Tensor with a single element.")
        return (janus.ones_like(other[0]),)
    _, v = _as_tuple(v, "v", fn_name)
    v = _grad_preprocess(v, need_graph=False)
    _validate_v(v, other, is_other_tuple)
    return v


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}.")


def _check_outputs_require_grad(outputs, strict):
    if not strict:
        return
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs "
                               "must be computed in a differentiable manner from the input when running in strict "
                               "mode.")


def _autograd_grad(outputs, inputs, grad_outputs=None, retain_graph=None):
    """janus.autograd.grad over the outputs that require grad (None for each
    input when none does); unused inputs give None."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    outs, gos = [], []
    for out, go in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            outs.append(out)
            gos.append(go)
    if not outs:
        return (None,) * len(inputs)
    return janus.autograd.grad(outs, list(inputs), gos, retain_graph=retain_graph, allow_unused=True)


def _fill_in_zeros(grads, refs, strict):
    res = ()
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is "
                                   "not allowed in strict mode.")
            g = janus.zeros_like(refs[i])
        res += (g,)
    return res


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v^T J): the vector-Jacobian product of func at inputs
    (torch.autograd.functional.vjp).  v: one tensor per output, of its
    shape; may be None when func returns a single one-element tensor.  The
    vjp has the inputs' shapes (zeros for an input no output depends on;
    strict: a RuntimeError instead).  create_graph=True is not supported
    (no double backward)."""
    _no_create_graph("vjp", create_graph)
    with janus.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_outputs_require_grad(outputs, strict)
        v = _vector(v, outputs, is_outputs_tuple, "vjp", "the user-provided function returns")
    grad_res = _autograd_grad(outputs, inputs, v)
    res = _fill_in_zeros(grad_res, inputs, strict)
    return (_tuple_postprocess(_grad_postprocess(outputs), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(res), is_inputs_tuple))


def _one_hot(out, k):
    """A tensor like out, 1 at flat index k and 0 elsewhere."""
    g = janus.zeros((out.nelement(),), dtype=out.dtype, device=out.device)
    g[k] = 1.0
    return g.view(out.shape)


def _jacobian_blocks(outputs, inputs, strict):
    """((J[i][j] for each input j) for each output i), J[i][j] of shape
    out_i.shape + in_j.shape, and used[i][j]: whether output i reaches input j
    in the graph.  One backward per output element, its grad_output a one-hot
    tensor (torch differentiates out.reshape(-1)[k]: the same row).  strict:
    RuntimeError for an output that does not reach an input, in torch's words."""
    jac, used = (), []
    for i, out in enumerate(outputs):
        n = out.nelement()
        rows = [[] for _ in inputs]
        reach = [False] * len(inputs)
        for k in range(n):
            if out.requires_grad:
                vj = _autograd_grad((out,), inputs, (_one_hot(out, k),), retain_graph=True)
            else:
                vj = (None,) * len(inputs)
            for j, (g, inp) in enumerate(zip(vj, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {j}. "
                                           "This is not allowed in strict mode.")
                    g = janus.zeros_like(inp)
                else:
                    reach[j] = True
                rows[j].append(g)
        block = []
        for j, inp in enumerate(inputs):
            shape = tuple(out.shape) + tuple(inp.shape)
            if n == 0:
                block.append(janus.zeros(shape, dtype=inp.dtype, device=inp.device))
            else:
                block.append(janus.stack(rows[j], 0).view(shape))
        jac += (tuple(block),)
        used.append(reach)
    return jac, used


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at inputs (torch.autograd.functional.jacobian):
    for one input and one output tensor, a tensor of shape out.shape +
    in.shape; a tuple over inputs (one output) or outputs (one input) when
    either was a tuple; jac[i][j] when both were.  Zeros where an output does
    not depend on an input (strict: a RuntimeError).

    vectorize=True gives the same result (janus has no vmap: the loop runs
    anyway); strategy="forward-mode" (torch requires vectorize=True with it)
    is computed by reverse mode and returned in the outputs' dtype, as
    torch's forward mode returns it.  create_graph=True is not supported
    (no double backward)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please either '
                                      'set `create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` '
                               'are not supported together (yet). Please either set `strict=False` or '
                               '`strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                      "only implemented for `vectorize=True`.")
    _no_create_graph("jacobian", create_graph)
    with janus.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_outputs_require_grad(outputs, strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                               "supported together. Please either set `strict=False` or `vectorize=False`.")
    jac, _ = _jacobian_blocks(outputs, inputs, strict)
    if strategy == "forward-mode":
        jac = tuple(tuple(b.to(out.dtype) for b in row) for row, out in zip(jac, outputs))
    jac = _grad_postprocess(jac)
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), J v): the Jacobian-vector product of func at inputs
    (torch.autograd.functional.jvp).  v: one tensor per input, of its shape;
    may be None when the input is a single one-element tensor.  The jvp has
    the outputs' shapes.  Computed as the Jacobian (one backward per output
    element) contracted with v, where torch uses the double-backward trick:
    the same values, more backward passes for large outputs.
    create_graph=True is not supported (no double backward)."""
    _no_create_graph("jvp", create_graph)
    with janus.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, need_graph=True)
        v = _vector(v, inputs, is_inputs_tuple, "jvp", "the input to the user-provided function is")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_outputs_require_grad(outputs, strict)
    jac, used = _jacobian_blocks(outputs, inputs, strict=False)
    if strict:
        for j in range(len(inputs)):
            if not any(u[j] for u in used):
                raise RuntimeError(f"The output of the user-provided function is independent of input {j}. This is "
                                   "not allowed in strict mode.")
        for i, u in enumerate(used):
            if not any(u):
                raise RuntimeError(f"The gradient with respect to the input is independent of entry {i} in the "
                                   "grad_outputs when using the double backward trick to compute forward mode "
                                   "gradients. This is not allowed in strict mode.")
    res = ()
    with janus.no_grad():
        for out, row in zip(outputs, jac):
            n = out.nelement()
            acc = janus.zeros((n,), dtype=out.dtype, device=out.device)
            for block, vj in zip(row, v):
                m = vj.nelement()
                if n and m:
                    acc = acc + (block.reshape(n, m) @ vj.reshape(m, 1).to(block.dtype)).reshape(n).to(out.dtype)
            res += (acc.view(out.shape),)
    return (_tuple_postprocess(_grad_postprocess(outputs), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(res), is_outputs_tuple))


def _second_order(name):
    raise NotImplementedError(_NO_DOUBLE_BACKWARD.format(
        name, name, "janus.autograd.functional.jacobian of a function that computes a gradient is not available "
        "either; a central difference of jacobian (or of vjp) approximates it"))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """Not supported: the Hessian needs double backward, which janus lacks (NotImplementedError)."""
    _second_order("hessian")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """Not supported: a Hessian-vector product needs double backward, which janus lacks (NotImplementedError)."""
    _second_order("hvp")


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """Not supported: a vector-Hessian product needs double backward, which janus lacks (NotImplementedError)."""
    _second_order("vhp")
