/* test_ag_custom.c -- custom autograd nodes in the C engine
 * (jn_ag_custom_record, runtime/autograd.c) without Python: the callback's
 * gradients reach the leaves through the usual edges, missing output
 * gradients come as NULL or as zeros (materialize), a non-differentiable
 * output gets no history, a second backward after the release is refused
 * while retain_graph allows it, the backward skip's walk stops at the node,
 * a failing callback stops backward with its message, and the context is
 * freed exactly once on every path (also when recording is refused). */
#include <string.h>

#include "jn_autograd.h"
#include "jn_runtime.h"
#include "jn_test.h"

typedef struct {
    int calls, freed, fail;
    int saw_null[2];
    float seen0[2];
} probe;

static jn_tensor *vec(float a, float b) {
    int64_t n = 2;
    jn_tensor *t = jn_tensor_new(JN_F32, 1, &n);
    ((float *)jn_data(t))[0] = a, ((float *)jn_data(t))[1] = b;
    return t;
}

static jn_tensor *op(jn_op o, jn_tensor *a, jn_tensor *b) {
    jn_attrs at;
    memset(&at, 0, sizeof at);
    at.a[0].f = 1.0; /* add's alpha (mul has no attribute) */
    jn_tensor *in[2] = {a, b}, *out[JN_MAX_OUTS];
    return jn_dispatch(o, b ? 2 : 1, in, &at, out) ? NULL : out[0];
}

/* d(input 0) = 10 * grad of output 0 (+ 1 where output 1's gradient came) */
static jn_status backward_fn(void *ctx, int nout, jn_tensor *const *gout, int nin, const int *needs,
                             jn_tensor **gin) {
    probe *p = ctx;
    p->calls++;
    if (p->fail) return jn_error(JN_ERR_VALUE, "the custom backward refuses");
    for (int k = 0; k < nout && k < 2; k++) p->saw_null[k] = gout[k] == NULL;
    if (gout[0]) memcpy(p->seen0, jn_data(gout[0]), sizeof(float) * 2);
    CHECK(nin == 2 && needs[0] && !needs[1]);
    jn_tensor *ten = vec(10, 10);
    gin[0] = gout[0] ? op(JN_OP_mul, gout[0], ten) : vec(0, 0);
    jn_tensor_decref(ten);
    if (nout > 1 && gout[1]) {
        jn_tensor *s = op(JN_OP_add, gin[0], gout[1]);
        jn_tensor_decref(gin[0]);
        gin[0] = s;
    }
    return JN_OK;
}

static void freed(void *ctx) { ((probe *)ctx)->freed++; }

int main(void) {
    jn_tensor *x = vec(1, 2), *c = vec(3, 4), *ones = vec(1, 1);
    jn_set_requires_grad(x, 1);

    /* y = custom(x * 1, c): outputs (y0, y1) made under no grad, as Function.forward's */
    jn_tensor *h = op(JN_OP_mul, x, ones);
    jn_set_grad_enabled(0);
    jn_tensor *y0 = op(JN_OP_mul, h, c), *y1 = op(JN_OP_add, h, c);
    jn_set_grad_enabled(1);
    probe p = {0};
    jn_tensor *in[2] = {h, c}, *out[2] = {y0, y1};
    int diff[2] = {1, 1};
    CHECK(jn_ag_custom_record("ScaleBackward", 2, in, 2, out, diff, 0, backward_fn, &p, freed) == JN_OK);
    CHECK(jn_requires_grad(y0) && !jn_is_leaf(y0) && !strcmp(jn_grad_fn_name(y0), "ScaleBackward"));

    /* the walk of the backward skip stops at a custom node */
    jn_ag_walk w;
    memset(&w, 0, sizeof w);
    CHECK(jn_ag_walk_graph(y0, 0, &w) == JN_OK && w.code == JN_AG_WALK_CUSTOM && w.why);
    jn_ag_walk_free(&w);

    /* only y0's gradient arrives: y1's is NULL (materialize off) */
    CHECK(jn_backward(1, &y0, &ones, 1) == JN_OK);
    CHECK(p.calls == 1 && !p.saw_null[0] && p.saw_null[1] && p.seen0[0] == 1.0f);
    const float *gx = (const float *)jn_data(jn_grad(x));
    CHECK(gx[0] == 10.0f && gx[1] == 10.0f);
    /* retained: a second pass runs, and without retain_graph the node releases its context */
    CHECK(jn_backward(1, &y1, &ones, 0) == JN_OK && p.calls == 2 && p.saw_null[0] && !p.saw_null[1]);
    gx = (const float *)jn_data(jn_grad(x));
    CHECK(gx[0] == 11.0f && gx[1] == 11.0f); /* zeros from output 0, +1 from output 1 */
    CHECK(p.freed == 1);
    CHECK(jn_backward(1, &y0, &ones, 0) != JN_OK && strstr(jn_errmsg(), "second time"));
    CHECK(p.calls == 2 && p.freed == 1);

    /* materialize: the missing gradient comes as zeros; a non-differentiable output has no history
     * (over a new h: the first one's node was released with the pass above) */
    probe q = {0};
    jn_tensor_decref(h);
    in[0] = h = op(JN_OP_mul, x, ones);
    jn_set_grad_enabled(0);
    jn_tensor *z0 = op(JN_OP_mul, h, c), *z1 = op(JN_OP_add, h, c);
    jn_set_grad_enabled(1);
    jn_tensor *zo[2] = {z0, z1};
    int zd[2] = {1, 0};
    CHECK(jn_ag_custom_record("PairBackward", 2, in, 2, zo, zd, 1, backward_fn, &q, freed) == JN_OK);
    CHECK(jn_requires_grad(z0) && !jn_requires_grad(z1));
    CHECK(jn_backward(1, &z0, &ones, 0) == JN_OK && q.calls == 1 && !q.saw_null[0] && !q.saw_null[1]);

    /* a failing callback stops backward with its message */
    probe bad = {.fail = 1};
    jn_tensor_decref(h);
    in[0] = h = op(JN_OP_mul, x, ones);
    jn_set_grad_enabled(0);
    jn_tensor *b0 = op(JN_OP_mul, h, c);
    jn_set_grad_enabled(1);
    CHECK(jn_ag_custom_record("BadBackward", 2, in, 1, &b0, NULL, 1, backward_fn, &bad, freed) == JN_OK);
    CHECK(jn_backward(1, &b0, &ones, 0) != JN_OK && strstr(jn_errmsg(), "the custom backward refuses"));

    /* refused records still free their context: an output that already has history */
    probe refused = {0};
    CHECK(jn_ag_custom_record("AgainBackward", 2, in, 1, &y0, NULL, 1, backward_fn, &refused, freed) != JN_OK);
    CHECK(refused.freed == 1 && strstr(jn_errmsg(), "already has a grad_fn"));

    jn_tensor *all[] = {x, c, ones, h, y0, y1, z0, z1, b0};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) jn_tensor_decref(all[i]);
    CHECK(p.freed == 1 && q.freed == 1 && bad.freed == 1 && refused.freed == 1);
    JT_DONE();
}
