/* test_ag_group.c -- the autograd group node (runtime/autograd.c,
 * jn_ag_group_begin/end): a small graph whose two "region calls" (mm, add,
 * tanh over a shared weight) are recorded once as group nodes and once as
 * plain per-op nodes.  Their gradients must be equal bit for bit (the same
 * formulas, in the same order, adding in the same association), a call must
 * make one node, its output's grad_fn name must be its op's, and a second
 * backward without retain_graph must fail with eager's message. */
#include <stdlib.h>
#include <string.h>

#include "jn_autograd.h"
#include "jn_runtime.h"
#include "jn_test.h"

static jn_tensor *filled(int ndim, const int64_t *shape, float seed, int grad) {
    jn_tensor *t = jn_tensor_new(JN_F32, ndim, shape);
    float *p = (float *)jn_data(t);
    for (int64_t i = 0; i < jn_numel(t); i++) p[i] = (float)(((i * 37 + (int64_t)(seed * 11)) % 19) - 9) * 0.071f + seed;
    if (grad) jn_set_requires_grad(t, 1);
    return t;
}

static jn_tensor *op2(jn_op op, jn_tensor *a, jn_tensor *b) {
    jn_attrs at;
    memset(&at, 0, sizeof at);
    if (op == JN_OP_add) at.a[0].f = 1.0;
    jn_tensor *in[2] = {a, b}, *out[JN_MAX_OUTS];
    return jn_dispatch(op, b ? 2 : 1, in, &at, out) ? NULL : out[0];
}

/* one "region call": tanh(mm(x, W) + b), as one group node when grouped */
static jn_tensor *call(jn_tensor *x, jn_tensor *W, jn_tensor *b, int grouped, uint64_t *made) {
    jn_ag_group g;
    uint64_t n0 = jn_ag_nodes_made();
    if (grouped) jn_ag_group_begin(&g, 3, 6, 3);
    jn_tensor *m = op2(JN_OP_mm, x, W), *s = op2(JN_OP_add, m, b), *h = op2(JN_OP_tanh, s, NULL);
    if (grouped) jn_ag_group_end(&g);
    jn_tensor_decref(m), jn_tensor_decref(s);
    *made = jn_ag_nodes_made() - n0;
    return h;
}

/* Gradients of W, b, p (concatenated bytes) after backward of out. */
static void run(int grouped, float *res, int *nres, char *err2, size_t nerr) {
    int64_t sw[2] = {4, 4}, sb[1] = {4}, sx[2] = {3, 4};
    jn_tensor *W = filled(2, sw, 0.3f, 1), *b = filled(1, sb, -0.2f, 1), *x = filled(2, sx, 0.5f, 0),
              *p = filled(2, sx, 0.9f, 1), *G = filled(2, sx, 0.1f, 0);
    uint64_t made1, made2;
    jn_tensor *x2 = op2(JN_OP_mul, x, p);                  /* outer: requires grad */
    jn_tensor *h = call(x2, W, b, grouped, &made1);        /* a gradient leaves it to x2's node */
    jn_tensor *h2 = call(h, W, b, grouped, &made2);        /* W, b from both calls */
    jn_tensor *hh = op2(JN_OP_mul, h2, h), *out = op2(JN_OP_add, hh, x2); /* h, x2: two consumers */
    CHECK(made1 == (grouped ? 1u : 3u) && made2 == made1);
    CHECK(jn_ag_group_size(h) == (grouped ? 3 : 0));
    CHECK(jn_grad_fn_name(h) && !strcmp(jn_grad_fn_name(h), "tanh"));
    *nres = 0;
    /* autograd.grad w.r.t. a parameter and a non-leaf input (x2, read off a node's buffer) */
    jn_tensor *h3 = call(x2, W, b, grouped, &made1), *gi[2] = {NULL, NULL}, *wrt[2] = {W, x2};
    CHECK(jn_autograd_grad(1, &h3, &G, 2, wrt, gi, 1, 0) == JN_OK);
    for (int i = 0; i < 2; i++)
        if (gi[i]) {
            memcpy(res + *nres, jn_data(gi[i]), sizeof(float) * (size_t)jn_numel(gi[i]));
            *nres += (int)jn_numel(gi[i]);
            jn_tensor_decref(gi[i]);
        }
    CHECK(jn_backward(1, &out, &G, 1) == JN_OK);           /* retain_graph */
    CHECK(jn_backward(1, &out, &G, 0) == JN_OK);           /* accumulates */
    CHECK(jn_ag_history_released(h));
    CHECK(jn_backward(1, &out, &G, 0) != JN_OK);
    snprintf(err2, nerr, "%s", jn_errmsg());
    jn_tensor *leaves[3] = {W, b, p};
    for (int i = 0; i < 3; i++) {
        jn_tensor *g = jn_grad(leaves[i]);
        CHECK(g != NULL);
        if (!g) continue;
        memcpy(res + *nres, jn_data(g), sizeof(float) * (size_t)jn_numel(g));
        *nres += (int)jn_numel(g);
    }
    jn_tensor *all[] = {W, b, x, p, G, x2, h, h2, hh, out, h3};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) jn_tensor_decref(all[i]);
}

int main(void) {
    float a[256], b[256];
    int na = 0, nb = 0;
    char ea[1024], eb[1024];
    run(0, a, &na, ea, sizeof ea);
    run(1, b, &nb, eb, sizeof eb);
    CHECK(na == nb && na == 16 + 4 + 12 + 16 + 12);
    CHECK(na == nb && !memcmp(a, b, sizeof(float) * (size_t)na));
    CHECK(!strcmp(ea, eb) && strstr(ea, "backward through the graph a second time"));
    JT_DONE();
}
