/* test_ag_walk.c -- the walk replay's backward skip guards with
 * (jn_ag_walk_graph, runtime/autograd.c): two graphs built alike over other
 * values have one fingerprint, one with another attribute or shape does
 * not; a node made before min_seq, a hook, a defined .grad, a saved tensor
 * changed in place or a released graph make it say why; detach leaves the
 * graph as a backward without retain_graph would (released, saved tensors
 * handed over) and restore undoes it, after which backward gives the same
 * gradient as on a graph never walked. */
#include <string.h>

#include "jn_autograd.h"
#include "jn_runtime.h"
#include "jn_test.h"

static jn_tensor *vec(int n, float a) {
    int64_t sh = n;
    jn_tensor *t = jn_tensor_new(JN_F32, 1, &sh);
    for (int i = 0; i < n; i++) ((float *)jn_data(t))[i] = a + (float)i;
    return t;
}

static jn_tensor *op(jn_op o, jn_tensor *a, jn_tensor *b, double alpha) {
    jn_attrs at;
    memset(&at, 0, sizeof at);
    at.a[0].f = alpha;
    jn_tensor *in[2] = {a, b}, *out[JN_MAX_OUTS];
    return jn_dispatch(o, b ? 2 : 1, in, &at, out) ? NULL : out[0];
}

typedef struct {
    jn_tensor *x, *w, *b, *y;
} graph;

static jn_status nop_hook(void *ctx, jn_tensor *t, jn_tensor *g, jn_tensor **r) {
    (void)ctx, (void)t, (void)g, (void)r;
    return JN_OK;
}

/* y = tanh(x * w + alpha * b) with w and b leaves */
static graph build(int n, float v, double alpha) {
    graph g;
    g.x = vec(n, v), g.w = vec(n, 2 * v), g.b = vec(n, -v);
    jn_set_requires_grad(g.w, 1);
    jn_set_requires_grad(g.b, 1);
    jn_tensor *m = op(JN_OP_mul, g.x, g.w, 0), *s = op(JN_OP_add, m, g.b, alpha);
    g.y = op(JN_OP_tanh, s, NULL, 0);
    jn_tensor_decref(m), jn_tensor_decref(s);
    return g;
}

static void drop(graph *g) { jn_tensor_decref(g->x), jn_tensor_decref(g->w), jn_tensor_decref(g->b), jn_tensor_decref(g->y); }

static uint64_t fp_of(graph *g, uint64_t min_seq, const char **why) {
    jn_ag_walk w;
    memset(&w, 0, sizeof w);
    CHECK(jn_ag_walk_graph(g->y, min_seq, &w) == JN_OK);
    uint64_t fp = w.fp;
    *why = w.why;
    jn_ag_walk_free(&w);
    return fp;
}

int main(void) {
    const char *why;
    uint64_t seq0 = jn_ag_seq_now() + 1;
    graph a = build(4, 1, 1), b = build(4, 3, 1), c = build(4, 1, 2), d = build(5, 1, 1);
    uint64_t fa = fp_of(&a, seq0, &why);
    CHECK(why == NULL);
    jn_ag_walk w;
    memset(&w, 0, sizeof w);
    CHECK(jn_ag_walk_graph(a.y, seq0, &w) == JN_OK);
    CHECK(w.nrec == 3 && w.nleaf == 2 && w.nsaved >= 3); /* tanh, add, mul; w, b; x, w, tanh's output */
    CHECK(w.leaf[0] == a.b || w.leaf[1] == a.b);
    jn_ag_walk_free(&w);
    CHECK(fp_of(&b, seq0, &why) == fa && why == NULL);  /* other values, same graph */
    CHECK(fp_of(&c, seq0, &why) != fa);                  /* add's alpha */
    CHECK(fp_of(&d, seq0, &why) != fa);                  /* shapes */
    fp_of(&a, jn_ag_seq_now() + 1, &why);                /* made before the segment */
    CHECK(why && strstr(why, "before this segment"));

    /* a defined .grad (accumulation), then a saved tensor changed in place */
    CHECK(jn_set_grad(b.w, vec(4, 0)) == JN_OK);
    fp_of(&b, seq0, &why);
    CHECK(why && strstr(why, ".grad already"));
    CHECK(jn_set_grad(b.w, NULL) == JN_OK);
    jn_tensor *one = vec(4, 1), *in[2] = {b.x, one};
    jn_attrs at;
    memset(&at, 0, sizeof at);
    at.a[0].f = 1;
    CHECK(jn_dispatch_into(JN_OP_add, 2, in, &at, b.x) == JN_OK); /* x is saved by mul */
    fp_of(&b, seq0, &why);
    CHECK(why && strstr(why, "changed in place"));
    jn_tensor_decref(one);

    /* detach: released, saved tensors handed over; restore: as before */
    jn_tensor *ones = vec(4, 0);
    for (int i = 0; i < 4; i++) ((float *)jn_data(ones))[i] = 1;
    graph e = build(4, 1, 1), f = build(4, 1, 1);
    memset(&w, 0, sizeof w);
    CHECK(jn_ag_walk_graph(e.y, seq0, &w) == JN_OK && !w.why);
    jn_ag_walk_detach(&w);
    CHECK(jn_ag_history_released(e.y));
    for (int i = 0; i < w.nsaved; i++) CHECK(*w.slot[i] == NULL);
    fp_of(&e, seq0, &why);
    CHECK(why && strstr(why, "released"));
    jn_ag_walk_restore(&w);
    for (int i = 0; i < w.nsaved; i++) jn_tensor_decref(w.saved[i]); /* the references detach handed over */
    CHECK(!jn_ag_history_released(e.y));
    jn_ag_walk_free(&w);
    CHECK(jn_backward(1, &e.y, &ones, 0) == JN_OK);
    CHECK(jn_backward(1, &f.y, &ones, 0) == JN_OK);
    CHECK(jn_grad(e.w) && jn_grad(f.w) && !memcmp(jn_data(jn_grad(e.w)), jn_data(jn_grad(f.w)), 16));
    CHECK(jn_grad(e.b) && jn_grad(f.b) && !memcmp(jn_data(jn_grad(e.b)), jn_data(jn_grad(f.b)), 16));

    /* a hook on a leaf it reaches */
    graph h = build(4, 1, 1);
    jn_ag_hook *hk = NULL;
    CHECK(jn_ag_add_hook(h.w, JN_HOOK_POST_ACC, nop_hook, NULL, NULL, &hk) == JN_OK);
    fp_of(&h, seq0, &why);
    CHECK(why && strstr(why, "hook"));
    jn_ag_hook_remove(hk);
    jn_ag_hook_decref(hk);
    fp_of(&h, seq0, &why);
    CHECK(why == NULL);

    jn_tensor_decref(ones);
    drop(&a), drop(&b), drop(&c), drop(&d), drop(&e), drop(&f), drop(&h);
    JT_DONE();
}
