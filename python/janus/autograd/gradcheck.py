"""janus.autograd.gradcheck: analytical gradients checked against central
differences (torch.autograd.gradcheck), for real inputs.

gradcheck(func, inputs) runs func, then for every input that requires grad
and every differentiable output (one that requires grad) compares

- the numerical Jacobian: each element of the input moved by -eps and
  +eps, (f(x + eps) - f(x - eps)) / (2 eps), with
- the analytical Jacobian: one janus.autograd.grad per output element (its
  one-hot grad_output), computed twice (the second must equal the first
  within nondet_tol: a reentrant backward),

both laid out as torch lays them out (input elements x output elements),
with allclose(analytical, numerical, rtol, atol).  A mismatch raises
GradcheckError (a RuntimeError) in torch's words, "Jacobian mismatch for
output i with respect to input j,\\nnumerical:...\\nanalytical:...", or
returns False with raise_exception=False.  Then the gradient of a
zero grad_output must be zero ("backward not multiplied by grad_output")
and of the inputs' dtype and shape.

Differences from torch: the perturbed inputs are copies passed to func in
place of the inputs (torch writes the perturbation into the input's storage
through .data; in janus that bumps the tensor's version, which would break
the graph of the outputs already computed), so a func that reads an input
from somewhere other than its arguments does not see the perturbation.
fast_mode=True runs this full check (torch checks one random projection of
the Jacobian, with its own messages); check_undefined_grad has nothing to
check (janus's backward has no undefined gradients: every grad_output is a
tensor); check_forward_ad, check_batched_grad and
check_batched_forward_grad need forward-mode AD / vmap, which janus lacks
(NotImplementedError); masked is accepted (janus has no sparse tensors).
gradgradcheck needs double backward, which janus does not have
(NotImplementedError).
"""
import warnings

import janus

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Error raised by gradcheck and gradgradcheck."""


FAILED_NONDET_MSG = """

NOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_nondet_tol=<tol>`.
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_nondet_tol=<tol>`
"""


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_tensor(x):
    return isinstance(x, janus.Tensor)


def _differentiable_outputs(x):
    return tuple(o for o in _as_tuple(x) if o.requires_grad)


def _diff_input_indices(inputs):
    return [i for i, a in enumerate(inputs) if _is_tensor(a) and a.requires_grad]


def _check_inputs(tupled_inputs):
    any_requires_grad = False
    for idx, inp in enumerate(tupled_inputs):
        if _is_tensor(inp) and inp.requires_grad:
            if inp.dtype != janus.float64:
                warnings.warn(f"Input #{idx} requires gradient and is not a double precision floating point or "
                              "complex. This check will likely fail if all the inputs are not of double precision "
                              "floating point or complex. ", stacklevel=4)
            if not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.size())):
                raise RuntimeError(f"The {idx}th input has a dimension with stride 0. gradcheck only supports inputs "
                                   "that are non-overlapping to be able to compute the numerical gradients "
                                   "correctly. You should call .contiguous on the input before passing it to "
                                   "gradcheck.")
            any_requires_grad = True
    if not any_requires_grad:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True.")
    return True


def _check_outputs_same_dtype_and_shape(output1, output2, eps, idx=None):
    on_index = f"on index {idx} " if idx is not None else ""
    if output1.shape != output2.shape:
        raise AssertionError(f"Expected `func` to return outputs with the same shape when inputs are perturbed "
                             f"{on_index}by {eps}, but got: shapes {output1.shape} and {output2.shape}.")
    if output1.dtype != output2.dtype:
        raise AssertionError(f"Expected `func` to return outputs with the same dtype when inputs are perturbed "
                             f"{on_index}by {eps}, but got: dtypes {output1.dtype} and {output2.dtype}.")


def _multi_index(k, shape):
    idx = []
    for s in reversed(tuple(shape)):
        idx.append(k % s)
        k //= s
    return tuple(reversed(idx))


def _numerical_jacobians(func, inputs, out_positions, out_refs, eps):
    """{input index: [J for each output position]}: J of shape (input numel,
    output numel), row k the central difference for input element k (in
    row-major order), in the output's dtype."""
    result = {}
    for i in _diff_input_indices(inputs):
        inp = inputs[i]
        base = inp.detach().clone().contiguous()
        n = base.nelement()
        jacs = [janus.zeros((n, out_refs[p].nelement()), dtype=out_refs[p].dtype, device=out_refs[p].device)
                for p in out_positions]

        def run(value, i=i, inp=inp):
            args = list(inputs)
            args[i] = value.requires_grad_(inp.requires_grad)
            outs = _as_tuple(func(*args))
            return tuple(outs[p].detach().clone() for p in out_positions)

        for k in range(n):
            lo = base.clone()
            lo.view(-1)[k] -= eps
            hi = base.clone()
            hi.view(-1)[k] += eps
            outa, outb = run(lo), run(hi)
            idx = _multi_index(k, base.shape)
            for jac, a, b in zip(jacs, outa, outb):
                _check_outputs_same_dtype_and_shape(a, b, eps, idx)
                jac[k] = ((b - a) / (2 * eps)).reshape(-1)
        result[i] = jacs
    return result


def _one_hot(out, k):
    """A tensor like out, 1 at flat index k and 0 elsewhere (the grad_output of row k)."""
    g = janus.zeros((out.nelement(),), dtype=out.dtype, device=out.device)
    g[k] = 1.0
    return g.view(out.shape)


def _analytical_rows(output, diff_inputs):
    """[(n_in_j, n_out) Jacobian, or a per-row list when a gradient has another
    shape or dtype] per input: one backward per output element."""
    n = output.nelement()
    grads = [[] for _ in diff_inputs]
    for k in range(n):
        g = janus.autograd.grad([output], diff_inputs, [_one_hot(output, k)], retain_graph=True, allow_unused=True)
        for j, d in enumerate(g):
            grads[j].append(None if d is None else d.detach().clone())
    return grads


def _stack_and_check(rows, diff_inputs, n_out):
    jacs, sizes_ok, types_ok = [], True, True
    for inp, col in zip(diff_inputs, rows):
        jac = janus.zeros((inp.nelement(), n_out), dtype=inp.dtype, device=inp.device)
        for k, g in enumerate(col):
            if g is None:
                continue
            if g.size() != inp.size():
                sizes_ok = False
            elif g.dtype != inp.dtype:
                types_ok = False
            if g.nelement() != inp.nelement():
                raise AssertionError(f"Expected out_jacobian column to have {g.nelement()} elements, but got "
                                     f"{inp.nelement()}")
            jac[:, k] = g.reshape(-1).to(jac.dtype)
        jacs.append(jac)
    return jacs, sizes_ok, types_ok


def _jacobians_equal(j1, j2, tol):
    for a, b in zip(j1, j2):
        if a.nelement() != 0 and float((a - b).abs().max()) > tol:
            return False
    return True


def _analytical_jacobian(diff_inputs, output, nondet_tol, check_grad_dtypes):
    n_out = output.nelement()
    jac1, sizes_ok, types_ok = _stack_and_check(_analytical_rows(output, diff_inputs), diff_inputs, n_out)
    jac2, _, _ = _stack_and_check(_analytical_rows(output, diff_inputs), diff_inputs, n_out)
    reentrant = _jacobians_equal(jac1, jac2, nondet_tol)
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError("Backward is not reentrant, i.e., running backward with same input and grad_output "
                             "multiple times gives different values, although analytical gradient matches numerical "
                             f"gradient.The tolerance for nondeterminism was {nondet_tol}." + FAILED_NONDET_MSG)
    return jac1


def _promote(a, b):
    if a.dtype == b.dtype:
        return a, b
    dt = a.dtype if a.element_size() >= b.element_size() else b.dtype
    return a.to(dt), b.to(dt)


def _allclose(a, b, rtol, atol):
    a, b = _promote(a, b.to(a.device))
    return bool(janus.allclose(a, b, rtol, atol))


def _notallclose_msg(analytical, numerical, output_idx, input_idx):
    return (f"Jacobian mismatch for output {output_idx:d} with respect to input {input_idx:d},\n"
            f"numerical:{numerical}\nanalytical:{analytical}\n")


def _slow_gradcheck(func, func_out, tupled_inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol):
    func_out = _as_tuple(func_out)
    if not outputs:
        # no differentiable output: the numerical gradient must be zero
        floats = [p for p, o in enumerate(func_out) if _is_tensor(o) and o.dtype.is_floating_point]
        for jacs in _numerical_jacobians(func, tupled_inputs, floats, func_out, eps).values():
            for jac in jacs:
                if bool((jac != 0).any()):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    positions = [p for p, o in enumerate(func_out) if _is_tensor(o) and o.requires_grad]
    numerical = _numerical_jacobians(func, tupled_inputs, positions, func_out, eps)
    in_order = _diff_input_indices(tupled_inputs)
    diff_inputs = [tupled_inputs[i] for i in in_order]
    for i, o in enumerate(outputs):
        analytical = _analytical_jacobian(diff_inputs, o, nondet_tol, check_grad_dtypes)
        for j, (a, inp_idx) in enumerate(zip(analytical, in_order)):
            n = numerical[inp_idx][i]
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(_notallclose_msg(a, n, i, j))
    return True


def _test_backward_mul_by_grad_output(outputs, inputs):
    diff_inputs = [inputs[i] for i in _diff_input_indices(inputs)]
    if not diff_inputs:
        raise GradcheckError("no Tensors requiring grad found in input")
    grads = janus.autograd.grad(list(outputs), diff_inputs, [janus.zeros_like(o) for o in outputs],
                                allow_unused=True)
    for gi, di in zip(grads, diff_inputs):
        if gi is None:
            continue
        if not bool((gi == 0).all()):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype != di.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi.device != di.device:
            raise GradcheckError("grad is incorrect device")
        if gi.size() != di.size():
            raise GradcheckError("grad is incorrect size")
    return True


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """Check the gradients of func at inputs (a tensor or a tuple of them,
    the float64 ones that require grad are checked) against central
    differences; True when they match, else GradcheckError (False with
    raise_exception=False).  See the module docstring for what is compared
    and how janus differs from torch."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    if check_forward_ad or check_batched_forward_grad:
        raise NotImplementedError("gradcheck(check_forward_ad=True): janus has no forward-mode AD; check the "
                                  "backward (reverse-mode) gradients with check_forward_ad=False")
    if check_batched_grad:
        raise NotImplementedError("gradcheck(check_batched_grad=True): janus has no vmap (batched gradients); "
                                  "call it with check_batched_grad=False")
    try:
        return _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes):
    tupled_inputs = _as_tuple(inputs)
    _check_inputs(tupled_inputs)
    func_out = func(*tupled_inputs)
    outputs = _differentiable_outputs(func_out)
    _slow_gradcheck(func, func_out, tupled_inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol)
    if outputs:
        _test_backward_mul_by_grad_output(outputs, tupled_inputs)
    else:
        _test_backward_mul_by_grad_output_none(tupled_inputs)
    return True


def _test_backward_mul_by_grad_output_none(inputs):
    if not _diff_input_indices(inputs):
        raise GradcheckError("no Tensors requiring grad found in input")


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0, check_undefined_grad=True,
                  check_grad_dtypes=False, check_batched_grad=False, check_fwd_over_rev=False,
                  check_rev_over_rev=True, fast_mode=False, masked=False):
    """Not supported: second derivatives need double backward
    (janus.autograd.grad(create_graph=True)), which janus does not have."""
    raise NotImplementedError("gradgradcheck needs higher-order gradients (double backward: "
                              "janus.autograd.grad(create_graph=True)), which janus does not support; "
                              "gradcheck checks the first derivatives")
