/* jn_region.h -- regions whose Python is skipped (replay/region.c).
 *
 * A region is one call at a boundary janus owns (an optimizer's step, a
 * module's call) whose body was proved a pure tensor program
 * (janus/_region.py: bytecode scan, observed calls).  Each template op
 * runs under the grad mode it was observed with; a module call's ops record
 * autograd into one group node whose backward is eager's (region.c).
 * Its template is the op sequence the body dispatches, over slots: the
 * first `nbound` are bound by the caller at every call (parameters,
 * gradients, optimizer state), the rest are the ops' new outputs.  Running
 * the template dispatches exactly the ops the Python would have, in the
 * same order, through jn_dispatch / jn_dispatch_into, so lazy capture, the
 * matcher and the graphs see the very same stream, and the results are
 * the Python's bit for bit.
 *
 * The template is learned in the process from observed calls: while
 * observation is on, the replay's dispatch hook logs every op (input and
 * output tensor identities, wrapped numbers' values, attributes) and every
 * sync point.  The caller (the extension, csrc/region_py.c) turns two
 * observed calls into a template, checks its entry guards and binds the
 * slots; this file keeps the templates, runs them, and counts calls,
 * replacements and misses per region on the jn_replay object.  Under
 * capture a template's ops are matched with the checks it proves left out
 * (batch matching, region.c; JANUS_REPLAY_REGION_BATCH=0: op by op).
 *
 * Prefix jn_rp_region_.
 */
#ifndef JN_REGION_H
#define JN_REGION_H

#include <stdint.h>

#include "jn_replay.h"
#include "jn_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One op seen while observing. */
typedef struct {
    jn_op op;
    int nin, nout;
    int64_t in_id[JN_MAX_INS];
    uint8_t in_wrapped[JN_MAX_INS]; /* a wrapped Python number: dtype and value below */
    uint8_t in_dtype[JN_MAX_INS];
    double in_val[JN_MAX_INS];
    int64_t out_id[JN_MAX_OUTS];
    uint8_t grad;               /* grad mode when it ran (a no_grad block inside a forward) */
    uint8_t in_det[JN_MAX_INS]; /* input i is a header detach made (same id, no autograd history) */
    jn_attrs a;
} jn_rp_region_event;

/* Start (on: the log is cleared) or stop observing. */
void jn_rp_region_observe(jn_replay *r, int on);
/* The ops logged since observation started; *nsync: sync points seen. */
/* While observing: `out` was made by detach from `src` outside the
 * dispatcher (a second header with src's id and no autograd history).  It
 * is held until the next observation, so that the ops reading it are
 * marked (in_det) and jn_rp_region_detached can tell it from src: a
 * template reads src instead, exact only where grad mode is off. */
void jn_rp_region_alias(jn_replay *r, const jn_tensor *src, jn_tensor *out);
/* Is t a header detach made during the last observation? */
int jn_rp_region_detached(const jn_replay *r, const jn_tensor *t);
const jn_rp_region_event *jn_rp_region_log(const jn_replay *r, int64_t *n, int64_t *nsync);

/* How a template op writes its outputs. */
enum { JN_RP_RG_NEW = 0, JN_RP_RG_INPLACE = 1, JN_RP_RG_INTO = 2 };

/* an attribute that is the negated call value k (jn_rp_region_op.aval) */
#define JN_RP_AVAL_NEG(k) (-2 - (k))

typedef struct {
    jn_op op;
    int mode, nin, nout;
    int32_t in[JN_MAX_INS];     /* >= 0: a slot; < 0: constant scalar -1-in */
    int32_t out[JN_MAX_OUTS];   /* NEW: the fresh slot it defines; INTO / INPLACE: the slot written */
    jn_attrs a;
    int32_t aval[JN_MAX_ATTRS]; /* -1: a's value; k >= 0: float attribute = the call's vals[k];
                                 * JN_RP_AVAL_NEG(k) (<= -2): -vals[k] (SGD's alpha = -lr) */
    int8_t grad;                /* grad mode the op runs under (as observed) */
} jn_rp_region_op;

typedef struct {
    double v;
    int dtype;                  /* jn_dtype of the wrapped number */
} jn_rp_region_const;

/* Register a template (copied) under a name (for the counters).  Returns
 * its id >= 0, or -1 with jn_errmsg() set when the template is malformed
 * (a slot used before it is defined, an index out of range). */
int jn_rp_region_add(jn_replay *r, const char *name, int nbound, int nslots, int nvals,
                     const jn_rp_region_op *ops, int nops, const jn_rp_region_const *c, int nc);
/* Run template id: bound[0..nbound) are the bound slots (borrowed), vals
 * its float values.  ret[k] gets a new reference to slot ret_slot[k]'s
 * tensor (k < nret).  Each op runs under the grad mode it was observed
 * with; the ops that record autograd record into one group node
 * (jn_ag_group_begin: backward bitwise eager's) unless the template keeps
 * per-op nodes (region.c, rg_group_plan); the caller's mode is restored.
 * Counts one replaced call. */
jn_status jn_rp_region_run(jn_replay *r, int id, jn_tensor *const *bound, const double *vals, int nret,
                           const int32_t *ret_slot, jn_tensor **ret);
/* Free template id's ops and plans (a module region's variant evicted,
 * csrc/region_py.c): it never runs again (jn_rp_region_run refuses it); its
 * id and name stay, so ids and counters do not move. */
void jn_rp_region_drop(jn_replay *r, int id);
/* A call of region `name` that ran its Python: why (a guard's miss, a
 * refusal, "learning").  refused: the region will never be replaced. */
void jn_rp_region_note(jn_replay *r, const char *name, const char *why, int refused);
/* One more reason for the call just noted, counted in its own row: a
 * module region keeping several variants (train / eval, ...) counts the
 * miss of each ("variant N: why"), so a call no variant matched counts once
 * in calls and once per variant kept in the reason rows. */
void jn_rp_region_note_also(jn_replay *r, const char *name, const char *why);

/* A call of region `name` that ran without its Python and without a template
 * (Optimizer.zero_grad, done from C by the extension). */
void jn_rp_region_replaced(jn_replay *r, const char *name);

/* Strict replay: a region call that runs its Python is an error. */
int jn_rp_region_strict(const jn_replay *r);

typedef struct {
    int64_t calls, replaced;    /* boundary calls seen, calls run from the template */
    int nregions, nreplaceable, nrefused;
    int64_t batch_ops;          /* template ops matched with the checks their template proves left out */
    int batch_plans;            /* (template, graph token) pairs those proofs were made for */
} jn_rp_region_stats;
void jn_rp_region_get_stats(const jn_replay *r, jn_rp_region_stats *st);
/* The i-th most frequent reason a call ran its Python ("<region>: <why>");
 * NULL past the end. */
const char *jn_rp_region_reason(const jn_replay *r, int i, int64_t *count);
/* The i-th region by name (first seen first): its calls, replaced calls and
 * whether it was refused; NULL past the end. */
const char *jn_rp_region_info(const jn_replay *r, int i, int64_t *calls, int64_t *replaced, int *refused);
/* The i-th reason row (first seen first): why a call of *region ran its
 * Python and how often; NULL past the last. */
const char *jn_rp_region_reason_at(const jn_replay *r, int i, const char **region, int64_t *count);

#ifdef __cplusplus
}
#endif
#endif
