/* test_ag_saved.c -- a Python number an op saved for backward stays a
 * Python number (runtime/autograd.c same_value): the derivative formulas
 * see what PyTorch's saved Scalars are.
 *
 * - pow(x, 2.0)'s derivative computes the exponent minus one on the host
 *   (derivatives.c minus_one): its backward dispatches no op over 0-d
 *   inputs alone (on a CUDA replay such a CPU op would end the captured
 *   segment at every backward);
 * - mul(loss, 0.1) on a 0-d float32 loss: the gradient times the saved 0.1
 *   promotes it as the least (float32, the number rounded to float32 as
 *   PyTorch's kernels do), not as a 0-d float64 tensor.
 * Both are checked against what the ops compute directly. */
#include <math.h>
#include <string.h>

#include "jn_autograd.h"
#include "jn_runtime.h"
#include "jn_test.h"

typedef struct {
    int64_t id;          /* the exponent's id (its saved alias keeps it) */
    int ops, scalar_ops; /* ops dispatched; ... of them over 0-d inputs alone, the exponent one */
} seen;

static void after(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                  jn_tensor *const *out) {
    (void)op, (void)a, (void)nout, (void)out;
    seen *s = ctx;
    s->ops++;
    int dims = 0, reads = 0;
    for (int i = 0; i < nin; i++) dims += in[i]->ndim, reads |= in[i]->id == s->id;
    s->scalar_ops += reads && !dims;
}

static jn_tensor *call(jn_op o, jn_tensor *a, jn_tensor *b) {
    jn_attrs at;
    memset(&at, 0, sizeof at);
    if (o == JN_OP_add || o == JN_OP_sub) at.a[0].f = 1.0;
    jn_tensor *in[2] = {a, b}, *out[JN_MAX_OUTS];
    return jn_dispatch(o, b ? 2 : 1, in, &at, out) ? NULL : out[0];
}

int main(void) {
    int64_t n = 3;
    jn_tensor *x = jn_tensor_new(JN_F32, 1, &n);
    float *xv = (float *)jn_data(x);
    xv[0] = 0.5f, xv[1] = -1.25f, xv[2] = 3.0f;
    jn_set_requires_grad(x, 1);

    /* d/dx sum(x ** 2.0) = 2 x, with no op over the saved exponent */
    jn_tensor *two = jn_scalar_f64(2.0, JN_F64, 1);
    jn_tensor *y = call(JN_OP_pow, x, two);
    jn_tensor *l = call(JN_OP_sum, y, NULL);
    CHECK(l && l->ndim == 0);
    seen s = {two->id, 0, 0};
    jn_dispatch_hook h = {after, &s};
    jn_set_dispatch_hook(&h);
    CHECK(jn_backward(1, &l, NULL, 0) == JN_OK);
    jn_set_dispatch_hook(NULL);
    CHECK(s.ops > 0);
    /* no op over numbers alone (pow's read its exponent on the host: y - 1 was one) */
    CHECK(s.scalar_ops == 0);
    jn_tensor *g = jn_grad(x);
    CHECK(g && g->dtype == JN_F32);
    for (int i = 0; g && i < 3; i++) CHECK(((float *)jn_data(g))[i] == 2.0f * xv[i]);
    jn_set_grad(x, NULL);

    /* d/dx (sum(x) * 0.1): the gradient 1 times 0.1 in float32 */
    jn_tensor *tenth = jn_scalar_f64(0.1, JN_F64, 1);
    jn_tensor *sx = call(JN_OP_sum, x, NULL), *m = call(JN_OP_mul, sx, tenth);
    CHECK(m && m->dtype == JN_F32);
    CHECK(jn_backward(1, &m, NULL, 0) == JN_OK);
    g = jn_grad(x);
    CHECK(g && g->dtype == JN_F32);
    for (int i = 0; g && i < 3; i++) CHECK(((float *)jn_data(g))[i] == 0.1f);

    jn_tensor *all[] = {x, two, y, l, tenth, sx, m};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) jn_tensor_decref(all[i]);
    JT_DONE();
}
