/* jn_autograd.h -- reverse-mode automatic differentiation (the C tape).
 *
 * When grad mode is on and an op's input requires grad, the dispatcher asks
 * jn_ag_record() to hang a node on the outputs: the op, its attributes, the
 * input metadata, the tensors its derivative needs (saved with their version
 * so in-place changes are caught) and edges to the inputs' producers.  The
 * derivative of every op is one entry of the table in derivatives.c, written
 * with other table ops, so backward passes run through jn_dispatch and are
 * recorded and compiled like the forward pass.
 */
#ifndef JN_AUTOGRAD_H
#define JN_AUTOGRAD_H

#include "jn_runtime.h"

typedef struct jn_node jn_node;
typedef struct jn_ag_hook jn_ag_hook;

/* What the autograd layer hangs on a tensor (jn_tensor.autograd). */
typedef struct {
    int requires_grad;
    jn_tensor *grad;       /* accumulated gradient */
    jn_node *grad_fn;      /* producer; NULL for leaves */
    int output_nr;         /* which output of grad_fn */
    int is_view_of_grad;   /* a view of a tensor that requires grad */
    jn_ag_hook *hooks;     /* a leaf's gradient hooks, in registration order */
    /* engine scratch for a leaf with hooks, valid during one backward: its
     * incoming gradients are summed first (hbuf), so its hooks see the total */
    uint64_t hvisit;
    int hdeps;
    jn_tensor *hbuf;
} jn_ag_meta;

/* Thread-local grad mode (janus.no_grad / enable_grad). */
int jn_grad_enabled(void);
void jn_set_grad_enabled(int on);

int jn_requires_grad(const jn_tensor *t);
/* requires_grad_(): only leaves may change it (like PyTorch). */
jn_status jn_set_requires_grad(jn_tensor *t, int on);
int jn_is_leaf(const jn_tensor *t);
/* Borrowed; NULL when none. */
jn_tensor *jn_grad(const jn_tensor *t);
/* Replace .grad (steals g, which may be NULL). */
jn_status jn_set_grad(jn_tensor *t, jn_tensor *g);
/* 1 when t's producer node was released by a backward pass (without
 * retain_graph), so backpropagating through t again would fail. */
int jn_ag_history_released(const jn_tensor *t);
/* Name of the producing op ("AddBackward"-like: the op name) or NULL. */
const char *jn_grad_fn_name(const jn_tensor *t);
/* A new header sharing storage with no history (detach()). */
jn_tensor *jn_detach(jn_tensor *t);

/* backward(): roots with gradients (NULL grad = ones for a scalar root). */
jn_status jn_backward(int n, jn_tensor *const *roots, jn_tensor *const *grads, int retain_graph);
/* autograd.grad(): gradients of roots w.r.t. inputs, returned as new
 * references in out (NULL where unused and allow_unused). .grad is untouched. */
jn_status jn_autograd_grad(int n, jn_tensor *const *roots, jn_tensor *const *grads, int ninputs,
                           jn_tensor *const *inputs, jn_tensor **out, int retain_graph,
                           int allow_unused);

/* The engine itself, without the capture hook's backward callback (what
 * jn_backward runs when no replay asks to handle the call); no_hooks: no
 * gradient hook runs (a skipped backward run late, replay/backward.c: the
 * walk proved none existed when it was called). */
jn_status jn_ag_backward_engine(int n, jn_tensor *const *roots, jn_tensor *const *grads, int retain_graph,
                                int no_hooks);
/* A second header over t's value carrying t's history as it is now (the
 * same grad_fn and output): a later in-place op on t does not move it. */
jn_tensor *jn_ag_history_alias(jn_tensor *t);
/* The node counter's value now: nodes made later have a larger seq. */
uint64_t jn_ag_seq_now(void);

/* What backward(root) would run, walked as the engine's discovery walks it
 * (replay's backward skip, replay/backward.c): the reached records (plain
 * nodes and reached group members) and leaves in discovery order, every
 * saved tensor of the reached records (slot address and tensor, records in
 * order, inputs then outputs), and a fingerprint of everything the engine's
 * dispatched ops depend on (per record: op, attributes, input and output
 * metadata, edges by ordinal, which tensors are saved; per leaf: dtype and
 * shape).  why: set when the engine's ops cannot be predicted from an
 * earlier backward's (a record made before min_seq, released, with hooks; a
 * leaf with hooks or a defined .grad; a saved tensor changed in place),
 * with its code (the first found).
 * JN_AG_WALK_WHYS(X): X(id, name, words) per reason; replay's backward skip
 * keeps its own reasons after these (replay/rp_internal.h). */
#define JN_AG_WALK_WHYS(X)                                                                          \
    X(NO_HISTORY, "no_history", "the root has no history")                                         \
    X(OLD_NODE, "old_node", "it reaches a node made before this segment")                          \
    X(RELEASED, "released", "the graph was released by an earlier backward")                       \
    X(NODE_HOOK, "hook", "a gradient hook is registered on a tensor it reaches")                   \
    X(SAVED_CHANGED, "saved_changed", "a saved tensor was changed in place")                       \
    X(LEAF_HOOK, "leaf_hook", "a gradient hook is registered on a leaf it reaches")                \
    X(GRAD_DEFINED, "grad_defined", "a leaf it reaches has a .grad already (accumulation)")        \
    X(CUSTOM, "custom", "it reaches a custom autograd Function (its backward is Python)")
enum {
    JN_AG_WALK_OK = 0,
#define X(id, name, words) JN_AG_WALK_##id,
    JN_AG_WALK_WHYS(X)
#undef X
    JN_AG_WALK_NWHY
};
typedef struct {
    jn_node **rec;
    int nrec, caprec;
    jn_tensor **leaf;
    int nleaf, capleaf;
    jn_tensor ***slot;
    jn_tensor **saved;
    int nsaved, capsaved;
    uint64_t fp;
    const char *why;     /* the reason in words, NULL */
    int code;            /* its JN_AG_WALK_*, JN_AG_WALK_OK */
} jn_ag_walk;
jn_status jn_ag_walk_graph(jn_tensor *root, uint64_t min_seq, jn_ag_walk *w);
void jn_ag_walk_free(jn_ag_walk *w);
/* As the engine leaves them after backward without retain_graph: the saved
 * tensors out of their records (the caller now owns those references,
 * w->saved) and the records released. */
void jn_ag_walk_detach(jn_ag_walk *w);
/* Undo jn_ag_walk_detach: the saved tensors back in their slots (a new
 * reference each), the records not released. */
void jn_ag_walk_restore(jn_ag_walk *w);

/* Gradient hooks (Tensor.register_hook, register_post_accumulate_grad_hook).
 * JN_HOOK_GRAD on a leaf or a non-leaf: fn(ctx, t, grad, &r) runs when t's
 * gradient of this backward is complete (a non-leaf's before its producer's
 * formula reads it, a leaf's before it is accumulated or captured by
 * autograd.grad); grad is borrowed; setting *r (a new reference, same shape
 * and dtype) replaces the gradient for the hooks after it and the engine.
 * JN_HOOK_POST_ACC on a leaf: fn(ctx, t, NULL, NULL) after backward()
 * accumulated t's gradient into .grad (not under autograd.grad).  Hooks run
 * in registration order, on the thread running backward, with grad mode
 * off.  A non-leaf's hooks live on its producer's node (they stay with the
 * value the tensor had when registered, as PyTorch's).  free_ctx(ctx) runs
 * when the hook is dropped (removed and no longer referenced).  *out: a new
 * reference to the hook, for jn_ag_hook_remove and jn_ag_hook_decref. */
enum { JN_HOOK_GRAD = 0, JN_HOOK_POST_ACC = 1 };
typedef jn_status (*jn_ag_hook_fn)(void *ctx, jn_tensor *t, jn_tensor *grad, jn_tensor **replace);
jn_status jn_ag_add_hook(jn_tensor *t, int kind, jn_ag_hook_fn fn, void *ctx, void (*free_ctx)(void *),
                         jn_ag_hook **out);
/* The hook no longer runs (idempotent). */
void jn_ag_hook_remove(jn_ag_hook *h);
void jn_ag_hook_decref(jn_ag_hook *h);

/* out[j] = 1 when a backward from roots would reach leaf leaves[j] (DDP's
 * find_unused_parameters).  O(graph * nleaves); not during a backward. */
jn_status jn_ag_reaches(int n, jn_tensor *const *roots, int nleaves, jn_tensor *const *leaves, int *out);

/* Custom nodes (autograd.Function): a node whose derivative is fn instead
 * of a table formula.  Edges go to the producers of in[] that require grad,
 * as a table op's; out[k] gets the node as grad_fn where diff[k] (diff NULL:
 * all) and its dtype is float; an output may have no history yet.  In
 * backward, fn(ctx, nout, grad_out, nin, needs, grad_in) runs with grad mode
 * off: grad_out[k] is NULL where no gradient arrived unless materialize
 * (then zeros); it sets grad_in[i] (a new reference, the input's shape) or
 * leaves NULL.  ctx is owned by the node from the call on (also when it
 * fails): free_ctx(ctx) runs when the node releases what backward needs
 * (after a backward without retain_graph) or is freed.  The backward
 * skip's walk stops at such a node (JN_AG_WALK_CUSTOM): its Python runs. */
typedef jn_status (*jn_ag_custom_fn)(void *ctx, int nout, jn_tensor *const *grad_out, int nin, const int *needs,
                                     jn_tensor **grad_in);
jn_status jn_ag_custom_record(const char *name, int nin, jn_tensor *const *in, int nout, jn_tensor *const *out,
                              const int *diff, int materialize, jn_ag_custom_fn fn, void *ctx,
                              void (*free_ctx)(void *));

/* Called by the dispatcher after an op ran (out-of-place, view or in-place). */
jn_status jn_ag_record(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                       jn_tensor *const *out, jn_tensor *inplace_dst);
/* Checked by the dispatcher before an in-place write to t. */
jn_status jn_ag_check_inplace(jn_op op, jn_tensor *t);

/* Group node: between jn_ag_group_begin and jn_ag_group_end (same thread,
 * no nesting), the ops that record (grad mode on, an input requiring grad)
 * become member records of ONE node instead of a node each: the per-op
 * records (op, attributes, input metadata, saved tensors and versions,
 * edges) lie in the node's one block, and every float output gets the
 * group as grad_fn with output_nr = its index over all the members'
 * outputs.  Backward runs the reached members from last to first through
 * the table's formulas, as eager runs their nodes, so results are eager's
 * bit for bit (autograd.c).  For a replaced region (replay/region.c): its
 * ops are dispatched contiguously, which is what makes that order eager's.
 * The bounds are the most members (ops), input slots and outputs the run
 * can record; the node is made by the first op that records. */
typedef struct {
    int members, edges, outs;
    jn_node *node;
} jn_ag_group;
void jn_ag_group_begin(jn_ag_group *g, int members, int edges, int outs);
/* Ends recording into g; the outputs hold the node (or nobody). */
void jn_ag_group_end(jn_ag_group *g);
/* For tests: the members of t's grad_fn when it is a group node, else 0. */
int jn_ag_group_size(const jn_tensor *t);
/* For tests: autograd nodes allocated so far in the process (a group is one). */
uint64_t jn_ag_nodes_made(void);

/* ---- the derivative table (derivatives.c) ---- */
typedef struct jn_bw jn_bw; /* scratch context of one derivative call */

/* grad_out[k] is the gradient of output k: for output 0 and the outputs
 * the entry's reads_out names it is never NULL (zeros are materialized when
 * no gradient arrived); the other outputs' (an index output, a cell's
 * workspace) are NULL when none arrived, since the formula never reads
 * them.  The formula sets grad_in[i] (a new reference) for every input i
 * with needs[i] set, or leaves it NULL for "no gradient". */
typedef jn_status (*jn_grad_fn)(jn_node *n, jn_tensor *const *grad_out, const int *needs,
                                jn_tensor **grad_in);

enum { JN_SAVE_IN = 1, JN_SAVE_OUT = 2 };
typedef struct {
    jn_grad_fn fn;   /* NULL: the op has no derivative */
    int save;        /* JN_SAVE_* : keep inputs and/or outputs for backward */
    int reads_out;   /* bit k: the formula reads grad_out[k] too (k >= 1) */
} jn_grad_def;

const jn_grad_def *jn_grad_def_of(jn_op op);

/* What a derivative formula may read from its node. */
jn_tensor *jn_node_input(jn_node *n, int i, jn_status *st);   /* borrowed, version-checked */
jn_tensor *jn_node_output(jn_node *n, int i, jn_status *st);  /* borrowed, version-checked */
const jn_meta *jn_node_input_meta(const jn_node *n, int i);
const jn_attrs *jn_node_attrs(const jn_node *n);
int jn_node_nin(const jn_node *n);
/* During a formula call: the gradient already accumulated for input i when
 * the formula may add its contribution into it in place (the leaf's .grad,
 * or a buffer only the engine holds; contiguous, the input's dtype and
 * shape), else NULL.  A formula that adds into it returns that same tensor
 * as grad_in[i], and the engine does not add it again.  This is how a
 * per-time-step gradient lands in its sum without a full-size temporary
 * (a weight gradient as a beta=1 GEMM, a select's gradient into its row). */
jn_tensor *jn_node_acc(const jn_node *n, int i);
jn_op jn_node_op(const jn_node *n);

#endif
