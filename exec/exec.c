/* exec.c -- the graph executor (jn_exec.h): runs one optimized IR graph
 * with one arena, its kernels at their roots, everything else through the
 * eager table kernels (jn_cpu_<op>, called directly with output tensors
 * made over the planned memory: no dispatcher, no autograd, no recording).
 *
 * jn_ex_new flattens the graph into steps, in node order: a node, a
 * kernel (at its root; its other members are skipped), a loop (followed by
 * its body's steps and an end-of-iteration step that moves carries and
 * collects), and precomputes per value where it lives:
 *   ARENA   planned (mem=): a header over the arena at its offset;
 *   VIEW    a view op's output: a header sharing its input's storage;
 *   OWN     a buffer of its own (graph outputs, unplanned values, kernel
 *           intermediates the eager path materializes, every value under
 *           JN_EX_EAGER);
 *   INPUT / LOOP   the caller's tensors / the loop's own buffers;
 * and after which step each value is released (its last use in the scope
 * that defines it; a view keeps its base's buffer alive), so OWN buffers
 * die early and peak_bytes is the footprint op-by-op execution needs.
 *
 * IR nodes are functional: an in-place table op (copy_, uniform_, adam_
 * writing inputs 0..nout-1) first copies input k into output k's buffer
 * unless the plan put output k in input k's slot (the input dies there).
 * A kernel member-by-member (no compiled code, impl=lib) writes an output
 * whose slot an external input of the kernel also occupies (the plan's
 * in-place reuse, which is safe only for fused code that reads an element
 * before it writes it) into a temporary first, copied in after the members.
 * Random ops take (seed, offset) from their attributes, evaluated over the
 * rng symbol, so the global generator is neither read nor advanced.
 *
 * Loops: carries live in two buffers per carry (the next iteration's
 * params are written while the body's views of the old ones are still
 * readable); a collect's output [trip, ...] is allocated at loop entry and
 * row it is filled at each iteration's end -- or rather written in place:
 * body values go straight into their collect row or their carry's other
 * buffer (ldst), accumulator carries over their own param
 * (carry_in_place), a next that views a value the loop never writes is
 * the next param as it is (stable_view); a carry's out is the last param.  The induction
 * symbol is set per iteration.
 */
#include <pthread.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "jn_autograd.h"
#include "jn_backend.h"
#include "jn_cg.h"
#include "jn_exec.h"

static const jn_infer_fn infer_tab[JN_NOPS] = {
#define JN_OP(name, nin, nout, flags, attrs) jn_infer_##name,
#include "ops.def"
#undef JN_OP
};

static const jn_kernel_fn cpu_tab[JN_NOPS] = {
#define JN_OP(name, nin, nout, flags, attrs) jn_cpu_##name,
#include "ops.def"
#undef JN_OP
};

enum { S_NODE, S_KERNEL, S_LOOP, S_ITER_END };
enum { P_NONE, P_INPUT, P_LOOP, P_OWN, P_ARENA, P_VIEW };

typedef struct {
    uint8_t kind;
    int32_t idx;          /* node, kernel or loop */
    int32_t scope;        /* enclosing loop, -1 */
    int32_t body_end;     /* S_LOOP: one past its S_ITER_END */
    int32_t rel0, nrel;   /* values released after this step: rel[rel0 ..) */
} step;

/* What running a node needs, one compact row per node (48 bytes, in node
 * order): the steps loop of a graph of small ops was bound by fetching its
 * 664-byte IR nodes (a whole step's are more than L2 holds) and copying
 * their attributes.  A node without patches passes its IR attributes to
 * the kernel in place. */
typedef struct {
    const int32_t *in;      /* the IR node's inputs */
    const jn_attrs *attrs;  /* the IR node's attributes */
    int32_t out[JN_MAX_OUTS];
    int32_t p0;             /* patches[p0 .. p0+np) */
    uint16_t op;
    uint8_t nin, nout, np, nattrs, view, inplace;
} xnode;
_Static_assert(JN_NOPS <= 65535, "xnode.op holds an op");

/* Attribute patches: int attributes holding expressions, bound scalars. */
typedef struct {
    int8_t attr, elem;    /* elem -1: the int itself, else an element of an int list */
    int32_t scalar_in;    /* >= 0: the input index of a bound scalar */
    jn_ir_dim d;
} patch;

typedef struct {
    jn_cg_kernel_io io;
    jn_kfn fn;
    uint8_t *tmp;         /* per io.out: member-by-member writes it to a temporary first */
    uint8_t *red_out;     /* per call operand: the reduction's output (left-aligned) */
    int gemm_shares;      /* gemm: its output lives in the root output's buffer */
    char **data;
    int64_t *strides, *st;  /* the call's byte strides; scratch [ncall][JN_MAX_DIMS] */
    jn_tensor **ops;        /* the call's operand tensors */
    double *scalars;
} kinfo;

/* A node output that may be written straight into a state input. */
typedef struct {
    int32_t v, n, in;  /* the value, its node, the state input's index */
    uint8_t j, ew;     /* output index; an elementwise op (needs a dense input) */
    uint8_t place;     /* where v lives when it is not (the plan's place) */
} direct_t;

struct jn_ex_exec {
    const jn_ir_module *m;
    const jn_ir_graph *g;
    int32_t gi;
    int flags;
    step *steps;
    int32_t nsteps, *rel, *loopstep, *nodestep;
    uint8_t *place, *keep;   /* per value */
    int32_t *vbase;          /* per value: the value whose buffer it is (a view's, down its chain; else itself) */
    uint8_t *direct;         /* per node, this run: bit k, output k is written straight into a state input */
    int32_t *into;           /* per value: the state input value it is written straight into (direct) */
    direct_t *dst;           /* the candidates for that (direct_state), decided per run (bind_direct) */
    int32_t ndst;
    xnode *xn;               /* per node: what running it reads */
    patch *patches;
    kinfo *k;
    /* run state */
    int64_t *sv, *ownbytes;
    double *sval;            /* per input: scalar value */
    jn_tensor **val, **scal; /* per value; per input: wrapped number */
    jn_tensor **ldst;        /* per value: where this loop iteration writes it (a
                              * collect row, a carry's other buffer), NULL */
    uint8_t *over_param;     /* per value: a carry next its node may write over
                              * the carry's param (carry_in_place) */
    uint8_t *view_next;      /* per value: a carry next that is the next param as it is
                              * between iterations (stable_view) */
    char *arena;             /* a private arena (another graph held the shared one) */
    size_t arena_cap;
    jn_tensor *arena_t;      /* this run's arena: the shared one's header, or over `arena` */
    int shared_user, holds_shared;
    int64_t live, peak;
    jn_ex_stats st;
    jn_ex_kcall_hook hook;
    void *hook_ctx;
    const jn_ex_device *dev; /* NULL: the CPU; else where buffers, nodes and kernels run */
    jn_tensor **dscal;            /* device: per input, its number in device memory */
    /* every expression of the graph evaluated once per run, and the ones
     * over an induction variable again at each iteration (ev_all, ev_ivar):
     * offsets and shapes are read per node per iteration, and walking
     * their trees each time was ~1% of a replayed char_lstm step */
    int64_t *ev;
    uint8_t *evbad;  /* overflow or division by zero: eval walks it for the message */
    int32_t *evdep, nevdep; /* expressions over an induction variable, children first */
    int evok, evvalid;      /* the graph's expressions come children first; ev is current */
    int at_max;             /* the plan's offsets are constants sized at the symbols' maxima (p_plan.c) */
    /* headers over this run's arena whose values were released, for the
     * next arena values: a header per arena value was a calloc and a free
     * per node (~5% of a small-op graph).  Each holds a reference to the
     * arena's storage; the pool is emptied at the end of every run. */
    jn_tensor **hpool;
    int32_t nhpool, caphpool;
    uint8_t *plan_sym;      /* at_max: per symbol, whether a planned value's size depends on it */
    int wide;               /* this run: a symbol the plan depends on is past its recorded
                             * range, so offsets and the arena come from the wide plan */
    /* Every node's shape inference, run to check that its kernel makes the
     * type the IR says, gives the same answer for the same symbol values
     * and scalar inputs (the inputs' dtypes and shapes are checked against
     * them; each node's operands are shaped by the IR): after a run with
     * these checks passed, a run with the same values skips them (~5% of a
     * graph of small ops).  A view's header then takes the IR's shape
     * too (its kernel sets the strides and offset). */
    int64_t *sv_ok;
    double *sval_ok;
    int checked, skip_check;
};

/* ------------------------------------------------------------ helpers */
/* mark[s] = 1 for every symbol s that d depends on. */
static void mark_syms(const jn_ir_graph *g, jn_ir_dim d, uint8_t *mark, int depth) {
    if (!jn_ir_is_expr(d) || depth > 256) return;
    int32_t i = jn_ir_expr_index(d);
    if (i < 0 || i >= g->nexprs) return;
    const jn_ir_expr *e = &g->exprs[i];
    if (e->kind == JN_IR_E_SYM) {
        if (e->sym >= 0 && e->sym < g->nsyms) mark[e->sym] = 1;
        return;
    }
    mark_syms(g, e->a, mark, depth + 1);
    mark_syms(g, e->b, mark, depth + 1);
}

static jn_status eval(const jn_ex_exec *x, jn_ir_dim d, int64_t *out) {
    if (!jn_ir_is_expr(d)) {
        *out = d;
        return JN_OK;
    }
    int32_t i = jn_ir_expr_index(d);
    if (x->evvalid && i >= 0 && i < x->g->nexprs && !x->evbad[i]) {
        *out = x->ev[i];
        return JN_OK;
    }
    return jn_ir_dim_eval(x->g, d, x->sv, out);
}

/* Expression i from its children's values in ev (children come first). */
static void ev_one(jn_ex_exec *x, int32_t i) {
    const jn_ir_expr *e = &x->g->exprs[i];
    if (e->kind == JN_IR_E_SYM) {
        x->evbad[i] = e->sym < 0 || e->sym >= x->g->nsyms;
        x->ev[i] = x->evbad[i] ? 0 : x->sv[e->sym];
        return;
    }
    int64_t v[2], r = 0;
    jn_ir_dim c[2] = {e->a, e->b};
    int bad = 0;
    for (int k = 0; k < 2; k++) {
        if (!jn_ir_is_expr(c[k])) v[k] = c[k];
        else bad |= x->evbad[jn_ir_expr_index(c[k])], v[k] = x->ev[jn_ir_expr_index(c[k])];
    }
    bad |= !jn_ir_expr_apply(e->kind, v[0], v[1], &r);
    x->ev[i] = r;
    x->evbad[i] = (uint8_t)(bad != 0);
}

/* After the symbols are set (a run's start): every expression. */
static void ev_all(jn_ex_exec *x) {
    x->evvalid = 0;
    if (!x->evok) return;
    for (int32_t i = 0; i < x->g->nexprs; i++) ev_one(x, i);
    x->evvalid = 1;
}

/* After an induction variable moved: the expressions over one. */
static void ev_ivar(jn_ex_exec *x) {
    if (!x->evvalid) return;
    for (int32_t k = 0; k < x->nevdep; k++) ev_one(x, x->evdep[k]);
}

/* exec_new: the tables, when every expression's children come before it
 * (as the pool builds them); otherwise eval walks trees as before. */
static int ev_prepare(jn_ex_exec *x) {
    const jn_ir_graph *g = x->g;
    int32_t n = g->nexprs;
    x->ev = malloc(sizeof *x->ev * ((size_t)n + 1));
    x->evbad = calloc((size_t)n + 1, 1);
    x->evdep = malloc(sizeof *x->evdep * ((size_t)n + 1));
    uint8_t *dep = calloc((size_t)n + 1, 1);
    int ok = x->ev && x->evbad && x->evdep && dep;
    x->evok = ok;
    for (int32_t i = 0; i < n && x->evok; i++) {
        const jn_ir_expr *e = &g->exprs[i];
        if (e->kind == JN_IR_E_SYM) {
            dep[i] = e->sym >= 0 && e->sym < g->nsyms && g->syms[e->sym].kind == JN_IR_SYM_IVAR;
        } else {
            jn_ir_dim c[2] = {e->a, e->b};
            for (int k = 0; k < 2; k++) {
                if (!jn_ir_is_expr(c[k])) continue;
                int32_t j = jn_ir_expr_index(c[k]);
                if (j < 0 || j >= i) x->evok = 0; /* not children first: no table */
                else dep[i] |= dep[j];
            }
        }
        if (dep[i]) x->evdep[x->nevdep++] = i;
    }
    free(dep);
    return ok;
}

static jn_status eval_shape(const jn_ex_exec *x, int32_t v, int64_t *shape) {
    const jn_ir_value *iv = &x->g->values[v];
    for (int d = 0; d < iv->ndim; d++) {
        jn_status s = eval(x, iv->shape[d], &shape[d]);
        if (s) return s;
        if (shape[d] < 0)
            return jn_error(JN_ERR_SHAPE, "graph %s: dim %d of %%%d evaluates to %lld with these symbol values; "
                            "bind every symbol (jn_ex_bind_syms)", x->g->name, d, v, (long long)shape[d]);
    }
    return JN_OK;
}

/* Bytes of a buffer as the plan counts them (rounded up to 64, cg_value_bytes). */
static int64_t tbytes(const jn_tensor *t) {
    return (jn_shape_numel(t->ndim, t->shape) * (int64_t)jn_elsize(t) + 63) / 64 * 64;
}

/* Loop buffers and other memory no value owns. */
static void note_bytes(jn_ex_exec *x, int64_t b) {
    x->live += b;
    if (x->live + x->st.arena_bytes > x->peak) x->peak = x->live + x->st.arena_bytes;
}

/* Value v now holds t (NULL: released); a buffer of its own counts as live. */
static void set_val(jn_ex_exec *x, int32_t v, jn_tensor *t) {
    jn_tensor *o = x->val[v];
    if (o && x->place[v] != P_INPUT) {
        /* a header only this run holds, over the arena, with nothing of
         * anyone else's on it (autograd, Python, replay): kept for reuse */
        if (o->refcnt == 1 && x->arena_t && o->storage == x->arena_t->storage && !o->autograd && !o->pyobj &&
            !o->ext && x->nhpool < x->caphpool)
            x->hpool[x->nhpool++] = o;
        else
            jn_tensor_decref(o);
    }
    x->live -= x->ownbytes[v];
    x->ownbytes[v] = 0;
    x->val[v] = t;
    if (t && x->place[v] != P_INPUT && x->place[v] != P_LOOP && !t->is_view &&
        (!x->arena_t || t->storage != x->arena_t->storage)) {
        x->ownbytes[v] = tbytes(t);
        note_bytes(x, x->ownbytes[v]);
    }
}

/* One arena for every CPU graph of the process.  Nothing in an arena
 * outlives its run (kept outputs are copied out, state is written back),
 * so graphs that never run at the same time can share one: the process
 * then holds the largest arena instead of the sum of them all (fashion_cnn's
 * two evaluation graphs held 33 MB each, which put replay's peak memory
 * above eager's).  A run takes the shared arena with a trylock; a run that
 * finds it taken (another thread, or a run inside a run) uses an arena of
 * its own as before.  Freed with its last user.
 *
 * Between runs the arena is idle, and so are the blocks the runs' outputs
 * and loop buffers left in the runtime's block cache.  Eager work that
 * comes after graphs (a fallback; an evaluation loop the bundle does not
 * cover) needs blocks of other sizes, and would otherwise add its own on
 * top: char_lstm's first evaluation batch, run eagerly after the training
 * steps ran as graphs, put replay's peak 6 MB above eager's.  So when the
 * block cache must allocate afresh, the idle arena and cached blocks are
 * given back first (arena_idle_release); the next run allocates its arena
 * again.  At most once per IDLE_RUNS runs on the shared arena, so eager
 * work that misses the cache in every step cannot make every run fault its
 * arena in again. */
#define IDLE_RUNS 16
static struct {
    pthread_mutex_t lock;
    char *mem;
    size_t cap;
    jn_tensor *t;
    int users;
    int64_t runs; /* on this memory since it was allocated */
} cpu_arena = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, NULL, 0, 0};

/* Free the shared arena (lock held).  Executors still hold headers over
 * the old memory; ensure_arena replaces them before any use, and they
 * never own the data. */
static void free_shared_arena(void) {
    jn_tensor_decref(cpu_arena.t);
    free(cpu_arena.mem);
    cpu_arena.t = NULL;
    cpu_arena.mem = NULL;
    cpu_arena.cap = 0;
    cpu_arena.runs = 0;
}

/* The runtime's cached blocks and malloc's free heap back to the system. */
static void give_back_heap(void) {
    jn_rt_block_cache_release();
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* The block cache's miss hook while graphs share the arena.  A run holds
 * the lock, so the hook does nothing during one. */
static void arena_idle_release(void) {
    if (pthread_mutex_trylock(&cpu_arena.lock)) return;
    int give = cpu_arena.mem && cpu_arena.runs >= IDLE_RUNS;
    if (give) free_shared_arena();
    pthread_mutex_unlock(&cpu_arena.lock);
    if (give) give_back_heap();
}

static jn_tensor *own_tensor(const jn_ex_exec *x, jn_dtype dt, int nd, const int64_t *shape) {
    if (__builtin_expect(x->dev != NULL, 0)) { /* device hook */
        jn_meta m = {dt, nd, {0}};
        memcpy(m.shape, shape, sizeof(int64_t) * (size_t)nd);
        return x->dev->tensor_new(x->dev->ctx, &m);
    }
    return jn_tensor_new(dt, nd, shape);
}

/* dst <- src; on a device through its table (which may be capturing a
 * CUDA Graph, or replaying one and so skipping the work). */
static jn_status copy_into(const jn_ex_exec *x, jn_tensor *dst, const jn_tensor *src) {
    if (__builtin_expect(x->dev != NULL, 0)) return x->dev->copy(x->dev->ctx, dst, src); /* device hook */
    return jn_copy_into(dst, src);
}

/* A contiguous header over the arena at value v's offset (in the plan this run uses). */
static jn_tensor *arena_tensor(jn_ex_exec *x, int32_t v, const int64_t *shape) {
    const jn_ir_value *iv = &x->g->values[v];
    int64_t off;
    if (eval(x, x->wide ? iv->wmem : iv->mem, &off) != JN_OK) return NULL;
    size_t es = jn_dtype_size[iv->dtype];
    int64_t n = jn_shape_numel(iv->ndim, shape);
    if (off < 0 || off % (int64_t)es || off + n * (int64_t)es > x->st.arena_bytes) {
        jn_error(JN_ERR_RUNTIME, "graph %s: %%%d at arena offset %lld does not fit the %lld-byte arena (a bad plan)",
                 x->g->name, v, (long long)off, (long long)x->st.arena_bytes);
        return NULL;
    }
    jn_tensor *t = x->nhpool ? x->hpool[--x->nhpool] : jn_tensor_alias(x->arena_t);
    if (!t) return NULL;
    t->is_view = 0;
    t->wrapped_number = 0;
    t->dtype = iv->dtype;
    t->ndim = iv->ndim;
    for (int d = 0; d < iv->ndim; d++) t->shape[d] = shape[d]; /* a few dims: no libc call */
    jn_contiguous_strides(iv->ndim, shape, t->strides);
    t->offset = off / (int64_t)es;
    return t;
}

/* The buffer value v is written into, shaped `shape`. */
static jn_tensor *dest_for(jn_ex_exec *x, int32_t v, const int64_t *shape, int force_own) {
    const jn_ir_value *iv = &x->g->values[v];
    jn_tensor *d = x->ldst[v];
    if (d && d->ndim == iv->ndim && jn_same_shape(d->ndim, d->shape, iv->ndim, shape)) {
        jn_tensor_incref(d);
        return d;
    }
    if (x->place[v] == P_ARENA && !force_own) return arena_tensor(x, v, shape);
    if (x->place[v] == P_INPUT) { /* a kernel's output written straight into state (borrowed) */
        x->st.state_written = 1;
        return x->val[x->into[v]];
    }
    return own_tensor(x, iv->dtype, iv->ndim, shape);
}

static int same_memory(const jn_tensor *a, const jn_tensor *b) { return jn_rt_same_view(a, b); }

/* Node n's attributes for this run: its IR attributes where no patch
 * applies, else a copy in *a with the patches applied. */
static jn_status node_attrs_p(const jn_ex_exec *x, int32_t n, jn_attrs *a, const jn_attrs **use) {
    const xnode *xn = &x->xn[n];
    *use = xn->attrs;
    if (!xn->np) return JN_OK;
    /* the op's own attributes only (its kernel reads no others; a whole
     * jn_attrs is 576 bytes), each whole: the CUDA Graph walk hashes them */
    const jn_opinfo *info = jn_op_info(xn->op);
    memcpy(a, xn->attrs, sizeof(jn_attr) * (size_t)xn->nattrs);
    *use = a;
    for (int32_t i = xn->p0; i < xn->p0 + xn->np; i++) {
        const patch *p = &x->patches[i];
        if (p->scalar_in >= 0) {
            double v = x->sval[p->scalar_in];
            if (info->attr_kind[p->attr] == JN_A_FLOAT) a->a[p->attr].f = v;
            else a->a[p->attr].i = (int64_t)v;
            continue;
        }
        int64_t *dst = p->elem < 0 ? &a->a[p->attr].i : &a->a[p->attr].l.v[p->elem];
        jn_status s = eval(x, p->d, dst);
        if (s) return s;
    }
    return JN_OK;
}

/* The same, always into *a (callers that read the attributes themselves). */
static jn_status node_attrs(const jn_ex_exec *x, int32_t n, jn_attrs *a) {
    const jn_attrs *use;
    jn_status s = node_attrs_p(x, n, a, &use);
    if (use != a) memcpy(a, use, sizeof(jn_attr) * (size_t)x->xn[n].nattrs);
    return s;
}

static jn_status node_error(const jn_ex_exec *x, int32_t n, jn_status s) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", jn_errmsg());
    return jn_error(s, "graph %s node %d (%s): %s", x->g->name, n, jn_op_info(x->g->nodes[n].op)->name, msg);
}

/* ---------------------------------------------------------- one node */
/* Runs node n through its eager kernel.  shared (may be NULL): a tensor
 * output 0 is written into instead of its own buffer (a GEMM into its
 * epilogue's root output); force_own: every output in a buffer of its own. */
static jn_status exec_node(jn_ex_exec *x, int32_t n, jn_tensor *shared, int force_own) {
    const jn_ir_graph *g = x->g;
    const xnode *nd = &x->xn[n];
    jn_attrs abuf;
    const jn_attrs *a;
    jn_status s = node_attrs_p(x, n, &abuf, &a);
    if (s) return node_error(x, n, s);
    jn_tensor *in[JN_MAX_INS], *out[JN_MAX_OUTS] = {0}, *copies[JN_MAX_OUTS] = {0};
    for (int k = 0; k < nd->nin; k++)
        if (!(in[k] = x->val[nd->in[k]]))
            return jn_error(JN_ERR_RUNTIME, "graph %s node %d (%s) reads %%%d before it is computed (an invalid "
                            "kernel table)", g->name, n, jn_op_info(nd->op)->name, nd->in[k]);
    int64_t shape[JN_MAX_OUTS][JN_MAX_DIMS];
    for (int j = 0; j < nd->nout; j++)
        if ((s = eval_shape(x, nd->out[j], shape[j]))) return node_error(x, n, s);
    int view = nd->view;
    for (int j = 0; j < nd->nout && !view; j++) {
        if (j == 0 && shared) {
            jn_tensor_incref(shared);
            out[0] = shared;
        } else if (x->direct[n] & (1u << j)) { /* the state tensor itself (borrowed: place P_INPUT) */
            out[j] = x->val[x->into[nd->out[j]]];
            x->st.state_written = 1;
        } else if (!(out[j] = dest_for(x, nd->out[j], shape[j], force_own))) {
            s = JN_ERR_NOMEM;
            goto fail;
        }
    }
    if (nd->inplace) /* functional form: work on output k's buffer */
        for (int k = 0; k < nd->nout && k < nd->nin; k++) {
            if (same_memory(in[k], out[k])) { /* the plan put it in the input's slot */
                in[k] = out[k];
                continue;
            }
            const jn_tensor *src = in[k];
            if (jn_rt_may_overlap(in[k], out[k])) {
                if (!(src = copies[k] = own_tensor(x, in[k]->dtype, in[k]->ndim, in[k]->shape))) {
                    s = JN_ERR_NOMEM;
                    goto fail;
                }
                if ((s = copy_into(x, copies[k], in[k]))) goto fail;
            }
            if ((s = copy_into(x, out[k], src))) goto fail;
            in[k] = out[k];
        }
    jn_meta meta[JN_MAX_OUTS];
    if (!x->skip_check) {
        memset(meta, 0, sizeof meta);
        if ((s = infer_tab[nd->op](nd->nin, in, a, meta))) goto fail;
    }
    for (int j = 0; j < nd->nout && !x->skip_check; j++) { /* the IR's type must be what the kernel makes */
        const jn_ir_value *iv = &g->values[nd->out[j]];
        if (meta[j].dtype != iv->dtype || !jn_same_shape(meta[j].ndim, meta[j].shape, iv->ndim, shape[j])) {
            char s1[128], s2[128];
            s = jn_error(JN_ERR_SHAPE, "graph %s node %d (%s) makes %s%s where the graph says %s%s for %%%d: the "
                         "inputs do not match the symbol values", g->name, n, jn_op_info(nd->op)->name,
                         jn_ir_dtype_short(meta[j].dtype), jn_shape_str(meta[j].ndim, meta[j].shape, s1, sizeof s1),
                         jn_ir_dtype_short(iv->dtype), jn_shape_str(iv->ndim, shape[j], s2, sizeof s2), nd->out[j]);
            goto done;
        }
    }
    x->st.nodes_eager++;
    if (view) { /* a header over input 0's storage, as jn_dispatch makes it */
        if (!(out[0] = jn_tensor_alias(in[0]))) {
            s = JN_ERR_NOMEM;
            goto fail;
        }
        out[0]->is_view = 1;
        if (x->skip_check) { /* checked: the IR's shape is what inference gives */
            int vd = out[0]->ndim = g->values[nd->out[0]].ndim;
            for (int d = 0; d < JN_MAX_DIMS; d++) out[0]->shape[d] = d < vd ? shape[0][d] : 0;
        } else {
            out[0]->ndim = meta[0].ndim;
            memcpy(out[0]->shape, meta[0].shape, sizeof out[0]->shape);
        }
    }
    if (jn_op_info(nd->op)->flags & JN_F_COLL) x->st.state_written = 1; /* issued: never re-run eagerly */
    jn_rt_kclock_begin();
    s = __builtin_expect(x->dev != NULL, 0) ? x->dev->node(x->dev->ctx, (jn_op)nd->op, nd->nin, in, a, out) /* device hook */
                                            : cpu_tab[nd->op](nd->nin, in, a, out);
    jn_rt_kclock_end();
    if (s) goto fail;
    for (int j = 0; j < nd->nout; j++) {
        set_val(x, nd->out[j], out[j]);
        out[j] = NULL;
    }
    goto done;
fail:
    if (s == JN_ERR_NOMEM) { /* the allocator's own words (a device says why) */
        char why[256];
        snprintf(why, sizeof why, "%s", jn_errmsg());
        s = jn_error(s, "out of memory running graph %s node %d (%s)", g->name, n, why);
    } else {
        s = node_error(x, n, s);
    }
done:
    for (int j = 0; j < JN_MAX_OUTS; j++) {
        if (out[j] && !(x->direct[n] & (1u << j))) jn_tensor_decref(out[j]);
        if (copies[j]) jn_tensor_decref(copies[j]);
    }
    return s;
}

/* -------------------------------------------------------- one kernel */
/* Byte strides of t aligned to the kernel's space (right-aligned; the
 * reduction's output left-aligned over the kept dims), 0 where it broadcasts. */
static void kstrides(const jn_tensor *t, int nd, const int64_t *S, int nkept, int red_out, int64_t *st) {
    int64_t es = (int64_t)jn_elsize(t);
    for (int d = 0; d < nd; d++) st[d] = 0;
    if (red_out) {
        for (int d = 0; d < nkept && d < t->ndim; d++)
            st[d] = t->shape[d] == 1 && S[d] != 1 ? 0 : t->strides[d] * es;
        return;
    }
    for (int d = 0; d < t->ndim && d < nd; d++) {
        int td = t->ndim - 1 - d, kd = nd - 1 - d;
        st[kd] = t->shape[td] == 1 && S[kd] != 1 ? 0 : t->strides[td] * es;
    }
}

/* Calls the compiled function of kernel ki with every written value's buffer made. */
static jn_status call_gen(jn_ex_exec *x, int32_t ki, jn_tensor *const *ops) {
    kinfo *K = &x->k[ki];
    const jn_ir_graph *g = x->g;
    const jn_ir_node *root = &g->nodes[g->kernels[ki].root];
    int64_t S[JN_MAX_DIMS];
    int nd, nred = 0;
    int32_t sv = g->kernels[ki].kind == JN_IR_K_EW_REDUCE ? root->in[0] : root->out[0];
    jn_status s = eval_shape(x, sv, S);
    if (s) return s;
    nd = g->values[sv].ndim;
    if (g->kernels[ki].kind == JN_IR_K_EW_REDUCE) {
        jn_attrs a;
        if ((s = node_attrs(x, g->kernels[ki].root, &a))) return s;
        nred = a.a[0].l.n == 0 ? nd : a.a[0].l.n;
    }
    int nops = K->io.ncall;
    int64_t(*st)[JN_MAX_DIMS] = (int64_t(*)[JN_MAX_DIMS])K->st;
    for (int k = 0; k < nops; k++) {
        kstrides(ops[k], nd, S, nd - nred, K->red_out[k], st[k]);
        K->data[k] = jn_data(ops[k]);
    }
    /* coalesce: drop size-1 dims, merge neighbours every operand walks contiguously */
    int64_t shape[JN_MAX_DIMS];
    int n2 = 0, red2 = 0;
    for (int d = 0; d < nd; d++) {
        if (S[d] == 1) continue;
        int isred = d >= nd - nred;
        int prev_red = n2 > 0 && red2 > 0; /* the last kept dim was reduced */
        int merge = n2 > 0 && prev_red == isred;
        for (int k = 0; merge && k < nops; k++) merge = st[k][n2 - 1] == st[k][d] * S[d];
        if (merge) {
            shape[n2 - 1] *= S[d];
            for (int k = 0; k < nops; k++) st[k][n2 - 1] = st[k][d];
            continue;
        }
        shape[n2] = S[d];
        for (int k = 0; k < nops; k++) st[k][n2] = st[k][d];
        n2++;
        red2 += isred;
    }
    int64_t numel = 1;
    for (int d = 0; d < nd; d++) numel *= S[d];
    if (n2 == 0) {
        shape[0] = 1;
        for (int k = 0; k < nops; k++) st[k][0] = 0;
        n2 = 1;
        red2 = nred > 0 ? 1 : 0;
    }
    for (int k = 0; k < nops; k++) /* a dim or two each: no libc call */
        for (int d = 0; d < n2; d++) K->strides[(size_t)k * (size_t)n2 + (size_t)d] = st[k][d];
    for (int32_t j = 0; j < K->io.nscalar; j++) K->scalars[j] = x->sval[g->values[K->io.scalar[j]].def];
    jn_kcall c = {.nops = nops, .ndim = n2, .nred = red2, .nthreads = jn_num_threads(), .data = K->data,
                  .shape = shape, .strides = K->strides, .scalars = K->scalars, .parallel_for = jn_parallel_for};
    if (numel > 0 || g->kernels[ki].kind == JN_IR_K_EW_REDUCE) {
        if (x->hook) x->hook(x->hook_ctx, ki, &c, 0);
        jn_rt_kclock_begin();
        if (__builtin_expect(x->dev != NULL, 0)) { /* device hook */
            s = x->dev->launch(x->dev->ctx, x->gi, ki, &c, K->io.nscalar);
        } else {
            K->fn(&c);
        }
        jn_rt_kclock_end();
        if (s) return s;
        if (x->hook) x->hook(x->hook_ctx, ki, &c, 1);
    }
    x->st.kernels_gen++;
    return JN_OK;
}

static jn_status exec_kernel(jn_ex_exec *x, int32_t ki) {
    kinfo *K = &x->k[ki];
    const jn_ir_graph *g = x->g;
    const jn_ir_kernel *KK = &g->kernels[ki];
    jn_status s = JN_OK;
    int gemm = KK->kind == JN_IR_K_GEMM;
    if (K->fn) {
        /* the written values' buffers, then (gemm) the GEMM into the root's */
        jn_tensor **ops = K->ops;
        int64_t shape[JN_MAX_DIMS];
        for (int32_t j = 0; j < K->io.nout; j++) {
            int32_t v = K->io.out[j];
            if (gemm && v == g->nodes[K->io.nodes[0]].out[0]) continue;
            if ((s = eval_shape(x, v, shape))) return s;
            jn_tensor *t = dest_for(x, v, shape, 0);
            if (!t) return jn_errmsg()[0] ? JN_ERR_NOMEM : jn_error(JN_ERR_NOMEM, "out of memory");
            set_val(x, v, t);
        }
        if (gemm) {
            int32_t root_out = g->nodes[KK->root].out[0];
            if ((s = exec_node(x, K->io.nodes[0], K->gemm_shares ? x->val[root_out] : NULL, 1))) return s;
        }
        for (int32_t j = 0; j < K->io.ncall; j++) ops[j] = x->val[K->io.call[j]];
        return call_gen(x, ki, ops);
    }
    /* member by member through the eager kernels */
    x->st.kernels_lib++;
    jn_tensor *shared = NULL;
    if (gemm && K->gemm_shares) {
        int32_t root_out = g->nodes[KK->root].out[0];
        int64_t shape[JN_MAX_DIMS];
        if ((s = eval_shape(x, root_out, shape))) return s;
        if (!(shared = dest_for(x, root_out, shape, 0))) return JN_ERR_NOMEM;
    }
    for (int32_t i = 0; i < K->io.nnodes && s == JN_OK; i++) {
        int32_t n = K->io.nodes[i];
        const jn_ir_node *nd = &g->nodes[n];
        int force = 0;
        for (int32_t j = 0; j < K->io.nout; j++)
            for (int o = 0; o < nd->nout; o++) force |= K->tmp[j] && K->io.out[j] == nd->out[o];
        if (shared && n == KK->root) {
            s = exec_node(x, n, shared, force); /* in place over the GEMM's result */
        } else {
            s = exec_node(x, n, gemm && i == 0 ? shared : NULL, force);
        }
    }
    if (shared) jn_tensor_decref(shared);
    /* temporaries to their planned slots */
    for (int32_t j = 0; j < K->io.nout && s == JN_OK; j++) {
        if (!K->tmp[j]) continue;
        int32_t v = K->io.out[j];
        jn_tensor *t = x->val[v];
        jn_tensor *a = arena_tensor(x, v, t->shape);
        if (!a) return JN_ERR_NOMEM;
        s = copy_into(x, a, t);
        set_val(x, v, a);
    }
    return s;
}

/* --------------------------------------------------------------- loops */
static jn_status exec_steps(jn_ex_exec *x, int32_t from, int32_t to);

static void release(jn_ex_exec *x, int32_t i) {
    for (int32_t r = 0; r < x->steps[i].nrel; r++) set_val(x, x->rel[x->steps[i].rel0 + r], NULL);
}

/* Body value v of loop l may be written straight into a loop buffer: a
 * node output of this very loop's body that would get a buffer of its own
 * or an arena slot (not a view, not state written in place), of the
 * buffer's dtype.  Then the end of the iteration moves nothing. */
static int redirectable(const jn_ex_exec *x, int32_t l, int32_t v, const jn_tensor *buf) {
    const jn_ir_value *iv = &x->g->values[v];
    if (x->flags & JN_EX_EAGER || iv->kind != JN_IR_V_NODE || x->g->nodes[iv->def].loop != l ||
        (x->place[v] != P_ARENA && x->place[v] != P_OWN) || (x->direct[iv->def] & (1u << iv->idx)) || x->ldst[v])
        return 0;
    return buf->dtype == iv->dtype && buf->ndim == iv->ndim;
}

/* Carry next v of loop l is a view of a value the loop never writes (an
 * input, a value defined outside l, an outer loop's param): the view may
 * be the next param as it is, no copy into the carry's buffer (an LSTM's
 * input gates, select(x_proj, i + 1), 8 kB per time step).  Only between
 * iterations: the last next still goes to a buffer, since the carry's out
 * lives after the loop and the viewed value's slot may not. */
static int stable_view(const jn_ex_exec *x, int32_t l, int32_t v) {
    const jn_ir_graph *g = x->g;
    if (x->flags & JN_EX_EAGER || x->place[v] != P_VIEW) return 0;
    const jn_ir_value *iv = &g->values[x->vbase[v]];
    int32_t scope = iv->kind == JN_IR_V_NODE       ? g->nodes[iv->def].loop
                    : iv->kind == JN_IR_V_LOOP_OUT ? g->loops[iv->def].parent
                    : iv->kind == JN_IR_V_LOOP_PARAM ? iv->def
                                                     : -1;
    for (; scope >= 0; scope = g->loops[scope].parent)
        if (scope == l) return 0;
    return 1;
}

/* A view header over t (counted as no buffer of its own). */
static jn_tensor *view_of(jn_tensor *t) {
    jn_tensor *h = jn_tensor_alias(t);
    if (h) h->is_view = 1;
    return h;
}

static jn_status exec_loop(jn_ex_exec *x, int32_t si) {
    const jn_ir_graph *g = x->g;
    int32_t l = x->steps[si].idx;
    const jn_ir_loop *L = &g->loops[l];
    int64_t trip;
    jn_status s = eval(x, L->trip, &trip);
    if (s) return s;
    if (trip < 0)
        return jn_error(JN_ERR_VALUE, "graph %s loop L%d: trip count %lld with these symbol values", g->name, l,
                        (long long)trip);
    int32_t nc = L->ncarry, ncol = L->ncollect;
    jn_tensor **buf = calloc((size_t)nc * 2 + (size_t)ncol + 1, sizeof *buf), **col = buf + 2 * nc;
    int *cur = calloc((size_t)nc + 1, sizeof *cur);
    if (!buf || !cur) {
        free(buf);
        free(cur);
        return jn_error(JN_ERR_NOMEM, "out of memory running loop L%d of graph %s", l, g->name);
    }
    int64_t shape[JN_MAX_DIMS + 1];
    for (int32_t c = 0; c < nc && s == JN_OK; c++) {
        const jn_ir_value *pv = &g->values[L->carry[c].param];
        jn_tensor *init = x->val[L->carry[c].init];
        if (!init) {
            s = jn_error(JN_ERR_RUNTIME, "graph %s loop L%d: carry init %%%d not computed", g->name, l, L->carry[c].init);
            break;
        }
        for (int b = 0; b < 2 && s == JN_OK; b++)
            if (!(buf[2 * c + b] = own_tensor(x, pv->dtype, init->ndim, init->shape))) s = JN_ERR_NOMEM;
            else note_bytes(x, tbytes(buf[2 * c + b]));
        if (s == JN_OK) s = copy_into(x, buf[2 * c], init);
        if (s == JN_OK) {
            jn_tensor_incref(buf[2 * c]);
            set_val(x, L->carry[c].param, buf[2 * c]);
        }
    }
    for (int32_t c = 0; c < ncol && s == JN_OK; c++) {
        const jn_ir_value *ov = &g->values[L->collect[c].out];
        x->sv[L->ivar] = 0;
        ev_ivar(x);
        if ((s = eval_shape(x, L->collect[c].out, shape))) break;
        /* A collect that stays inside the graph gets a buffer of its size at
         * the recorded maxima (the arena's sizing), its first rows used: one
         * size whatever this run's trip count, so the block cache reuses one
         * block per collect instead of keeping one of every size seen
         * (char_lstm's sequence lengths: ~12 MB of cached blocks). */
        int64_t most[JN_MAX_DIMS + 1];
        int at_max = !x->keep[L->collect[c].out];
        for (int d = 0; d < ov->ndim && at_max; d++)
            at_max = jn_cg_eval_at_max(g, ov->shape[d], &most[d]) == JN_OK && most[d] >= shape[d];
        if (!(col[c] = own_tensor(x, ov->dtype, ov->ndim, at_max ? most : shape))) {
            s = JN_ERR_NOMEM;
            break;
        }
        if (at_max) { /* a header of this run's shape over it (the device may hand the buffer out again) */
            jn_tensor *h = jn_tensor_alias(col[c]);
            jn_tensor_decref(col[c]);
            if (!(col[c] = h)) {
                s = JN_ERR_NOMEM;
                break;
            }
            memcpy(h->shape, shape, sizeof(int64_t) * (size_t)ov->ndim);
            jn_contiguous_strides(ov->ndim, shape, h->strides);
        }
        note_bytes(x, tbytes(col[c]));
    }
    /* per collect its row of this iteration, per carry the buffer its next goes to */
    jn_tensor **row = calloc((size_t)ncol + (size_t)nc + 1, sizeof *row), **nparam = row + ncol;
    if (!row && s == JN_OK) s = jn_error(JN_ERR_NOMEM, "out of memory running loop L%d of graph %s", l, g->name);
    for (int64_t it = 0; it < trip && s == JN_OK; it++) {
        x->sv[L->ivar] = it;
        ev_ivar(x);
        for (int32_t c = 0; c < ncol && s == JN_OK; c++) {
            if (!(row[c] = view_of(col[c]))) {
                s = jn_error(JN_ERR_NOMEM, "out of memory running loop L%d of graph %s", l, g->name);
                break;
            }
            row[c]->ndim = col[c]->ndim - 1;
            memmove(row[c]->shape, col[c]->shape + 1, sizeof(int64_t) * (size_t)row[c]->ndim);
            memmove(row[c]->strides, col[c]->strides + 1, sizeof(int64_t) * (size_t)row[c]->ndim);
            row[c]->offset += it * col[c]->strides[0];
            int32_t v = L->collect[c].body;
            if (redirectable(x, l, v, row[c])) {
                jn_tensor_incref(row[c]);
                x->ldst[v] = row[c];
            }
        }
        for (int32_t c = 0; c < nc && s == JN_OK; c++) {
            int32_t v = L->carry[c].next;
            jn_tensor *dst = buf[2 * c + 1 - cur[c]];
            if (x->over_param[v] && x->val[L->carry[c].param] == buf[2 * c + cur[c]] && redirectable(x, l, v, dst))
                dst = buf[2 * c + cur[c]]; /* in place over the param (not over a collect's row) */
            if (redirectable(x, l, v, dst) && !(x->ldst[v] = view_of(dst)))
                s = jn_error(JN_ERR_NOMEM, "out of memory running loop L%d of graph %s", l, g->name);
        }
        if (s == JN_OK) s = exec_steps(x, si + 1, x->steps[si].body_end - 1);
        /* end of iteration: bodies into their rows, nexts into the other
         * buffers, unless they were written there; a next written into a
         * collect row is the next param as it is */
        for (int32_t c = 0; c < ncol && s == JN_OK; c++) {
            jn_tensor *body = x->val[L->collect[c].body];
            if (!body) {
                s = jn_error(JN_ERR_RUNTIME, "graph %s loop L%d: collect %%%d not computed", g->name, l, L->collect[c].body);
                break;
            }
            if (!same_memory(row[c], body)) s = copy_into(x, row[c], body);
        }
        for (int32_t c = 0; c < nc && s == JN_OK; c++) {
            nparam[c] = NULL;
            jn_tensor *nx = x->val[L->carry[c].next], *dst = buf[2 * c + 1 - cur[c]];
            if (!nx) {
                s = jn_error(JN_ERR_RUNTIME, "graph %s loop L%d: carry next %%%d not computed", g->name, l,
                             L->carry[c].next);
                break;
            }
            for (int32_t k = 0; k < ncol && !nparam[c]; k++)
                if (same_memory(row[k], nx)) nparam[c] = row[k];
            if (nparam[c]) continue;
            if (same_memory(buf[2 * c + cur[c]], nx)) { /* written over the param */
                nparam[c] = buf[2 * c + cur[c]];
                continue;
            }
            if (it + 1 < trip && x->view_next[L->carry[c].next]) {
                nparam[c] = nx;
                continue;
            }
            if (!same_memory(dst, nx)) s = copy_into(x, dst, nx);
            cur[c] = 1 - cur[c];
            nparam[c] = dst;
        }
        for (int32_t c = 0; c < nc && s == JN_OK; c++) jn_tensor_incref(nparam[c]);
        for (int32_t c = 0; c < ncol; c++)
            if (row[c]) jn_tensor_decref(row[c]), row[c] = NULL;
        for (int32_t c = 0; c < ncol; c++) {
            int32_t v = L->collect[c].body;
            if (x->ldst[v]) jn_tensor_decref(x->ldst[v]), x->ldst[v] = NULL;
        }
        for (int32_t c = 0; c < nc; c++) {
            int32_t v = L->carry[c].next;
            if (x->ldst[v]) jn_tensor_decref(x->ldst[v]), x->ldst[v] = NULL;
        }
        if (s == JN_OK) release(x, x->steps[si].body_end - 1);
        for (int32_t c = 0; c < nc && s == JN_OK; c++) set_val(x, L->carry[c].param, nparam[c]);
    }
    free(row);
    for (int32_t c = 0; c < nc && s == JN_OK; c++) { /* the last param: a buffer or a collect's row */
        jn_tensor *last = x->val[L->carry[c].param];
        jn_tensor_incref(last);
        set_val(x, L->carry[c].out, last);
    }
    for (int32_t c = 0; c < ncol && s == JN_OK; c++) {
        jn_tensor_incref(col[c]);
        set_val(x, L->collect[c].out, col[c]);
    }
    /* the loop's buffers stop counting; a carry out or collect out counts as its value */
    for (int32_t c = 0; c < nc; c++) {
        set_val(x, L->carry[c].param, NULL);
        for (int b = 0; b < 2; b++)
            if (buf[2 * c + b]) {
                x->live -= tbytes(buf[2 * c + b]);
                jn_tensor_decref(buf[2 * c + b]);
            }
    }
    for (int32_t c = 0; c < ncol; c++)
        if (col[c]) {
            x->live -= tbytes(col[c]);
            jn_tensor_decref(col[c]);
        }
    for (int32_t c = 0; c < nc + ncol && s == JN_OK; c++) {
        int32_t v = c < nc ? L->carry[c].out : L->collect[c - nc].out;
        x->ownbytes[v] = tbytes(x->val[v]);
        x->live += x->ownbytes[v];
    }
    x->sv[L->ivar] = g->syms[L->ivar].lo;
    ev_ivar(x);
    free(buf);
    free(cur);
    return s;
}

static jn_status exec_steps(jn_ex_exec *x, int32_t from, int32_t to) {
    jn_status s = JN_OK;
    for (int32_t i = from; i < to && s == JN_OK; i++) {
        const step *p = &x->steps[i];
        /* a graph of small ops is bound by fetching its nodes: the compact
         * row of the node six steps ahead, and the inputs and attributes of
         * the one three ahead (whose row is in by now: reading a row not in
         * cache to find them stalled here) are brought in while this runs */
        if (i + 6 < to && x->steps[i + 6].kind == S_NODE) __builtin_prefetch(&x->xn[x->steps[i + 6].idx]);
        if (i + 3 < to && x->steps[i + 3].kind == S_NODE) { /* its row came in three steps ago */
            const xnode *nx = &x->xn[x->steps[i + 3].idx];
            __builtin_prefetch(nx->in);
            __builtin_prefetch(nx->attrs);
        }
        switch (p->kind) {
        case S_NODE: s = exec_node(x, p->idx, NULL, 0); break;
        case S_KERNEL: s = exec_kernel(x, p->idx); break;
        case S_LOOP:
            s = exec_loop(x, i);
            if (s == JN_OK) release(x, i);
            i = p->body_end - 1; /* its body ran inside */
            continue;
        default: break;
        }
        if (s == JN_OK) release(x, i);
    }
    return s;
}

/* ------------------------------------------------------------ building */
typedef struct {
    jn_ex_exec *x;
    int32_t cap;
} builder;

static int push_step(builder *b, uint8_t kind, int32_t idx, int32_t scope) {
    jn_ex_exec *x = b->x;
    if (x->nsteps == b->cap) {
        int32_t nc = b->cap ? 2 * b->cap : 64;
        step *ns = realloc(x->steps, (size_t)nc * sizeof *ns);
        if (!ns) return -1;
        x->steps = ns;
        b->cap = nc;
    }
    x->steps[x->nsteps] = (step){kind, idx, scope, 0, 0, 0};
    return x->nsteps++;
}

/* Steps of nodes from..to-1 of loop `scope` (-1: top level). */
static int build_steps(builder *b, int32_t scope, int32_t from, int32_t to) {
    jn_ex_exec *x = b->x;
    const jn_ir_graph *g = x->g;
    int eager = x->flags & JN_EX_EAGER;
    for (int32_t n = from; n < to;) {
        int32_t inner = -1;
        for (int32_t l = 0; l < g->nloops && inner < 0; l++)
            if (g->loops[l].parent == scope && g->loops[l].first == n) inner = l;
        if (inner >= 0) {
            int32_t si = push_step(b, S_LOOP, inner, scope);
            if (si < 0) return -1;
            x->loopstep[inner] = si;
            if (build_steps(b, inner, n, n + g->loops[inner].count) < 0 || push_step(b, S_ITER_END, inner, inner) < 0)
                return -1;
            x->steps[si].body_end = x->nsteps;
            n += g->loops[inner].count;
            continue;
        }
        int32_t k = eager ? -1 : g->nodes[n].kernel;
        if (k < 0) {
            if ((x->nodestep[n] = push_step(b, S_NODE, n, scope)) < 0) return -1;
        } else if (g->kernels[k].root == n) {
            int32_t si = push_step(b, S_KERNEL, k, scope);
            if (si < 0) return -1;
            for (int32_t i = 0; i < x->k[k].io.nnodes; i++) x->nodestep[x->k[k].io.nodes[i]] = si;
        }
        n++;
    }
    return 0;
}

/* The step of scope D that contains step u. */
static int32_t ancestor(const jn_ex_exec *x, int32_t u, int32_t D) {
    while (x->steps[u].scope != D && x->steps[u].scope >= 0) u = x->loopstep[x->steps[u].scope];
    return u;
}

static int32_t def_scope(const jn_ir_graph *g, int32_t v, int *ok) {
    const jn_ir_value *iv = &g->values[v];
    *ok = 1;
    if (iv->kind == JN_IR_V_NODE) return g->nodes[iv->def].loop;
    if (iv->kind == JN_IR_V_LOOP_OUT) return g->loops[iv->def].parent;
    *ok = 0;
    return -1;
}

static void use(const jn_ex_exec *x, int32_t *last, int32_t v, int32_t u) {
    int ok;
    int32_t D = def_scope(x->g, v, &ok);
    if (!ok) return;
    int32_t a = ancestor(x, u, D);
    if (a > last[v]) last[v] = a;
}

/* Release lists: each value after the step of its scope holding its last use. */
static jn_status liveness(jn_ex_exec *x) {
    const jn_ir_graph *g = x->g;
    int32_t nv = g->nvalues;
    const int32_t *base = x->vbase;
    int32_t *last = malloc(((size_t)nv + 1) * sizeof *last);
    int32_t *cnt = calloc((size_t)x->nsteps + 1, sizeof *cnt);
    x->rel = malloc(((size_t)nv + 1) * sizeof *x->rel);
    if (!last || !cnt || !x->rel) {
        free(last);
        free(cnt);
        return jn_error(JN_ERR_NOMEM, "out of memory preparing graph %s", g->name);
    }
    for (int32_t v = 0; v < nv; v++) {
        const jn_ir_value *iv = &g->values[v];
        last[v] = iv->kind == JN_IR_V_NODE ? x->nodestep[iv->def] : iv->kind == JN_IR_V_LOOP_OUT ? x->loopstep[iv->def] : -1;
    }
    for (int32_t n = 0; n < g->nnodes; n++) {
        const jn_ir_node *nd = &g->nodes[n];
        for (int j = 0; j < nd->nin; j++) use(x, last, nd->in[j], x->nodestep[n]);
    }
    for (int32_t l = 0; l < g->nloops; l++) {
        const jn_ir_loop *L = &g->loops[l];
        int32_t end = x->steps[x->loopstep[l]].body_end - 1;
        for (int32_t c = 0; c < L->ncarry; c++) {
            use(x, last, L->carry[c].init, x->loopstep[l]);
            use(x, last, L->carry[c].next, end);
        }
        for (int32_t c = 0; c < L->ncollect; c++) use(x, last, L->collect[c].body, end);
    }
    for (int32_t i = 0; i < g->noutputs; i++) x->keep[g->outputs[i].value] = 1;
    /* a view keeps its base's buffer: the base goes with the view's last use */
    for (int32_t v = nv - 1; v >= 0; v--)
        if (base[v] != v && last[v] >= 0) {
            use(x, last, base[v], last[v]);
            if (x->keep[v]) x->keep[base[v]] = 1;
        }
    for (int32_t v = 0; v < nv; v++)
        if (last[v] >= 0 && !x->keep[v]) cnt[last[v]]++;
    int32_t at = 0;
    for (int32_t i = 0; i < x->nsteps; i++) {
        x->steps[i].rel0 = at;
        at += cnt[i];
    }
    for (int32_t v = 0; v < nv; v++)
        if (last[v] >= 0 && !x->keep[v]) x->rel[x->steps[last[v]].rel0 + x->steps[last[v]].nrel++] = v;
    free(last);
    free(cnt);
    return JN_OK;
}

/* State updated in place.  An optimizer's update (adam_, sgd_, copy_:
 * output k of an in-place node) or an elementwise op over a state input
 * (plain SGD's p.add_(grad, alpha=-lr), functional in the graph as
 * add(p, g) written back to p) may write straight into the state tensor
 * when the graph writes it back to that input and nothing reads the input
 * after the node (directly or through a view): the functional copy and
 * the write-back both vanish.  An elementwise op reads each element
 * before it writes it, so it may write over an operand of the same shape
 * and layout; for a fused kernel that holds only when the op's output
 * spans the kernel's whole space (no element computed twice) and no other
 * member reads the input.  These are candidates: each run takes them when
 * its tensors allow (bind_direct). */
static int32_t kernel_out_index(const kinfo *K, int32_t v) {
    for (int32_t j = 0; j < K->io.nout; j++)
        if (K->io.out[j] == v) return j;
    return -1;
}

static int direct_ew_ok(const jn_ex_exec *x, int32_t n, int32_t w) {
    const jn_ir_graph *g = x->g;
    const jn_ir_node *nd = &g->nodes[n];
    const jn_ir_value *ov = &g->values[nd->out[0]], *wv = &g->values[w];
    if (ov->dtype != wv->dtype || ov->ndim != wv->ndim) return 0;
    for (int d = 0; d < ov->ndim; d++)
        if (ov->shape[d] != wv->shape[d]) return 0;
    if (nd->kernel < 0) return 1;
    const jn_ir_kernel *KK = &g->kernels[nd->kernel];
    const kinfo *K = &x->k[nd->kernel];
    if (KK->kind == JN_IR_K_LIB) return 1;
    if (KK->kind != JN_IR_K_EW) return 0;
    int32_t j = kernel_out_index(K, nd->out[0]);
    if (j < 0 || K->tmp[j]) return 0;
    const jn_ir_value *rv = &g->values[g->nodes[KK->root].out[0]];
    if (rv->ndim != ov->ndim) return 0;
    for (int d = 0; d < ov->ndim; d++)
        if (rv->shape[d] != ov->shape[d]) return 0;
    for (int32_t i = 0; i < K->io.nnodes; i++) {
        const jn_ir_node *m = &g->nodes[K->io.nodes[i]];
        for (int k = 0; k < m->nin && K->io.nodes[i] != n; k++)
            if (x->vbase[m->in[k]] == w) return 0;
    }
    return 1;
}

static void direct_state(jn_ex_exec *x) {
    const jn_ir_graph *g = x->g;
    int32_t nv = g->nvalues;
    const int32_t *base = x->vbase;
    int32_t *lastin = malloc(((size_t)nv + 1) * sizeof *lastin);
    x->dst = malloc(((size_t)g->noutputs + 1) * sizeof *x->dst); /* at most one per state output */
    if (!lastin || !x->dst) goto done; /* an optimization only */
    for (int32_t v = 0; v < nv; v++) lastin[v] = -1;
    /* top-level step of every read of every input (loops: their whole run) */
    for (int32_t n = 0; n < g->nnodes; n++)
        for (int j = 0; j < g->nodes[n].nin; j++) {
            int32_t b = base[g->nodes[n].in[j]], a = ancestor(x, x->nodestep[n], -1);
            if (a > lastin[b]) lastin[b] = a;
        }
    for (int32_t l = 0; l < g->nloops; l++)
        for (int32_t c = 0; c < g->loops[l].ncarry; c++) {
            int32_t b = base[g->loops[l].carry[c].init], a = ancestor(x, x->loopstep[l], -1);
            if (a > lastin[b]) lastin[b] = a;
        }
    for (int32_t i = 0; i < g->noutputs; i++) lastin[base[g->outputs[i].value]] = INT32_MAX;
    for (int32_t n = 0; n < g->nnodes; n++) {
        const jn_ir_node *nd = &g->nodes[n];
        uint32_t fl = jn_op_info(nd->op)->flags;
        int ew = (fl & JN_F_EW) && !(fl & (JN_F_INPLACE | JN_F_VIEW)) && nd->nout == 1 && !x->dev;
        if (!((fl & JN_F_INPLACE) || ew) || nd->loop >= 0) continue;
        for (int j = 0; j < nd->nout; j++)
            for (int k = ew ? 0 : j; k < (ew ? nd->nin : j + 1) && k < nd->nin; k++) {
                int32_t w = nd->in[k], v = nd->out[j];
                if (g->values[w].kind != JN_IR_V_INPUT || g->inputs[g->values[w].def].kind != JN_IR_IN_STATE ||
                    lastin[w] != x->nodestep[n])
                    continue;
                int writes = 0, other = 0;
                for (int32_t i = 0; i < g->noutputs; i++) {
                    const jn_ir_output *o = &g->outputs[i];
                    int to_w = o->kind == JN_IR_OUT_STATE && o->state == g->values[w].def;
                    if (o->value == v) writes += to_w, other += !to_w;
                    else other += to_w; /* another value written back to the same state */
                }
                for (int i = 0; i < nd->nin; i++) other += i != k && base[nd->in[i]] == w; /* read again by this node */
                if (writes != 1 || other || (ew && !direct_ew_ok(x, n, w))) continue;
                x->dst[x->ndst++] = (direct_t){v, n, g->values[w].def, (uint8_t)j, (uint8_t)ew, x->place[v]};
                x->into[v] = w;
                break;
            }
    }
done:
    free(lastin);
}

/* This run's choice for each candidate of direct_state: the state tensor
 * must not overlap another input (a graph reads its inputs as they were,
 * and the node writes the state before the step ends), and an elementwise
 * op's must be contiguous (an element per index, as its output's). */
static void bind_direct(jn_ex_exec *x, jn_tensor *const *inputs) {
    const jn_ir_graph *g = x->g;
    for (int32_t c = 0; c < x->ndst; c++) {
        const direct_t *d = &x->dst[c];
        const jn_tensor *t = inputs[d->in];
        int ok = !d->ew || jn_is_contiguous(t);
        for (int32_t i = 0; i < g->ninputs && ok; i++) {
            const jn_tensor *u = inputs[i];
            if (i == d->in || !u || x->val[g->inputs[i].value] != u) continue;
            ok = u->storage != t->storage || !jn_rt_may_overlap(u, t);
        }
        x->place[d->v] = ok ? P_INPUT : d->place;
        x->st.state_direct += ok;
        if (ok) x->direct[d->n] |= (uint8_t)(1u << d->j);
        else x->direct[d->n] &= (uint8_t)~(1u << d->j);
    }
}

/* Loop-carried accumulators in place: a carry's next made by an in-place
 * or elementwise op over the param (a gradient summed into dW by addmm or
 * add) or by a select/slice_scatter into it (a gradient added into its
 * x[:, t] window) may be written over the param's own buffer when that
 * node is the last reader of the param and its views in the iteration,
 * and nothing moved at the iteration's end reads them: no copy of the
 * whole accumulator per iteration (O(T^2) bytes for a window per step). */
static void carry_in_place(jn_ex_exec *x) {
    const jn_ir_graph *g = x->g;
    const int32_t *base = x->vbase;
    for (int32_t l = 0; l < g->nloops; l++) {
        const jn_ir_loop *L = &g->loops[l];
        for (int32_t c = 0; c < L->ncarry; c++) {
            int32_t p = L->carry[c].param, v = L->carry[c].next;
            const jn_ir_value *iv = &g->values[v];
            if (iv->kind != JN_IR_V_NODE || g->nodes[iv->def].loop != l) continue;
            int32_t n = iv->def, k = iv->idx, sn = x->nodestep[n];
            const jn_ir_node *nd = &g->nodes[n];
            if (x->steps[sn].kind != S_NODE || x->steps[sn].idx != n || k >= nd->nin || nd->in[k] != p) continue;
            /* ops whose kernels may write their output over input k: in-place
             * ones, elementwise ones (same shape: a carry keeps its shape),
             * addmm (beta*C + A@B into C) and the scatters (base = output) */
            int ok = (jn_op_info(nd->op)->flags & (JN_F_INPLACE | JN_F_EW)) ||
                     ((nd->op == JN_OP_select_scatter || nd->op == JN_OP_slice_scatter || nd->op == JN_OP_addmm) &&
                      k == 0);
            ok = ok && g->values[p].dtype == iv->dtype;
            for (int j = 0; j < nd->nin && ok; j++) ok = j == k || base[nd->in[j]] != p;
            for (int32_t m = 0; m < g->nnodes && ok; m++) { /* no later reader in the iteration */
                if (m == n || g->nodes[m].loop < 0) continue;
                int32_t a = ancestor(x, x->nodestep[m], l);
                if (x->steps[a].scope != l || a < sn) continue;
                for (int j = 0; j < g->nodes[m].nin && ok; j++) ok = base[g->nodes[m].in[j]] != p;
            }
            for (int32_t l2 = 0; l2 < g->nloops && ok; l2++) /* inner loops seeded from it */
                for (int32_t c2 = 0; c2 < g->loops[l2].ncarry && ok; c2++)
                    ok = base[g->loops[l2].carry[c2].init] != p || x->loopstep[l2] < sn ||
                         x->steps[ancestor(x, x->loopstep[l2], l)].scope != l;
            for (int32_t c2 = 0; c2 < L->ncarry && ok; c2++) ok = c2 == c || base[L->carry[c2].next] != p;
            for (int32_t c2 = 0; c2 < L->ncollect && ok; c2++) ok = base[L->collect[c2].body] != p;
            if (ok) x->over_param[v] = 1;
        }
    }
}

static int has_v(const int32_t *a, int32_t n, int32_t v) {
    for (int32_t i = 0; i < n; i++)
        if (a[i] == v) return 1;
    return 0;
}

/* K->fn of a kernel the device launches (never called: call_gen launches). */
static void device_kernel_marker(const jn_kcall *c) { (void)c; }

static jn_status prepare_kernel(jn_ex_exec *x, const jn_ex_lib *lib, int32_t ki) {
    const jn_ir_graph *g = x->g;
    kinfo *K = &x->k[ki];
    const jn_ir_kernel *KK = &g->kernels[ki];
    jn_status s = jn_cg_kernel_describe(g, ki, &K->io);
    if (s) return s;
    int32_t nc = K->io.ncall > 0 ? K->io.ncall : 1;
    K->tmp = calloc((size_t)K->io.nout + 1, 1);
    K->red_out = calloc((size_t)nc, 1);
    K->data = calloc((size_t)nc, sizeof *K->data);
    K->strides = calloc((size_t)nc * JN_MAX_DIMS, sizeof *K->strides);
    K->st = calloc((size_t)nc * JN_MAX_DIMS, sizeof *K->st);
    K->ops = calloc((size_t)nc, sizeof *K->ops);
    K->scalars = calloc((size_t)K->io.nscalar + 1, sizeof *K->scalars);
    if (!K->tmp || !K->red_out || !K->data || !K->strides || !K->st || !K->ops || !K->scalars)
        return jn_error(JN_ERR_NOMEM, "out of memory preparing graph %s", g->name);
    if (lib && (KK->impl == JN_IR_IMPL_GEN || KK->impl == JN_IR_IMPL_GEMM) && K->io.ncall > 0)
        K->fn = jn_ex_lib_kernel(lib, x->gi, ki);
    if (x->dev && (KK->impl == JN_IR_IMPL_GEN || KK->impl == JN_IR_IMPL_GEMM) && K->io.ncall > 0 && /* device hook */
        x->dev->has_kernel(x->dev->ctx, x->gi, ki))
        K->fn = device_kernel_marker;
    const jn_ir_node *root = &g->nodes[KK->root];
    for (int32_t j = 0; j < K->io.ncall; j++)
        K->red_out[j] = KK->kind == JN_IR_K_EW_REDUCE && K->io.call[j] == root->out[0];
    /* member by member, an output in the slot of an external input waits in a temporary */
    for (int32_t j = 0; j < K->io.nout; j++) {
        int32_t v = K->io.out[j];
        if (x->place[v] != P_ARENA) continue;
        for (int32_t i = 0; i < K->io.nin; i++) {
            int32_t w = K->io.in[i];
            if (x->place[w] == P_ARENA && (g->values[w].mem == g->values[v].mem ||
                                            (g->values[w].wmem != -1 && g->values[w].wmem == g->values[v].wmem)))
                K->tmp[j] = 1;
        }
    }
    if (KK->kind == JN_IR_K_GEMM && K->io.nnodes > 1) {
        int32_t go = g->nodes[K->io.nodes[0]].out[0], ro = root->out[0];
        const jn_ir_value *a = &g->values[go], *b = &g->values[ro];
        int same = a->dtype == b->dtype && a->ndim == b->ndim && !has_v(K->io.out, K->io.nout, go) &&
                   x->place[ro] != P_VIEW;
        for (int d = 0; same && d < a->ndim; d++) same = a->shape[d] == b->shape[d];
        K->gemm_shares = same;
        if (K->fn && !same) K->fn = NULL; /* the epilogue reads the GEMM in the root's buffer */
    }
    return JN_OK;
}

/* Device: every node the device's node runner gets (outside a launched
 * kernel, or a gemm kernel's GEMM) must be one it has. */
static jn_status device_check(const jn_ex_exec *x) {
    const jn_ir_graph *g = x->g;
    for (int32_t n = 0; n < g->nnodes; n++) {
        int32_t k = (x->flags & JN_EX_EAGER) ? -1 : g->nodes[n].kernel;
        int launched = k >= 0 && x->k[k].fn && !(g->kernels[k].kind == JN_IR_K_GEMM && x->k[k].io.nodes[0] == n);
        if (!launched && !x->dev->supports(x->dev->ctx, g->nodes[n].op))
            return jn_error(JN_ERR_UNSUPPORTED, "graph %s node %d (%s) cannot run on %s: the device has no kernel for "
                            "it (run the graph on the cpu)", g->name, n, jn_op_info(g->nodes[n].op)->name,
                            x->dev->name);
    }
    return JN_OK;
}

jn_status jn_ex_new(const jn_ir_module *m, int32_t gi, const jn_ex_lib *lib, int flags, jn_ex_exec **out) {
    return jn_ex_new_on(m, gi, lib, NULL, flags, out);
}

jn_status jn_ex_new_on(const jn_ir_module *m, int32_t gi, const jn_ex_lib *lib, const jn_ex_device *dev,
                            int flags, jn_ex_exec **out) {
    *out = NULL;
    if (!m || gi < 0 || gi >= m->ngraphs)
        return jn_error(JN_ERR_VALUE, "the module has no graph %d (it has %d)", gi, m ? m->ngraphs : 0);
    const jn_ir_graph *g = m->graphs[gi];
    jn_ex_exec *x = calloc(1, sizeof *x);
    if (!x) return jn_error(JN_ERR_NOMEM, "out of memory preparing graph %s", g->name);
    x->m = m;
    x->g = g;
    x->gi = gi;
    x->flags = flags;
    x->dev = dev;
    if (dev) lib = NULL; /* the device's kernels, never host code */
    int eager = flags & JN_EX_EAGER;
    size_t nv = (size_t)g->nvalues + 1, nn = (size_t)g->nnodes + 1;
    x->place = calloc(nv, 1);
    x->keep = calloc(nv, 1);
    x->direct = calloc(nn, 1);
    if ((x->into = malloc(nv * sizeof *x->into))) memset(x->into, 0xff, nv * sizeof *x->into); /* -1: none */
    x->ownbytes = calloc(nv, sizeof *x->ownbytes);
    x->val = calloc(nv, sizeof *x->val);
    x->ldst = calloc(nv, sizeof *x->ldst);
    x->over_param = calloc(nv, 1);
    x->view_next = calloc(nv, 1);
    x->vbase = malloc(nv * sizeof *x->vbase);
    x->caphpool = 64; /* more idle headers than a graph keeps released at once are freed */
    x->hpool = calloc((size_t)x->caphpool, sizeof *x->hpool);
    x->sv = calloc((size_t)g->nsyms + 1, sizeof *x->sv);
    x->sval = calloc((size_t)g->ninputs + 1, sizeof *x->sval);
    x->sv_ok = calloc((size_t)g->nsyms + 1, sizeof *x->sv_ok);
    x->sval_ok = calloc((size_t)g->ninputs + 1, sizeof *x->sval_ok);
    x->scal = calloc((size_t)g->ninputs + 1, sizeof *x->scal);
    x->loopstep = calloc((size_t)g->nloops + 1, sizeof *x->loopstep);
    x->nodestep = calloc(nn, sizeof *x->nodestep);
    x->xn = calloc(nn, sizeof *x->xn);
    x->k = calloc((size_t)g->nkernels + 1, sizeof *x->k);
    if (dev) x->dscal = calloc((size_t)g->ninputs + 1, sizeof *x->dscal);
    int32_t npatch = 0;
    for (int32_t n = 0; n < g->nnodes; n++) npatch += JN_MAX_ATTRS * (JN_MAX_DIMS + 1);
    x->patches = malloc(((size_t)npatch + 1) * sizeof *x->patches);
    jn_status s = JN_OK;
    if (!x->place || !x->keep || !x->direct || !x->into || !x->ownbytes || !x->val || !x->ldst || !x->over_param || !x->view_next || !x->vbase || !x->hpool || !x->sv || !x->sval || !x->sv_ok || !x->sval_ok || !x->scal || !x->loopstep ||
        !x->nodestep || !x->xn || !x->k || !x->patches || (dev && !x->dscal) || !ev_prepare(x)) {
        s = jn_error(JN_ERR_NOMEM, "out of memory preparing graph %s", g->name);
        goto fail;
    }
    for (int32_t v = 0; v < g->nvalues; v++) {
        const jn_ir_value *iv = &g->values[v];
        if (iv->kind == JN_IR_V_INPUT) x->place[v] = P_INPUT;
        else if (iv->kind != JN_IR_V_NODE) x->place[v] = P_LOOP;
        else if (jn_op_info(g->nodes[iv->def].op)->flags & JN_F_VIEW) x->place[v] = P_VIEW;
        else if (!eager && g->arena != -1 && iv->mem != -1) x->place[v] = P_ARENA;
        else x->place[v] = P_OWN;
        x->vbase[v] = v;
    }
    for (int32_t n = 0; n < g->nnodes; n++) { /* a view's output shares input 0's buffer (values in node order) */
        const jn_ir_node *nd = &g->nodes[n];
        if ((jn_op_info(nd->op)->flags & JN_F_VIEW) && nd->nin > 0) x->vbase[nd->out[0]] = x->vbase[nd->in[0]];
    }
    /* attributes evaluated per run */
    npatch = 0;
    for (int32_t n = 0; n < g->nnodes; n++) {
        const jn_ir_node *nd = &g->nodes[n];
        const jn_opinfo *info = jn_op_info(nd->op);
        xnode *xn = &x->xn[n];
        *xn = (xnode){.in = nd->in, .attrs = &nd->attrs, .p0 = npatch, .op = (uint16_t)nd->op, .nin = nd->nin,
                      .nout = nd->nout, .nattrs = (uint8_t)info->nattrs, .view = (info->flags & JN_F_VIEW) != 0,
                      .inplace = (info->flags & JN_F_INPLACE) != 0};
        memcpy(xn->out, nd->out, sizeof xn->out);
        for (int a = 0; a < info->nattrs; a++) {
            if (nd->attr_input[a] >= 0) {
                x->patches[npatch++] = (patch){(int8_t)a, -1, g->values[nd->attr_input[a]].def, 0};
            } else if (info->attr_kind[a] == JN_A_INT && jn_ir_is_expr(nd->attrs.a[a].i)) {
                x->patches[npatch++] = (patch){(int8_t)a, -1, -1, nd->attrs.a[a].i};
            } else if (info->attr_kind[a] == JN_A_INTS) {
                for (int j = 0; j < nd->attrs.a[a].l.n && j < JN_MAX_DIMS; j++)
                    if (jn_ir_is_expr(nd->attrs.a[a].l.v[j]))
                        x->patches[npatch++] = (patch){(int8_t)a, (int8_t)j, -1, nd->attrs.a[a].l.v[j]};
            }
        }
        xn->np = (uint8_t)(npatch - xn->p0);
    }
    for (int32_t k = 0; k < g->nkernels && !eager && s == JN_OK; k++) s = prepare_kernel(x, lib, k);
    if (s == JN_OK && dev) s = device_check(x); /* device hook */
    if (s) goto fail;
    builder b = {x, 0};
    if (build_steps(&b, -1, 0, g->nnodes) < 0) {
        s = jn_error(JN_ERR_NOMEM, "out of memory preparing graph %s", g->name);
        goto fail;
    }
    if ((s = liveness(x))) goto fail;
    if (!eager) direct_state(x), carry_in_place(x);
    for (int32_t l = 0; l < g->nloops; l++)
        for (int32_t c = 0; c < g->loops[l].ncarry; c++)
            x->view_next[g->loops[l].carry[c].next] |= (uint8_t)stable_view(x, l, g->loops[l].carry[c].next);
    /* a constant arena under symbolic sizes: packed at the recorded maxima,
     * so a run past a range its sizes depend on would overlap values: such
     * a run takes the wide plan (jn_ex_run; one without refuses it) */
    for (int32_t v = 0; !eager && !jn_ir_is_expr(g->arena) && g->arena >= 0 && v < g->nvalues; v++)
        for (int d = 0; g->values[v].mem != -1 && d < g->values[v].ndim; d++)
            if (jn_ir_is_expr(g->values[v].shape[d])) {
                if (!x->plan_sym && !(x->plan_sym = calloc((size_t)g->nsyms + 1, 1))) {
                    s = jn_error(JN_ERR_NOMEM, "out of memory preparing graph %s", g->name);
                    goto fail;
                }
                x->at_max = 1;
                mark_syms(g, g->values[v].shape[d], x->plan_sym, 0);
            }
    *out = x;
    return JN_OK;
fail:
    jn_ex_free(x);
    return s;
}

void jn_ex_free(jn_ex_exec *x) {
    if (!x) return;
    for (int32_t k = 0; x->k && k < x->g->nkernels; k++) {
        kinfo *K = &x->k[k];
        jn_cg_kernel_io_free(&K->io);
        free(K->tmp);
        free(K->red_out);
        free(K->data);
        free(K->strides);
        free(K->st);
        free(K->ops);
        free(K->scalars);
    }
    for (int32_t i = 0; x->scal && i < x->g->ninputs; i++)
        if (x->scal[i]) jn_tensor_decref(x->scal[i]);
    for (int32_t i = 0; x->dscal && i < x->g->ninputs; i++)
        if (x->dscal[i]) jn_tensor_decref(x->dscal[i]);
    free(x->dscal);
    if (x->arena_t) jn_tensor_decref(x->arena_t);
    free(x->arena);
    free(x->plan_sym);
    if (x->shared_user) {
        pthread_mutex_lock(&cpu_arena.lock);
        if (--cpu_arena.users == 0) {
            jn_rt_set_block_miss_hook(NULL);
            if (cpu_arena.t) jn_tensor_decref(cpu_arena.t);
            free(cpu_arena.mem);
            cpu_arena.t = NULL;
            cpu_arena.mem = NULL;
            cpu_arena.cap = 0;
        }
        pthread_mutex_unlock(&cpu_arena.lock);
    }
    free(x->k);
    free(x->steps);
    free(x->rel);
    free(x->loopstep);
    free(x->nodestep);
    free(x->place);
    free(x->keep);
    free(x->direct);
    free(x->into);
    free(x->dst);
    free(x->xn);
    free(x->patches);
    free(x->sv);
    free(x->ev);
    free(x->evbad);
    free(x->evdep);
    free(x->ownbytes);
    free(x->sval);
    free(x->sv_ok);
    free(x->sval_ok);
    free(x->val);
    free(x->ldst);
    free(x->over_param);
    free(x->view_next);
    free(x->vbase);
    free(x->hpool);
    free(x->scal);
    free(x);
}

/* ----------------------------------------------------------------- run */
static const char *in_kind(jn_ir_input_kind k) {
    static const char *n[] = {"state", "host", "carry", "scalar", "const", "rng"};
    return (unsigned)k < 6 ? n[k] : "?";
}

static jn_status check_input(jn_ex_exec *x, int32_t i, jn_tensor *t, const double *scalars) {
    const jn_ir_graph *g = x->g;
    const jn_ir_input *in = &g->inputs[i];
    const jn_ir_value *iv = &g->values[in->value];
    if (in->kind == JN_IR_IN_RNG) return JN_OK;
    int number = in->kind == JN_IR_IN_SCALAR || in->kind == JN_IR_IN_CONST;
    if (!t && !(number && scalars))
        return jn_error(JN_ERR_VALUE, "graph %s input %d (%%%d, %s) is missing: pass a tensor for every input", g->name,
                        i, in->value, in_kind(in->kind));
    if (number) {
        if (!scalars && ((t->ndim && jn_numel(t) != 1) || !t->storage || !t->storage->data))
            return jn_error(JN_ERR_SHAPE, "graph %s input %d (%%%d, %s) must be a number (a 0-d tensor), got %lld "
                            "elements", g->name, i, in->value, in_kind(in->kind), (long long)jn_numel(t));
        double v;
        if (scalars) { /* as a 0-d tensor of its dtype would hold it (what the value's kernels read) */
            _Alignas(16) char b[16];
            jn_store_f64(b, iv->dtype, scalars[i]);
            v = jn_load_f64(b, iv->dtype);
        } else {
            v = jn_load_f64(jn_data(t), t->dtype);
        }
        /* the number's tensor is this executor's alone: rewritten only when
         * the value changed (most scalar inputs are the same every run) */
        if (!x->scal[i]) {
            if (!(x->scal[i] = jn_scalar_f64(v, iv->dtype, 1))) return JN_ERR_NOMEM;
        } else if (memcmp(&v, &x->sval[i], sizeof v)) {
            jn_store_f64(jn_data(x->scal[i]), iv->dtype, v);
        }
        x->sval[i] = v;
        if (__builtin_expect(x->dev != NULL, 0)) { /* device hook: kernels read the number from device memory */
            jn_meta m0 = {iv->dtype, 0, {0}};
            if (!x->dscal[i] && !(x->dscal[i] = x->dev->tensor_new(x->dev->ctx, &m0))) return JN_ERR_NOMEM;
            x->dscal[i]->wrapped_number = 1; /* promotes like the host number */
            return x->dev->copy(x->dev->ctx, x->dscal[i], x->scal[i]);
        }
        return JN_OK;
    }
    if (t->storage->device != (x->dev ? x->dev->storage_device : JN_CPU)) /* device hook */
        return jn_error(JN_ERR_VALUE, "graph %s input %d (%%%d, %s) is on %s, the graph runs on %s: pass a tensor "
                        "there (.to(...))", g->name, i, in->value, in_kind(in->kind),
                        jn_device_name(t->storage->device), x->dev ? x->dev->name : "the cpu");
    if (t->dtype != iv->dtype)
        return jn_error(JN_ERR_TYPE, "graph %s input %d (%%%d, %s) is %s, the graph was recorded with %s: pass a "
                        "tensor of that dtype", g->name, i, in->value, in_kind(in->kind), jn_dtype_names[t->dtype],
                        jn_dtype_names[iv->dtype]);
    int64_t shape[JN_MAX_DIMS];
    jn_status s = eval_shape(x, in->value, shape);
    if (s) return s;
    char a[128], b[160];
    if (t->ndim != iv->ndim)
        return jn_error(JN_ERR_SHAPE, "graph %s input %d (%%%d, %s) has shape %s, expected %s", g->name, i, in->value,
                        in_kind(in->kind), jn_shape_str(t->ndim, t->shape, a, sizeof a),
                        jn_shape_str(iv->ndim, shape, b, sizeof b));
    for (int d = 0; d < iv->ndim; d++)
        if (t->shape[d] != shape[d]) {
            char dn[64];
            jn_ir_dim_str(g, iv->shape[d], dn, sizeof dn);
            return jn_error(JN_ERR_SHAPE, "graph %s input %d (%%%d, %s) has shape %s, expected %s: dim %d (%s) "
                            "should be %lld; bind the symbols to this input's shape or pass a matching tensor",
                            g->name, i, in->value, in_kind(in->kind), jn_shape_str(t->ndim, t->shape, a, sizeof a),
                            jn_shape_str(iv->ndim, shape, b, sizeof b), d, dn, (long long)shape[d]);
        }
    return JN_OK;
}

/* The arena's memory.  A large arena is touched all over in every run (an
 * LSTM step's saved activations, megabytes), so with 4 KiB pages the TLB
 * misses: char_lstm's replayed kernels (GEMMs, LSTM cells) took about 7%
 * more CPU time than the same kernels on eager's reused buffers, and the
 * gap vanished with the arena on 2 MiB pages.  So an arena of at least one
 * huge page is 2 MiB aligned and its whole huge pages are marked for
 * transparent huge pages (a hint: with THP off it is 4 KiB pages as
 * before); the tail stays on small pages, so resident memory grows by
 * nothing the plan does not touch. */
#define HUGE_PAGE ((size_t)2 << 20)
static void *arena_alloc(size_t cap) {
    if (cap < HUGE_PAGE) return aligned_alloc(64, cap);
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, cap)) return NULL;
    (void)madvise(p, cap / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE); /* advice only: ignore failure */
    return p;
}


/* A header over cap bytes at mem, or NULL. */
static jn_tensor *arena_header(char *mem, size_t cap) {
    int64_t n = (int64_t)cap;
    return mem ? jn_tensor_from_memory(mem, cap, JN_U8, 1, &n, NULL, 0, NULL, NULL) : NULL;
}

/* Room for `bytes` in the arena at mem, cap, t (grown when short), sized for the symbols' recorded maxima
 * at once: a run of growing sequence lengths would otherwise move (and
 * fault in) the arena again at each new longest one. */
static int arena_grow(const jn_ex_exec *x, int64_t bytes, char **mem, size_t *cap, jn_tensor **t) {
    if (*t && (size_t)bytes <= *cap) return 1;
    if (*t) jn_tensor_decref(*t);
    *t = NULL;
    free(*mem);
    int64_t most = 0;
    /* past the maxima (the wide plan), a quarter more: a run whose sizes keep
     * growing (longer sequences) then moves the arena now and then, not each time */
    if (jn_cg_eval_at_max(x->g, x->g->arena, &most) != JN_OK || most < bytes)
        most = bytes <= INT64_MAX - bytes / 4 ? bytes + bytes / 4 : bytes;
    size_t c = ((size_t)most + 63) / 64 * 64 + 64;
    /* eager work that ran first (replay's fallback ran a batch eagerly)
     * left its freed buffers in the runtime's block cache and malloc's
     * heap: give them back before a large arena comes on top of them
     * (fashion_cnn's replay peaked 30 MB above eager).  Rare: arenas only
     * grow, or come back after an idle release (arena_idle_release). */
    if (c >= HUGE_PAGE) give_back_heap();
    *mem = arena_alloc(c);
    *cap = *mem ? c : 0;
    if (!(*t = arena_header(*mem, c))) {
        free(*mem);
        *mem = NULL;
        *cap = 0;
    }
    return *t != NULL;
}

static void arena_release(jn_ex_exec *x) {
    if (x->holds_shared) pthread_mutex_unlock(&cpu_arena.lock);
    x->holds_shared = 0;
}

static jn_status ensure_arena(jn_ex_exec *x) {
    int64_t bytes = 0;
    x->st.arena_bytes = 0;
    if ((x->flags & JN_EX_EAGER) || x->g->arena == -1) return JN_OK;
    jn_status s = eval(x, x->wide ? x->g->warena : x->g->arena, &bytes);
    if (s) return s;
    if (bytes < 0) return jn_error(JN_ERR_VALUE, "graph %s: arena of %lld bytes", x->g->name, (long long)bytes);
    if (__builtin_expect(x->dev != NULL, 0)) { /* device hook */
        if ((size_t)bytes > x->arena_cap || !x->arena_t) {
            if (x->arena_t) jn_tensor_decref(x->arena_t);
            x->arena_t = NULL;
            x->arena_cap = 0;
            if ((s = x->dev->arena(x->dev->ctx, x->gi, (size_t)bytes, &x->arena_t))) return s;
            x->arena_cap = (size_t)bytes;
        }
    } else if (pthread_mutex_trylock(&cpu_arena.lock) == 0) {
        x->holds_shared = 1;
        if (!x->shared_user) {
            x->shared_user = 1;
            if (cpu_arena.users++ == 0) jn_rt_set_block_miss_hook(arena_idle_release);
        }
        if (!arena_grow(x, bytes, &cpu_arena.mem, &cpu_arena.cap, &cpu_arena.t)) goto nomem;
        cpu_arena.runs++;
        if (x->arena_t != cpu_arena.t) {
            if (x->arena_t) jn_tensor_decref(x->arena_t);
            jn_tensor_incref(x->arena_t = cpu_arena.t);
        }
    } else {
        jn_tensor *t = x->arena_t && x->arena_t->storage->data == x->arena ? x->arena_t : NULL;
        if (x->arena_t && !t) jn_tensor_decref(x->arena_t), x->arena_t = NULL; /* the shared one's */
        if (!arena_grow(x, bytes, &x->arena, &x->arena_cap, &x->arena_t)) goto nomem;
    }
    x->st.arena_bytes = bytes;
    return JN_OK;
nomem:
    return jn_error(JN_ERR_NOMEM, "out of memory allocating the %lld-byte arena of graph %s", (long long)bytes,
                    x->g->name);
}

static void clear_vals(jn_ex_exec *x) {
    for (int32_t v = 0; v < x->g->nvalues; v++) {
        if (x->place[v] == P_INPUT) x->val[v] = NULL;
        else if (x->val[v]) set_val(x, v, NULL);
        x->ownbytes[v] = 0;
    }
    x->live = 0;
    while (x->nhpool) jn_tensor_decref(x->hpool[--x->nhpool]);
}

jn_status jn_ex_run(jn_ex_exec *x, jn_tensor *const *inputs, const int64_t *syms, jn_tensor **outs) {
    return jn_ex_run_scalars(x, inputs, NULL, syms, outs);
}

jn_status jn_ex_run_scalars(jn_ex_exec *x, jn_tensor *const *inputs, const double *scalars, const int64_t *syms,
                            jn_tensor **outs) {
    const jn_ir_graph *g = x->g;
    int grad = jn_grad_enabled();
    jn_set_grad_enabled(0);
    memset(&x->st, 0, sizeof x->st);
    x->live = x->peak = 0;
    x->wide = 0;
    jn_status s = JN_OK;
    for (int32_t s2 = 0; s2 < g->nsyms; s2++) {
        const jn_ir_sym *y = &g->syms[s2];
        x->sv[s2] = y->kind == JN_IR_SYM_IVAR ? y->lo : syms ? syms[s2] : y->hi;
        if (!x->at_max || !x->plan_sym[s2] || (x->sv[s2] <= y->hi && x->sv[s2] >= y->lo)) continue;
        /* past a recorded range the packed plan was sized for */
        if (g->warena != -1) x->wide = 1;
        else if (s == JN_OK)
            s = jn_error(JN_ERR_VALUE, "graph %s: symbol %s is %lld, outside %lld..%lld, the range recorded, which its "
                         "memory plan is sized for, and the graph has no plan for other values; run `janus optimize` "
                         "again", g->name, y->name ? y->name : "?", (long long)x->sv[s2], (long long)y->lo,
                         (long long)y->hi);
    }
    if (s) {
        jn_set_grad_enabled(grad);
        return s;
    }
    ev_all(x);
    for (int32_t i = 0; i < g->ninputs && s == JN_OK; i++) {
        jn_tensor *t = inputs[i];
        if ((s = check_input(x, i, t, scalars))) break;
        x->val[g->inputs[i].value] = x->scal[i] && (g->inputs[i].kind == JN_IR_IN_SCALAR ||
                                                     g->inputs[i].kind == JN_IR_IN_CONST) ? (x->dscal ? x->dscal[i] : x->scal[i]) : t;
    }
    if (s == JN_OK) bind_direct(x, inputs);
    x->skip_check = s == JN_OK && x->checked && !(x->flags & JN_EX_EAGER) &&
                    !memcmp(x->sv, x->sv_ok, sizeof *x->sv * (size_t)g->nsyms) &&
                    !memcmp(x->sval, x->sval_ok, sizeof *x->sval * (size_t)g->ninputs);
    if (s == JN_OK) s = ensure_arena(x);
    x->peak = x->st.arena_bytes;
    if (s == JN_OK && x->dev && x->dev->begin) s = x->dev->begin(x->dev->ctx, x->gi); /* device hook */
    if (s == JN_OK) s = exec_steps(x, 0, x->nsteps);
    if (x->dev && x->dev->end) s = x->dev->end(x->dev->ctx, x->gi, s); /* device hook */
    /* state written back, keep outputs handed out */
    for (int32_t i = 0; i < g->noutputs && s == JN_OK; i++) {
        const jn_ir_output *o = &g->outputs[i];
        jn_tensor *t = x->val[o->value];
        if (!t) {
            s = jn_error(JN_ERR_RUNTIME, "graph %s output %%%d was not computed", g->name, o->value);
            break;
        }
        if (o->kind != JN_IR_OUT_STATE) continue;
        jn_tensor *dst = inputs[o->state];
        if (t == dst) { /* updated in place (direct_state) */
            dst->storage->version++;
            continue;
        }
        if (same_memory(t, dst)) continue;
        x->st.state_written = 1;
        if ((s = jn_copy_into(dst, t)) == JN_OK) dst->storage->version++;
    }
    int32_t nk = 0;
    for (int32_t i = 0; i < g->noutputs && s == JN_OK; i++) {
        const jn_ir_output *o = &g->outputs[i];
        if (o->kind != JN_IR_OUT_KEEP) continue;
        jn_tensor *t = x->val[o->value];
        if ((x->arena_t && t->storage == x->arena_t->storage) || (x->dev && x->dev->copy_outputs)) {
            /* never hand out arena memory (nor, on a device, memory a CUDA Graph writes again) */
            if (!(t = jn_contiguous(t))) s = jn_error(JN_ERR_NOMEM, "out of memory copying output %%%d", o->value);
        } else {
            jn_tensor_incref(t);
        }
        if (s == JN_OK) outs[nk++] = t;
    }
    if (s != JN_OK)
        for (int32_t i = 0; i < nk; i++) {
            jn_tensor_decref(outs[i]);
            outs[i] = NULL;
        }
    if (s == JN_OK && !x->skip_check) { /* every node's type was checked at these values */
        memcpy(x->sv_ok, x->sv, sizeof *x->sv * (size_t)g->nsyms);
        memcpy(x->sval_ok, x->sval, sizeof *x->sval * (size_t)g->ninputs);
        x->checked = 1;
    }
    x->skip_check = 0;
    x->st.peak_bytes = x->peak;
    clear_vals(x);
    arena_release(x);
    jn_set_grad_enabled(grad);
    return s;
}

jn_status jn_ex_bind_syms(const jn_ir_graph *g, jn_tensor *const *inputs, int64_t *syms) {
    for (int32_t s2 = 0; s2 < g->nsyms; s2++) syms[s2] = -1;
    for (int32_t i = 0; i < g->ninputs; i++) {
        const jn_ir_input *in = &g->inputs[i];
        const jn_ir_value *iv = &g->values[in->value];
        jn_tensor *t = inputs[i];
        if (!t || in->kind == JN_IR_IN_SCALAR || in->kind == JN_IR_IN_CONST || in->kind == JN_IR_IN_RNG ||
            t->ndim != iv->ndim)
            continue;
        for (int d = 0; d < iv->ndim; d++) {
            if (!jn_ir_is_expr(iv->shape[d])) continue;
            const jn_ir_expr *e = &g->exprs[jn_ir_expr_index(iv->shape[d])];
            if (e->kind != JN_IR_E_SYM || g->syms[e->sym].kind != JN_IR_SYM_DIM) continue;
            if (syms[e->sym] != -1 && syms[e->sym] != t->shape[d])
                return jn_error(JN_ERR_SHAPE, "graph %s: symbol %s is %lld by input %d (%%%d) dim %d but %lld by an "
                                "earlier input: the inputs disagree", g->name, g->syms[e->sym].name,
                                (long long)t->shape[d], i, in->value, d, (long long)syms[e->sym]);
            syms[e->sym] = t->shape[d];
        }
    }
    return JN_OK;
}

/* A float attribute of node nd: its constant, or the recorded value of the
 * scalar input fed to it. */
static double attr_value(const jn_ir_graph *g, const jn_ir_node *nd, int k) {
    int32_t v = nd->attr_input[k];
    return v >= 0 && g->values[v].kind == JN_IR_V_INPUT ? g->inputs[g->values[v].def].scalar : nd->attrs.a[k].f;
}

/* A scalar input that is the end of an arange whose length is a symbol
 * (arange(T + 1) with T a Python number): the value these symbols imply
 * (start and step as recorded).  Its recorded value would contradict
 * them, and the graph would not run. */
static double scalar_for_syms(const jn_ir_graph *g, const jn_ir_input *in, const int64_t *syms) {
    int ks = jn_op_attr_index(JN_OP_arange, "start"), ke = jn_op_attr_index(JN_OP_arange, "end"),
        kp = jn_op_attr_index(JN_OP_arange, "step");
    for (int32_t n = 0; n < g->nnodes; n++) {
        const jn_ir_node *nd = &g->nodes[n];
        int64_t len;
        if (nd->op != JN_OP_arange || nd->attr_input[ke] != in->value || nd->attr_input[ks] == in->value ||
            nd->attr_input[kp] == in->value || g->values[nd->out[0]].ndim != 1 ||
            jn_ir_dim_eval(g, g->values[nd->out[0]].shape[0], syms, &len) != JN_OK)
            continue;
        return attr_value(g, nd, ks) + (double)len * attr_value(g, nd, kp);
    }
    return in->scalar;
}

jn_status jn_ex_make_inputs(const jn_ir_graph *g, const int64_t *syms, uint64_t seed, jn_tensor **inputs) {
    jn_status s = JN_OK;
    for (int32_t i = 0; i < g->ninputs; i++) inputs[i] = NULL;
    for (int32_t i = 0; i < g->ninputs && s == JN_OK; i++) {
        const jn_ir_input *in = &g->inputs[i];
        const jn_ir_value *x = &g->values[in->value];
        int64_t shape[JN_MAX_DIMS];
        jn_tensor *t = NULL;
        if (in->kind == JN_IR_IN_CONST || in->kind == JN_IR_IN_SCALAR) {
            double v = in->kind == JN_IR_IN_SCALAR ? scalar_for_syms(g, in, syms) : in->scalar;
            t = jn_dtype_is_float(x->dtype) ? jn_scalar_f64(v, x->dtype, 1) : jn_scalar_i64((int64_t)v, x->dtype, 1);
        } else if (in->kind == JN_IR_IN_RNG) {
            t = jn_scalar_i64(0, JN_I64, 0);
        } else {
            for (int d = 0; d < x->ndim && s == JN_OK; d++) {
                s = jn_ir_dim_eval(g, x->shape[d], syms, &shape[d]);
                if (s == JN_OK && shape[d] < 0)
                    s = jn_error(JN_ERR_SHAPE, "graph %s input %d: dim %d is %lld with these symbol values", g->name,
                                 i, d, (long long)shape[d]);
            }
            if (s == JN_OK && (t = jn_tensor_zeros(x->dtype, x->ndim, shape)) && jn_dtype_is_float(x->dtype)) {
                int64_t n = jn_numel(t);
                for (int64_t k = 0; k < n; k++) {
                    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                    jn_store_f64(jn_data(t) + k * (int64_t)jn_elsize(t), x->dtype,
                                 (double)(seed >> 11) / 9007199254740992.0 * 4.0 - 2.0);
                }
            }
        }
        if (s == JN_OK && !t) s = jn_error(JN_ERR_NOMEM, "out of memory making input %d of graph %s", i, g->name);
        inputs[i] = t;
    }
    if (s != JN_OK)
        for (int32_t i = 0; i < g->ninputs; i++)
            if (inputs[i]) jn_tensor_decref(inputs[i]), inputs[i] = NULL;
    return s;
}

void jn_ex_set_kcall_hook(jn_ex_exec *x, jn_ex_kcall_hook fn, void *ctx) {
    x->hook = fn;
    x->hook_ctx = ctx;
}

void jn_ex_last_stats(const jn_ex_exec *x, jn_ex_stats *st) { *st = x->st; }

int jn_ex_has_collective(const jn_ex_exec *x) {
    for (int32_t n = 0; n < x->g->nnodes; n++)
        if (jn_op_info(x->g->nodes[n].op)->flags & JN_F_COLL) return 1;
    return 0;
}

int jn_ex_release_idle(int cache) {
    pthread_mutex_lock(&cpu_arena.lock);
    int had = cpu_arena.mem != NULL;
    if (had) free_shared_arena();
    pthread_mutex_unlock(&cpu_arena.lock);
    if (cache) give_back_heap();
    return had;
}

size_t jn_ex_shared_arena_bytes(void) {
    pthread_mutex_lock(&cpu_arena.lock);
    size_t n = cpu_arena.cap;
    pthread_mutex_unlock(&cpu_arena.lock);
    return n;
}
