/* k_grad.c -- kernels that only derivative formulas use.
 *
 * STUBS: every op here still returns JN_ERR_UNSUPPORTED; replace each stub
 * with its shape inference and CPU kernel. */
#include "jn_runtime.h"

#define STUB(name) \
  jn_status jn_infer_##name(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) { \
    (void)nin; (void)in; (void)a; (void)out; return jn_error(JN_ERR_UNSUPPORTED, #name " is not implemented yet"); } \
  jn_status jn_cpu_##name(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) { \
    (void)nin; (void)in; (void)a; (void)out; return jn_error(JN_ERR_UNSUPPORTED, #name " is not implemented yet"); }

STUB(conv2d_input_grad)
STUB(conv2d_weight_grad)
STUB(avg_pool2d_backward)
STUB(adaptive_avg_pool2d_backward)
