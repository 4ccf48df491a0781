/* autograd.c -- the reverse-mode tape and the backward engine.
 *
 * Recording: jn_ag_record() runs after every dispatched op while grad mode is
 * on and some input requires grad.  It creates a node holding the op, its
 * attributes, input metadata, edges to the inputs' producers (or to the leaf
 * tensors themselves, for accumulation) and the tensors the op's derivative
 * needs, each saved as a storage alias with the version it had, so that an
 * in-place change before backward is reported instead of silently giving a
 * wrong gradient.  Nodes are refcounted: tensors own their grad_fn, nodes own
 * their successors; nothing points back, so there are no cycles.
 *
 * Backward: count dependencies over the reachable graph, then run nodes in
 * decreasing creation order once all their output gradients are in.  Every
 * derivative is a table entry (derivatives.c) that issues ordinary ops
 * through jn_dispatch with grad mode off.  Without retain_graph the saved
 * tensors are freed as each node finishes, and a second backward through the
 * same nodes is an error, as in PyTorch.
 *
 * Group nodes: a replaced region (replay/region.c) records its ops into one
 * node (jn_ag_group_begin/end) whose member records -- the very per-op
 * records a plain node holds, laid out in one block, with no allocation or
 * refcount each -- run in backward in the order eager runs their nodes.
 * Eager pops nodes strictly by decreasing seq (the highest unprocessed
 * reachable node always has all its consumers done), and a region's ops are
 * dispatched contiguously, so its nodes are a contiguous seq range run
 * without interruption: the group takes the range's last seq and runs its
 * reached members from last to first through the same run_one() as a plain
 * node.  Which members are reached comes from the discovery (an edge into a
 * group output reaches its member, a reached member reaches the members and
 * outer nodes its inputs come from), so the same formulas run, add into the
 * same buffers in the same order, and hand gradients out of the group at the
 * same moments: the results are eager's bit for bit.
 */
#include "jn_autocast.h"
#include "jn_autograd.h"
#include "jn_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jn_node {
    int64_t refcnt;
    uint64_t seq;            /* creation order: later nodes run first */
    jn_op op;
    jn_attrs attrs;
    int nin, nout;
    jn_meta *in_meta;        /* [nin] */
    jn_tensor **saved_in;    /* [nin] aliases, or NULL entries */
    uint64_t *saved_in_ver;
    jn_tensor *saved_out[JN_MAX_OUTS];
    uint64_t saved_out_ver[JN_MAX_OUTS];
    jn_meta out_meta[JN_MAX_OUTS];
    struct jn_edge {
        jn_node *node;       /* producer of this input, or NULL */
        int output_nr;
        jn_tensor *leaf;     /* leaf that accumulates, or NULL */
    } *next;                 /* [nin]; both NULL: input needs no gradient */
    int released;            /* saved tensors freed after a backward */
    int device;              /* where the op ran: its gradients' zeros are made there */
    /* engine scratch, valid during one backward */
    uint64_t visit;
    uint64_t needed;         /* autograd.grad: == the pass's gen when it leads to a requested input */
    int deps;
    jn_tensor *buf[JN_MAX_OUTS];
    jn_tensor *const *acc;   /* during the formula call: see jn_node_acc */
    struct jn_group *grp;    /* a group node: its members (nin = nout = 0 on the node itself) */
    int member;              /* a group's member record: 1 + its index.  Only its own group's
                              * members point at it (a tensor's grad_fn is the group) */
    jn_ag_hook *hooks;       /* gradient hooks on this record's outputs (register_hook) */
    struct jn_custom *custom; /* a custom node (autograd.Function): its derivative, else NULL */
    int blk;                 /* 1 + its block's jn_rt_small_alloc class (0: malloc's) */
};

struct jn_ag_hook {
    int64_t refcnt;          /* the list's reference, the registrant's, a running engine's */
    int removed;
    int kind;                /* JN_HOOK_GRAD / JN_HOOK_POST_ACC */
    int output_nr;           /* on a node: the output whose gradient it sees */
    jn_ag_hook_fn fn;
    void *ctx;
    void (*free_ctx)(void *);
    jn_ag_hook *next;
};

/* A custom node's derivative (jn_ag_custom_record): a callback in place of
 * the table's formula; op is unused. */
typedef struct jn_custom {
    jn_ag_custom_fn fn;
    void *ctx;
    void (*free_ctx)(void *);
    int materialize;         /* gradients that did not arrive are handed over as zeros */
    char name[80];           /* grad_fn's name ("ScaleBackward") */
} jn_custom;

/* The members of a group node, in the node's own allocation block. */
typedef struct jn_group {
    int n, cap;              /* member records made, room */
    int ne, cape;            /* input slots (edges, metadata, saved inputs) used, room */
    int nflat, capo;         /* group outputs (every member output, in order), room */
    jn_node *mem;            /* [cap] */
    jn_meta *in_meta;        /* [cape] */
    struct jn_edge *next;    /* [cape] */
    jn_tensor **saved_in;    /* [cape] */
    uint64_t *saved_in_ver;  /* [cape] */
    int *flat_mem;           /* [capo] group output -> member */
    int *base;               /* [cap] member -> its first group output */
} jn_group;

/* The record that produced output nr of n: n itself, or the group member
 * behind the group's output nr (*q: its output index there). */
static inline jn_node *owner_of(jn_node *n, int nr, int *q) {
    if (!n->grp) {
        *q = nr;
        return n;
    }
    int k = n->grp->flat_mem[nr];
    *q = nr - n->grp->base[k];
    return &n->grp->mem[k];
}

static _Thread_local int grad_off;  /* 0 = enabled (default) */
static uint64_t node_seq, visit_gen;
static uint64_t nodes_made;                  /* nodes allocated (plain and group): tests */
static _Thread_local jn_ag_group *cur_group; /* recording into a group (jn_ag_group_begin) */

int jn_grad_enabled(void) { return !grad_off; }
void jn_set_grad_enabled(int on) { grad_off = !on; }

/* --------------------------------------------------------------- metadata */
static void ag_free(jn_tensor *t);

static jn_ag_meta *meta_of(const jn_tensor *t) { return (jn_ag_meta *)t->autograd; }

static jn_ag_meta *meta_get(jn_tensor *t) {
    if (!t->autograd) {
        t->autograd = calloc(1, sizeof(jn_ag_meta));
        jn_rt_autograd_free = ag_free;
    }
    return t->autograd;
}

int jn_requires_grad(const jn_tensor *t) { return t->autograd && meta_of(t)->requires_grad; }
int jn_is_leaf(const jn_tensor *t) { return !t->autograd || !meta_of(t)->grad_fn; }
jn_tensor *jn_grad(const jn_tensor *t) { return t->autograd ? meta_of(t)->grad : NULL; }

int jn_ag_history_released(const jn_tensor *t) {
    int q;
    return t->autograd && meta_of(t)->grad_fn && owner_of(meta_of(t)->grad_fn, meta_of(t)->output_nr, &q)->released;
}

const char *jn_grad_fn_name(const jn_tensor *t) {
    if (!t->autograd || !meta_of(t)->grad_fn) return NULL;
    int q; /* a group's output is named after the member that made it, as eagerly */
    const jn_node *n = owner_of(meta_of(t)->grad_fn, meta_of(t)->output_nr, &q);
    return n->custom ? n->custom->name : jn_op_info(n->op)->name;
}

int jn_ag_group_size(const jn_tensor *t) {
    jn_node *g = t->autograd ? meta_of(t)->grad_fn : NULL;
    return g && g->grp ? g->grp->n : 0;
}

uint64_t jn_ag_nodes_made(void) { return __atomic_load_n(&nodes_made, __ATOMIC_RELAXED); }

jn_status jn_set_requires_grad(jn_tensor *t, int on) {
    if (!jn_is_leaf(t)) {
        if (on) return JN_OK;
        return jn_error(JN_ERR_RUNTIME,
                        "you can only change requires_grad flags of leaf variables. If you want to "
                        "use a computed variable in a subgraph that doesn't require differentiation "
                        "use var_no_grad = var.detach().");
    }
    if (on && !jn_dtype_is_float(t->dtype))
        return jn_error(JN_ERR_RUNTIME, "only Tensors of floating point dtype can require gradients (got %s)",
                        jn_dtype_names[t->dtype]);
    jn_ag_meta *m = meta_get(t);
    if (!m) return jn_error(JN_ERR_NOMEM, "out of memory");
    m->requires_grad = on != 0;
    return JN_OK;
}

jn_status jn_set_grad(jn_tensor *t, jn_tensor *g) {
    if (g && (!jn_same_shape(g->ndim, g->shape, t->ndim, t->shape) || g->dtype != t->dtype)) {
        char a[128], b[128];
        jn_status s = jn_error(JN_ERR_RUNTIME, "assigned grad has data of shape %s and dtype %s, but the "
                               "tensor has shape %s and dtype %s",
                               jn_shape_str(g->ndim, g->shape, a, sizeof a), jn_dtype_names[g->dtype],
                               jn_shape_str(t->ndim, t->shape, b, sizeof b), jn_dtype_names[t->dtype]);
        jn_tensor_decref(g);
        return s;
    }
    jn_ag_meta *m = meta_get(t);
    if (!m) {
        jn_tensor_decref(g);
        return jn_error(JN_ERR_NOMEM, "out of memory");
    }
    jn_tensor_decref(m->grad);
    m->grad = g;
    return JN_OK;
}

/* A second header over the same value (same storage, layout and tensor id):
 * what detach() returns and what a node saves.  Keeping the id means a
 * recorded trace sees the saved tensor as the value the forward produced. */
static jn_tensor *same_value(jn_tensor *t) {
    jn_tensor *a = jn_tensor_alias(t);
    if (a) {
        a->id = t->id;
        if (jn_rt_record_alias) jn_rt_record_alias(t, a);
        a->is_view = t->is_view;
        /* a saved Python number stays one: the formulas promote it as PyTorch's
         * saved Scalars (the least), and pow's reads it on the host */
        a->wrapped_number = t->wrapped_number;
    }
    return a;
}

jn_tensor *jn_detach(jn_tensor *t) { return same_value(t); }

/* ------------------------------------------------------------------ hooks */
void jn_ag_hook_decref(jn_ag_hook *h) {
    if (!h || __atomic_sub_fetch(&h->refcnt, 1, __ATOMIC_ACQ_REL) != 0) return;
    if (h->free_ctx) h->free_ctx(h->ctx);
    free(h);
}

void jn_ag_hook_remove(jn_ag_hook *h) { __atomic_store_n(&h->removed, 1, __ATOMIC_RELEASE); }

static _Thread_local int hooks_muted; /* jn_ag_backward_engine(.., no_hooks) */
static int hook_live(const jn_ag_hook *h) { return !hooks_muted && !__atomic_load_n(&h->removed, __ATOMIC_ACQUIRE); }

static void hooks_free(jn_ag_hook *h) {
    while (h) {
        jn_ag_hook *n = h->next;
        jn_ag_hook_decref(h);
        h = n;
    }
}

/* Append h to *list, first dropping the removed hooks (a running engine
 * iterates over a snapshot holding its own references, so this is safe). */
static void hooks_append(jn_ag_hook **list, jn_ag_hook *h) {
    while (*list) {
        jn_ag_hook *x = *list;
        if (!hook_live(x)) {
            *list = x->next;
            jn_ag_hook_decref(x);
        } else {
            list = &x->next;
        }
    }
    *list = h;
}

/* In this pass (gen), leaf's gradients go through its hooks (count_hooked_leaf). */
static int hooked_now(const jn_tensor *leaf, uint64_t gen) {
    return leaf && leaf->autograd && meta_of(leaf)->hvisit == gen;
}

static int leaf_hooked(const jn_tensor *t) {
    for (const jn_ag_hook *h = t->autograd ? meta_of(t)->hooks : NULL; h; h = h->next)
        if (hook_live(h)) return 1;
    return 0;
}

jn_status jn_ag_add_hook(jn_tensor *t, int kind, jn_ag_hook_fn fn, void *ctx, void (*free_ctx)(void *),
                         jn_ag_hook **out) {
    *out = NULL;
    if (!jn_requires_grad(t))
        return jn_error(JN_ERR_RUNTIME, "cannot register a hook on a tensor that doesn't require gradient");
    if (kind == JN_HOOK_POST_ACC && !jn_is_leaf(t))
        return jn_error(JN_ERR_RUNTIME, "post accumulate grad hooks cannot be registered on non-leaf tensors");
    jn_ag_hook *h = calloc(1, sizeof *h);
    if (!h) return jn_error(JN_ERR_NOMEM, "out of memory registering a hook");
    h->refcnt = 2; /* the list's and the caller's */
    h->kind = kind;
    h->fn = fn;
    h->ctx = ctx;
    h->free_ctx = free_ctx;
    jn_ag_meta *m = meta_of(t);
    if (m->grad_fn) {
        int q;
        jn_node *o = owner_of(m->grad_fn, m->output_nr, &q);
        h->output_nr = q;
        hooks_append(&o->hooks, h);
    } else {
        hooks_append(&m->hooks, h);
    }
    *out = h;
    return JN_OK;
}

/* ------------------------------------------------------------------ nodes */
/* Saved tensors (and a custom node's ctx) go after a backward without
 * retain_graph, all of them when the node goes; a wrapped Python number is
 * kept until then (torch saves it as a scalar: a node that saved nothing
 * else runs again in a second backward, as there). */
static void release_saved(jn_node *n, int all) {
    if (n->custom && n->custom->ctx) {
        void *ctx = n->custom->ctx;
        n->custom->ctx = NULL;
        n->custom->free_ctx(ctx);
    }
    for (int i = 0; n->saved_in && i < n->nin; i++) {
        if (!all && n->saved_in[i] && n->saved_in[i]->wrapped_number) continue;
        jn_tensor_decref(n->saved_in[i]);
        n->saved_in[i] = NULL;
    }
    for (int k = 0; k < n->nout; k++) {
        jn_tensor_decref(n->saved_out[k]);
        n->saved_out[k] = NULL;
    }
}

/* Iterative, so that dropping a long chain (an RNN over 10k steps) can't
 * overflow the C stack. */
static void node_decref(jn_node *n) {
    jn_node *stack_small[64], **stack = stack_small;
    int sp = 0, cap = 64;
    if (n) stack[sp++] = n;
    while (sp) {
        jn_node *x = stack[--sp];
        if (__atomic_sub_fetch(&x->refcnt, 1, __ATOMIC_ACQ_REL) != 0) continue;
        /* a plain node is its own one record; a group's are its members */
        int nrec = x->grp ? x->grp->n : 1;
        for (int r = 0; r < nrec; r++) {
            jn_node *y = x->grp ? &x->grp->mem[r] : x;
            release_saved(y, 1);
            hooks_free(y->hooks);
            for (int k = 0; k < y->nout; k++) jn_tensor_decref(y->buf[k]);
            for (int i = 0; y->next && i < y->nin; i++) {
                jn_tensor_decref(y->next[i].leaf);
                if (!y->next[i].node || y->next[i].node->member) continue; /* none, or in this block */
                if (sp == cap) {
                    jn_node **ns = malloc(sizeof *ns * (size_t)cap * 2);
                    if (!ns) { /* leak rather than crash on OOM */
                        continue;
                    }
                    memcpy(ns, stack, sizeof *ns * (size_t)sp);
                    if (stack != stack_small) free(stack);
                    stack = ns;
                    cap *= 2;
                }
                stack[sp++] = y->next[i].node;
            }
        }
        /* a plain node's arrays, a group's members and arrays: in this block */
        jn_rt_small_free(x, x->blk - 1);
    }
    if (stack != stack_small) free(stack);
}

static void ag_free(jn_tensor *t) {
    jn_ag_meta *m = t->autograd;
    jn_tensor_decref(m->grad);
    jn_tensor_decref(m->hbuf);
    hooks_free(m->hooks);
    node_decref(m->grad_fn);
    free(m);
    t->autograd = NULL;
}

jn_op jn_node_op(const jn_node *n) { return n->op; }
jn_tensor *jn_node_acc(const jn_node *n, int i) { return n->acc && i < n->nin ? n->acc[i] : NULL; }
int jn_node_nin(const jn_node *n) { return n->nin; }
const jn_attrs *jn_node_attrs(const jn_node *n) { return &n->attrs; }
const jn_meta *jn_node_input_meta(const jn_node *n, int i) { return &n->in_meta[i]; }

static jn_tensor *check_saved(jn_node *n, jn_tensor *t, uint64_t ver, const char *what, int i,
                              jn_status *st) {
    if (!t && n->released) { /* a node that needs nothing released runs again */
        *st = jn_error(JN_ERR_RUNTIME,
                       "Trying to backward through the graph a second time (or directly access saved "
                       "tensors after they have already been freed). Saved intermediate values of the "
                       "graph are freed when you call .backward() or autograd.grad(). Specify "
                       "retain_graph=True if you need to backward through the graph a second time.");
        return NULL;
    }
    if (!t) {
        *st = jn_error(JN_ERR_RUNTIME, "internal: derivative of %s reads %s %d, which was not saved",
                       jn_op_info(n->op)->name, what, i);
        return NULL;
    }
    if (t->storage->version != ver) {
        char sh[128];
        *st = jn_error(JN_ERR_RUNTIME,
                       "one of the variables needed for gradient computation has been modified by an "
                       "inplace operation: [%s %s], which is %s %d of %s, is at version %llu; expected "
                       "version %llu instead. Hint: the in-place op came after %s; use an out-of-place "
                       "version (e.g. x = x + y instead of x += y) or clone() the tensor first.",
                       jn_dtype_names[t->dtype], jn_shape_str(t->ndim, t->shape, sh, sizeof sh), what, i,
                       jn_op_info(n->op)->name, (unsigned long long)t->storage->version,
                       (unsigned long long)ver, jn_op_info(n->op)->name);
        return NULL;
    }
    return t;
}

jn_tensor *jn_node_input(jn_node *n, int i, jn_status *st) {
    return check_saved(n, n->saved_in ? n->saved_in[i] : NULL, n->saved_in_ver ? n->saved_in_ver[i] : 0,
                       "input", i, st);
}

jn_tensor *jn_node_output(jn_node *n, int i, jn_status *st) {
    return check_saved(n, n->saved_out[i], n->saved_out_ver[i], "output", i, st);
}

/* --------------------------------------------------------------- recording */
jn_status jn_ag_check_inplace(jn_op op, jn_tensor *t) {
    if (grad_off || !t->autograd) return JN_OK;
    jn_ag_meta *m = meta_of(t);
    if (m->requires_grad && !m->grad_fn)
        return jn_error(JN_ERR_RUNTIME,
                        "a leaf Variable that requires grad is being used in an in-place operation (%s). "
                        "Wrap the update in `with janus.no_grad():` (as optimizers do) or work on a clone.",
                        jn_op_info(op)->name);
    if (m->is_view_of_grad)
        return jn_error(JN_ERR_UNSUPPORTED,
                        "in-place %s on a view of a tensor that requires grad is not supported; use an "
                        "out-of-place op, or clone() the view first",
                        jn_op_info(op)->name);
    return JN_OK;
}

static void set_history(jn_tensor *t, jn_node *n, int k, int is_view) {
    jn_ag_meta *m = meta_get(t);
    if (!m) return;
    __atomic_fetch_add(&n->refcnt, 1, __ATOMIC_RELAXED);
    node_decref(m->grad_fn);
    m->grad_fn = n;
    m->output_nr = k;
    m->requires_grad = 1;
    m->is_view_of_grad = is_view;
}

/* Fill record n (op, nin, nout, device and its arrays set) from the op:
 * input metadata, edges, saved tensors.  group: the group node n belongs
 * to, whose outputs its inputs may be (an edge inside the block), or NULL. */
static jn_status fill_record(jn_node *n, jn_node *group, int nin, jn_tensor *const *in, int nout,
                             jn_tensor *const *out, jn_tensor *dst, int save_out) {
    for (int i = 0; i < nin; i++) {
        jn_tensor *t = in[i];
        n->in_meta[i].dtype = t->dtype;
        n->in_meta[i].ndim = t->ndim;
        memcpy(n->in_meta[i].shape, t->shape, sizeof t->shape);
        if (jn_requires_grad(t)) {
            jn_ag_meta *m = meta_of(t);
            if (m->grad_fn && m->grad_fn == group) { /* made by an earlier member: no reference */
                n->next[i].node = owner_of(group, m->output_nr, &n->next[i].output_nr);
            } else if (m->grad_fn) {
                n->next[i].node = m->grad_fn;
                n->next[i].output_nr = m->output_nr;
                __atomic_fetch_add(&m->grad_fn->refcnt, 1, __ATOMIC_RELAXED);
            } else {
                n->next[i].leaf = t;
                jn_tensor_incref(t);
            }
        }
        if (n->saved_in) {
            if (!(n->saved_in[i] = same_value(t))) return JN_ERR_NOMEM;
            /* the written tensor's saved value is its pre-op value, which is
             * gone: record the old version so reading it is an error */
            uint64_t v = t->storage->version;
            int written = dst && t->storage == dst->storage;
            n->saved_in_ver[i] = written ? v - 1 : v;
        }
    }
    for (int k = 0; k < nout; k++) {
        n->out_meta[k].dtype = out[k]->dtype;
        n->out_meta[k].ndim = out[k]->ndim;
        memcpy(n->out_meta[k].shape, out[k]->shape, sizeof out[k]->shape);
        if (save_out) {
            if (!(n->saved_out[k] = same_value(out[k]))) return JN_ERR_NOMEM;
            n->saved_out_ver[k] = out[k]->storage->version;
        }
    }
    return JN_OK;
}

/* ---------------------------------------------------------------- groups */
static size_t align16(size_t x) { return (x + 15) & ~(size_t)15; }

/* The group node and its room for c's bounds, in one zeroed block. */
static jn_node *group_new(const jn_ag_group *c) {
    size_t M = (size_t)c->members, E = (size_t)c->edges, O = (size_t)c->outs;
    size_t o_grp = align16(sizeof(jn_node)), o_mem = o_grp + align16(sizeof(jn_group));
    size_t o_meta = o_mem + align16(M * sizeof(jn_node)), o_next = o_meta + align16(E * sizeof(jn_meta));
    size_t o_sin = o_next + align16(E * sizeof(struct jn_edge)), o_ver = o_sin + align16(E * sizeof(jn_tensor *));
    size_t o_flat = o_ver + align16(E * sizeof(uint64_t)), o_base = o_flat + align16(O * sizeof(int));
    int cls; /* a region call's node: one a call, a few kB */
    size_t size = o_base + M * sizeof(int);
    char *b = jn_rt_small_alloc(size, &cls);
    if (!b) return NULL;
    memset(b, 0, size);
    jn_node *h = (jn_node *)b;
    h->blk = cls + 1;
    jn_group *G = (jn_group *)(b + o_grp);
    h->refcnt = 1; /* the recording's, dropped by jn_ag_group_end */
    h->grp = G;
    G->cap = (int)M, G->cape = (int)E, G->capo = (int)O;
    G->mem = (jn_node *)(b + o_mem);
    G->in_meta = (jn_meta *)(b + o_meta);
    G->next = (struct jn_edge *)(b + o_next);
    G->saved_in = (jn_tensor **)(b + o_sin);
    G->saved_in_ver = (uint64_t *)(b + o_ver);
    G->flat_mem = (int *)(b + o_flat);
    G->base = (int *)(b + o_base);
    __atomic_fetch_add(&nodes_made, 1, __ATOMIC_RELAXED);
    return h;
}

void jn_ag_group_begin(jn_ag_group *g, int members, int edges, int outs) {
    g->members = members, g->edges = edges, g->outs = outs;
    g->node = NULL;
    cur_group = g;
}

void jn_ag_group_end(jn_ag_group *g) {
    if (cur_group == g) cur_group = NULL;
    node_decref(g->node); /* the outputs hold it now (or nobody) */
    g->node = NULL;
}

/* jn_ag_record into the open group: a member record in the block. */
static jn_status group_record(jn_ag_group *c, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a,
                              int nout, jn_tensor *const *out, jn_tensor *dst) {
    const jn_opinfo *info = jn_op_info(op);
    const jn_grad_def *def = jn_grad_def_of(op);
    if (!c->node && !(c->node = group_new(c)))
        return jn_error(JN_ERR_NOMEM, "out of memory recording a region's group node for autograd");
    jn_node *h = c->node;
    jn_group *G = h->grp;
    if (G->n == G->cap || G->ne + nin > G->cape || G->nflat + nout > G->capo)
        return jn_error(JN_ERR_RUNTIME, "internal: a region's group node has no room for %s", info->name);
    int k = G->n++;
    jn_node *n = &G->mem[k];
    n->member = k + 1;
    n->seq = h->seq = __atomic_add_fetch(&node_seq, 1, __ATOMIC_RELAXED);
    n->op = op;
    memcpy(n->attrs.a, a->a, sizeof(jn_attr) * (size_t)info->nattrs); /* its own (as jn_ag_record) */
    n->nin = nin;
    n->nout = nout;
    n->device = nout && out[0]->storage ? out[0]->storage->device : JN_CPU;
    n->in_meta = G->in_meta + G->ne;
    n->next = G->next + G->ne;
    if (def->save & JN_SAVE_IN) {
        n->saved_in = G->saved_in + G->ne;
        n->saved_in_ver = G->saved_in_ver + G->ne;
    }
    G->ne += nin;
    G->base[k] = G->nflat;
    for (int q = 0; q < nout; q++) G->flat_mem[G->nflat + q] = k;
    G->nflat += nout;
    if (fill_record(n, h, nin, in, nout, out, dst, def->save & JN_SAVE_OUT))
        return jn_error(JN_ERR_NOMEM, "out of memory recording %s for autograd", info->name);
    int is_view = (info->flags & JN_F_VIEW) != 0;
    for (int q = 0; q < nout; q++)
        if (jn_dtype_is_float(out[q]->dtype)) set_history(out[q], h, G->base[k] + q, is_view);
    return JN_OK;
}

/* A node and its per-input arrays in one zeroed block of size bytes (one
 * allocation a node: a step of small ops records hundreds, each above the C
 * library's per-thread cache's sizes): counted, numbered, its metadata and
 * edge arrays at o_meta and o_next, the device its outputs are on. */
static jn_node *node_new(size_t size, size_t o_meta, size_t o_next, int nin, int nout, jn_tensor *const *out) {
    int cls;
    char *blk = jn_rt_small_alloc(size, &cls);
    if (!blk) return NULL;
    memset(blk, 0, size);
    jn_node *n = (jn_node *)blk;
    n->blk = cls + 1;
    __atomic_fetch_add(&nodes_made, 1, __ATOMIC_RELAXED);
    n->refcnt = 1;
    n->seq = __atomic_add_fetch(&node_seq, 1, __ATOMIC_RELAXED);
    n->nin = nin;
    n->nout = nout;
    n->device = nout && out[0]->storage ? out[0]->storage->device : JN_CPU;
    n->in_meta = (jn_meta *)(blk + o_meta);
    n->next = (struct jn_edge *)(blk + o_next);
    return n;
}

jn_status jn_ag_record(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                       jn_tensor *const *out, jn_tensor *dst) {
    if (grad_off) return JN_OK;
    const jn_opinfo *info = jn_op_info(op);
    int any = 0;
    for (int i = 0; i < nin; i++) any |= jn_requires_grad(in[i]);
    if (!any || (info->flags & JN_F_NOGRAD)) {
        /* A no-grad result written over a tensor with history cuts it. */
        if (dst && dst->autograd && meta_of(dst)->grad_fn) {
            node_decref(meta_of(dst)->grad_fn);
            meta_of(dst)->grad_fn = NULL;
            meta_of(dst)->requires_grad = 0;
        }
        return JN_OK;
    }
    if (dst && dst->is_view && !jn_requires_grad(dst))
        /* the base tensor would need the history too (PyTorch's CopySlices) */
        return jn_error(JN_ERR_UNSUPPORTED,
                        "%s: writing a value that requires grad into a view (e.g. x[1:3] = y) is not "
                        "supported by janus autograd; build the tensor with janus.cat/stack or "
                        "out-of-place ops instead",
                        info->name);
    if (cur_group) return group_record(cur_group, op, nin, in, a, nout, out, dst);
    const jn_grad_def *def = jn_grad_def_of(op);
    int save_in = def->save & JN_SAVE_IN, save_out = def->save & JN_SAVE_OUT;
    /* the node and its per-input arrays in one zeroed block (one allocation
     * an op: a step of small ops records hundreds) */
    size_t N = (size_t)nin, o_meta = align16(sizeof(jn_node)), o_next = o_meta + align16(N * sizeof(jn_meta));
    size_t o_sin = o_next + align16(N * sizeof(struct jn_edge)), o_ver = o_sin + align16(N * sizeof(jn_tensor *));
    size_t size = save_in ? o_ver + N * sizeof(uint64_t) : o_sin;
    jn_node *n = node_new(size, o_meta, o_next, nin, nout, out);
    if (!n) return jn_error(JN_ERR_NOMEM, "out of memory recording %s for autograd", info->name);
    char *blk = (char *)n;
    n->op = op;
    /* the op's own attributes (formulas and the walk's fingerprint read no
     * others; the rest stay zero): not all 576 bytes of jn_attrs a node */
    memcpy(n->attrs.a, a->a, sizeof(jn_attr) * (size_t)info->nattrs);
    if (save_in) {
        n->saved_in = (jn_tensor **)(blk + o_sin);
        n->saved_in_ver = (uint64_t *)(blk + o_ver);
    }
    if (fill_record(n, NULL, nin, in, nout, out, dst, save_out)) {
        node_decref(n);
        return jn_error(JN_ERR_NOMEM, "out of memory recording %s for autograd", info->name);
    }
    int is_view = (info->flags & JN_F_VIEW) != 0;
    for (int k = 0; k < nout; k++)
        if (jn_dtype_is_float(out[k]->dtype)) set_history(out[k], n, k, is_view);
    node_decref(n); /* the outputs hold it now (or nobody, for int outputs) */
    return JN_OK;
}

jn_status jn_ag_custom_record(const char *name, int nin, jn_tensor *const *in, int nout, jn_tensor *const *out,
                              const int *diff, int materialize, jn_ag_custom_fn fn, void *ctx,
                              void (*free_ctx)(void *)) {
    jn_status s = JN_OK;
    if (nin > JN_MAX_INS || nout > JN_MAX_OUTS)
        s = jn_error(JN_ERR_VALUE, "%s: a custom autograd Function takes at most %d tensor inputs and returns "
                     "at most %d tensors (got %d and %d)", name, JN_MAX_INS, JN_MAX_OUTS, nin, nout);
    else if (cur_group)
        s = jn_error(JN_ERR_UNSUPPORTED, "%s: a custom autograd Function inside a replaced region", name);
    for (int k = 0; !s && k < nout; k++)
        if (out[k]->autograd && meta_of(out[k])->grad_fn)
            s = jn_error(JN_ERR_VALUE, "%s: output %d already has a grad_fn", name, k);
    if (s) {
        free_ctx(ctx);
        return s;
    }
    size_t N = (size_t)nin, o_meta = align16(sizeof(jn_node)), o_next = o_meta + align16(N * sizeof(jn_meta));
    size_t o_cus = o_next + align16(N * sizeof(struct jn_edge)), size = o_cus + sizeof(jn_custom);
    jn_node *n = node_new(size, o_meta, o_next, nin, nout, out);
    if (!n) {
        free_ctx(ctx);
        return jn_error(JN_ERR_NOMEM, "out of memory recording %s for autograd", name);
    }
    n->custom = (jn_custom *)((char *)n + o_cus);
    n->custom->fn = fn;
    n->custom->materialize = materialize;
    snprintf(n->custom->name, sizeof n->custom->name, "%s", name);
    n->custom->ctx = ctx; /* freed with the node from here on */
    n->custom->free_ctx = free_ctx;
    if (fill_record(n, NULL, nin, in, nout, out, NULL, 0)) {
        node_decref(n);
        return jn_error(JN_ERR_NOMEM, "out of memory recording %s for autograd", name);
    }
    for (int k = 0; k < nout; k++)
        if ((!diff || diff[k]) && jn_dtype_is_float(out[k]->dtype)) set_history(out[k], n, k, 0);
    node_decref(n);
    return JN_OK;
}

/* ------------------------------------------------------------------ engine */
typedef struct {
    jn_node **v;
    int n, cap;
} nodevec;

static int vec_push(nodevec *v, jn_node *x) {
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 64;
        jn_node **nv = realloc(v->v, sizeof *nv * (size_t)cap);
        if (!nv) return -1;
        v->v = nv;
        v->cap = cap;
    }
    v->v[v->n++] = x;
    return 0;
}

/* ready set as a binary max-heap on seq */
static int heap_push(nodevec *h, jn_node *x) {
    if (vec_push(h, x)) return -1;
    int i = h->n - 1;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (h->v[p]->seq >= h->v[i]->seq) break;
        jn_node *t = h->v[p];
        h->v[p] = h->v[i];
        h->v[i] = t;
        i = p;
    }
    return 0;
}

static jn_node *heap_pop(nodevec *h) {
    jn_node *top = h->v[0];
    h->v[0] = h->v[--h->n];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->v[l]->seq > h->v[m]->seq) m = l;
        if (r < h->n && h->v[r]->seq > h->v[m]->seq) m = r;
        if (m == i) break;
        jn_node *t = h->v[m];
        h->v[m] = h->v[i];
        h->v[i] = t;
        i = m;
    }
    return top;
}

/* Tensors the engine makes (zero gradients, the implicit 1 of a scalar
 * loss, dtype/layout copies) come from table ops, so a recorded backward
 * pass reads only tensors that recorded ops produced. */
static jn_status full_of(const jn_meta *m, double v, jn_tensor **out) {
    jn_attrs a;
    memset(&a, 0, sizeof a);
    a.a[0].l.n = m->ndim;
    memcpy(a.a[0].l.v, m->shape, sizeof(int64_t) * (size_t)m->ndim);
    a.a[1].f = v;
    a.a[2].i = m->dtype;
    return jn_dispatch(JN_OP_full, 0, NULL, &a, out);
}
static jn_status zeros_of(const jn_meta *m, jn_tensor **out) { return full_of(m, 0.0, out); }

/* A private contiguous copy of g in dtype d (cast, or clone when d matches). */
static jn_status copy_as(jn_tensor *g, jn_dtype d, jn_tensor **out) {
    jn_attrs a;
    memset(&a, 0, sizeof a);
    a.a[0].i = d;
    return jn_dispatch(g->dtype == d ? JN_OP_clone : JN_OP_cast, 1, &g, &a, out);
}

/* acc += g (either may be NULL), as dispatched ops. Steals g. */
static jn_status accumulate(jn_tensor **acc, jn_tensor *g) {
    if (!*acc) {
        *acc = g;
        return JN_OK;
    }
    jn_attrs a;
    memset(&a, 0, sizeof a);
    a.a[0].f = 1.0;
    jn_tensor *in[2] = {*acc, g}, *r;
    jn_status s = jn_dispatch(JN_OP_add, 2, in, &a, &r);
    jn_tensor_decref(g);
    if (s) return s;
    jn_tensor_decref(*acc);
    *acc = r;
    return JN_OK;
}

/* Leaf .grad += g: the first gradient is stored (made contiguous and
 * private), later ones are added in place, through the dispatcher. */
static jn_status accumulate_leaf(jn_tensor *leaf, jn_tensor *g) {
    jn_ag_meta *m = meta_get(leaf);
    if (!m) {
        jn_tensor_decref(g);
        return jn_error(JN_ERR_NOMEM, "out of memory");
    }
    if (!m->grad) {
        /* nobody else holds g (replay's capture list does not count: the
         * same ops must run whether capture holds it or not) */
        if (jn_rt_tensor_refs(g) == 1 && !g->is_view && jn_is_contiguous(g) && jn_rt_storage_refs(g->storage) == 1 &&
            g->dtype == leaf->dtype) {
            m->grad = g;
            return JN_OK;
        }
        jn_tensor *c = NULL;
        jn_status s = copy_as(g, leaf->dtype, &c);
        jn_tensor_decref(g);
        if (s) return s;
        m->grad = c;
        return JN_OK;
    }
    jn_attrs a;
    memset(&a, 0, sizeof a);
    a.a[0].f = 1.0;
    jn_tensor *in[2] = {m->grad, g};
    jn_status s = jn_dispatch_into(JN_OP_add, 2, in, &a, m->grad);
    jn_tensor_decref(g);
    return s;
}

typedef struct {
    int ninputs;
    jn_tensor *const *inputs;
    jn_tensor **out;  /* captured gradients (autograd.grad); NULL for backward() */
} capture;

/* The gradient already accumulated for input i of x, when the formula may
 * add into it in place (jn_node_acc): a leaf's .grad (which backward adds
 * into in place anyway) or a buffer only the engine holds, contiguous and
 * of the input's dtype and shape.  Never while autograd.grad captures. */
static jn_tensor *acc_target(const jn_node *x, int i, const capture *cap, uint64_t gen) {
    const struct jn_edge *e = &x->next[i];
    const jn_meta *im = &x->in_meta[i];
    jn_tensor *t = NULL;
    if (cap) return NULL;
    if (e->leaf && hooked_now(e->leaf, gen)) { /* its hooks must see this pass's gradient alone */
        t = meta_of(e->leaf)->hbuf;
        if (t && (jn_rt_tensor_refs(t) != 1 || jn_rt_storage_refs(t->storage) != 1)) return NULL;
    } else if (e->leaf) t = e->leaf->autograd ? meta_of(e->leaf)->grad : NULL;
    else if (e->node) {
        int q;
        t = owner_of(e->node, e->output_nr, &q)->buf[q];
        /* replay's capture list does not count (as in accumulate_leaf) */
        if (t && (jn_rt_tensor_refs(t) != 1 || jn_rt_storage_refs(t->storage) != 1)) return NULL;
    }
    if (!t || t->dtype != im->dtype || !jn_same_shape(t->ndim, t->shape, im->ndim, im->shape) ||
        !jn_is_contiguous(t))
        return NULL;
    return t;
}

static int capture_slot_leaf(const capture *c, const jn_tensor *leaf) {
    for (int i = 0; c && i < c->ninputs; i++)
        if (c->inputs[i] == leaf) return i;
    return -1;
}

/* Run the live hooks of `kind` in list (those of output nr when on a node,
 * nr < 0 for a leaf's) on t's gradient *g, in registration order, over a
 * snapshot: a hook may register or remove hooks. */
static jn_status run_hooks(jn_ag_hook *list, int kind, int nr, jn_tensor *t, jn_tensor **g) {
    jn_ag_hook *small[16], **v = small;
    int n = 0, cap = 16;
    jn_status s = JN_OK;
    for (jn_ag_hook *h = list; h; h = h->next) {
        if (h->kind != kind || (nr >= 0 && h->output_nr != nr) || !hook_live(h)) continue;
        if (n == cap) {
            jn_ag_hook **nv = malloc(sizeof *nv * (size_t)cap * 2);
            if (!nv) {
                s = jn_error(JN_ERR_NOMEM, "out of memory running gradient hooks");
                break;
            }
            memcpy(nv, v, sizeof *nv * (size_t)n);
            if (v != small) free(v);
            v = nv;
            cap *= 2;
        }
        __atomic_fetch_add(&h->refcnt, 1, __ATOMIC_RELAXED);
        v[n++] = h;
    }
    for (int i = 0; i < n && !s; i++) {
        if (!hook_live(v[i])) continue; /* removed by an earlier hook */
        jn_tensor *r = NULL;
        s = v[i]->fn(v[i]->ctx, t, g ? *g : NULL, g ? &r : NULL);
        if (s || !r) {
            jn_tensor_decref(r);
            continue;
        }
        if (r->dtype != (*g)->dtype || !jn_same_shape(r->ndim, r->shape, (*g)->ndim, (*g)->shape)) {
            char a[128], b[128];
            s = jn_error(JN_ERR_RUNTIME, "a gradient hook returned a gradient of shape %s and dtype %s for a "
                         "gradient of shape %s and dtype %s; a hook may only replace it by one alike",
                         jn_shape_str(r->ndim, r->shape, a, sizeof a), jn_dtype_names[r->dtype],
                         jn_shape_str((*g)->ndim, (*g)->shape, b, sizeof b), jn_dtype_names[(*g)->dtype]);
            jn_tensor_decref(r);
            continue;
        }
        jn_tensor_decref(*g);
        *g = r;
    }
    for (int i = 0; i < n; i++) jn_ag_hook_decref(v[i]);
    if (v != small) free(v);
    return s;
}

/* A leaf with hooks has received every gradient of this pass (meta->hbuf,
 * summed as PyTorch's AccumulateGrad input buffer sums them): its gradient
 * hooks run on the total, then it is captured (autograd.grad) or
 * accumulated into .grad and its post-accumulate hooks run. */
static jn_status leaf_done(jn_tensor *leaf, capture *cap) {
    jn_ag_meta *m = meta_of(leaf);
    jn_tensor *g = m->hbuf;
    m->hbuf = NULL;
    if (!g) return JN_OK; /* reached, but no gradient came (or autograd.grad does not ask for it) */
    jn_status s = run_hooks(m->hooks, JN_HOOK_GRAD, -1, leaf, &g);
    if (s) {
        jn_tensor_decref(g);
        return s;
    }
    if (cap) {
        int slot = capture_slot_leaf(cap, leaf);
        if (slot >= 0) return accumulate(&cap->out[slot], g);
        jn_tensor_decref(g);
        return JN_OK;
    }
    if ((s = accumulate_leaf(leaf, g))) return s;
    return run_hooks(m->hooks, JN_HOOK_POST_ACC, -1, leaf, NULL);
}


/* Run one record's formula and hand its input gradients on: a plain node,
 * or a member of a group node (its edges to other members only fill their
 * buffers; the group as a whole is what the outer engine counts). */
static jn_status run_one(jn_node *x, nodevec *heap, capture *cap, int retain, uint64_t gen) {
    jn_status s = JN_OK;
    const char *name = x->custom ? x->custom->name : jn_op_info(x->op)->name;
    if (x->released && x->custom) /* its ctx (saved tensors, the Function's state) is gone */
        return jn_error(JN_ERR_RUNTIME,
                        "Trying to backward through the graph a second time (or directly access saved "
                        "tensors after they have already been freed). Saved intermediate values of the "
                        "graph are freed when you call .backward() or autograd.grad(). Specify "
                        "retain_graph=True if you need to backward through the graph a second time.");
    /* a non-leaf's hooks see its complete gradient before anything reads it */
    for (int k = 0; x->hooks && k < x->nout; k++)
        if (x->buf[k] && (s = run_hooks(x->hooks, JN_HOOK_GRAD, k, NULL, &x->buf[k]))) return s;
    /* non-leaf inputs requested by autograd.grad are read off here */
    for (int c = 0; cap && c < cap->ninputs; c++) {
        jn_ag_meta *m = meta_of(cap->inputs[c]);
        int q;
        if (m && m->grad_fn && owner_of(m->grad_fn, m->output_nr, &q) == x && x->buf[q]) {
            jn_tensor_incref(x->buf[q]);
            if ((s = accumulate(&cap->out[c], x->buf[q]))) return s;
        }
    }
    static const jn_grad_def custom_def = {NULL, 0, 0};
    const jn_grad_def *def = x->custom ? &custom_def : jn_grad_def_of(x->op);
    int needs[JN_MAX_INS];
    int any = 0;
    for (int i = 0; i < x->nin; i++) {
        needs[i] = x->next[i].node || x->next[i].leaf;
        if (needs[i] && cap && x->next[i].leaf && capture_slot_leaf(cap, x->next[i].leaf) < 0)
            needs[i] = 0; /* autograd.grad leaves other leaves alone */
        any |= needs[i];
    }
    if (any && !def->fn && !x->custom) return jn_error(JN_ERR_UNSUPPORTED, "the derivative for '%s' is not implemented", name);
    jn_tensor *gout[JN_MAX_OUTS] = {0}, *gin[JN_MAX_INS] = {0};
    /* zeros and constants the formula makes belong on the op's device */
    int fdev = jn_rt_set_factory_device(x->device);
    for (int k = 0; k < x->nout; k++) {
        gout[k] = x->buf[k];
        x->buf[k] = NULL;
        /* zeros only where the formula reads them (not for a cell's
         * workspace, filled per time step for nothing) */
        int read = x->custom ? x->custom->materialize : k == 0 || (def->reads_out >> k & 1);
        if (!gout[k] && read && any && (s = zeros_of(&x->out_meta[k], &gout[k]))) break;
    }
    jn_tensor *acc[JN_MAX_INS];
    for (int i = 0; i < x->nin; i++) acc[i] = needs[i] && !x->custom ? acc_target(x, i, cap, gen) : NULL;
    if (!s && any && x->custom) {
        s = x->custom->fn(x->custom->ctx, x->nout, gout, x->nin, needs, gin);
    } else if (!s && any) {
        x->acc = acc;
        s = def->fn(x, gout, needs, gin);
        x->acc = NULL;
    }
    jn_rt_set_factory_device(fdev);
    for (int k = 0; k < x->nout; k++) jn_tensor_decref(gout[k]);
    if (s) {
        for (int i = 0; i < x->nin; i++) jn_tensor_decref(gin[i]);
        return s;
    }
    for (int i = 0; i < x->nin; i++) {
        jn_tensor *g = gin[i];
        gin[i] = NULL;
        struct jn_edge *e = &x->next[i];
        /* a member's edge to another member is no outer dependency */
        if (e->node && !e->node->member && --e->node->deps == 0 && heap_push(heap, e->node)) {
            s = JN_ERR_NOMEM;
        } else if (g && g == acc[i]) { /* the formula added into it in place */
        } else if (!g) {
        } else if (!needs[i]) {
        } else {
            const jn_meta *im = &x->in_meta[i];
            if (!jn_same_shape(g->ndim, g->shape, im->ndim, im->shape)) {
                char a[128], b[128];
                s = jn_error(JN_ERR_RUNTIME, "internal: the derivative of %s produced a gradient of shape %s for input %d of shape %s",
                             name, jn_shape_str(g->ndim, g->shape, a, sizeof a), i,
                             jn_shape_str(im->ndim, im->shape, b, sizeof b));
            } else if (g->dtype != im->dtype && jn_dtype_is_float(im->dtype)) {
                jn_tensor *c = NULL;
                s = copy_as(g, im->dtype, &c);
                jn_tensor_decref(g);
                g = c;
            }
            if (!s) {
                if (e->leaf && hooked_now(e->leaf, gen)) {
                    s = accumulate(&meta_of(e->leaf)->hbuf, g);
                } else if (e->leaf) {
                    int slot = capture_slot_leaf(cap, e->leaf);
                    if (cap) s = slot >= 0 ? accumulate(&cap->out[slot], g) : (jn_tensor_decref(g), JN_OK);
                    else s = accumulate_leaf(e->leaf, g);
                } else if (e->node) {
                    int q;
                    jn_node *o = owner_of(e->node, e->output_nr, &q);
                    s = accumulate(&o->buf[q], g);
                } else {
                    jn_tensor_decref(g);
                }
                g = NULL; /* given away */
            }
        }
        jn_tensor_decref(g);
        /* the leaf's last gradient of this pass is in: its hooks run now */
        if (!s && hooked_now(e->leaf, gen) && --meta_of(e->leaf)->hdeps == 0) s = leaf_done(e->leaf, cap);
        if (s) {
            for (int j = i + 1; j < x->nin; j++) jn_tensor_decref(gin[j]);
            return s;
        }
    }
    if (!retain) {
        release_saved(x, 0);
        x->released = 1;
    }
    return JN_OK;
}

typedef struct {
    jn_tensor **v;
    int n, cap;
} leafvec;

/* Discovery: one more gradient will reach leaf t; when t has hooks, its
 * gradients are summed in t's hbuf and handed on when the last one is in. */
static int count_hooked_leaf(jn_tensor *t, uint64_t gen, leafvec *v) {
    jn_ag_meta *m = t->autograd ? meta_of(t) : NULL;
    if (!m) return 0;
    if (m->hvisit != gen) {
        if (!leaf_hooked(t)) return 0;
        if (v->n == v->cap) {
            int cap = v->cap ? v->cap * 2 : 16;
            jn_tensor **nv = realloc(v->v, sizeof *nv * (size_t)cap);
            if (!nv) return -1;
            v->v = nv;
            v->cap = cap;
        }
        v->v[v->n++] = t;
        m->hvisit = gen;
        m->hdeps = 0;
        m->hbuf = NULL;
    }
    m->hdeps++;
    return 0;
}

/* Discovery: a group's output nr is reached; its member, when new, is put
 * on the stack to reach what its inputs come from. */
static int reach_member(jn_node *g, int nr, uint64_t gen, nodevec *stack) {
    int q;
    jn_node *m = owner_of(g, nr, &q);
    if (m->visit == gen) return 0;
    m->visit = gen;
    return vec_push(stack, m);
}

static int by_seq(const void *a, const void *b) {
    uint64_t x = (*(jn_node *const *)a)->seq, y = (*(jn_node *const *)b)->seq;
    return x < y ? -1 : x > y;
}

/* autograd.grad runs only the nodes that lead to a requested input (as
 * torch's engine): one whose records own a requested non-leaf's gradient,
 * have an edge to a requested leaf, or to such a node.  Edges run from a
 * node to earlier ones, so in creation order every node's producers are
 * decided first.  The others are neither run nor released: a later
 * backward through them works (grad of a loss w.r.t. a hidden value, then
 * backward to the weights). */
static jn_status mark_needed(nodevec *all, const capture *cap, uint64_t gen) {
    jn_node **v = malloc(sizeof *v * (size_t)(all->n ? all->n : 1));
    if (!v) return jn_error(JN_ERR_NOMEM, "out of memory walking the autograd graph");
    memcpy(v, all->v, sizeof *v * (size_t)all->n);
    qsort(v, (size_t)all->n, sizeof *v, by_seq);
    for (int j = 0; j < all->n; j++) {
        jn_node *x = v[j];
        int need = 0;
        for (int r = 0; r < (x->grp ? x->grp->n : 1) && !need; r++) {
            jn_node *y = x->grp ? &x->grp->mem[r] : x;
            for (int c = 0; c < cap->ninputs && !need; c++) {
                jn_ag_meta *m = meta_of(cap->inputs[c]);
                int q;
                need = m && m->grad_fn && owner_of(m->grad_fn, m->output_nr, &q) == y;
            }
            for (int i = 0; y->next && i < y->nin && !need; i++) {
                const struct jn_edge *e = &y->next[i];
                need = (e->leaf && capture_slot_leaf(cap, e->leaf) >= 0) ||
                       (e->node && !e->node->member && e->node->needed == gen);
            }
        }
        if (need) x->needed = gen;
    }
    free(v);
    return JN_OK;
}

static jn_status run_engine(int n, jn_tensor *const *roots, jn_tensor *const *grads, int retain,
                            capture *cap) {
    jn_status s = JN_OK;
    nodevec all = {0}, heap = {0}, stack = {0};
    leafvec hooked = {0}; /* leaves with hooks reached in this pass */
    uint64_t gen = __atomic_add_fetch(&visit_gen, 1, __ATOMIC_RELAXED);
    int was_on = !grad_off;
    grad_off = 1;
    int autocast = jn_autocast_suspend(); /* formulas compute in the forward's dtypes */

    /* root gradients */
    jn_tensor *rg[JN_MAX_INS] = {0};
    if (n > JN_MAX_INS) {
        s = jn_error(JN_ERR_VALUE, "backward: at most %d roots", JN_MAX_INS);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        jn_tensor *r = roots[i];
        if (!jn_requires_grad(r)) {
            s = jn_error(JN_ERR_RUNTIME, "element %d of tensors does not require grad and does not have a grad_fn", i);
            goto out;
        }
        if (grads && grads[i]) {
            if (!jn_same_shape(grads[i]->ndim, grads[i]->shape, r->ndim, r->shape)) {
                char a[128], b[128];
                s = jn_error(JN_ERR_RUNTIME, "Mismatch in shape: grad_output[%d] has a shape of %s and output[%d] has a shape of %s.",
                             i, jn_shape_str(grads[i]->ndim, grads[i]->shape, a, sizeof a), i,
                             jn_shape_str(r->ndim, r->shape, b, sizeof b));
                goto out;
            }
            if (grads[i]->dtype == r->dtype) {
                rg[i] = grads[i];
                jn_tensor_incref(rg[i]);
            } else if ((s = copy_as(grads[i], r->dtype, &rg[i]))) goto out;
        } else {
            if (jn_numel(r) != 1) {
                s = jn_error(JN_ERR_RUNTIME, "grad can be implicitly created only for scalar outputs (got a tensor of %lld elements); pass gradient=",
                             (long long)jn_numel(r));
                goto out;
            }
            jn_meta one = {r->dtype, r->ndim, {0}};
            memcpy(one.shape, r->shape, sizeof one.shape);
            int fdev = jn_rt_set_factory_device(r->storage ? r->storage->device : JN_CPU);
            s = full_of(&one, 1.0, &rg[i]);
            jn_rt_set_factory_device(fdev);
            if (s) goto out;
        }
    }

    /* discover the graph and count dependencies: a group counts the edges
     * from outer nodes into it, its reached members the edges out of it; a
     * leaf with hooks counts the gradients it will receive */
    for (int i = 0; i < n; i++) {
        jn_ag_meta *m = meta_of(roots[i]);
        if (!m->grad_fn && count_hooked_leaf(roots[i], gen, &hooked)) { s = JN_ERR_NOMEM; goto out; }
        jn_node *g = m->grad_fn;
        if (g && g->visit != gen) {
            g->visit = gen;
            g->deps = 0;
            if ((!g->grp && vec_push(&stack, g)) || vec_push(&all, g)) { s = JN_ERR_NOMEM; goto out; }
        }
        if (g && g->grp && reach_member(g, m->output_nr, gen, &stack)) { s = JN_ERR_NOMEM; goto out; }
    }
    while (stack.n) {
        jn_node *x = stack.v[--stack.n];
        for (int i = 0; i < x->nin; i++) {
            jn_node *y = x->next[i].node;
            if (x->next[i].leaf && count_hooked_leaf(x->next[i].leaf, gen, &hooked)) { s = JN_ERR_NOMEM; goto out; }
            if (!y) continue;
            if (y->member) { /* another member of x's group */
                if (y->visit != gen) {
                    y->visit = gen;
                    if (vec_push(&stack, y)) { s = JN_ERR_NOMEM; goto out; }
                }
                continue;
            }
            if (y->visit != gen) {
                y->visit = gen;
                y->deps = 0;
                if ((!y->grp && vec_push(&stack, y)) || vec_push(&all, y)) { s = JN_ERR_NOMEM; goto out; }
            }
            y->deps++;
            if (y->grp && reach_member(y, x->next[i].output_nr, gen, &stack)) { s = JN_ERR_NOMEM; goto out; }
        }
    }

    /* seed buffers */
    for (int i = 0; i < n; i++) {
        jn_ag_meta *m = meta_of(roots[i]);
        jn_tensor *g = rg[i];
        rg[i] = NULL;
        if (m->grad_fn) {
            int q;
            jn_node *o = owner_of(m->grad_fn, m->output_nr, &q);
            if ((s = accumulate(&o->buf[q], g))) goto out;
        } else if (hooked_now(roots[i], gen)) {
            if ((s = accumulate(&m->hbuf, g)) || (--m->hdeps == 0 && (s = leaf_done(roots[i], cap)))) goto out;
        } else {
            int slot = capture_slot_leaf(cap, roots[i]);
            if (cap && slot >= 0) s = accumulate(&cap->out[slot], g);
            else if (cap) jn_tensor_decref(g);
            else s = accumulate_leaf(roots[i], g);
            if (s) goto out;
        }
    }
    if (cap && (s = mark_needed(&all, cap, gen))) goto out;
    for (int i = 0; i < all.n; i++)
        if (all.v[i]->deps == 0 && heap_push(&heap, all.v[i])) { s = JN_ERR_NOMEM; goto out; }

    /* strictly by decreasing seq; a group runs its reached members as
     * eager runs their nodes: the last first, with nothing in between */
    while (heap.n) {
        jn_node *x = heap_pop(&heap);
        if (cap && x->needed != gen) continue; /* leads to no requested input: left as it is */
        if (!x->grp) s = run_one(x, &heap, cap, retain, gen);
        for (int k = x->grp ? x->grp->n - 1 : -1; k >= 0 && !s; k--)
            if (x->grp->mem[k].visit == gen) s = run_one(&x->grp->mem[k], &heap, cap, retain, gen);
        if (s) goto out;
    }
out:
    for (int i = 0; i < n && i < JN_MAX_INS; i++) jn_tensor_decref(rg[i]);
    for (int i = 0; i < all.n; i++) {
        jn_node *x = all.v[i];
        for (int r = 0; r < (x->grp ? x->grp->n : 1); r++) {
            jn_node *y = x->grp ? &x->grp->mem[r] : x;
            for (int k = 0; k < y->nout; k++) {
                jn_tensor_decref(y->buf[k]);
                y->buf[k] = NULL;
            }
        }
    }
    for (int i = 0; i < hooked.n; i++) { /* after an error: gradients still held back */
        jn_ag_meta *m = meta_of(hooked.v[i]);
        jn_tensor_decref(m->hbuf);
        m->hbuf = NULL;
        m->hvisit = 0;
    }
    free(hooked.v);
    free(all.v);
    free(heap.v);
    free(stack.v);
    grad_off = !was_on;
    jn_autocast_resume(autocast);
    return s;
}

jn_status jn_ag_reaches(int n, jn_tensor *const *roots, int nleaves, jn_tensor *const *leaves, int *out) {
    nodevec stack = {0};
    uint64_t gen = __atomic_add_fetch(&visit_gen, 1, __ATOMIC_RELAXED);
    for (int j = 0; j < nleaves; j++) out[j] = 0;
    for (int i = 0; i < n; i++) {
        jn_ag_meta *m = roots[i]->autograd ? meta_of(roots[i]) : NULL;
        for (int j = 0; m && !m->grad_fn && j < nleaves; j++) out[j] |= leaves[j] == roots[i];
        jn_node *g = m ? m->grad_fn : NULL;
        if (g && g->visit != gen) {
            g->visit = gen;
            if (vec_push(&stack, g)) goto nomem;
        }
    }
    while (stack.n) {
        jn_node *x = stack.v[--stack.n];
        /* a group: every member's edges (a slight over-approximation) */
        for (int r = 0; r < (x->grp ? x->grp->n : 1); r++) {
            jn_node *y = x->grp ? &x->grp->mem[r] : x;
            for (int i = 0; i < y->nin; i++) {
                jn_node *z = y->next[i].node;
                for (int j = 0; y->next[i].leaf && j < nleaves; j++) out[j] |= leaves[j] == y->next[i].leaf;
                if (!z || z->member || z->visit == gen) continue;
                z->visit = gen;
                if (vec_push(&stack, z)) goto nomem;
            }
        }
    }
    free(stack.v);
    return JN_OK;
nomem:
    free(stack.v);
    return jn_error(JN_ERR_NOMEM, "out of memory walking the autograd graph");
}

jn_status jn_backward(int n, jn_tensor *const *roots, jn_tensor *const *grads, int retain_graph) {
    /* a replay may hold this backward's ops already (replay/backward.c); it
     * also counts the calls it sees outside capture, each with its reason */
    if (jn_rt_capture_hook_installed()) {
        int handled = 0;
        jn_status s = jn_rt_capture_backward(n, roots, grads, retain_graph, &handled);
        if (handled) return s;
    }
    return run_engine(n, roots, grads, retain_graph, NULL);
}

jn_status jn_autograd_grad(int n, jn_tensor *const *roots, jn_tensor *const *grads, int ninputs,
                           jn_tensor *const *inputs, jn_tensor **out, int retain_graph,
                           int allow_unused) {
    for (int i = 0; i < ninputs; i++) {
        out[i] = NULL;
        if (!jn_requires_grad(inputs[i]))
            return jn_error(JN_ERR_RUNTIME, "One of the differentiated Tensors (input %d) does not require grad", i);
    }
    capture c = {ninputs, inputs, out};
    jn_status s = run_engine(n, roots, grads, retain_graph, &c);
    if (!s && !allow_unused)
        for (int i = 0; i < ninputs; i++)
            if (!out[i]) {
                s = jn_error(JN_ERR_RUNTIME,
                             "One of the differentiated Tensors (input %d) appears to not have been used in "
                             "the graph. Set allow_unused=True if this is the desired behavior.", i);
                break;
            }
    if (s)
        for (int i = 0; i < ninputs; i++) {
            jn_tensor_decref(out[i]);
            out[i] = NULL;
        }
    return s;
}

/* ------------------------------------------------- the walk (replay's skip) */
jn_status jn_ag_backward_engine(int n, jn_tensor *const *roots, jn_tensor *const *grads, int retain_graph,
                                int no_hooks) {
    int was = hooks_muted;
    hooks_muted = no_hooks;
    jn_status s = run_engine(n, roots, grads, retain_graph, NULL);
    hooks_muted = was;
    return s;
}

jn_tensor *jn_ag_history_alias(jn_tensor *t) {
    jn_ag_meta *m = t->autograd ? meta_of(t) : NULL;
    jn_tensor *a = same_value(t);
    if (!a || !m || !m->grad_fn) return a;
    jn_ag_meta *am = meta_get(a);
    if (!am) {
        jn_tensor_decref(a);
        return NULL;
    }
    __atomic_fetch_add(&m->grad_fn->refcnt, 1, __ATOMIC_RELAXED);
    am->grad_fn = m->grad_fn;
    am->output_nr = m->output_nr;
    am->requires_grad = 1;
    return a;
}

uint64_t jn_ag_seq_now(void) { return __atomic_load_n(&node_seq, __ATOMIC_RELAXED); }

static inline uint64_t fp_mix(uint64_t h, uint64_t v) {
    h ^= v;
    h *= 0x100000001b3ULL;
    return h ^ (h >> 29);
}

static uint64_t fp_meta(uint64_t h, const jn_meta *m) {
    h = fp_mix(h, (uint64_t)m->dtype << 8 | (uint64_t)m->ndim);
    for (int d = 0; d < m->ndim; d++) h = fp_mix(h, (uint64_t)m->shape[d]);
    return h;
}

static int grow_arr(void **p, int *cap, int need, size_t el) {
    if (need <= *cap) return 0;
    int c = *cap ? *cap * 2 : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, el * (size_t)c);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* A saved tensor as a formula sees it: its layout (not its offset: a
 * formula's ops do not depend on it, and a batch sliced from a dataset
 * moves it every step), and the value of a Python number (a formula may
 * read it on the host: minus_one of pow). */
static uint64_t fp_saved(uint64_t h, const jn_tensor *t) {
    if (!t) return fp_mix(h, 0);
    h = fp_mix(h, 1ULL | (uint64_t)t->dtype << 8 | (uint64_t)t->ndim << 16 | (uint64_t)t->is_view << 24 |
                      (uint64_t)t->wrapped_number << 25);
    for (int d = 0; d < t->ndim; d++) h = fp_mix(fp_mix(h, (uint64_t)t->shape[d]), (uint64_t)t->strides[d]);
    if (t->wrapped_number && t->storage->data && t->storage->device == JN_CPU) {
        double v = jn_load_f64(jn_data(t), t->dtype);
        uint64_t b;
        memcpy(&b, &v, sizeof b);
        h = fp_mix(h, b);
    }
    return h;
}

/* A new record reached: its ordinal (in deps, engine scratch the engine's
 * own discovery resets) and its place on the stack. */
static int walk_reach(jn_ag_walk *w, jn_node *x, uint64_t gen, nodevec *stack) {
    if (x->visit == gen) return 0;
    x->visit = gen;
    if (grow_arr((void **)&w->rec, &w->caprec, w->nrec + 1, sizeof *w->rec)) return -1;
    x->deps = w->nrec;
    w->rec[w->nrec++] = x;
    return vec_push(stack, x);
}

static uint64_t fp_attrs(uint64_t h, const jn_node *x) {
    const jn_opinfo *info = jn_op_info(x->op);
    for (int k = 0; k < info->nattrs; k++) {
        const jn_attr *a = &x->attrs.a[k];
        switch (info->attr_kind[k]) {
        case JN_A_FLOAT: {
            uint64_t b;
            memcpy(&b, &a->f, sizeof b);
            h = fp_mix(h, b);
            break;
        }
        case JN_A_INTS:
            h = fp_mix(h, (uint64_t)a->l.n);
            for (int j = 0; j < a->l.n && j < JN_MAX_DIMS; j++) h = fp_mix(h, (uint64_t)a->l.v[j]);
            break;
        default: h = fp_mix(h, (uint64_t)a->i);
        }
    }
    return h;
}

static const char *const walk_words[JN_AG_WALK_NWHY] = {
    NULL,
#define X(id, name, words) words,
    JN_AG_WALK_WHYS(X)
#undef X
};

/* The walk's reason (callers keep the first one found). */
static void walk_why(jn_ag_walk *w, int code) {
    w->code = code;
    w->why = walk_words[code];
}

jn_status jn_ag_walk_graph(jn_tensor *root, uint64_t min_seq, jn_ag_walk *w) {
    w->nrec = w->nleaf = w->nsaved = 0;
    w->why = NULL;
    w->code = JN_AG_WALK_OK;
    w->fp = 0xcbf29ce484222325ULL;
    jn_ag_meta *rm = root->autograd ? meta_of(root) : NULL;
    if (!rm || !rm->requires_grad || !rm->grad_fn) {
        walk_why(w, JN_AG_WALK_NO_HISTORY);
        return JN_OK;
    }
    nodevec stack = {0};
    uint64_t gen = __atomic_add_fetch(&visit_gen, 1, __ATOMIC_RELAXED);
    int q;
    jn_node *r0 = owner_of(rm->grad_fn, rm->output_nr, &q);
    if (walk_reach(w, r0, gen, &stack)) goto nomem;
    w->fp = fp_mix(w->fp, (uint64_t)q);
    /* depth first as the engine discovers; each record is fingerprinted when popped */
    while (stack.n) {
        jn_node *x = stack.v[--stack.n];
        uint64_t h = fp_mix(w->fp, (uint64_t)x->deps);
        h = fp_mix(h, (uint64_t)x->op << 16 | (uint64_t)x->nin << 8 | (uint64_t)x->nout);
        h = fp_mix(h, (uint64_t)x->device);
        if (x->custom && !w->why) walk_why(w, JN_AG_WALK_CUSTOM);
        if (!x->custom) h = fp_attrs(h, x);
        if (x->seq < min_seq && !w->why) walk_why(w, JN_AG_WALK_OLD_NODE);
        if (x->released && !w->why) walk_why(w, JN_AG_WALK_RELEASED);
        for (const jn_ag_hook *k = x->hooks; k && !w->why; k = k->next)
            if (hook_live(k)) walk_why(w, JN_AG_WALK_NODE_HOOK);
        for (int k = 0; k < x->nout; k++) {
            h = fp_meta(h, &x->out_meta[k]);
            jn_tensor *t = x->saved_out[k];
            h = fp_saved(h, t);
            if (!t) continue;
            if (t->storage->version != x->saved_out_ver[k] && !w->why) walk_why(w, JN_AG_WALK_SAVED_CHANGED);
        }
        for (int i = 0; i < x->nin; i++) {
            h = fp_meta(h, &x->in_meta[i]);
            jn_tensor *t = x->saved_in ? x->saved_in[i] : NULL;
            h = fp_saved(h, t);
            if (t && t->storage->version != x->saved_in_ver[i] && !w->why) walk_why(w, JN_AG_WALK_SAVED_CHANGED);
            const struct jn_edge *e = &x->next[i];
            if (e->leaf) {
                jn_ag_meta *m = meta_of(e->leaf);
                if (m->hvisit != gen) {
                    if (grow_arr((void **)&w->leaf, &w->capleaf, w->nleaf + 1, sizeof *w->leaf)) goto nomem;
                    m->hvisit = gen;
                    m->hdeps = w->nleaf;
                    w->leaf[w->nleaf++] = e->leaf;
                    if (leaf_hooked(e->leaf) && !w->why) walk_why(w, JN_AG_WALK_LEAF_HOOK);
                    if (m->grad && !w->why) walk_why(w, JN_AG_WALK_GRAD_DEFINED);
                    jn_meta lm = {e->leaf->dtype, e->leaf->ndim, {0}};
                    memcpy(lm.shape, e->leaf->shape, sizeof(int64_t) * (size_t)e->leaf->ndim);
                    h = fp_meta(h, &lm);
                }
                h = fp_mix(h, 2ULL << 32 | (uint64_t)m->hdeps);
            } else if (e->node) {
                jn_node *y = e->node->member ? e->node : owner_of(e->node, e->output_nr, &q);
                if (walk_reach(w, y, gen, &stack)) goto nomem;
                h = fp_mix(h, 1ULL << 32 | (uint64_t)y->deps);
                h = fp_mix(h, (uint64_t)e->output_nr);
            } else {
                h = fp_mix(h, 0);
            }
        }
        w->fp = h;
    }
    /* the saved tensors, records in ordinal order */
    for (int r = 0; r < w->nrec; r++) {
        jn_node *x = w->rec[r];
        for (int j = 0; j < x->nin + x->nout; j++) {
            jn_tensor **s = j < x->nin ? (x->saved_in ? &x->saved_in[j] : NULL) : &x->saved_out[j - x->nin];
            if (!s || !*s) continue;
            if (w->nsaved == w->capsaved) {
                int c = w->capsaved ? w->capsaved * 2 : 64;
                jn_tensor ***ns = realloc(w->slot, sizeof *ns * (size_t)c);
                if (ns) w->slot = ns;
                jn_tensor **nt = ns ? realloc(w->saved, sizeof *nt * (size_t)c) : NULL;
                if (!nt) goto nomem;
                w->saved = nt;
                w->capsaved = c;
            }
            w->slot[w->nsaved] = s;
            w->saved[w->nsaved++] = *s;
        }
    }
    free(stack.v);
    return JN_OK;
nomem:
    free(stack.v);
    return jn_error(JN_ERR_NOMEM, "out of memory walking the autograd graph");
}

void jn_ag_walk_free(jn_ag_walk *w) {
    free(w->rec), free(w->leaf), free(w->slot), free(w->saved);
    memset(w, 0, sizeof *w);
}

void jn_ag_walk_detach(jn_ag_walk *w) {
    for (int i = 0; i < w->nsaved; i++) *w->slot[i] = NULL;
    for (int r = 0; r < w->nrec; r++) w->rec[r]->released = 1;
}

void jn_ag_walk_restore(jn_ag_walk *w) {
    for (int i = 0; i < w->nsaved; i++) {
        jn_tensor_incref(w->saved[i]);
        *w->slot[i] = w->saved[i];
    }
    for (int r = 0; r < w->nrec; r++) w->rec[r]->released = 0;
}
