/* derivatives.c -- the derivative of every differentiable op, in one table.
 *
 * Like PyTorch's derivatives.yaml: one entry per op of ops.def, naming the
 * formula and what the formula needs saved (inputs, outputs or neither).
 * Formulas are written with other table ops through a tiny builder (jn_bw)
 * whose temporaries are freed in one place and whose first error sticks, so
 * each formula reads like the math.  Ops flagged JN_F_NOGRAD get no node;
 * an op with a node but no formula raises "derivative not implemented" at
 * backward time.  tests/python/test_gradcheck.py checks every entry against
 * finite differences in float64.
 */
#include "jn_autograd.h"
#include "jn_dist.h"

#include <math.h>
#include <string.h>

#define BW_MAX_TMP 256

struct jn_bw {
    jn_node *n;
    jn_status st;
    int ntmp;
    jn_tensor *tmp[BW_MAX_TMP];
};
typedef jn_tensor T;

static T *reg(jn_bw *b, T *t) {
    if (!t) {
        if (!b->st) b->st = jn_error(JN_ERR_NOMEM, "out of memory in a derivative");
        return NULL;
    }
    if (b->ntmp == BW_MAX_TMP) {
        jn_tensor_decref(t);
        if (!b->st) b->st = jn_error(JN_ERR_RUNTIME, "internal: derivative uses too many temporaries");
        return NULL;
    }
    return b->tmp[b->ntmp++] = t;
}

static T *call(jn_bw *b, jn_op op, int nin, T *const *in, const jn_attrs *a) {
    if (b->st) return NULL;
    for (int i = 0; i < nin; i++)
        if (!in[i]) {
            b->st = jn_error(JN_ERR_RUNTIME, "internal: missing operand in a derivative");
            return NULL;
        }
    T *out[JN_MAX_OUTS] = {0};
    if ((b->st = jn_dispatch(op, nin, in, a, out))) return NULL;
    for (int k = 1; k < jn_op_info(op)->nout; k++) reg(b, out[k]);
    return reg(b, out[0]);
}

static jn_attrs A(void) {
    jn_attrs a;
    memset(&a, 0, sizeof a);
    return a;
}
static jn_ints ints(int n, const int64_t *v) {
    jn_ints l;
    memset(&l, 0, sizeof l);
    l.n = n;
    if (n) memcpy(l.v, v, sizeof(int64_t) * (size_t)n);
    return l;
}

static T *IN(jn_bw *b, int i) {
    if (b->st) return NULL;
    return jn_node_input(b->n, i, &b->st);
}
static T *OUT(jn_bw *b, int k) {
    if (b->st) return NULL;
    return jn_node_output(b->n, k, &b->st);
}
static const jn_meta *M(jn_bw *b, int i) { return jn_node_input_meta(b->n, i); }
static const jn_attrs *AT(jn_bw *b) { return jn_node_attrs(b->n); }

/* ---- op shorthands ---- */
static T *scalar(jn_bw *b, double v) { return b->st ? NULL : reg(b, jn_scalar_f64(v, JN_F64, 1)); }
static T *un(jn_bw *b, jn_op op, T *x) { jn_attrs a = A(); return call(b, op, 1, &x, &a); }
static T *bin(jn_bw *b, jn_op op, T *x, T *y) {
    jn_attrs a = A();
    if (op == JN_OP_add || op == JN_OP_sub) a.a[0].f = 1.0;
    T *in[2] = {x, y};
    return call(b, op, 2, in, &a);
}
#define ADD(x, y) bin(b, JN_OP_add, x, y)
#define SUB(x, y) bin(b, JN_OP_sub, x, y)
#define MUL(x, y) bin(b, JN_OP_mul, x, y)
#define DIV(x, y) bin(b, JN_OP_div, x, y)
#define MULS(x, v) MUL(x, scalar(b, v))
#define ADDS(x, v) ADD(x, scalar(b, v))
#define NEG(x) un(b, JN_OP_neg, x)

static T *where(jn_bw *b, T *c, T *x, T *y) {
    T *in[3] = {c, x, y};
    jn_attrs a = A();
    return call(b, JN_OP_where, 3, in, &a);
}
static T *cast(jn_bw *b, T *x, jn_dtype d) {
    jn_attrs a = A();
    a.a[0].i = d;
    return call(b, JN_OP_cast, 1, &x, &a);
}
/* Tensors a formula makes come from table ops too (full, clone), never
 * from bare allocations, so a recorded backward pass is a closed dataflow
 * graph: every tensor it reads was produced by a recorded op. */
static T *full(jn_bw *b, const jn_meta *m, double v) {
    jn_attrs a = A();
    a.a[0].l = ints(m->ndim, m->shape);
    a.a[1].f = v;
    a.a[2].i = m->dtype;
    return call(b, JN_OP_full, 0, NULL, &a);
}
static T *zeros(jn_bw *b, const jn_meta *m) { return full(b, m, 0.0); }
static T *clone(jn_bw *b, T *x) { return un(b, JN_OP_clone, x); }
static T *view(jn_bw *b, T *x, int nd, const int64_t *shape) {
    if (b->st || !x) return NULL;
    jn_attrs a = A();
    a.a[0].l = ints(nd, shape);
    /* reshape = view of a contiguous copy; under replay also of a contiguous
     * x where the followed graph copies (recorded non-contiguous, 5.1) */
    if (!jn_is_contiguous(x) ||
        (jn_rt_capturing && jn_rt_capture_expects(JN_OP_clone, x) && !jn_rt_capture_expects(JN_OP_view, x)))
        x = clone(b, x);
    return call(b, JN_OP_view, 1, &x, &a);
}
static T *reshape_to(jn_bw *b, T *x, const jn_meta *m) { return view(b, x, m->ndim, m->shape); }
static T *sum_dims(jn_bw *b, T *x, int nd, const int64_t *dims, int keepdim) {
    jn_attrs a = A();
    a.a[0].l = ints(nd, dims);
    a.a[1].i = keepdim;
    a.a[2].i = -1;
    return call(b, JN_OP_sum, 1, &x, &a);
}
static T *transpose(jn_bw *b, T *x, int64_t d0, int64_t d1) {
    jn_attrs a = A();
    a.a[0].i = d0;
    a.a[1].i = d1;
    return call(b, JN_OP_transpose, 1, &x, &a);
}
static T *expand(jn_bw *b, T *x, const jn_meta *m) {
    jn_attrs a = A();
    a.a[0].l = ints(m->ndim, m->shape);
    return call(b, JN_OP_expand, 1, &x, &a);
}
static T *mm(jn_bw *b, jn_op op, T *x, T *y) {
    T *in[2] = {x, y};
    jn_attrs a = A();
    return call(b, op, 2, in, &a);
}
/* acc += x @ y in place (addmm_ into the accumulated gradient, see
 * jn_node_acc); returns acc, the formula's result for that input. */
static T *addmm_into(jn_bw *b, T *acc, T *x, T *y) {
    if (b->st) return NULL;
    if (!x || !y) {
        b->st = jn_error(JN_ERR_RUNTIME, "internal: missing operand in a derivative");
        return NULL;
    }
    T *in[3] = {acc, x, y};
    jn_attrs a = A();
    a.a[0].f = 1.0; /* beta */
    a.a[1].f = 1.0; /* alpha */
    b->st = jn_dispatch_into(JN_OP_addmm, 3, in, &a, acc);
    return b->st ? NULL : acc;
}
/* x (2-D) @ y as the gradient of input i: into its accumulated gradient
 * when the engine offers one, else a new product. */
static T *mm_acc(jn_bw *b, int i, T *x, T *y) {
    T *acc = jn_node_acc(b->n, i);
    return acc ? addmm_into(b, acc, x, y) : mm(b, JN_OP_mm, x, y);
}
static T *unsqueeze(jn_bw *b, T *x, int64_t d) {
    jn_attrs a = A();
    a.a[0].i = d;
    return call(b, JN_OP_unsqueeze, 1, &x, &a);
}

/* Sum g down to the (broadcast-compatible) shape m: the gradient of broadcasting. */
static T *sum_to(jn_bw *b, T *g, const jn_meta *m) {
    if (b->st || !g) return NULL;
    if (jn_same_shape(g->ndim, g->shape, m->ndim, m->shape)) return g;
    int64_t dims[JN_MAX_DIMS];
    int nd = 0, lead = g->ndim - m->ndim;
    for (int d = 0; d < g->ndim; d++)
        if (d < lead || (m->shape[d - lead] == 1 && g->shape[d] != 1)) dims[nd++] = d;
    T *s = nd ? sum_dims(b, g, nd, dims, 1) : g;
    return reshape_to(b, s, m);
}

/* Reduced dims of a reduction (empty list = all) as a mask over input dims. */
static void reduced_mask(const jn_ints *l, int ndim, int *mask) {
    for (int d = 0; d < ndim; d++) mask[d] = l->n == 0;
    for (int i = 0; i < l->n; i++) {
        int64_t d = l->v[i] < 0 ? l->v[i] + ndim : l->v[i];
        if (d >= 0 && d < ndim) mask[d] = 1;
    }
}
/* g of a reduction, reshaped to keepdim form (reduced dims of size 1). */
static T *keepdim_form(jn_bw *b, T *g, const jn_meta *in, const int *mask) {
    jn_meta k = *in;
    for (int d = 0; d < in->ndim; d++)
        if (mask[d]) k.shape[d] = 1;
    return reshape_to(b, g, &k);
}
static int64_t reduced_count(const jn_meta *in, const int *mask) {
    int64_t n = 1;
    for (int d = 0; d < in->ndim; d++)
        if (mask[d]) n *= in->shape[d];
    return n;
}
static int dim_mask(int64_t dim, int ndim, int *mask) {
    int64_t d = dim < 0 ? dim + (ndim ? ndim : 1) : dim;
    for (int i = 0; i < ndim; i++) mask[i] = i == d;
    return (int)d;
}

/* Finish: keep the results, free every temporary, report the first error. */
static jn_status done(jn_bw *b, int nin, T **gi) {
    for (int i = 0; i < nin; i++)
        if (gi[i]) jn_tensor_incref(gi[i]);
    for (int i = 0; i < b->ntmp; i++) jn_tensor_decref(b->tmp[i]);
    if (b->st)
        for (int i = 0; i < nin; i++) {
            jn_tensor_decref(gi[i]);
            gi[i] = NULL;
        }
    return b->st;
}

#define FORMULA(name) \
    static jn_status name(jn_node *n_, T *const *go, const int *needs, T **gi)
#define BEGIN         \
    jn_bw bw_;        \
    bw_.n = n_;       \
    bw_.st = JN_OK;   \
    bw_.ntmp = 0;     \
    jn_bw *b = &bw_;  \
    T *g = go[0];     \
    (void)g; (void)needs
#define END return done(b, jn_node_nin(n_), gi)
#define NEED(i) (needs[i])

/* ---------------------------------------------------------- elementwise */
FORMULA(d_add) {
    BEGIN;
    if (NEED(0)) gi[0] = sum_to(b, g, M(b, 0));
    if (NEED(1)) gi[1] = sum_to(b, MULS(g, AT(b)->a[0].f), M(b, 1));
    END;
}
FORMULA(d_sub) {
    BEGIN;
    if (NEED(0)) gi[0] = sum_to(b, g, M(b, 0));
    if (NEED(1)) gi[1] = sum_to(b, MULS(g, -AT(b)->a[0].f), M(b, 1));
    END;
}
FORMULA(d_mul) {
    BEGIN;
    if (NEED(0)) gi[0] = sum_to(b, MUL(g, IN(b, 1)), M(b, 0));
    if (NEED(1)) gi[1] = sum_to(b, MUL(g, IN(b, 0)), M(b, 1));
    END;
}
FORMULA(d_div) {
    BEGIN;
    if (AT(b)->a[0].i != 0) { /* rounding division is piecewise constant */
        for (int i = 0; i < 2; i++)
            if (NEED(i)) gi[i] = zeros(b, M(b, i));
        END;
    }
    T *y = IN(b, 1);
    if (NEED(0)) gi[0] = sum_to(b, DIV(g, y), M(b, 0));
    if (NEED(1)) gi[1] = sum_to(b, NEG(DIV(MUL(g, IN(b, 0)), MUL(y, y))), M(b, 1));
    END;
}
/* y - 1 of a Python number exponent (x ** 2) on the host: as an op on two
 * CPU scalars it would be a CPU op inside a device step, which ends a CUDA
 * replay's captured segment at every backward */
static T *minus_one(jn_bw *b, T *y) {
    if (y && y->wrapped_number && y->ndim == 0 && y->storage->device == JN_CPU && y->storage->data)
        return scalar(b, jn_load_f64(jn_data(y), y->dtype) - 1.0);
    return ADDS(y, -1.0);
}
FORMULA(d_pow) {
    BEGIN;
    T *x = IN(b, 0), *y = IN(b, 1);
    if (NEED(0)) gi[0] = sum_to(b, MUL(MUL(g, y), bin(b, JN_OP_pow, x, minus_one(b, y))), M(b, 0));
    if (NEED(1)) {
        /* d/dy x^y = x^y log x, defined as 0 where x == 0 and y >= 0 */
        T *v = MUL(MUL(g, OUT(b, 0)), un(b, JN_OP_log, x));
        T *zero = bin(b, JN_OP_logical_and, bin(b, JN_OP_eq, x, scalar(b, 0)), bin(b, JN_OP_ge, y, scalar(b, 0)));
        gi[1] = sum_to(b, where(b, zero, scalar(b, 0), v), M(b, 1));
    }
    END;
}
FORMULA(d_remainder) {
    BEGIN;
    if (NEED(0)) gi[0] = sum_to(b, g, M(b, 0));
    if (NEED(1)) {
        T *in[2] = {IN(b, 0), IN(b, 1)};
        jn_attrs a = A();
        a.a[0].i = 2; /* floor */
        gi[1] = sum_to(b, NEG(MUL(g, call(b, JN_OP_div, 2, in, &a))), M(b, 1));
    }
    END;
}
/* maximum/minimum: the gradient goes to the winner, split evenly on ties */
static jn_status minmax(jn_node *n_, T *const *go, const int *needs, T **gi, jn_op win) {
    BEGIN;
    T *x = IN(b, 0), *y = IN(b, 1);
    T *tie = MULS(cast(b, bin(b, JN_OP_eq, x, y), g ? g->dtype : JN_F32), 0.5);
    if (NEED(0)) gi[0] = sum_to(b, MUL(g, ADD(cast(b, bin(b, win, x, y), g->dtype), tie)), M(b, 0));
    if (NEED(1)) gi[1] = sum_to(b, MUL(g, ADD(cast(b, bin(b, win, y, x), g->dtype), tie)), M(b, 1));
    END;
}
FORMULA(d_maximum) { return minmax(n_, go, needs, gi, JN_OP_gt); }
FORMULA(d_minimum) { return minmax(n_, go, needs, gi, JN_OP_lt); }
FORMULA(d_atan2) {
    BEGIN;
    T *x = IN(b, 0), *y = IN(b, 1);
    T *den = ADD(MUL(x, x), MUL(y, y));
    if (NEED(0)) gi[0] = sum_to(b, DIV(MUL(g, y), den), M(b, 0));
    if (NEED(1)) gi[1] = sum_to(b, NEG(DIV(MUL(g, x), den)), M(b, 1));
    END;
}
FORMULA(d_zero) { /* piecewise-constant ops and overwritten inputs */
    BEGIN;
    for (int i = 0; i < jn_node_nin(n_); i++)
        if (NEED(i)) gi[i] = zeros(b, M(b, i));
    END;
}
FORMULA(d_neg) { BEGIN; gi[0] = NEG(g); END; }
FORMULA(d_exp) { BEGIN; gi[0] = MUL(g, OUT(b, 0)); END; }
FORMULA(d_log) { BEGIN; gi[0] = DIV(g, IN(b, 0)); END; }
FORMULA(d_log1p) { BEGIN; gi[0] = DIV(g, ADDS(IN(b, 0), 1.0)); END; }
FORMULA(d_expm1) { BEGIN; gi[0] = MUL(g, ADDS(OUT(b, 0), 1.0)); END; }
FORMULA(d_sqrt) { BEGIN; gi[0] = DIV(MULS(g, 0.5), OUT(b, 0)); END; }
FORMULA(d_rsqrt) {
    BEGIN;
    T *y = OUT(b, 0);
    gi[0] = MUL(MULS(g, -0.5), MUL(y, MUL(y, y)));
    END;
}
FORMULA(d_abs) { BEGIN; gi[0] = MUL(g, un(b, JN_OP_sign, IN(b, 0))); END; }
FORMULA(d_reciprocal) {
    BEGIN;
    T *y = OUT(b, 0);
    gi[0] = NEG(MUL(g, MUL(y, y)));
    END;
}
FORMULA(d_tanh) {
    BEGIN;
    T *y = OUT(b, 0);
    gi[0] = MUL(g, SUB(scalar(b, 1.0), MUL(y, y)));
    END;
}
FORMULA(d_sigmoid) {
    BEGIN;
    T *y = OUT(b, 0);
    gi[0] = MUL(g, MUL(y, SUB(scalar(b, 1.0), y)));
    END;
}
FORMULA(d_relu) {
    BEGIN;
    gi[0] = where(b, bin(b, JN_OP_gt, OUT(b, 0), scalar(b, 0)), g, scalar(b, 0));
    END;
}
FORMULA(d_gelu) {
    BEGIN;
    T *x = IN(b, 0);
    if (AT(b)->a[0].i == 0) { /* x * Phi(x): Phi(x) + x phi(x) */
        T *cdf = MULS(ADDS(un(b, JN_OP_erf, MULS(x, M_SQRT1_2)), 1.0), 0.5);
        T *pdf = MULS(un(b, JN_OP_exp, MULS(MUL(x, x), -0.5)), 0.3989422804014327);
        gi[0] = MUL(g, ADD(cdf, MUL(x, pdf)));
    } else { /* tanh approximation */
        const double k = 0.7978845608028654, c = 0.044715;
        T *x2 = MUL(x, x);
        T *t = un(b, JN_OP_tanh, MULS(ADD(x, MULS(MUL(x2, x), c)), k));
        T *left = MULS(ADDS(t, 1.0), 0.5);
        T *sech2 = SUB(scalar(b, 1.0), MUL(t, t));
        T *right = MUL(MULS(x, 0.5 * k), MUL(sech2, ADDS(MULS(x2, 3 * c), 1.0)));
        gi[0] = MUL(g, ADD(left, right));
    }
    END;
}
FORMULA(d_silu) {
    BEGIN;
    T *x = IN(b, 0), *s = un(b, JN_OP_sigmoid, x);
    gi[0] = MUL(g, MUL(s, ADDS(MUL(x, SUB(scalar(b, 1.0), s)), 1.0)));
    END;
}
FORMULA(d_sin) { BEGIN; gi[0] = MUL(g, un(b, JN_OP_cos, IN(b, 0))); END; }
FORMULA(d_cos) { BEGIN; gi[0] = NEG(MUL(g, un(b, JN_OP_sin, IN(b, 0)))); END; }
FORMULA(d_erf) {
    BEGIN;
    T *x = IN(b, 0);
    gi[0] = MUL(g, MULS(un(b, JN_OP_exp, NEG(MUL(x, x))), 1.1283791670955126));
    END;
}
FORMULA(d_clamp) {
    BEGIN;
    const jn_attrs *a = AT(b);
    T *x = IN(b, 0), *keep = NULL;
    if (a->a[2].i) keep = bin(b, JN_OP_ge, x, scalar(b, a->a[0].f));
    if (a->a[3].i) {
        T *hi = bin(b, JN_OP_le, x, scalar(b, a->a[1].f));
        keep = keep ? bin(b, JN_OP_logical_and, keep, hi) : hi;
    }
    gi[0] = keep ? where(b, keep, g, scalar(b, 0)) : g;
    END;
}
FORMULA(d_where) {
    BEGIN;
    T *c = IN(b, 0);
    if (NEED(1)) gi[1] = sum_to(b, where(b, c, g, scalar(b, 0)), M(b, 1));
    if (NEED(2)) gi[2] = sum_to(b, where(b, c, scalar(b, 0), g), M(b, 2));
    END;
}
FORMULA(d_masked_fill) {
    BEGIN;
    T *in[2] = {g, IN(b, 1)};
    jn_attrs a = A();
    if (NEED(0)) gi[0] = call(b, JN_OP_masked_fill, 2, in, &a);
    END;
}
FORMULA(d_identity) { BEGIN; gi[0] = g; END; } /* cast and clone: the engine casts back */
FORMULA(d_copy_) {
    BEGIN;
    if (NEED(0)) gi[0] = zeros(b, M(b, 0));
    if (NEED(1)) gi[1] = sum_to(b, g, M(b, 1));
    END;
}

/* all_reduce SUM / AVG is linear over the ranks' inputs: each rank's input
 * gradient is the same reduction of every rank's output gradient (as
 * torch.distributed.nn.functional.all_reduce); every rank runs it in its
 * backward pass, in the same order as the forward's collectives. */
FORMULA(d_all_reduce_) {
    BEGIN;
    int64_t op = AT(b)->a[0].i;
    if (op != 0 && op != 1) { /* jn_dist_op: SUM, AVG */
        static const char *const names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"};
        b->st = jn_error(JN_ERR_UNSUPPORTED, "all_reduce with ReduceOp.%s is not differentiable (only SUM and AVG "
                         "are): reduce a detached tensor, or under janus.no_grad()",
                         op > 1 && op < 8 ? names[op] : "?");
    } else if (NEED(0)) {
        T *c = clone(b, g);
        jn_attrs a = A();
        a.a[0].i = op;
        gi[0] = c ? call(b, JN_OP_all_reduce_, 1, &c, &a) : NULL;
    }
    END;
}

/* all_gather concatenates every rank's input: rank r's input gradient is
 * the sum over ranks of their output gradient's r-th share, a reduce_scatter
 * SUM (torch.distributed.nn.functional.all_gather); reduce_scatter SUM / AVG
 * is its transpose, an all_gather of the output gradient (/ world for AVG).
 * Every rank's backward issues them in the same order as the forward's. */
static T *contiguous(jn_bw *b, T *x) { return b->st || !x || jn_is_contiguous(x) ? x : clone(b, x); }
FORMULA(d_all_gather) {
    BEGIN;
    if (NEED(0)) {
        T *c = contiguous(b, g);
        jn_attrs a = A(); /* op 0: SUM */
        gi[0] = reshape_to(b, c ? call(b, JN_OP_reduce_scatter, 1, &c, &a) : NULL, M(b, 0));
    }
    END;
}
FORMULA(d_reduce_scatter) {
    BEGIN;
    int64_t op = AT(b)->a[0].i;
    if (op != 0 && op != 1) { /* jn_dist_op: SUM, AVG */
        static const char *const names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"};
        b->st = jn_error(JN_ERR_UNSUPPORTED, "reduce_scatter with ReduceOp.%s is not differentiable (only SUM and "
                         "AVG are): reduce a detached tensor, or under janus.no_grad()",
                         op > 1 && op < 8 ? names[op] : "?");
    } else if (NEED(0)) {
        T *c = contiguous(b, g);
        jn_attrs a = A();
        T *all = c ? call(b, JN_OP_all_gather, 1, &c, &a) : NULL;
        if (all && op == 1) all = MULS(all, 1.0 / (double)jn_rt_dist_world_size());
        gi[0] = reshape_to(b, all, M(b, 0));
    }
    END;
}

/* ----------------------------------------------------------- reductions */
FORMULA(d_sum) {
    BEGIN;
    int mask[JN_MAX_DIMS];
    reduced_mask(&AT(b)->a[0].l, M(b, 0)->ndim, mask);
    gi[0] = expand(b, keepdim_form(b, g, M(b, 0), mask), M(b, 0));
    END;
}
FORMULA(d_mean) {
    BEGIN;
    int mask[JN_MAX_DIMS];
    reduced_mask(&AT(b)->a[0].l, M(b, 0)->ndim, mask);
    double cnt = (double)reduced_count(M(b, 0), mask);
    gi[0] = expand(b, keepdim_form(b, MULS(g, 1.0 / cnt), M(b, 0), mask), M(b, 0));
    END;
}
FORMULA(d_prod) {
    /* product of the others: out / x where x != 0; at a zero, the product of
     * the rest if it is the group's only zero, else 0 */
    BEGIN;
    const jn_meta *m = M(b, 0);
    int mask[JN_MAX_DIMS];
    reduced_mask(&AT(b)->a[0].l, m->ndim, mask);
    int64_t dims[JN_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < m->ndim; d++)
        if (mask[d]) dims[nd++] = d;
    T *x = IN(b, 0);
    T *gk = expand(b, keepdim_form(b, g, m, mask), m);
    T *outk = expand(b, keepdim_form(b, OUT(b, 0), m, mask), m);
    T *is0 = bin(b, JN_OP_eq, x, scalar(b, 0));
    T *safe = where(b, is0, scalar(b, 1.0), x);
    jn_attrs pa = A();
    pa.a[0].l = ints(nd, dims);
    pa.a[1].i = 1;
    pa.a[2].i = -1;
    T *p1 = m->ndim ? call(b, JN_OP_prod, 1, &safe, &pa) : safe;
    T *nz = m->ndim ? sum_dims(b, is0, nd, dims, 1) : cast(b, is0, JN_I64);
    T *at0 = where(b, bin(b, JN_OP_eq, nz, scalar(b, 1)), p1, scalar(b, 0));
    T *others = where(b, is0, expand(b, at0, m), DIV(outk, safe));
    gi[0] = MUL(gk, others);
    END;
}
FORMULA(d_amax) { /* evenly among the tied extrema, like PyTorch */
    BEGIN;
    const jn_meta *m = M(b, 0);
    int mask[JN_MAX_DIMS];
    reduced_mask(&AT(b)->a[0].l, m->ndim, mask);
    int64_t dims[JN_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < m->ndim; d++)
        if (mask[d]) dims[nd++] = d;
    T *hit = bin(b, JN_OP_eq, IN(b, 0), expand(b, keepdim_form(b, OUT(b, 0), m, mask), m));
    T *hitf = cast(b, hit, g ? g->dtype : JN_F32);
    T *cnt = m->ndim ? sum_dims(b, hitf, nd, dims, 1) : hitf;
    gi[0] = MUL(hitf, expand(b, DIV(keepdim_form(b, g, m, mask), cnt), m));
    END;
}
FORMULA(d_max_dim) { /* values flow back to the recorded index */
    BEGIN;
    const jn_meta *m = M(b, 0);
    if (m->ndim == 0) {
        gi[0] = g;
        END;
    }
    int mask[JN_MAX_DIMS];
    int d = dim_mask(AT(b)->a[0].i, m->ndim, mask);
    T *idx = keepdim_form(b, OUT(b, 1), m, mask);
    T *in[3] = {zeros(b, m), idx, keepdim_form(b, g, m, mask)};
    jn_attrs a = A();
    a.a[0].i = d;
    gi[0] = call(b, JN_OP_scatter_add, 3, in, &a);
    END;
}
FORMULA(d_sort) { /* each sorted value's grad back at the position it came from */
    BEGIN;
    const jn_meta *m = M(b, 0);
    if (m->ndim == 0) {
        gi[0] = g;
        END;
    }
    int mask[JN_MAX_DIMS];
    T *in[3] = {zeros(b, m), OUT(b, 1), g};
    jn_attrs a = A();
    a.a[0].i = dim_mask(AT(b)->a[0].i, m->ndim, mask); /* a permutation: no two writes collide */
    gi[0] = call(b, JN_OP_scatter, 3, in, &a);
    END;
}
static jn_status var_std(jn_node *n_, T *const *go, const int *needs, T **gi, int is_std) {
    BEGIN;
    const jn_meta *m = M(b, 0);
    int mask[JN_MAX_DIMS];
    reduced_mask(&AT(b)->a[0].l, m->ndim, mask);
    int64_t dims[JN_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < m->ndim; d++)
        if (mask[d]) dims[nd++] = d;
    double cnt = (double)reduced_count(m, mask) - AT(b)->a[1].f;
    T *x = IN(b, 0);
    jn_attrs ma = A();
    ma.a[0].l = ints(nd, dims);
    ma.a[1].i = 1;
    ma.a[2].i = -1;
    T *mean = m->ndim ? call(b, JN_OP_mean, 1, &x, &ma) : x;
    T *centered = SUB(x, mean);
    T *gk = keepdim_form(b, g, m, mask);
    if (is_std) gi[0] = MUL(centered, DIV(MULS(gk, 1.0 / cnt), keepdim_form(b, OUT(b, 0), m, mask)));
    else gi[0] = MUL(centered, MULS(gk, 2.0 / cnt));
    END;
}
FORMULA(d_var) { return var_std(n_, go, needs, gi, 0); }
FORMULA(d_std) { return var_std(n_, go, needs, gi, 1); }
FORMULA(d_logsumexp) {
    BEGIN;
    const jn_meta *m = M(b, 0);
    int mask[JN_MAX_DIMS];
    reduced_mask(&AT(b)->a[0].l, m->ndim, mask);
    T *e = un(b, JN_OP_exp, SUB(IN(b, 0), keepdim_form(b, OUT(b, 0), m, mask)));
    gi[0] = MUL(keepdim_form(b, g, m, mask), e);
    END;
}
FORMULA(d_softmax) {
    BEGIN;
    T *y = OUT(b, 0);
    int64_t d = AT(b)->a[0].i;
    gi[0] = MUL(y, SUB(g, sum_dims(b, MUL(g, y), 1, &d, 1)));
    END;
}
FORMULA(d_log_softmax) {
    BEGIN;
    int64_t d = AT(b)->a[0].i;
    gi[0] = SUB(g, MUL(un(b, JN_OP_exp, OUT(b, 0)), sum_dims(b, g, 1, &d, 1)));
    END;
}

/* --------------------------------------------------------------- linalg */
FORMULA(d_mm) {
    BEGIN;
    if (NEED(0)) gi[0] = mm_acc(b, 0, g, transpose(b, IN(b, 1), 0, 1));
    if (NEED(1)) gi[1] = mm_acc(b, 1, transpose(b, IN(b, 0), 0, 1), g);
    END;
}
FORMULA(d_bmm) {
    BEGIN;
    if (NEED(0)) gi[0] = mm(b, JN_OP_bmm, g, transpose(b, IN(b, 1), 1, 2));
    if (NEED(1)) gi[1] = mm(b, JN_OP_bmm, transpose(b, IN(b, 0), 1, 2), g);
    END;
}
FORMULA(d_matmul) {
    /* promote 1-D operands to matrices, differentiate the batched product,
     * then sum the broadcast batch dims away and drop the added dims */
    BEGIN;
    T *x = IN(b, 0), *y = IN(b, 1);
    const jn_meta *mx = M(b, 0), *my = M(b, 1);
    T *x2 = mx->ndim == 1 ? unsqueeze(b, x, 0) : x;
    T *y2 = my->ndim == 1 ? unsqueeze(b, y, 1) : y;
    T *g2 = g;
    if (mx->ndim == 1 && my->ndim == 1) {
        int64_t s[2] = {1, 1};
        g2 = view(b, g, 2, s);
    } else {
        if (mx->ndim == 1) g2 = unsqueeze(b, g2, g->ndim - 1);
        if (my->ndim == 1) g2 = unsqueeze(b, g2, g2 ? g2->ndim : 0);
    }
    if (NEED(0) && x2 && y2 && g2) {
        T *r = mm(b, JN_OP_matmul, g2, transpose(b, y2, -2, -1));
        jn_meta m2 = *mx;
        if (mx->ndim == 1) { m2.ndim = 2; m2.shape[0] = 1; m2.shape[1] = mx->shape[0]; }
        gi[0] = reshape_to(b, sum_to(b, r, &m2), mx);
    }
    if (NEED(1) && x2 && y2 && g2) {
        T *r = mm(b, JN_OP_matmul, transpose(b, x2, -2, -1), g2);
        jn_meta m2 = *my;
        if (my->ndim == 1) { m2.ndim = 2; m2.shape[0] = my->shape[0]; m2.shape[1] = 1; }
        gi[1] = reshape_to(b, sum_to(b, r, &m2), my);
    }
    END;
}
FORMULA(d_addmm) {
    BEGIN;
    const jn_attrs *a = AT(b);
    if (NEED(0)) gi[0] = sum_to(b, MULS(g, a->a[0].f), M(b, 0));
    if (NEED(1)) gi[1] = MULS(mm(b, JN_OP_mm, g, transpose(b, IN(b, 2), 0, 1)), a->a[1].f);
    if (NEED(2)) gi[2] = MULS(mm(b, JN_OP_mm, transpose(b, IN(b, 1), 0, 1), g), a->a[1].f);
    END;
}
FORMULA(d_linear) {
    BEGIN;
    const jn_meta *mx = M(b, 0), *mw = M(b, 1);
    int64_t out_f = mw->shape[0], in_f = mw->shape[1];
    if (NEED(0)) {
        if (mx->ndim == 2 && mw->ndim == 2) gi[0] = mm_acc(b, 0, g, IN(b, 1));
        else gi[0] = reshape_to(b, mm(b, JN_OP_matmul, g, IN(b, 1)), mx);
    }
    /* 2-D operands (the per-time-step case) are used as they are, strided
     * or not: no reshaping views, no contiguous copy of x[:, t] */
    int flat = g->ndim == 2 && mx->ndim == 2 && mw->ndim == 2;
    if (NEED(1)) { /* summed over all rows: per time step, straight into the sum */
        int64_t rows = out_f ? jn_numel(g) / out_f : 0;
        int64_t sg[2] = {rows, out_f}, sx[2] = {rows, in_f};
        T *g2 = flat ? g : view(b, g, 2, sg), *x2 = flat ? IN(b, 0) : view(b, IN(b, 0), 2, sx);
        gi[1] = mm_acc(b, 1, transpose(b, g2, 0, 1), x2);
    }
    if (jn_node_nin(n_) > 2 && NEED(2)) {
        const jn_meta *mb = M(b, 2);
        int64_t d0 = 0;
        if (flat && mb->ndim == 1 && mb->shape[0] == g->shape[1])
            gi[2] = sum_dims(b, g, 1, &d0, 0);
        else
            gi[2] = sum_to(b, g, mb);
    }
    END;
}
FORMULA(d_conv2d) {
    BEGIN;
    const jn_attrs *a = AT(b);
    jn_attrs ca = A();
    for (int k = 1; k < 4; k++) ca.a[k] = a->a[k - 1]; /* stride, padding, dilation */
    ca.a[4] = a->a[3];                                  /* groups */
    if (NEED(0)) {
        ca.a[0].l = ints(M(b, 0)->ndim, M(b, 0)->shape);
        T *in[2] = {g, IN(b, 1)};
        gi[0] = call(b, JN_OP_conv2d_input_grad, 2, in, &ca);
    }
    if (NEED(1)) {
        ca.a[0].l = ints(M(b, 1)->ndim, M(b, 1)->shape);
        T *in[2] = {g, IN(b, 0)};
        gi[1] = call(b, JN_OP_conv2d_weight_grad, 2, in, &ca);
    }
    if (jn_node_nin(n_) > 2 && NEED(2)) {
        int64_t dims[3] = {0, 2, 3}, d3[2] = {1, 2};
        gi[2] = M(b, 0)->ndim == 4 ? sum_dims(b, g, 3, dims, 0) : sum_dims(b, g, 2, d3, 0);
    }
    END;
}
/* conv2d_input_grad(d, w) is conv_transpose2d(d, w) (nn.ConvTranspose2d runs on
 * it): it is linear in each input, and <gy, input_grad(d, w)> = <conv2d(gy, w), d>,
 * so d gets conv2d(gy, w) and w gets conv2d_weight_grad(d, gy). */
FORMULA(d_conv2d_input_grad) {
    BEGIN;
    const jn_attrs *a = AT(b);
    if (NEED(0)) {
        jn_attrs ca = A();
        for (int k = 0; k < 4; k++) ca.a[k] = a->a[k + 1]; /* stride, padding, dilation, groups */
        T *in[2] = {g, IN(b, 1)};
        gi[0] = call(b, JN_OP_conv2d, 2, in, &ca);
    }
    if (NEED(1)) {
        jn_attrs wa = *a;
        wa.a[0].l = ints(M(b, 1)->ndim, M(b, 1)->shape);
        T *in[2] = {IN(b, 0), g};
        gi[1] = call(b, JN_OP_conv2d_weight_grad, 2, in, &wa);
    }
    END;
}
FORMULA(d_max_pool2d) { /* each window's grad back at its argmax */
    BEGIN;
    jn_attrs ba = A();
    ba.a[0].l = ints(M(b, 0)->ndim, M(b, 0)->shape);
    T *in[2] = {g, OUT(b, 1)};
    gi[0] = call(b, JN_OP_max_pool2d_backward, 2, in, &ba);
    END;
}
FORMULA(d_max_pool2d_backward) { /* gather from each channel's H*W plane at the argmax */
    BEGIN;
    const jn_meta *m = M(b, 0);
    int nd = m->ndim;
    int64_t sg[3], si[3];
    for (int d = 0; d < nd - 2; d++) sg[d] = si[d] = m->shape[d];
    sg[nd - 2] = g->shape[nd - 2] * g->shape[nd - 1];
    si[nd - 2] = m->shape[nd - 2] * m->shape[nd - 1];
    T *in[2] = {view(b, g, nd - 1, sg), view(b, IN(b, 1), nd - 1, si)};
    jn_attrs a = A();
    a.a[0].i = nd - 2;
    gi[0] = reshape_to(b, call(b, JN_OP_gather, 2, in, &a), m);
    END;
}
FORMULA(d_avg_pool2d) {
    BEGIN;
    const jn_attrs *a = AT(b);
    jn_attrs ba = A();
    ba.a[0].l = ints(M(b, 0)->ndim, M(b, 0)->shape);
    for (int k = 0; k < 5; k++) ba.a[k + 1] = a->a[k];
    gi[0] = call(b, JN_OP_avg_pool2d_backward, 1, &g, &ba);
    END;
}
FORMULA(d_adaptive_avg_pool2d) {
    BEGIN;
    jn_attrs ba = A();
    ba.a[0].l = ints(M(b, 0)->ndim, M(b, 0)->shape);
    gi[0] = call(b, JN_OP_adaptive_avg_pool2d_backward, 1, &g, &ba);
    END;
}

/* ---------------------------------------------------------------- views */
FORMULA(d_reshape_back) { BEGIN; gi[0] = reshape_to(b, g, M(b, 0)); END; } /* view, squeeze, unsqueeze */
FORMULA(d_permute) {
    BEGIN;
    const jn_ints *p = &AT(b)->a[0].l;
    int64_t inv[JN_MAX_DIMS];
    for (int i = 0; i < p->n; i++) {
        int64_t d = p->v[i] < 0 ? p->v[i] + p->n : p->v[i];
        inv[d] = i;
    }
    jn_attrs a = A();
    a.a[0].l = ints(p->n, inv);
    gi[0] = call(b, JN_OP_permute, 1, &g, &a);
    END;
}
FORMULA(d_transpose) { BEGIN; gi[0] = transpose(b, g, AT(b)->a[0].i, AT(b)->a[1].i); END; }
FORMULA(d_expand) { BEGIN; gi[0] = sum_to(b, g, M(b, 0)); END; }
/* slice/select: the gradient is zeros with g in the viewed window (the
 * functional slice_scatter/select_scatter, not a write through a view).
 * When a gradient for the input has accumulated already (x[:, t] for every
 * time step t), g is added into its window in place instead: O(window),
 * not a zero-filled, scattered and summed copy of the whole input each. */
static jn_status window(jn_node *n_, T *const *go, const int *needs, T **gi, jn_op scatter, jn_op view_op) {
    BEGIN;
    T *acc = jn_node_acc(n_, 0);
    if (acc) {
        T *w = call(b, view_op, 1, &acc, AT(b));
        if (w) {
            jn_attrs a = A();
            a.a[0].f = 1.0;
            T *in[2] = {w, g};
            b->st = jn_dispatch_into(JN_OP_add, 2, in, &a, w);
        }
        gi[0] = acc;
    } else {
        T *in[2] = {zeros(b, M(b, 0)), g};
        gi[0] = call(b, scatter, 2, in, AT(b));
    }
    END;
}
FORMULA(d_slice) { return window(n_, go, needs, gi, JN_OP_slice_scatter, JN_OP_slice); }
FORMULA(d_select) { return window(n_, go, needs, gi, JN_OP_select_scatter, JN_OP_select); }
/* *_scatter: the window's gradient goes to src, the rest to base */
static jn_status scatter_grad(jn_node *n_, T *const *go, const int *needs, T **gi, jn_op scatter,
                              jn_op view) {
    BEGIN;
    if (NEED(0)) {
        T *in[2] = {g, zeros(b, M(b, 1))};
        gi[0] = call(b, scatter, 2, in, AT(b));
    }
    if (NEED(1)) gi[1] = call(b, view, 1, &g, AT(b));
    END;
}
FORMULA(d_slice_scatter) { return scatter_grad(n_, go, needs, gi, JN_OP_slice_scatter, JN_OP_slice); }
FORMULA(d_select_scatter) { return scatter_grad(n_, go, needs, gi, JN_OP_select_scatter, JN_OP_select); }
FORMULA(d_cat) {
    BEGIN;
    int nin = jn_node_nin(n_);
    int64_t dim = AT(b)->a[0].i, off = 0;
    if (dim < 0) dim += g->ndim;
    for (int i = 0; i < nin; i++) {
        const jn_meta *m = M(b, i);
        if (m->ndim == 1 && m->shape[0] == 0 && g->ndim != 1) { /* legacy empty input */
            if (NEED(i)) gi[i] = zeros(b, m);
            continue;
        }
        int64_t len = m->shape[dim];
        if (NEED(i)) {
            jn_attrs a = A();
            a.a[0].i = dim;
            a.a[1].i = off;
            a.a[2].i = off + len;
            a.a[3].i = 1;
            gi[i] = call(b, JN_OP_slice, 1, &g, &a);
        }
        off += len;
    }
    END;
}
FORMULA(d_stack) {
    BEGIN;
    int64_t dim = AT(b)->a[0].i;
    if (dim < 0) dim += g->ndim;
    for (int i = 0; i < jn_node_nin(n_); i++)
        if (NEED(i)) {
            jn_attrs a = A();
            a.a[0].i = dim;
            a.a[1].i = i;
            gi[i] = call(b, JN_OP_select, 1, &g, &a);
        }
    END;
}

/* ------------------------------------------------------------- indexing */
static T *index_put(jn_bw *b, T *dst, T *values, int nidx, T *const *idx, const jn_ints *mask, int acc) {
    T *in[JN_MAX_INS];
    in[0] = dst;
    in[1] = values;
    for (int i = 0; i < nidx; i++) in[2 + i] = idx[i];
    jn_attrs a = A();
    a.a[0].l = *mask;
    a.a[1].i = acc;
    return call(b, JN_OP_index_put_, 2 + nidx, in, &a);
}
FORMULA(d_index_select) {
    BEGIN;
    int64_t dim = AT(b)->a[0].i;
    int nd = M(b, 0)->ndim;
    if (dim < 0) dim += nd ? nd : 1;
    int64_t flat = -1;
    T *idx = view(b, IN(b, 1), 1, &flat);
    jn_ints mask = ints(0, NULL);
    mask.n = (int)dim + 1;
    mask.v[dim] = 1;
    T *gg = nd ? g : view(b, g, 1, &flat);
    if (nd == 0) { /* a 0-d source indexed by one element */
        jn_meta m1 = {M(b, 0)->dtype, 1, {1}};
        gi[0] = reshape_to(b, index_put(b, zeros(b, &m1), gg, 1, &idx, &mask, 1), M(b, 0));
    } else {
        gi[0] = index_put(b, zeros(b, M(b, 0)), gg, 1, &idx, &mask, 1);
    }
    END;
}
FORMULA(d_gather) {
    BEGIN;
    T *in[3] = {zeros(b, M(b, 0)), IN(b, 1), g};
    gi[0] = call(b, JN_OP_scatter_add, 3, in, AT(b));
    END;
}
FORMULA(d_scatter) {
    BEGIN;
    T *idx = IN(b, 1);
    if (NEED(0)) {
        T *in[3] = {g, idx, zeros(b, M(b, 2))};
        gi[0] = call(b, JN_OP_scatter, 3, in, AT(b));
    }
    if (NEED(2)) {
        T *in[2] = {g, idx};
        gi[2] = call(b, JN_OP_gather, 2, in, AT(b));
    }
    END;
}
FORMULA(d_scatter_add) {
    BEGIN;
    if (NEED(0)) gi[0] = g;
    if (NEED(2)) {
        T *in[2] = {g, IN(b, 1)};
        gi[2] = call(b, JN_OP_gather, 2, in, AT(b));
    }
    END;
}
FORMULA(d_embedding) {
    BEGIN;
    const jn_meta *mw = M(b, 0);
    int64_t flat = -1, rows[2] = {-1, mw->shape[1]};
    T *idx = view(b, IN(b, 1), 1, &flat);
    T *g2 = view(b, g, 2, rows);
    int64_t pad = AT(b)->a[0].i;
    if (pad >= 0) { /* the padding row gets no gradient */
        T *in[2] = {g2, unsqueeze(b, bin(b, JN_OP_eq, idx, scalar(b, (double)pad)), 1)};
        jn_attrs a = A();
        g2 = call(b, JN_OP_masked_fill, 2, in, &a);
    }
    jn_ints mask = ints(1, (int64_t[]){1});
    gi[0] = index_put(b, zeros(b, mw), g2, 1, &idx, &mask, 1);
    END;
}
FORMULA(d_index) {
    BEGIN;
    int nin = jn_node_nin(n_);
    T *idx[JN_MAX_INS];
    for (int i = 1; i < nin; i++) idx[i - 1] = IN(b, i);
    gi[0] = index_put(b, zeros(b, M(b, 0)), g, nin - 1, idx, &AT(b)->a[0].l, 1);
    END;
}
FORMULA(d_index_put_) {
    BEGIN;
    int nin = jn_node_nin(n_);
    T *idx[JN_MAX_INS];
    for (int i = 2; i < nin; i++) idx[i - 2] = IN(b, i);
    const jn_ints *mask = &AT(b)->a[0].l;
    if (NEED(0)) {
        if (AT(b)->a[1].i) gi[0] = g;
        else {
            jn_meta zm = {g->dtype, 0, {0}};
            gi[0] = index_put(b, clone(b, g), full(b, &zm, 0.0), nin - 2, idx, mask, 0);
        }
    }
    if (NEED(1)) {
        T *in[JN_MAX_INS];
        in[0] = g;
        for (int i = 2; i < nin; i++) in[i - 1] = idx[i - 2];
        jn_attrs a = A();
        a.a[0].l = *mask;
        gi[1] = sum_to(b, call(b, JN_OP_index, nin - 1, in, &a), M(b, 1));
    }
    END;
}

/* ---------------------------------------------------------- fused cells */
/* Run a multi-output op; every output is a temporary, outs[k] borrows it. */
static void calln(jn_bw *b, jn_op op, int nin, T *const *in, T **outs) {
    int nout = jn_op_info(op)->nout;
    for (int k = 0; k < nout; k++) outs[k] = NULL;
    if (b->st) return;
    for (int i = 0; i < nin; i++)
        if (!in[i]) {
            b->st = jn_error(JN_ERR_RUNTIME, "internal: missing operand in a derivative");
            return;
        }
    jn_attrs a = A();
    T *out[JN_MAX_OUTS] = {0};
    if ((b->st = jn_dispatch(op, nin, in, &a, out))) return;
    for (int k = 0; k < nout; k++) outs[k] = reg(b, out[k]);
}
/* lstm_cell(gx, gh, c) -> (h', c', ws): both gate inputs get d(gates); the
 * workspace output is not differentiable (its gradient is ignored). */
FORMULA(d_lstm_cell) {
    BEGIN;
    T *in[3] = {go[0], go[1], OUT(b, 2)}, *r[2];
    calln(b, JN_OP_lstm_cell_backward, 3, in, r);
    if (NEED(0)) gi[0] = r[0];
    if (NEED(1)) gi[1] = r[0];
    if (NEED(2)) gi[2] = r[1];
    END;
}
/* gru_cell(gx, gh, h) -> (h', ws) */
FORMULA(d_gru_cell) {
    BEGIN;
    T *in[2] = {go[0], OUT(b, 1)}, *r[3];
    calln(b, JN_OP_gru_cell_backward, 2, in, r);
    for (int i = 0; i < 3; i++)
        if (NEED(i)) gi[i] = r[i];
    END;
}

/* ---------------------------------------------------------------- LAPACK */
/* g[..., None, None] * m: a batch of scalar gradients over their matrices. */
static T *per_matrix(jn_bw *b, T *g, T *m) {
    if (b->st || !g) return NULL;
    return MUL(unsqueeze(b, unsqueeze(b, g, g->ndim), g->ndim + 1), m);
}
static T *mT(jn_bw *b, T *x) { return transpose(b, x, -2, -1); }
static T *matmul(jn_bw *b, T *x, T *y) { return mm(b, JN_OP_matmul, x, y); }
/* [n, n] 0/1 mask of a triangle: lower (upper: upper), with the diagonal
 * unless strict. */
static T *tri_mask(jn_bw *b, int64_t n, int upper, int strict, jn_dtype dt) {
    jn_attrs a = A();
    a.a[1].f = (double)n;
    a.a[2].f = 1.0;
    a.a[3].i = dt;
    T *r = call(b, JN_OP_arange, 0, NULL, &a);
    int64_t col[2] = {n, 1}, row[2] = {1, n};
    T *rc = view(b, r, 2, col), *rr = view(b, r, 2, row);
    jn_op cmp = upper ? (strict ? JN_OP_lt : JN_OP_le) : (strict ? JN_OP_gt : JN_OP_ge);
    return cast(b, bin(b, cmp, rc, rr), dt);
}
static T *eye_n(jn_bw *b, int64_t n, jn_dtype dt) {
    jn_attrs a = A();
    a.a[0].i = n;
    a.a[1].i = n;
    a.a[2].i = dt;
    return call(b, JN_OP_eye, 0, NULL, &a);
}
/* v[..., n] -> the [..., n, n] matrix with v on its diagonal */
static T *diag_embed(jn_bw *b, T *v, int64_t n, jn_dtype dt) {
    if (b->st || !v) return NULL;
    return MUL(unsqueeze(b, v, v->ndim - 1), eye_n(b, n, dt));
}
/* x[..., start:end, ...] along dim */
static T *slice_of(jn_bw *b, T *x, int64_t dim, int64_t start, int64_t end) {
    if (b->st || !x) return NULL;
    jn_attrs a = A();
    a.a[0].i = dim < 0 ? dim + x->ndim : dim;
    a.a[1].i = start;
    a.a[2].i = end;
    a.a[3].i = 1;
    return call(b, JN_OP_slice, 1, &x, &a);
}
static T *narrow(jn_bw *b, T *x, int64_t dim, int64_t len) { return slice_of(b, x, dim, 0, len); }
static T *solve_tri(jn_bw *b, T *a_, T *rhs, int upper, int unit) {
    T *in[2] = {a_, rhs};
    jn_attrs a = A();
    a.a[0].i = upper;
    a.a[1].i = unit;
    return call(b, JN_OP_linalg_solve_triangular, 2, in, &a);
}
/* [n, n] weights of Phi: 1 below the diagonal, 1/2 on it, 0 above. */
static T *phi_weights(jn_bw *b, int64_t n, jn_dtype dt) {
    return MULS(ADD(tri_mask(b, n, 0, 0, dt), tri_mask(b, n, 0, 1, dt)), 0.5);
}
/* X = A^-1: dA = -X^T g X^T */
FORMULA(d_linalg_inv) {
    BEGIN;
    T *xt = mT(b, OUT(b, 0));
    gi[0] = NEG(matmul(b, matmul(b, xt, g), xt));
    END;
}
/* X = A^-1 B: dB = A^-T g, dA = -dB X^T */
FORMULA(d_linalg_solve) {
    BEGIN;
    T *in[2] = {mT(b, IN(b, 0)), g};
    jn_attrs a = A();
    T *gb = call(b, JN_OP_linalg_solve, 2, in, &a);
    if (NEED(0)) gi[0] = NEG(matmul(b, gb, mT(b, OUT(b, 0))));
    if (NEED(1)) gi[1] = gb;
    END;
}
/* d det = det A^-T; an exactly singular A raises inv's error here (torch
 * differentiates that case through an SVD) */
FORMULA(d_linalg_det) {
    BEGIN;
    gi[0] = per_matrix(b, MUL(g, OUT(b, 0)), mT(b, un(b, JN_OP_linalg_inv, IN(b, 0))));
    END;
}
/* d log|det| = A^-T; the sign is piecewise constant */
FORMULA(d_linalg_slogdet) {
    BEGIN;
    gi[0] = per_matrix(b, g, mT(b, un(b, JN_OP_linalg_inv, IN(b, 0))));
    END;
}
/* torch's cholesky_backward: A = L L^T, dA = sym(L^-T Phi(L^T gL) L^-1)
 * (upper: L = U^T); the info output gets no gradient */
FORMULA(d_linalg_cholesky_ex) {
    BEGIN;
    const jn_meta *m = M(b, 0);
    int upper = AT(b)->a[0].i != 0;
    T *l = upper ? mT(b, OUT(b, 0)) : OUT(b, 0), *gl = upper ? mT(b, g) : g;
    T *eye = expand(b, eye_n(b, m->shape[m->ndim - 1], m->dtype), m); /* over L's batch */
    T *linv = solve_tri(b, l, eye, 0, 0);                                /* L^-1, as torch's */
    T *phi = MUL(matmul(b, mT(b, l), gl), phi_weights(b, m->shape[m->ndim - 1], m->dtype));
    T *ga = matmul(b, matmul(b, mT(b, linv), phi), linv);
    gi[0] = MULS(ADD(ga, mT(b, ga)), 0.5);
    END;
}

/* X = A^-1 B, A triangular: dB = A^-T g (the other triangle), dA = -dB X^T
 * kept on A's triangle (off its diagonal when unitriangular) */
FORMULA(d_linalg_solve_triangular) {
    BEGIN;
    const jn_meta *m = M(b, 0);
    int upper = AT(b)->a[0].i != 0, unit = AT(b)->a[1].i != 0;
    T *gb = solve_tri(b, mT(b, IN(b, 0)), g, !upper, unit);
    if (NEED(0))
        gi[0] = MUL(NEG(matmul(b, gb, mT(b, OUT(b, 0)))), tri_mask(b, m->shape[m->ndim - 1], upper, unit, m->dtype));
    if (NEED(1)) gi[1] = gb;
    END;
}
/* torch's linalg_eig_backward, symmetric case: A = V diag(L) V^T,
 * dA = V (skew(V^T gV) / E + diag(gL)) V^T, E_ij = L_j - L_i (1 on the
 * diagonal, where the skew part is 0) */
FORMULA(d_linalg_eigh) {
    BEGIN;
    const jn_meta *m = M(b, 0);
    int64_t n = m->shape[m->ndim - 1];
    T *l = OUT(b, 0), *v = OUT(b, 1), *ret = diag_embed(b, g, n, m->dtype);
    if (go[1]) {
        T *k = matmul(b, mT(b, v), go[1]);
        k = MULS(SUB(k, mT(b, k)), 0.5);
        T *e = l ? ADD(SUB(unsqueeze(b, l, l->ndim - 1), unsqueeze(b, l, l->ndim)), eye_n(b, n, m->dtype)) : NULL;
        ret = ADD(ret, DIV(k, e));
    }
    gi[0] = matmul(b, matmul(b, v, ret), mT(b, v));
    END;
}
/* torch's svd_backward (real case): outputs (S, U, Vh); full_matrices
 * factors are narrowed to their first k columns (rows of Vh) as torch's */
FORMULA(d_linalg_svd) {
    BEGIN;
    const jn_meta *m = M(b, 0);
    int64_t rows = m->shape[m->ndim - 2], cols = m->shape[m->ndim - 1], k = rows < cols ? rows : cols;
    int full = AT(b)->a[0].i != 0;
    T *s = OUT(b, 0), *u = OUT(b, 1), *vh = OUT(b, 2), *gu = go[1], *gvh = go[2];
    if (full) {
        u = narrow(b, u, -1, k);
        vh = narrow(b, vh, -2, k);
        gu = gu ? narrow(b, gu, -1, k) : NULL;
        gvh = gvh ? narrow(b, gvh, -2, k) : NULL;
    }
    if (!gu && !gvh) { /* svdvals: U diag(gS) Vh */
        gi[0] = rows >= cols ? matmul(b, u, MUL(unsqueeze(b, g, g->ndim), vh))
                             : matmul(b, MUL(u, unsqueeze(b, g, g->ndim - 1)), vh);
        END;
    }
    T *s_row = unsqueeze(b, s, s ? s->ndim - 1 : 0), *s_col = unsqueeze(b, s, s ? s->ndim : 0);
    T *s2 = MUL(s, s);
    T *e = ADD(SUB(unsqueeze(b, s2, s2 ? s2->ndim - 1 : 0), unsqueeze(b, s2, s2 ? s2->ndim : 0)),
               eye_n(b, k, m->dtype));
    T *uhgu = NULL, *vhgv = NULL, *ret;
    if (gu) {
        uhgu = matmul(b, mT(b, u), gu);
        uhgu = SUB(uhgu, mT(b, uhgu));
    }
    if (gvh) {
        vhgv = matmul(b, vh, mT(b, gvh));
        vhgv = SUB(vhgv, mT(b, vhgv));
    }
    if (gu && gvh) ret = DIV(ADD(MUL(uhgu, s_row), MUL(s_col, vhgv)), e);
    else if (gu) ret = MUL(DIV(uhgu, e), s_row);
    else ret = MUL(s_col, DIV(vhgv, e));
    ret = ADD(ret, diag_embed(b, g, k, m->dtype));
    if (rows > cols && gu) { /* + (I - U U^T) gU S^-1, then V^H */
        T *gus = DIV(gu, s_row);
        T *ga = ADD(matmul(b, u, ret), SUB(gus, matmul(b, u, matmul(b, mT(b, u), gus))));
        gi[0] = matmul(b, ga, vh);
    } else if (rows < cols && gvh) { /* + S^-1 gVh (I - V V^T), after U */
        T *sgv = DIV(gvh, s_col);
        T *ga = ADD(matmul(b, ret, vh), SUB(sgv, matmul(b, matmul(b, sgv, mT(b, vh)), vh)));
        gi[0] = matmul(b, u, ga);
    } else {
        gi[0] = matmul(b, matmul(b, u, ret), vh);
    }
    END;
}
/* A = QR with m >= n, R [..., n, n] (Walter and Lehmann; Seeger et al.):
 * dA = (gQ + Q copyltu(M)) R^-T, M = R gR^T - gQ^T Q, copyltu(M) the
 * symmetric matrix of M's lower triangle; gr NULL: no gradient for R */
static T *qr_grad_tall(jn_bw *b, T *q, T *r, T *gq, T *gr, int64_t n, jn_dtype dt) {
    T *m = NEG(matmul(b, mT(b, gq), q));
    if (gr) m = ADD(m, matmul(b, r, mT(b, gr)));
    T *low = MUL(m, tri_mask(b, n, 0, 0, dt)), *strict = MUL(m, tri_mask(b, n, 0, 1, dt));
    T *x = ADD(gq, matmul(b, q, ADD(low, mT(b, strict))));
    return mT(b, solve_tri(b, r, mT(b, x), 1, 0)); /* X R^-T = (R^-1 X^T)^T */
}
/* torch's linalg_qr_backward: m >= n as above; m < n splits A = [X | Y],
 * R = [U | V] with X = QU square and Y = QV: dY = Q gV and dX is the square
 * case's with gQ + Y gV^T */
FORMULA(d_linalg_qr) {
    BEGIN;
    const jn_meta *m = M(b, 0);
    int64_t rows = m->shape[m->ndim - 2], cols = m->shape[m->ndim - 1];
    int64_t mode = AT(b)->a[0].i;
    if (mode == 2) {
        b->st = jn_error(JN_ERR_RUNTIME, "The derivative of linalg.qr depends on Q, which is not computed when "
                         "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                         "through linalg.qr.");
        END;
    }
    if (mode == 1 && rows > cols) {
        b->st = jn_error(JN_ERR_RUNTIME, "The QR decomposition is not differentiable when mode='complete' and "
                         "nrows > ncols.");
        END;
    }
    T *q = OUT(b, 0), *r = OUT(b, 1), *gr = go[1];
    if (rows >= cols) {
        gi[0] = qr_grad_tall(b, q, r, g, gr, cols, m->dtype);
        END;
    }
    T *u = narrow(b, r, -1, rows), *v = slice_of(b, r, -1, rows, cols);
    T *gu = gr ? narrow(b, gr, -1, rows) : NULL, *gv = gr ? slice_of(b, gr, -1, rows, cols) : NULL;
    T *gq = gv ? ADD(g, matmul(b, matmul(b, q, v), mT(b, gv))) : g;
    jn_meta my = *m;
    my.shape[my.ndim - 1] = cols - rows;
    T *in[2] = {qr_grad_tall(b, q, u, gq, gu, rows, m->dtype), gv ? matmul(b, q, gv) : zeros(b, &my)};
    jn_attrs a = A();
    a.a[0].i = m->ndim - 1;
    gi[0] = call(b, JN_OP_cat, 2, in, &a);
    END;
}

/* torch's pinv_backward (Golub and Pereyra), in the smaller dimension:
 * P = A^+, K = g^T P (m <= n) or P g^T (m > n) */
FORMULA(d_linalg_pinv) {
    BEGIN;
    const jn_meta *m = M(b, 0);
    T *a = IN(b, 0), *p = OUT(b, 0), *pt = mT(b, p), *gt = mT(b, g);
    if (m->shape[m->ndim - 2] <= m->shape[m->ndim - 1]) {
        T *k = matmul(b, gt, p), *kpt = matmul(b, k, pt);
        T *r = ADD(NEG(mT(b, matmul(b, p, k))), SUB(kpt, matmul(b, matmul(b, a, p), kpt)));
        gi[0] = ADD(r, matmul(b, matmul(b, pt, p), SUB(gt, matmul(b, k, a))));
    } else {
        T *k = matmul(b, p, gt), *ptk = matmul(b, pt, k);
        T *r = ADD(NEG(mT(b, matmul(b, k, p))), matmul(b, matmul(b, SUB(gt, matmul(b, a, k)), p), pt));
        gi[0] = ADD(r, SUB(ptk, matmul(b, matmul(b, ptk, p), a)));
    }
    END;
}

/* ---------------------------------------------------------------- table */
#define S_IN JN_SAVE_IN
#define S_OUT JN_SAVE_OUT
static const jn_grad_def defs[JN_NOPS] = {
    [JN_OP_add] = {d_add, 0},
    [JN_OP_sub] = {d_sub, 0},
    [JN_OP_mul] = {d_mul, S_IN},
    [JN_OP_div] = {d_div, S_IN},
    [JN_OP_pow] = {d_pow, S_IN | S_OUT},
    [JN_OP_remainder] = {d_remainder, S_IN},
    [JN_OP_maximum] = {d_maximum, S_IN},
    [JN_OP_minimum] = {d_minimum, S_IN},
    [JN_OP_atan2] = {d_atan2, S_IN},
    [JN_OP_neg] = {d_neg, 0},
    [JN_OP_exp] = {d_exp, S_OUT},
    [JN_OP_log] = {d_log, S_IN},
    [JN_OP_log1p] = {d_log1p, S_IN},
    [JN_OP_expm1] = {d_expm1, S_OUT},
    [JN_OP_sqrt] = {d_sqrt, S_OUT},
    [JN_OP_rsqrt] = {d_rsqrt, S_OUT},
    [JN_OP_abs] = {d_abs, S_IN},
    [JN_OP_sign] = {d_zero, 0},
    [JN_OP_reciprocal] = {d_reciprocal, S_OUT},
    [JN_OP_tanh] = {d_tanh, S_OUT},
    [JN_OP_sigmoid] = {d_sigmoid, S_OUT},
    [JN_OP_relu] = {d_relu, S_OUT},
    [JN_OP_gelu] = {d_gelu, S_IN},
    [JN_OP_silu] = {d_silu, S_IN},
    [JN_OP_sin] = {d_sin, S_IN},
    [JN_OP_cos] = {d_cos, S_IN},
    [JN_OP_erf] = {d_erf, S_IN},
    [JN_OP_floor] = {d_zero, 0},
    [JN_OP_ceil] = {d_zero, 0},
    [JN_OP_round] = {d_zero, 0},
    [JN_OP_clamp] = {d_clamp, S_IN},
    [JN_OP_where] = {d_where, S_IN},
    [JN_OP_masked_fill] = {d_masked_fill, S_IN},
    [JN_OP_cast] = {d_identity, 0},
    [JN_OP_copy_] = {d_copy_, 0},
    [JN_OP_fill_] = {d_zero, 0},
    [JN_OP_sum] = {d_sum, 0},
    [JN_OP_mean] = {d_mean, 0},
    [JN_OP_prod] = {d_prod, S_IN | S_OUT},
    [JN_OP_amax] = {d_amax, S_IN | S_OUT},
    [JN_OP_amin] = {d_amax, S_IN | S_OUT},
    [JN_OP_max_dim] = {d_max_dim, S_OUT},
    [JN_OP_min_dim] = {d_max_dim, S_OUT},
    [JN_OP_sort] = {d_sort, S_OUT},
    [JN_OP_var] = {d_var, S_IN},
    [JN_OP_std] = {d_std, S_IN | S_OUT},
    [JN_OP_logsumexp] = {d_logsumexp, S_IN | S_OUT},
    [JN_OP_softmax] = {d_softmax, S_OUT},
    [JN_OP_log_softmax] = {d_log_softmax, S_OUT},
    [JN_OP_mm] = {d_mm, S_IN},
    [JN_OP_bmm] = {d_bmm, S_IN},
    [JN_OP_matmul] = {d_matmul, S_IN},
    [JN_OP_addmm] = {d_addmm, S_IN},
    [JN_OP_linear] = {d_linear, S_IN},
    [JN_OP_conv2d] = {d_conv2d, S_IN},
    [JN_OP_conv2d_input_grad] = {d_conv2d_input_grad, S_IN},
    [JN_OP_max_pool2d] = {d_max_pool2d, S_OUT},
    [JN_OP_max_pool2d_backward] = {d_max_pool2d_backward, S_IN},
    [JN_OP_avg_pool2d] = {d_avg_pool2d, 0},
    [JN_OP_adaptive_avg_pool2d] = {d_adaptive_avg_pool2d, 0},
    [JN_OP_view] = {d_reshape_back, 0},
    [JN_OP_permute] = {d_permute, 0},
    [JN_OP_transpose] = {d_transpose, 0},
    [JN_OP_squeeze] = {d_reshape_back, 0},
    [JN_OP_unsqueeze] = {d_reshape_back, 0},
    [JN_OP_expand] = {d_expand, 0},
    [JN_OP_slice] = {d_slice, 0},
    [JN_OP_select] = {d_select, 0},
    [JN_OP_slice_scatter] = {d_slice_scatter, 0},
    [JN_OP_select_scatter] = {d_select_scatter, 0},
    [JN_OP_clone] = {d_identity, 0},
    [JN_OP_cat] = {d_cat, 0},
    [JN_OP_stack] = {d_stack, 0},
    [JN_OP_index_select] = {d_index_select, S_IN},
    [JN_OP_gather] = {d_gather, S_IN},
    [JN_OP_scatter] = {d_scatter, S_IN},
    [JN_OP_scatter_add] = {d_scatter_add, S_IN},
    [JN_OP_embedding] = {d_embedding, S_IN},
    [JN_OP_index] = {d_index, S_IN},
    [JN_OP_index_put_] = {d_index_put_, S_IN},
    [JN_OP_uniform_] = {d_zero, 0},
    [JN_OP_normal_] = {d_zero, 0},
    [JN_OP_lstm_cell] = {d_lstm_cell, S_OUT, 1 << 1}, /* the workspace output holds all it needs */
    [JN_OP_gru_cell] = {d_gru_cell, S_OUT},
    [JN_OP_linalg_inv] = {d_linalg_inv, S_OUT},
    [JN_OP_linalg_solve] = {d_linalg_solve, S_IN | S_OUT},
    [JN_OP_linalg_det] = {d_linalg_det, S_IN | S_OUT},
    [JN_OP_linalg_slogdet] = {d_linalg_slogdet, S_IN},
    [JN_OP_linalg_cholesky_ex] = {d_linalg_cholesky_ex, S_OUT},
    [JN_OP_linalg_solve_triangular] = {d_linalg_solve_triangular, S_IN | S_OUT},
    [JN_OP_linalg_eigh] = {d_linalg_eigh, S_OUT},
    [JN_OP_linalg_svd] = {d_linalg_svd, S_OUT},
    [JN_OP_linalg_qr] = {d_linalg_qr, S_OUT},
    [JN_OP_linalg_pinv] = {d_linalg_pinv, S_IN | S_OUT},
    [JN_OP_all_reduce_] = {d_all_reduce_, 0},
    [JN_OP_all_gather] = {d_all_gather, 0},
    [JN_OP_reduce_scatter] = {d_reduce_scatter, 0},
    /* no derivative (yet): as_strided, and the kernels derivatives use
     * (conv2d_weight_grad, pool gradients, lstm_cell_backward, gru_cell_backward) */
};

const jn_grad_def *jn_grad_def_of(jn_op op) {
    static const jn_grad_def none = {NULL, 0, 0};
    return (unsigned)op < JN_NOPS ? &defs[op] : &none;
}
