"""janus.special: the torch.special functions janus's table and composed
functions already compute, under their torch.special names (expit is
sigmoid, and so on).  The rest (gammaln, digamma, erfinv, erfc, ndtr, the
Bessel functions, ...) have no kernels: they raise janus's unsupported-name
error.
"""
import janus

__all__ = ["expit", "logit", "erf", "expm1", "exp2", "log1p", "xlogy", "sinc", "logsumexp", "softmax",
           "log_softmax", "round"]


def expit(input, *, out=None):
    return janus.sigmoid(input, out=out)


def logit(input, eps=None, *, out=None):
    r = janus.logit(input, eps)
    if out is not None:
        out.copy_(r)
        return out
    return r


erf = janus.erf
expm1 = janus.expm1
exp2 = janus.exp2
log1p = janus.log1p
xlogy = janus.xlogy
sinc = janus.sinc
logsumexp = janus.logsumexp
round = janus.round


def softmax(input, dim, *, dtype=None):
    return janus.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return janus.log_softmax(input, dim, dtype=dtype)
