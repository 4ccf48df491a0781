/* test_autocast.c -- runtime/autocast.c from C: the global counter that
 * jn_dispatch tests, the policy columns, casts through the dispatcher
 * (with autograd history), the leaf cache and its invalidation, suspension,
 * and the refusals of bad states.  The Python suite (test_autocast.py)
 * covers the front end and the comparison with PyTorch. */
#include "jn_test.h"

#include "jn_autocast.h"
#include "jn_autograd.h"

static jn_tensor *randn2(int64_t r, int64_t c) {
    int64_t shape[2] = {r, c};
    jn_tensor *t = jn_tensor_new(JN_F32, 2, shape);
    float *p = (float *)jn_data(t);
    for (int64_t i = 0; i < r * c; i++) p[i] = (float)((i * 37 % 11) - 5) / 4.0f;
    return t;
}

static jn_tensor *run(jn_op op, int nin, jn_tensor **in) {
    jn_attrs a;
    memset(&a, 0, sizeof a);
    const jn_opinfo *info = jn_op_info(op);
    for (int i = 0; i < info->nattrs; i++) {
        if (info->attr_kind[i] == JN_A_DTYPE) a.a[i].i = -1;
        else if (info->attr_kind[i] == JN_A_FLOAT) a.a[i].f = info->attr_default[i];
    }
    jn_tensor *out[JN_MAX_OUTS] = {0};
    jn_status s = jn_dispatch(op, nin, in, &a, out);
    if (s) fprintf(stderr, "  %s: %s\n", info->name, jn_errmsg());
    return s ? NULL : out[0];
}

int main(void) {
    jn_tensor *x = randn2(3, 4), *w = randn2(4, 4);
    CHECK(jn_set_requires_grad(w, 1) == JN_OK);
    jn_tensor *in[2] = {x, w};

    /* off: nothing counted, nothing cast */
    CHECK(jn_rt_autocast_threads == 0 && !jn_autocast_active());
    jn_tensor *y = run(JN_OP_mm, 2, in);
    CHECK(y && y->dtype == JN_F32);
    jn_tensor_decref(y);

    /* the columns */
    CHECK(jn_autocast_policy(JN_CPU, JN_OP_mm) == JN_AC_LOWER && jn_autocast_policy(JN_CUDA, JN_OP_linear) == JN_AC_LOWER);
    CHECK(jn_autocast_policy(JN_CPU, JN_OP_softmax) == JN_AC_NONE && jn_autocast_policy(JN_CUDA, JN_OP_softmax) == JN_AC_FP32);
    CHECK(jn_autocast_policy(JN_CPU, JN_OP_add) == JN_AC_NONE && jn_autocast_policy(JN_CPU, JN_OP_cat) == JN_AC_PROMOTE);
    CHECK(jn_autocast_policy(7, JN_OP_mm) == JN_AC_NONE);
    CHECK(jn_autocast_composite_lookup("cross_entropy") >= 0 && jn_autocast_composite_lookup("nope") == -1);

    /* refusals */
    jn_autocast_state bad = {1, JN_F64, 1};
    CHECK(jn_autocast_set(JN_CPU, bad) == JN_ERR_VALUE && has("not a lower precision dtype"));
    CHECK(jn_autocast_set(5, bad) == JN_ERR_VALUE && has("unsupported device type"));
    CHECK(jn_rt_autocast_threads == 0);

    /* on: mm in bfloat16 through a differentiable cast; the weight's cast is cached */
    jn_autocast_state on = {1, JN_BF16, 1};
    CHECK(jn_autocast_set(JN_CPU, on) == JN_OK && jn_rt_autocast_threads == 1 && jn_autocast_active());
    jn_autocast_increment_nesting();
    y = run(JN_OP_mm, 2, in);
    CHECK(y && y->dtype == JN_BF16 && jn_requires_grad(y));
    CHECK(jn_autocast_cache_size() == 1);
    jn_tensor *y2 = run(JN_OP_mm, 2, in);
    CHECK(y2 && y2->dtype == JN_BF16 && jn_autocast_cache_size() == 1);
    jn_tensor *e = run(JN_OP_exp, 1, &y);
    CHECK(e && e->dtype == JN_BF16); /* the cpu column runs exp in the input's dtype */
    jn_tensor_decref(e);

    /* backward runs in the forward dtypes and gives the weight a float32 gradient */
    jn_tensor *s = run(JN_OP_sum, 1, &y);
    CHECK(s && s->dtype == JN_BF16);
    CHECK(s && jn_backward(1, &s, NULL, 0) == JN_OK);
    CHECK(jn_grad(w) && jn_grad(w)->dtype == JN_F32);
    CHECK(jn_autocast_active()); /* the engine resumed it */
    jn_tensor_decref(s);

    /* the cached cast's node was released by that backward: recast, and a second backward works */
    jn_tensor *y3 = run(JN_OP_mm, 2, in);
    jn_tensor *s3 = y3 ? run(JN_OP_sum, 1, &y3) : NULL;
    CHECK(s3 && jn_backward(1, &s3, NULL, 0) == JN_OK);
    jn_tensor_decref(s3);
    jn_tensor_decref(y3);

    /* suspended: untouched */
    int tok = jn_autocast_suspend();
    jn_tensor *y4 = run(JN_OP_mm, 2, in);
    CHECK(y4 && y4->dtype == JN_F32 && !jn_autocast_active());
    jn_tensor_decref(y4);
    jn_autocast_resume(tok);

    /* promote: a float32 and a bfloat16 join as float32 */
    jn_tensor *pair[2] = {x, y};
    jn_tensor *c = run(JN_OP_cat, 2, pair);
    CHECK(c && c->dtype == JN_F32);
    jn_tensor_decref(c);

    /* the outermost exit clears the cache; off again */
    CHECK(jn_autocast_decrement_nesting() == 0);
    jn_autocast_clear_cache();
    CHECK(jn_autocast_cache_size() == 0);
    on.enabled = 0;
    CHECK(jn_autocast_set(JN_CPU, on) == JN_OK && jn_rt_autocast_threads == 0 && !jn_autocast_active());
    jn_tensor *y5 = run(JN_OP_mm, 2, in);
    CHECK(y5 && y5->dtype == JN_F32);
    jn_tensor_decref(y5);

    jn_tensor_decref(y);
    jn_tensor_decref(y2);
    jn_tensor_decref(x);
    jn_tensor_decref(w);
    JT_DONE();
}
