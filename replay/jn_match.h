/* jn_match.h -- replay's matcher: decides, one dispatched op at a time,
 * whether the ops a script runs follow one of a bundle's graphs, and binds
 * what the graph needs to run (input tensors, symbol values, Python
 * scalars), checking every guard of the graph (ir/jn_ir.h) on the way.
 *
 * Built from a loaded bundle's module and its JN_CG_SEC_MATCHER section
 * (ir/jn_ir_match.h: per graph the RECORDED op tokens with loop back-edges
 * and where each input comes from).  Per segment (the ops between two sync
 * points, or step boundaries) the caller feeds every op event and then
 * calls jn_rp_match_end at the sync:
 *
 *   feed      CONTINUE   still following at least one graph
 *             COMPLETE   exactly one graph is matched to its end (what the
 *                        end of the segment will confirm)
 *             MISS       no graph fits; the result says which guard failed,
 *                        with the seen value and a sentence; the rest of the
 *                        segment answers MISS until jn_rp_match_end
 *   end       COMPLETE (graph, bindings) or MISS (the segment ended early,
 *             or an earlier miss), then a new segment starts; NONE for an
 *             empty segment.
 *
 * jn_rp_match_begin says where a segment starts (step start or after
 * which kind of sync), so only the groups that start there are followed.
 *
 * Candidates: every graph whose first token is the event's op starts a
 * cursor; a cursor dies at its first mismatch, so variants of a group are
 * followed side by side until they diverge (the trie's branch), each at
 * the cost of its own checks.  A loop's trip count is unknown until the
 * loop exits: at the end of a body the cursor tries the next iteration
 * first and the op after the loop second (greedy; a body whose first op is
 * indistinguishable from the op after the loop exits too late and misses).
 *
 * What is checked, per event: the op, every attribute (ints against the
 * graph's symbolic dims, binding symbols on first sight; floats against
 * constants or bound to scalar inputs), each input
 * tensor's identity (a graph input's tensor is bound on first sight with
 * its dtype, device, shape against the input's symbolic shape, and the
 * recorded tensor id for state; later reads and every intermediate must be
 * the very tensor the graph says), Python scalars (type; constants by
 * value; varying ones bound once), in-place writes into the right tensor,
 * every output's shape against the graph's symbolic shape, and loop trip
 * counts.  Guards of class NEED (jn_ir_guard_class) miss; a symbol or trip
 * count outside its recorded range (a SEEN guard) is followed on, and a
 * COMPLETE lists those guards with the values seen (extrapolated hits):
 * the output-shape checks are what keeps such a run from relying on a
 * shape relation that only the recorded values showed.  Identities are
 * what the caller says they are (jn_tensor.id at replay, the recorded ids
 * offline).
 *
 * Results point into the matcher and stay valid until the next feed/end.
 * Prefix jn_rp_match_.  Not thread-safe (one matcher per thread).
 */
#ifndef JN_MATCH_H
#define JN_MATCH_H

#include <stdint.h>
#include <stdio.h>

#include "jn_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct jn_rp_matcher jn_rp_matcher;

typedef struct {
    uint64_t id;              /* tensor identity; unused for a Python scalar */
    const int64_t *shape;
    uint8_t ndim, dtype, device;
    uint8_t pytype;           /* 0 a tensor, else a Python scalar: 1 int, 2 float, 3 bool */
    double scalar;            /* pytype != 0: its value */
} jn_rp_match_arg;

typedef struct {
    jn_op op;
    const jn_attr *attrs;     /* schema order (ops.def) */
    int nin, nout;
    const jn_rp_match_arg *in;
    const jn_rp_match_arg *out;  /* outputs; an in-place one is the tensor written */
} jn_rp_match_event;

/* A SEEN guard a completed segment went past. */
typedef struct {
    int32_t guard;            /* index in the graph's guards: its kind, target and recorded
                               * range (lo..hi); jn_ir_guard_explain(.., &seen, ..) says it */
    double seen;              /* the value this segment had */
} jn_rp_match_extrap;

typedef enum {
    JN_RP_MATCH_NONE = 0,     /* end of an empty segment */
    JN_RP_MATCH_CONTINUE,
    JN_RP_MATCH_COMPLETE,
    JN_RP_MATCH_MISS
} jn_rp_match_kind;

typedef struct {
    jn_rp_match_kind kind;
    int32_t graph;            /* COMPLETE: module graph index; MISS: the graph that got
                               * furthest (-1: none started) */
    /* COMPLETE (per graph symbol / input of module->graphs[graph]) */
    const int64_t *syms;      /* symbol values (loop induction variables: the last iteration) */
    const uint64_t *inputs;   /* tensor inputs: the bound identity (0 unused) */
    const double *scalars;    /* scalar/const inputs: the value seen */
    const int64_t *input_event;   /* per input: the event (of the segment) that bound it, -1 */
    const int32_t *input_arg;     /* ... and which argument: input j >= 0, output -1-k (an
                                   * in-place write), float attribute -100-k: where the
                                   * caller finds the tensor or number to run the graph with */
    int64_t nevents;          /* events of the segment */
    const int32_t *ev_token;  /* per event: the graph's token it matched */
    int32_t nextrap;          /* SEEN guards outside their recorded range (0: a plain hit) */
    const jn_rp_match_extrap *extrap;
    /* MISS */
    int32_t guard;            /* index of the failing guard in the graph, -1 if the
                               * failure is no guard of the IR (op, attribute, dataflow) */
    double seen;              /* the value seen there (guard >= 0) */
    int32_t token;            /* token of the graph where it failed, -1 */
    int64_t event;            /* event index in the segment */
    const char *why;          /* one sentence (valid until the next call) */
} jn_rp_match_result;

/* The matcher for module m (which must outlive it) and the bytes of its
 * JN_CG_SEC_MATCHER section.  Refuses (JN_ERR_VALUE, naming the graph and
 * field) a section that is truncated, corrupt, of another version, or
 * inconsistent with the module. */
jn_status jn_rp_match_new(const jn_ir_module *m, const void *sec, size_t len, jn_rp_matcher **out);
void jn_rp_match_free(jn_rp_matcher *mt);
/* Each graph's token program, one line a token (JANUS_MATCH_DUMP). */
void jn_rp_match_dump(const jn_rp_matcher *mt, FILE *f);

/* Where the next segment starts: 0 a step start, else the JN_SYNC_* kind of
 * the sync before it (jn_db.h); -1 (the default after each end) unknown.
 * Only graphs of groups that start there are followed. */
void jn_rp_match_begin(jn_rp_matcher *mt, int entry);
jn_rp_match_kind jn_rp_match_feed(jn_rp_matcher *mt, const jn_rp_match_event *ev, jn_rp_match_result *res);
/* The segment ended (a sync or the step's end).  Of the graphs followed to
 * their end, the one standing for the most recorded segments completes. */
jn_rp_match_kind jn_rp_match_end(jn_rp_matcher *mt, jn_rp_match_result *res);
/* Forget the current segment (as after a miss). */
void jn_rp_match_reset(jn_rp_matcher *mt);
/* The single-cursor fast path (on by default): once one cursor is left,
 * an event inside its program is checked against the token it expects
 * without the general path's per-cursor loop and loop-end decisions.  Off
 * only to test that both paths decide the same (tests/c/test_match.c). */
void jn_rp_match_set_fast(jn_rp_matcher *mt, int on);
/* Events the fast path decided since the matcher was made. */
int64_t jn_rp_match_fast_events(const jn_rp_matcher *mt);

/* Batch feeding (replay/region.c: a region template's ops, fed at
 * consecutive tokens).  Where the one cursor left stands: its graph, the
 * token it expects next, its loop (-1) and iteration, whether it stands at
 * that loop's body end (the next event decides between another iteration
 * and the op after the loop), and the segment's events so far; 0 when not
 * exactly one cursor follows the segment. */
typedef struct {
    int32_t graph, pos, loop;
    int loop_end;
    int64_t it, nev;
} jn_rp_match_at;
int jn_rp_match_where(const jn_rp_matcher *mt, jn_rp_match_at *at);

/* An op whose inputs' makers the caller knows: input j is output
 * prod_out[j] of the event matched at token prod_tok[j] of this iteration
 * (-1: made elsewhere); attrs its attribute values, the same every time
 * (NULL: they vary). */
typedef struct {
    jn_op op;
    int nin;
    const int32_t *prod_tok;
    const uint8_t *prod_out;
    const jn_attr *attrs;
} jn_rp_match_known_op;
#define JN_RP_MATCH_KNOWN_ATTRS ((uint64_t)1 << 63)
/* The checks of token pos of graph gi that hold by construction for op o:
 * bit j (< 63) input j's identity (the token's ref names the maker the
 * caller says, in the same iteration), JN_RP_MATCH_KNOWN_ATTRS every
 * attribute (all literal in the graph and equal to o's).  0: none. */
uint64_t jn_rp_match_known(const jn_rp_matcher *mt, int32_t gi, int32_t pos, const jn_rp_match_known_op *o);
/* jn_rp_match_feed with the checks in skip left out, only where the cursor
 * stands exactly at *at (one cursor, inside its loop body's iteration
 * at->it, at->nev events so far) and the makers the skipped bits name were
 * matched at their tokens in this iteration (the caller's proof); anywhere
 * else it is jn_rp_match_feed with every check.  The same results,
 * bookkeeping and failures as jn_rp_match_feed otherwise. */
jn_rp_match_kind jn_rp_match_feed_at(jn_rp_matcher *mt, const jn_rp_match_event *ev, const jn_rp_match_at *at,
                                     uint64_t skip, jn_rp_match_result *res);
/* Events jn_rp_match_feed_at decided with checks left out. */
int64_t jn_rp_match_known_events(const jn_rp_matcher *mt);

/* Whether a live cursor expects `op` next with the tensor `id` as its
 * input 0 (an unbound graph input counts: it would bind to it).  A peek
 * that changes nothing: replay asks it where the script's op is a choice
 * the data makes (reshape views or copies by layout, 5.1), so the script
 * runs the one the graph holds.  0 before the first feed, after a miss,
 * and for a cursor at a loop iteration's end (the next iteration's refs
 * are not resolved there). */
int jn_rp_match_expects(const jn_rp_matcher *mt, jn_op op, uint64_t id);

/* The module graphs the current segment can still become (live cursors,
 * each graph once, at most max): what replay decides a segment's mode by
 * after its first op.  0 before the first feed and after a miss. */
int32_t jn_rp_match_alive(const jn_rp_matcher *mt, int32_t *graphs, int32_t max);
/* Graphs with a matcher program. */
int32_t jn_rp_match_ngraphs(const jn_rp_matcher *mt);
/* Tokens of module graph gi (-1 if it has no program). */
int32_t jn_rp_match_ntokens(const jn_rp_matcher *mt, int32_t gi);
/* Whether some token output of graph gi collects every iteration's object
 * (jn_rp_match_token_output's *all). */
int jn_rp_match_collects_all(const jn_rp_matcher *mt, int32_t gi);
/* Whether input i of graph gi is STACKED ([trip, ...], jn_ir_match.h):
 * element it is what input *arg of token *tok reads in its it-th event. */
int jn_rp_match_input_each(const jn_rp_matcher *mt, int32_t gi, int32_t i, int32_t *tok, int *arg);
/* The graph OUTPUT index holding the final value of the tensor created by
 * output k of token tok of graph gi (what Python keeps), -1 if none; *all:
 * it collects the objects of every iteration of tok's loop, [it] is
 * iteration it's (else only the last iteration's object is that output). */
int32_t jn_rp_match_token_output(const jn_rp_matcher *mt, int32_t gi, int32_t tok, int k, int *all);

#ifdef __cplusplus
}
#endif
#endif
