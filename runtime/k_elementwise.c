/* k_elementwise.c -- elementwise math, casts, comparisons.
 *
 * STUBS: every op here still returns JN_ERR_UNSUPPORTED; replace each stub
 * with its shape inference and CPU kernel. */
#include "jn_runtime.h"

#define STUB(name) \
  jn_status jn_infer_##name(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) { \
    (void)nin; (void)in; (void)a; (void)out; return jn_error(JN_ERR_UNSUPPORTED, #name " is not implemented yet"); } \
  jn_status jn_cpu_##name(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) { \
    (void)nin; (void)in; (void)a; (void)out; return jn_error(JN_ERR_UNSUPPORTED, #name " is not implemented yet"); }

STUB(add)
STUB(sub)
STUB(mul)
STUB(div)
STUB(pow)
STUB(remainder)
STUB(maximum)
STUB(minimum)
STUB(atan2)
STUB(eq)
STUB(ne)
STUB(lt)
STUB(le)
STUB(gt)
STUB(ge)
STUB(logical_and)
STUB(logical_or)
STUB(logical_xor)
STUB(logical_not)
STUB(neg)
STUB(exp)
STUB(log)
STUB(log1p)
STUB(expm1)
STUB(sqrt)
STUB(rsqrt)
STUB(abs)
STUB(sign)
STUB(reciprocal)
STUB(tanh)
STUB(sigmoid)
STUB(relu)
STUB(gelu)
STUB(silu)
STUB(sin)
STUB(cos)
STUB(erf)
STUB(floor)
STUB(ceil)
STUB(round)
STUB(isnan)
STUB(clamp)
STUB(where)
STUB(masked_fill)
STUB(cast)
STUB(copy_)
STUB(fill_)
