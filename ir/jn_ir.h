/* jn_ir.h -- the graph IR shared by the analyzer, codegen and the replay
 * runtime: generalized, guarded graphs mined from recorded training steps.
 *
 * A module holds graphs; a graph is one generalized segment of a training
 * step (the ops between two sync points), in functional form:
 *
 *   symbols   named dims/ints that vary between recorded segments (batch
 *             size B, sequence length T, ...), with the range seen; loop
 *             induction variables and the RNG offset are symbols too;
 *   exprs     hash-consed expressions over symbols (B*784, T-1-i, ...);
 *   values    SSA tensor values: dtype, device, symbolic shape;
 *   inputs    where a graph reads from outside: persistent state
 *             (parameters, optimizer buffers), host-fed tensors (batches),
 *             tensors carried over from an earlier segment, Python scalars
 *             fed at run time (a learning rate), constants a pass relies on;
 *   nodes     ops from the one op table (runtime/ops.def) with attributes;
 *             an int attribute may hold an expression (see jn_ir_dim), a
 *             float attribute may be bound to a scalar input;
 *   loops     regions over a contiguous run of nodes with a trip-count
 *             expression, an induction symbol, loop-carried values and
 *             collected per-iteration outputs;
 *   outputs   state written back in place, values Python keeps;
 *   guards    what must hold at replay for the graph to be valid, each with
 *             the recorded value or range and the source line it came from.
 *
 * Ops are held as the running process's jn_op enum; the text form and the
 * binary serialization name ops by NAME, so a module never trusts another
 * build's enum numbering (the binary form also carries the op-table hash).
 *
 * Memory: everything a graph owns lives in the graph (arrays grown with
 * realloc, strings interned); jn_ir_graph_free releases it all.  Every
 * function that can fail for a user-visible reason returns jn_status with a
 * message (jn_errmsg); NULL/negative returns are documented per function.
 *
 * ------------------------------------------------------------ text form
 * Line based, '#' starts a comment that runs to the end of the line, blank
 * lines ignored.  jn_ir_print writes exactly this and jn_ir_parse reads it
 * back (print -> parse -> print is the identity).  Grammar (one item per
 * line, fields separated by single spaces, [..] optional):
 *
 *   module optable=<16 hex> graphs=<n>
 *   site <id> "<file>":<line> "<func>"        call sites (ids as in run.db)
 *   graph <name> group=<g> variant=<v> parent=<p> diverge=<k> support=<n>
 *         steps=<a>..<b> entry="<text>" exit="<text>" [decided=@<site>] {
 *     sym <name> <kind> <lo>..<hi> [@<site>]   kind: dim | int | ivar | rng
 *     in %<v> <kind> <type> [= <number>] [bind=<tensor-id>] [@<site>]
 *                                            kind: state | host | carry | scalar | const | rng
 *     %<v>[, %<w>...] = <op>(%<a>, %<b>...) [<attr>=<val>...] [kernel=K<k>] : <otype>[, <otype>...] [@<site>]
 *                                            <otype> = <type> [mem=<dim> [wmem=<dim>]] [alias=%<base>]
 *     loop L<k> trip=<dim> ivar=<sym> {
 *       carry %<param> = %<init> -> %<next> => %<out>
 *       ... nodes (and nested loops) ...
 *       collect %<body> => %<out>              out = the body values stacked on a new dim 0
 *     }
 *     out %<v> state=%<in>                    state input %<in> is overwritten with %<v>
 *     out %<v> keep                            Python keeps this value
 *     guard <kind> <target> <check> need|seen [@<site>] ["<text>"]
 *     kernel K<k> ew|ew_reduce|gemm|lib root=%<v> [impl=gen|lib|gemm]   in order K0, K1, ...;
 *                                            %<v> = the root node's first output
 *     arena <dim> [wide <dim>]                 bytes of the planned arena (wide: of the plan
 *                                            for runs past the recorded ranges)
 *   }
 *
 *   <type>   <dtype>[<dim>, <dim>, ...] [<device>], e.g. f32[B, 784]
 *            (dtype short names: f32 f64 f16 bf16 i64 i32 u8 bool; device
 *            omitted for cpu, else "cuda")
 *   <dim>    an integer, a symbol name, or an expression in parentheses
 *            over + - * // and integers, e.g. (B*784) (T-1-i0); the
 *            printer parenthesizes every operation, "((T-1)-i0)", and the
 *            parser reads both (usual precedence, left to right)
 *   <attr>   the schema name from ops.def; values: integer or <dim>,
 *            float (%.17g, or %<v> when bound to a scalar input), true |
 *            false, [<dim>, ...], dtype short name
 *   guard kinds and their <target> <check>:
 *            sym <name> in <lo>..<hi>            a symbol's range
 *            dim %<v>.<d> == <int>               a dim that never varied
 *            dtype %<v> == <dtype>    device %<v> == <device>
 *            scalar %<v> == <number>             a constant Python scalar
 *            pytype %<v> == int|float|bool|tensor   the Python type of an argument
 *            bind %<v> == <tensor-id>            no other recorded state is this tensor
 *            trip L<k> in <lo>..<hi>
 *            each followed by its class (jn_ir_guard_class): `need` (the
 *            compiled code is only right when it holds) or `seen` (a
 *            recorded range the code does not depend on)
 *
 * Kernels, mem=, wmem=, alias= and arena are codegen's annotations (fuse and
 * plan passes); a graph straight from the analyzer has none.
 *
 * ------------------------------------------------------------ binary form
 * jn_ir_serialize: "JNIR" magic, format version, op-table hash, then
 * varint-coded tables; ops by name.  jn_ir_deserialize bounds-checks every
 * field and refuses (JN_ERR_VALUE, naming what is wrong) anything truncated,
 * corrupt, of another format version, or naming an op this build lacks.
 */
#ifndef JN_IR_H
#define JN_IR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jn_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

#define JN_IR_FORMAT_VERSION 3

/* ------------------------------------------------------------- dims */
/* A dim (or any symbolic integer: an int attribute, a trip count) is an
 * int64: a plain constant, or a reference to an expression of the graph.
 * References are the values at or below JN_IR_EXPR_BASE, so every integer
 * a real program uses (negative dims, -1 in view shapes) is a constant. */
typedef int64_t jn_ir_dim;
#define JN_IR_EXPR_BASE (INT64_MIN / 2)
static inline int jn_ir_is_expr(jn_ir_dim d) { return d <= JN_IR_EXPR_BASE; }
static inline int32_t jn_ir_expr_index(jn_ir_dim d) { return (int32_t)(JN_IR_EXPR_BASE - d); }
static inline jn_ir_dim jn_ir_expr_ref(int32_t index) { return JN_IR_EXPR_BASE - (jn_ir_dim)index; }
/* What jn_ir_sym_dim / jn_ir_dim_op return on failure (error set): a ref to
 * no expression, which jn_ir_verify rejects. */
#define JN_IR_DIM_ERROR INT64_MIN

typedef enum { JN_IR_E_SYM, JN_IR_E_ADD, JN_IR_E_SUB, JN_IR_E_MUL, JN_IR_E_FLOORDIV } jn_ir_expr_kind;

typedef struct {
    jn_ir_expr_kind kind;
    int32_t sym;          /* JN_IR_E_SYM: symbol index */
    jn_ir_dim a, b;       /* operands of the binary kinds (constants or refs) */
} jn_ir_expr;

typedef enum {
    JN_IR_SYM_DIM,    /* a varying tensor dim (batch size, sequence length) */
    JN_IR_SYM_INT,    /* a varying integer that is no dim (an index attribute) */
    JN_IR_SYM_IVAR,   /* a loop's induction variable: 0 .. trip-1 */
    JN_IR_SYM_RNG     /* the Philox offset at graph entry */
} jn_ir_sym_kind;

typedef struct {
    const char *name;     /* interned; unique within the graph */
    jn_ir_sym_kind kind;
    int64_t lo, hi;       /* range seen in the recording */
    int64_t site;         /* where it was first seen (call site id), 0 = unknown */
} jn_ir_sym;

/* ----------------------------------------------------------- values */
typedef enum {
    JN_IR_V_INPUT,       /* graph input; `def` = input index */
    JN_IR_V_NODE,        /* `def` = node index, `idx` = output index */
    JN_IR_V_LOOP_PARAM,  /* a loop-carried value inside the body; `def` = loop, `idx` = carry */
    JN_IR_V_LOOP_OUT     /* after the loop: `def` = loop, `idx` = carry index, or
                          * ncarry + collect index for collected outputs */
} jn_ir_value_kind;

typedef struct {
    jn_ir_value_kind kind;
    int32_t def, idx;
    jn_dtype dtype;
    uint8_t device;       /* jn_device_type */
    uint8_t ndim;
    jn_ir_dim shape[JN_MAX_DIMS];
    /* Memory plan (codegen's plan pass; -1 = unplanned):  mem is the byte
     * offset of the value in its graph's arena, -1 when it is not in the
     * arena (inputs, outputs Python keeps, loop values, views); alias is the
     * value whose storage a view output shares, -1 if none.  wmem: the
     * offset in the WIDE plan (jn_ir_graph.warena), -1 when the graph has
     * none (mem is then valid for every symbol value). */
    jn_ir_dim mem, wmem;
    int32_t alias;
} jn_ir_value;

/* ----------------------------------------------------------- inputs */
typedef enum {
    JN_IR_IN_STATE,   /* parameter / buffer / optimizer state living across steps */
    JN_IR_IN_HOST,    /* a tensor made from Python data (a batch) */
    JN_IR_IN_CARRY,   /* a tensor an earlier segment produced and Python kept */
    JN_IR_IN_SCALAR,  /* a Python number or float attribute: fed at run time */
    JN_IR_IN_CONST,   /* a number a codegen pass specialised on (or computed by
                       * folding): a constant, NEED-guarded where it was fed */
    JN_IR_IN_RNG      /* the generator's (seed) at graph entry; offset is a JN_IR_SYM_RNG */
} jn_ir_input_kind;

typedef struct {
    jn_ir_input_kind kind;
    int32_t value;        /* the value it defines */
    double scalar;        /* CONST: the value; SCALAR: the first recorded value */
    uint8_t pytype;       /* SCALAR/CONST: 1 int, 2 float, 3 bool (as jn_db_tref.pytype) */
    int64_t bind;         /* STATE: the recorded tensor id (0 = none): which state it is, for aliasing */
    int64_t site;         /* call site of its first use */
} jn_ir_input;

/* ------------------------------------------------------------ nodes */
typedef struct {
    jn_op op;
    uint8_t nin, nout;
    int32_t *in;                         /* nin value indices (graph-owned array) */
    int32_t out[JN_MAX_OUTS];            /* value indices */
    jn_attrs attrs;                      /* schema order; ints may be jn_ir_dim refs */
    int32_t attr_input[JN_MAX_ATTRS];    /* -1, or the value of a scalar input that
                                          * supplies this (float or int) attribute */
    int32_t loop;                        /* innermost enclosing loop, -1 = top level */
    int64_t site;                        /* call site id, 0 = unknown */
    int32_t kernel;                      /* codegen's kernel table index, -1 = none */
} jn_ir_node;

/* ---------------------------------------------------------- kernels */
/* Codegen's fuse pass groups nodes into kernels; each member node names
 * its kernel (jn_ir_node.kernel).  A kernel runs where its root (the
 * member with the highest index, whose output is the kernel's result)
 * stands; all members lie in the root's loop.  Values of members used by
 * other nodes are exported (the kernel writes them too). */
typedef enum {
    JN_IR_K_EW,         /* elementwise DAG over one broadcast output shape */
    JN_IR_K_EW_REDUCE,  /* elementwise DAG ending in one reduction (the root) */
    JN_IR_K_GEMM,       /* mm/addmm/linear/matmul plus an elementwise epilogue */
    JN_IR_K_LIB         /* one op run by its eager table kernel */
} jn_ir_kernel_kind;

typedef enum {
    JN_IR_IMPL_NONE,    /* not selected yet */
    JN_IR_IMPL_GEN,     /* generated C */
    JN_IR_IMPL_LIB,     /* the eager table kernel (jn_dispatch) */
    JN_IR_IMPL_GEMM     /* the eager GEMM (OpenBLAS) plus a generated epilogue */
} jn_ir_impl;

typedef struct {
    jn_ir_kernel_kind kind;
    int32_t root;       /* node index */
    jn_ir_impl impl;
} jn_ir_kernel;

/* ------------------------------------------------------------ loops */
typedef struct {
    int32_t param;   /* JN_IR_V_LOOP_PARAM value used inside the body */
    int32_t init;    /* value outside the loop that seeds iteration 0 */
    int32_t next;    /* body value that becomes `param` of the next iteration */
    int32_t out;     /* JN_IR_V_LOOP_OUT value: `next` of the last iteration */
} jn_ir_carry;

typedef struct {
    int32_t body;    /* body value produced in every iteration */
    int32_t out;     /* JN_IR_V_LOOP_OUT value: all iterations stacked on dim 0 */
} jn_ir_collect;

typedef struct {
    int32_t parent;                /* enclosing loop, -1 */
    int32_t first, count;          /* its nodes are first .. first+count-1 */
    jn_ir_dim trip;                /* trip count (usually a symbol) */
    int32_t ivar;                  /* symbol index of the induction variable */
    int32_t ncarry, ncollect;
    jn_ir_carry *carry;
    jn_ir_collect *collect;
} jn_ir_loop;

/* ---------------------------------------------------------- outputs */
typedef enum { JN_IR_OUT_STATE, JN_IR_OUT_KEEP } jn_ir_output_kind;

typedef struct {
    jn_ir_output_kind kind;
    int32_t value;
    int32_t state;   /* STATE: the input index it overwrites */
} jn_ir_output;

/* ----------------------------------------------------------- guards */
/* Why a guard exists.  Only a NEED guard may make replay miss. */
typedef enum {
    JN_IR_GC_NEED = 0,  /* what the compiled code needs to be right: a dtype, a device, a
                         * dim the kernels were specialised on, a bound state tensor, a
                         * Python type, a constant a pass specialised on */
    JN_IR_GC_SEEN = 1   /* the range a symbol or trip count took in the recording, which
                         * the code does not depend on: a value outside it is a hit
                         * counted as extrapolated (the matcher then also checks every
                         * op's output shapes against the graph's, so a relation fitted
                         * to the recorded values that stops holding is a miss) */
} jn_ir_guard_class;

typedef enum {
    JN_IR_G_SYM,      /* symbol `sym` within [lo, hi] */
    JN_IR_G_DIM,      /* dim `dim` of value `value` == lo (it never varied) */
    JN_IR_G_DTYPE,    /* value's dtype == lo */
    JN_IR_G_DEVICE,   /* value's device == lo */
    JN_IR_G_SCALAR,   /* constant scalar input value == fval */
    JN_IR_G_PYTYPE,   /* Python type of the argument bound to value == lo (0 tensor, 1 int, 2 float, 3 bool) */
    JN_IR_G_BIND,     /* state input value bound to tensor id lo */
    JN_IR_G_TRIP      /* loop `loop` trip count within [lo, hi] */
} jn_ir_guard_kind;

typedef struct {
    jn_ir_guard_kind kind;
    jn_ir_guard_class cls;      /* SEEN only for SYM and TRIP guards */
    int32_t value, sym, loop;   /* target (unused ones -1) */
    int32_t dim;
    int64_t lo, hi;
    double fval;
    int64_t site;               /* the source line it came from */
    const char *note;           /* interned free text (may be NULL) */
} jn_ir_guard;

/* ------------------------------------------------------------ graph */
typedef struct {
    const char *name;           /* "g0", ... */
    int32_t group, variant;     /* segments that start at the same place form a group */
    int32_t parent;             /* variant this one diverges from, -1 for the first */
    int32_t diverge;            /* number of leading ops shared with `parent` */
    int64_t decided;            /* call site of the Python branch that chose it, 0 = unknown */
    int64_t support;            /* recorded segments it generalizes */
    int64_t step_lo, step_hi;   /* first and last recorded step it covers */
    const char *entry, *exit;   /* where it starts / ends, in words */

    jn_ir_sym *syms;       int32_t nsyms, capsyms;
    jn_ir_expr *exprs;     int32_t nexprs, capexprs;
    jn_ir_value *values;   int32_t nvalues, capvalues;
    jn_ir_input *inputs;   int32_t ninputs, capinputs;
    jn_ir_node *nodes;     int32_t nnodes, capnodes;
    jn_ir_loop *loops;     int32_t nloops, caploops;
    jn_ir_output *outputs; int32_t noutputs, capoutputs;
    jn_ir_guard *guards;   int32_t nguards, capguards;
    jn_ir_kernel *kernels; int32_t nkernels, capkernels;
    jn_ir_dim arena;            /* bytes of the planned arena, -1 = unplanned */
    jn_ir_dim warena;           /* bytes of the wide plan's arena (values' wmem), -1 = none: when
                                 * the plan (mem) was packed at the symbols' recorded maxima, the
                                 * slot walk's symbolic plan, valid for any symbol values, is
                                 * kept for runs past a maximum */

    struct jn_ir_pool *pool;    /* interned strings, input arrays (private) */
} jn_ir_graph;

typedef struct {
    int64_t id;
    const char *file, *func;    /* owned by the module */
    int line;
} jn_ir_site;

typedef struct {
    uint64_t optable_hash;      /* jn_optable_hash() of the build that made it */
    jn_ir_graph **graphs;  int32_t ngraphs, capgraphs;
    jn_ir_site *sites;     int32_t nsites, capsites;
    struct jn_ir_pool *pool;
} jn_ir_module;

/* ------------------------------------------------------ construction */
jn_ir_module *jn_ir_module_new(void);
void jn_ir_module_free(jn_ir_module *m);
/* New empty graph appended to m (owned by m). NULL on OOM (error set). */
jn_ir_graph *jn_ir_graph_add(jn_ir_module *m, const char *name);
jn_status jn_ir_site_add(jn_ir_module *m, int64_t id, const char *file, int line, const char *func);
const jn_ir_site *jn_ir_site_get(const jn_ir_module *m, int64_t id); /* NULL if unknown */
/* Interned copy of s, owned by the graph / module. */
const char *jn_ir_intern(jn_ir_graph *g, const char *s);

/* Each returns the new index, or -1 on OOM (error set). */
int32_t jn_ir_sym_add(jn_ir_graph *g, const char *name, jn_ir_sym_kind kind, int64_t lo, int64_t hi,
                      int64_t site);
int32_t jn_ir_sym_find(const jn_ir_graph *g, const char *name);   /* -1 if absent */
int32_t jn_ir_value_add(jn_ir_graph *g, jn_ir_value_kind kind, int32_t def, int32_t idx, jn_dtype dtype,
                        int device, int ndim, const jn_ir_dim *shape);
/* Adds the input and its value; returns the INPUT index (value in inputs[i].value). */
int32_t jn_ir_input_add(jn_ir_graph *g, jn_ir_input_kind kind, jn_dtype dtype, int device, int ndim,
                        const jn_ir_dim *shape, int64_t site);
/* Adds the node (attr_input all -1, loop = the innermost loop whose range
 * already holds the new index, else -1) and its nout output values, typed
 * from out_types[k] (dtype, device, ndim, shape; kind/def/idx are ignored);
 * returns the NODE index.  attrs NULL = the schema defaults. */
int32_t jn_ir_node_add(jn_ir_graph *g, jn_op op, int nin, const int32_t *in, const jn_attrs *attrs,
                       int nout, const jn_ir_value *out_types, int64_t site);
/* Nodes first..first+count-1 form the body.  Either add the loop (outer
 * before inner) with its final count before its body nodes, or after them:
 * nodes already in the range whose loop is `parent` move into it. */
int32_t jn_ir_loop_add(jn_ir_graph *g, int32_t parent, int32_t first, int32_t count, jn_ir_dim trip,
                       int32_t ivar);
/* A carry of loop l: creates the LOOP_PARAM and LOOP_OUT values (typed like
 * `init`); returns the carry index.  Set carry[k].next once the body exists. */
int32_t jn_ir_loop_carry(jn_ir_graph *g, int32_t l, int32_t init);
/* A collected output of loop l: creates the LOOP_OUT value [trip, body shape...]. */
int32_t jn_ir_loop_collect(jn_ir_graph *g, int32_t l, int32_t body);
/* KEEP outputs get state -1. */
int32_t jn_ir_output_add(jn_ir_graph *g, jn_ir_output_kind kind, int32_t value, int32_t state);
/* Copies the guard (note interned) with the fields its kind does not use
 * reset (targets -1, hi = lo for single-valued kinds, fval 0 unless SCALAR),
 * as the text form does. */
int32_t jn_ir_guard_add(jn_ir_graph *g, const jn_ir_guard *guard);
/* A kernel (impl NONE) rooted at node `root`; sets nodes[root].kernel. */
int32_t jn_ir_kernel_add(jn_ir_graph *g, jn_ir_kernel_kind kind, int32_t root);

/* ------------------------------------------------------- expressions */
/* Hash-consed: equal expressions get equal refs.  Folds constants
 * (2*3 -> 6), x*1, x+0, x-0, x//1, orders commutative operands, so that two
 * ways of writing B*784 compare equal as jn_ir_dim.  A ref to a symbol: */
jn_ir_dim jn_ir_sym_dim(jn_ir_graph *g, int32_t sym);
jn_ir_dim jn_ir_dim_op(jn_ir_graph *g, jn_ir_expr_kind kind, jn_ir_dim a, jn_ir_dim b);
/* a kind b for a binary expression kind, exactly (floor division); 0 on
 * overflow, division by zero or another kind.  What evaluation and constant
 * folding compute, and the executor's per-run expression table. */
int jn_ir_expr_apply(jn_ir_expr_kind kind, int64_t a, int64_t b, int64_t *r);
/* Value of d given values for every symbol (indexed by symbol); JN_ERR_VALUE
 * on division by zero or overflow. */
jn_status jn_ir_dim_eval(const jn_ir_graph *g, jn_ir_dim d, const int64_t *sym_values, int64_t *out);
/* d as text: "64", "B", "(B*784)". Returns buf. */
const char *jn_ir_dim_str(const jn_ir_graph *g, jn_ir_dim d, char *buf, size_t n);

/* ------------------------------------------------------------ checks */
/* Structural invariants: indices in range, SSA (every value defined once,
 * before use, in an enclosing scope), node arity and attribute count match
 * the op table, loop ranges nested and contiguous, carries and collects
 * typed consistently, outputs/guards point at existing things, symbol names
 * unique, expressions acyclic, kernels (kind, impl, root in range, the root
 * a member, every member in the root's loop at or before it), memory
 * annotations (only node outputs planned, alias an earlier value, a
 * planned value needs an arena).  JN_ERR_VALUE with a message naming the graph,
 * the node/value and the rule.  Also: loops have at least one node; an
 * induction variable is used only inside its loop; SCALAR/CONST inputs have
 * pytype 1..3 and a value to match (an int integral, a bool 0 or 1);
 * expressions are at most 200 operators deep. */
jn_status jn_ir_verify(const jn_ir_graph *g);
jn_status jn_ir_verify_module(const jn_ir_module *m);

/* One sentence explaining guard k of g, e.g.
 * "batch size symbol B (first seen at train.py:42) was 17, recorded 32..64".
 * `seen` is the value observed at replay (NULL: describe the guard only). */
const char *jn_ir_guard_explain(const jn_ir_module *m, const jn_ir_graph *g, int32_t k,
                                const double *seen, char *buf, size_t n);

/* ------------------------------------------------- text and binary I/O */
jn_status jn_ir_print(const jn_ir_module *m, FILE *f);
jn_status jn_ir_print_graph(const jn_ir_module *m, const jn_ir_graph *g, FILE *f);
/* Parse the text form; errors name the line number and what was expected.
 * Like jn_ir_deserialize, returns a verified module or an error (*out NULL). */
jn_status jn_ir_parse(const char *text, size_t len, jn_ir_module **out);
/* Compact binary form of a module that verifies; caller frees *data with free(). */
jn_status jn_ir_serialize(const jn_ir_module *m, void **data, size_t *len);
jn_status jn_ir_deserialize(const void *data, size_t len, jn_ir_module **out);

/* Short dtype name used by the text form ("f32"); -1 if unknown. */
const char *jn_ir_dtype_short(jn_dtype d);
int jn_ir_dtype_from_short(const char *s);

#ifdef __cplusplus
}
#endif
#endif
