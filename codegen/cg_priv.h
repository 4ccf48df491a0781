/* cg_priv.h -- what the files of codegen/ share: the pass context, the
 * use lists every pass reads, use replacement, graph compaction (the only
 * way nodes and values leave a graph), and small type/constant helpers.
 */
#ifndef JN_CG_PRIV_H
#define JN_CG_PRIV_H

#include <stdlib.h>
#include <string.h>

#include "jn_cg.h"

struct jn_cg_ctx {
    jn_ir_module *m;
    const jn_cg_options *o;
};

/* How a value is used besides as a node input. */
enum {
    CG_U_OUTPUT = 1,      /* a graph output (state or keep) */
    CG_U_NEXT = 2,        /* a loop carry's next */
    CG_U_INIT = 4,        /* a loop carry's init */
    CG_U_COLLECT = 8,     /* a loop collect's body */
    CG_U_GUARD = 16       /* a guard's target */
};

/* Node users of value v: users[start[v] .. start[v+1]), one entry per
 * input slot, in node order. */
typedef struct {
    int32_t *start, *users;
    uint8_t *flags;
} cg_uses;

jn_status cg_uses_build(const jn_ir_graph *g, cg_uses *u);
void cg_uses_free(cg_uses *u);
static inline int32_t cg_nusers(const cg_uses *u, int32_t v) { return u->start[v + 1] - u->start[v]; }

/* Rewrites every node input, carry init/next, collect body and output that
 * names `from` to `to` (not guards: they keep `from` alive for DCE). */
void cg_replace(jn_ir_graph *g, int32_t from, int32_t to);
/* May uses of y become uses of x (x already visible where y is used)?  No
 * when y leaves the graph as an output and x is an input or another output:
 * Python would get an alias where it had a fresh tensor. */
int cg_can_replace(const jn_ir_graph *g, const cg_uses *u, int32_t y, int32_t x);

/* Drops the nodes with live_node 0 and their values, loop carries whose
 * param and out are both dead, collects whose out is dead, and loops left
 * without nodes; renumbers values, nodes and loops keeping their order. */
jn_status cg_compact(jn_ir_graph *g, const uint8_t *live_node, const uint8_t *live_val);

/* Node `from` may move to right after node `after` (-1: to the front):
 * every loop overlapping the nodes in between lies wholly among them or
 * around them all (the caller checks the data dependences). */
int cg_node_movable(const jn_ir_graph *g, int32_t from, int32_t after);
/* Moves it there, shifting the nodes in between; fixes their outputs'
 * defining nodes and the ranges of the loops among them.  Value numbers
 * stay: node order, not numbering, is what the verifier and planner read. */
void cg_move_node(jn_ir_graph *g, int32_t from, int32_t after);

int cg_same_type(const jn_ir_graph *g, int32_t a, int32_t b);
/* v is a 0-d `const` input: *val its value. */
int cg_const(const jn_ir_graph *g, int32_t v, double *val);
/* v is a 0-d scalar input (fed at run time, SCALAR) or const input: 1 and
 * its recorded value.  A pass that then relies on that value calls
 * cg_specialise. */
int cg_scalar(const jn_ir_graph *g, int32_t v, double *val);
/* The pass `why` relies on the recorded value of 0-d scalar input v: it
 * becomes a const input with a NEED scalar guard (a replay that passes
 * another value misses, naming the pass).  JN_OK when it already is one. */
jn_status cg_specialise(jn_ir_graph *g, int32_t v, const char *why);
/* Index of the node defining v, -1 if v is no node output. */
static inline int32_t cg_def(const jn_ir_graph *g, int32_t v) {
    return g->values[v].kind == JN_IR_V_NODE ? g->values[v].def : -1;
}
static inline int cg_flags(jn_op op) { return jn_op_info(op)->flags; }
/* Is d >= need for every value of the symbols (a proof, else 0)?  Exact
 * when both are polynomials (dims and induction variables never negative);
 * sizes rounded up to a multiple of k compare through what they round
 * (p_plan.c). */
int cg_dim_ge(const jn_ir_graph *g, jn_ir_dim d, jn_ir_dim need);
/* Bytes of value v (numel * element size) rounded up to 64, as a dim. */
jn_ir_dim cg_value_bytes(jn_ir_graph *g, int32_t v);
/* Is loop `outer` (or -1, the top level) loop l or around it? */
int cg_encloses(const jn_ir_graph *g, int32_t outer, int32_t l);
/* Which values may live in the arena (node outputs that are no views and do
 * not leave the graph, directly or through a view); 1 per value. */
jn_status cg_arena_eligible(const jn_ir_graph *g, uint8_t **out);

#define CG_ALIGN 64

#endif
