/* test_ag_hooks.c -- gradient hooks in the C engine (jn_ag_add_hook,
 * runtime/autograd.c) without Python: a leaf used twice gets one call with
 * the summed gradient, a replacement reaches .grad, the post-accumulate hook
 * runs after it with .grad in place, a non-leaf's hook (also on a group
 * node's member output) scales what flows to the leaves, removal stops a
 * hook, a hook's error stops backward with its message, and dropping the
 * tensors frees every hook's context. */
#include <string.h>

#include "jn_autograd.h"
#include "jn_runtime.h"
#include "jn_test.h"

typedef struct {
    int calls, freed;
    float seen[4];
    double scale; /* != 1: replace the gradient by grad * scale */
    int fail;
    jn_tensor *leaf; /* post-accumulate: .grad read here */
} probe;

static jn_tensor *vec(float a, float b) {
    int64_t n = 2;
    jn_tensor *t = jn_tensor_new(JN_F32, 1, &n);
    ((float *)jn_data(t))[0] = a, ((float *)jn_data(t))[1] = b;
    return t;
}

static jn_tensor *op(jn_op o, jn_tensor *a, jn_tensor *b, double f) {
    jn_attrs at;
    memset(&at, 0, sizeof at);
    at.a[0].f = f;
    jn_tensor *in[2] = {a, b}, *out[JN_MAX_OUTS];
    return jn_dispatch(o, b ? 2 : 1, in, &at, out) ? NULL : out[0];
}

static jn_status hook(void *ctx, jn_tensor *t, jn_tensor *g, jn_tensor **r) {
    probe *p = ctx;
    p->calls++;
    if (p->fail) return jn_error(JN_ERR_VALUE, "the hook refuses");
    jn_tensor *src = g ? g : jn_grad(t);
    memcpy(p->seen, jn_data(src), sizeof(float) * 2);
    if (r && p->scale != 1.0) {
        jn_tensor *s = vec((float)p->scale, (float)p->scale);
        *r = op(JN_OP_mul, g, s, 0);
        jn_tensor_decref(s);
    }
    return JN_OK;
}

static void freed(void *ctx) { ((probe *)ctx)->freed++; }

int main(void) {
    probe hx = {.scale = 2}, post = {.scale = 1}, hy = {.scale = 0.5}, gone = {.scale = 1}, hg = {.scale = 3};
    jn_ag_hook *h[6];
    jn_tensor *x = vec(1, 2), *ones = vec(1, 1);
    jn_set_requires_grad(x, 1);
    CHECK(jn_ag_add_hook(ones, JN_HOOK_GRAD, hook, &hx, freed, &h[0]) != JN_OK); /* no grad */
    CHECK(jn_ag_add_hook(x, JN_HOOK_GRAD, hook, &hx, freed, &h[0]) == JN_OK);
    CHECK(jn_ag_add_hook(x, JN_HOOK_POST_ACC, hook, &post, freed, &h[1]) == JN_OK);
    CHECK(jn_ag_add_hook(x, JN_HOOK_GRAD, hook, &gone, freed, &h[2]) == JN_OK);
    jn_ag_hook_remove(h[2]);

    /* y = x * x (x reaches the node twice); the loss is sum(y * 1) */
    jn_tensor *y = op(JN_OP_mul, x, x, 0);
    CHECK(jn_ag_add_hook(y, JN_HOOK_POST_ACC, hook, &hy, freed, &h[3]) != JN_OK); /* not a leaf */
    CHECK(jn_ag_add_hook(y, JN_HOOK_GRAD, hook, &hy, freed, &h[3]) == JN_OK);
    CHECK(jn_backward(1, &y, &ones, 1) == JN_OK);
    /* y's hook sees 1 and halves it; x gets 2x * 0.5 = x from both edges, summed, once */
    CHECK(hy.calls == 1 && hy.seen[0] == 1.0f);
    CHECK(hx.calls == 1 && hx.seen[0] == 1.0f && hx.seen[1] == 2.0f);
    CHECK(gone.calls == 0);
    const float *gx = (const float *)jn_data(jn_grad(x));
    CHECK(gx[0] == 2.0f && gx[1] == 4.0f); /* doubled by x's hook */
    CHECK(post.calls == 1 && post.seen[0] == 2.0f && post.seen[1] == 4.0f);

    /* a group node's member output carries its hook too */
    jn_ag_group grp;
    jn_ag_group_begin(&grp, 2, 4, 2);
    jn_tensor *a = op(JN_OP_mul, x, ones, 0), *b = op(JN_OP_add, a, ones, 1.0);
    jn_ag_group_end(&grp);
    CHECK(jn_ag_group_size(b) == 2);
    CHECK(jn_ag_add_hook(a, JN_HOOK_GRAD, hook, &hg, freed, &h[4]) == JN_OK);
    jn_ag_hook_remove(h[0]);
    CHECK(jn_backward(1, &b, &ones, 1) == JN_OK);
    CHECK(hg.calls == 1 && hx.calls == 1);
    gx = (const float *)jn_data(jn_grad(x));
    CHECK(gx[0] == 5.0f && gx[1] == 7.0f); /* += 1 * 3 */
    CHECK(post.calls == 2 && post.seen[0] == 5.0f);

    /* a failing hook stops backward with its message; the engine is usable after */
    probe bad = {.scale = 1, .fail = 1};
    CHECK(jn_ag_add_hook(x, JN_HOOK_GRAD, hook, &bad, freed, &h[5]) == JN_OK);
    CHECK(jn_backward(1, &b, &ones, 1) != JN_OK && strstr(jn_errmsg(), "the hook refuses"));
    jn_ag_hook_remove(h[5]);
    CHECK(jn_backward(1, &b, &ones, 0) == JN_OK);

    /* reachability (DDP's find_unused_parameters) */
    jn_tensor *z = vec(0, 0), *leaves[2] = {x, z};
    int used[2];
    jn_set_requires_grad(z, 1);
    CHECK(jn_ag_reaches(1, &y, 2, leaves, used) == JN_OK && used[0] == 1 && used[1] == 0);

    for (int i = 0; i < 6; i++) jn_ag_hook_decref(h[i]);
    CHECK(post.freed == 0 && gone.freed == 1); /* post is still on x; gone was pruned and dropped */
    jn_tensor *all[] = {x, ones, y, a, b, z};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) jn_tensor_decref(all[i]);
    CHECK(hx.freed == 1 && post.freed == 1 && hy.freed == 1 && gone.freed == 1 && hg.freed == 1 && bad.freed == 1);
    JT_DONE();
}
