/* an_internal.h -- the analyzer's private data model, shared by its passes.
 *
 * The analyzer streams: a step is decoded (load.c), split at sync points
 * (segment.c), each segment is put in SSA form over canonical value numbers
 * (functionalize.c) and then collapsed into an EXEMPLAR: all segments that
 * agree in structure, dataflow, dtypes and shapes are one exemplar with a
 * count and per-slot statistics of what may still vary inside it (int and
 * float attributes, Python scalars, the Philox offset).  Memory therefore
 * grows with the number of distinct exemplars, not with recorded ops.
 * Later passes work on exemplars only: loops.c folds tandem repeats,
 * selfcheck.c proves a loop graph against every exemplar it stands for,
 * align.c sorts the exemplars of a group into structures and variants,
 * generalize.c turns each structure into one IR graph, guards.c adds its
 * guards.  analyze.c runs them in order (jn_an_analyze).
 */
#ifndef AN_INTERNAL_H
#define AN_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "jn_an.h"

#define AN_FNV_INIT 0xcbf29ce484222325ULL
static inline uint64_t an_fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ULL;
    return h;
}
static inline uint64_t an_mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

/* Grow *arr (element size es) so that index n fits; -1 on OOM (error set). */
int an_grow(void *arrp, int64_t *cap, int64_t n, size_t es);

/* ------------------------------------------------ u64 -> i64 hash map */
typedef struct {
    uint64_t *k;
    int64_t *v;
    uint8_t *used;
    size_t cap, n;
} an_map;
/* Slot of key k (inserted with value `dflt` if absent); NULL on OOM. */
int64_t *an_map_get(an_map *m, uint64_t k, int64_t dflt, int *isnew);
int64_t *an_map_find(const an_map *m, uint64_t k);
void an_map_clear(an_map *m);
void an_map_free(an_map *m);

/* --------------------------------------------------------- decoded step */
/* A decoded tensor reference, without what the analyzer never needs
 * (strides and offset are reduced to `contig`). */
typedef struct {
    int64_t id;
    double scalar;            /* JN_TR_SCALAR: the Python value */
    int64_t shape[JN_MAX_DIMS];
    uint8_t dtype, ndim, device, role, pytype, contig;
} an_tref;

typedef struct {
    uint8_t kind, inplace, nattrs, nin, nout, sync_kind, dec_kind;
    int16_t op;               /* this build's jn_op */
    int32_t attr0;            /* its attributes: the step's attrs[attr0 .. attr0 + nattrs) */
    int64_t callsite, stack;
    double value;
    int64_t tensor_id, outcome;
    int64_t ref0;             /* first tref in the step's tref array (nin + nout; JN_EV_LIVE: nlive ids) */
    int32_t nlive;            /* JN_EV_LIVE: tensors still alive where the segment ends */
} an_event;

/* A region marker (JN_EV_REGION): kept beside the events, not among them,
 * so the passes that build graphs never see one; regions.c merges them
 * back by position (`at`: the events decoded before it). */
typedef struct {
    int64_t at, region;
    uint8_t enter;
    int64_t arg0;             /* its argument ids: the step's rargs[arg0 .. arg0 + nargs) */
    uint32_t nargs;
} an_regev;

typedef struct {
    an_event *ev;   int64_t nev, capev;
    an_tref *tr;    int64_t ntr, captr;
    jn_attr *attrs; int64_t nattrs, capattrs;
    an_regev *reg;  int64_t nreg, capreg;
    int64_t *rargs; int64_t nrargs, caprargs;
} an_stepbuf;

/* ------------------------------------------------------ exemplar model */
typedef struct {
    int32_t val;              /* value index in the exemplar's value table */
    int32_t obj;              /* the tensor OBJECT (an_tid index, in order of first
                               * appearance in the segment), -1 for a Python scalar:
                               * what replay's matcher follows (jn_ir_match.h) */
    uint8_t dtype, ndim, device, role, pytype, noncontig;
    int64_t shape[JN_MAX_DIMS];
} an_ref;

typedef struct {
    int16_t op;
    uint8_t nin, nout, inplace;
    uint8_t synth;            /* added by the analyzer (a view splice), not recorded */
    int32_t mirror;           /* synth: the recorded view op (index in this exemplar's ops)
                               * whose position attributes it repeats (a splice of that
                               * view, or the view taken again), -1 */
    int64_t site, stack;
    uint64_t token;           /* op, site, stack, arity, input dtypes/pytypes, structural attrs */
    int32_t attr0;            /* its attributes: attrv[attr0 .. attr0 + nattrs) of the exemplar,
                               * the first instance's values (bool/dtype/list lengths exact) */
    uint8_t nattrs;
    int32_t ref0;             /* refs[ref0 .. ref0+nin+nout) */
    int32_t islot0, fslot0;   /* first int / float slot of this op */
} an_op;

typedef struct {
    int32_t def;              /* producing op, or -1 for an external */
    uint8_t idx;              /* output index */
    uint8_t role;             /* external: JN_TR_* of its first reference */
    uint8_t keep;             /* final value of a tensor referenced after the segment */
    uint8_t live;             /* ... of one only alive where the segment ended (JN_EV_LIVE):
                               * kept too, unless it is a loop iteration's value */
    uint8_t written;          /* external: overwritten in the segment */
    int32_t overwrites;       /* final value of an external tensor: that external's value, else -1 */
    int64_t bind;             /* external PARAM/STATE: the tensor id, else 0 */
    int32_t ref;              /* external: its first reference (an input, or the
                               * output of a write into a tensor not read here) */
} an_val;

typedef struct {
    int64_t first, lo, hi;
    uint8_t varied;           /* differed between instances of this exemplar */
    uint64_t hseq, hdelta;    /* hashes of the values and of (value - first) over the
                               * instances, in order: two varied slots that always
                               * agree (or differ by a constant) share a symbol */
} an_islot;

typedef struct {
    double first, lo, hi;
    uint8_t varied;
} an_fslot;

typedef struct {
    int32_t pos;              /* ops before it */
    uint8_t kind;
    int64_t site, outcome;
} an_dec;

typedef struct {
    int32_t start, period, count; /* ops [start, start + period*count) */
} an_rep;

enum { AN_R_VIEW_WRITE = 1, AN_R_STALE_VIEW = 2, AN_R_INCONSISTENT = 3 };

typedef struct an_ex {
    int32_t group;
    uint64_t hash;
    int32_t next;             /* next exemplar with the same hash bucket chain, -1 */
    int32_t nops, nrefs, nvals, nislots, nfslots, ndecs;
    an_op *ops;
    an_ref *refs;
    an_val *vals;
    an_islot *islots;
    an_fslot *fslots;
    an_dec *decs;
    jn_attr *attrv; int32_t nattrv;
    int64_t count, step_lo, step_hi, run_lo, run_hi;
    uint8_t exit_kind;        /* 0 step end, else the JN_SYNC_* that ended it */
    int64_t exit_site;
    int reason_code;          /* why it cannot be captured (AN_R_*), 0 = it can */
    int reason_op;
    int64_t reason_site;
    int32_t structure;        /* set by align.c */
    an_rep *reps; int32_t nreps;  /* tandem repeats of its tokens (loops.c), nreps -1 = not computed */
    /* The first random op's Philox offset (the graph's rng symbol): its
     * first segment's value and the range over its segments.  Every random
     * op's offset slot holds its distance from it (the first's 0), so a
     * random op in a loop body steps by its numel like any int attribute. */
    uint8_t has_rng;
    int64_t rng_first, rng_lo, rng_hi;
} an_ex;

typedef struct {
    uint8_t prev_kind;        /* 0 step start, else JN_SYNC_* */
    int64_t prev_site, first_site;
    int32_t *ex; int64_t nex, capex;
} an_group;

/* ------------------------------------------------------- the analysis */
typedef struct an_ctx {
    jn_db *db;
    const jn_an_options *opt;
    jn_an_stats *st;
    /* current run */
    int64_t run, step;
    int16_t *opmap; int nopmap;   /* run's optable index -> this build's jn_op */
    an_map lastuse;               /* tensor id -> last position (2*segment [+1 for a sync]) */
    an_map livepos;               /* tensor id -> last position it was alive after (JN_EV_LIVE) */
    int64_t pos;                  /* 2 * index of the current segment */
    an_stepbuf sb;
    /* exemplars and groups */
    an_ex *ex; int64_t nex, capex;
    an_map exhash;                /* hash -> first exemplar index */
    an_group *groups; int64_t ngroups, capgroups;
    an_map grouphash;
    /* scratch of the segment being canonicalized */
    an_ex scr;
    int64_t capops, caprefs, capvals, capislots, capfslots, capdecs, capattrv;
    an_map idmap;                 /* tensor id -> index into ids[] */
    struct an_tid *ids; int64_t nids, capids;
    /* output */
    jn_ir_module *m;
    char **reasons; int64_t nreasons, capreasons;
    an_map sites;                 /* call site ids referenced by the module */
    /* the range of every dim of every op's tensors and every int
     * attribute, by place (call site and stack, op, which of that line's
     * ops of that op it is and how many the segment has, argument or int
     * slot, dim), over every segment of the recording: generalize.c makes one
     * that is constant in a graph but took other values at the same place
     * elsewhere a symbol (an epoch's first step, seen once, shares the
     * batch symbol of the steps after it; its hidden size, constant
     * everywhere, stays a constant).  Ops of one line are told apart by
     * their occurrence among the segment's ops of that line and op, on
     * the folded sequence (a loop body once, its iteration apart). */
    an_map dimvar;                /* an_dim_key -> index into dv */
    struct an_dimrange { int64_t lo, hi; } *dv; int64_t ndv, capdv;
    jn_db_site *dbsites; int ndbsites, dbsites_loaded; /* the store's call sites, read at first use */
    struct an_rg *rg;             /* the regions pass (regions.c); NULL when not asked for */
} an_ctx;

typedef struct an_tid {
    int64_t id;
    int32_t cur;                  /* current value */
    int32_t ext;                  /* external value it entered as, -1 */
    int32_t view_base;            /* a view made here: its parent's an_tid (the view op's input), -1 */
    int32_t gen;                  /* writes to this tensor (or new values of a view) so far */
    int32_t base_gen;             /* for a view: the parent's gen its current value was taken at */
    uint8_t is_view;              /* made by a view op in this segment */
    uint8_t splice;               /* a view a write can be spliced back into its parent:
                                   * 1 slice (any step), 2 select, 3 reshape, 4 transpose,
                                   * 5 permute, 0 no */
    uint8_t rederive;             /* the view op can be taken again from a new parent value */
    int16_t vop;                  /* the view op ... */
    int32_t vop_i;                /* ... its index in the segment's ops (a recorded op) ... */
    int32_t vattr0;               /* ... and its attributes (the step buffer's attrs[vattr0..]) */
    int8_t perm[JN_MAX_DIMS];     /* 5: the permutation */
    int32_t vdim;                 /* 1, 2: along this dim of the parent */
    int64_t va, vlen, vstep;      /* 1: start, length, step; 2: index; 4: the two dims */
    int32_t type_ref;             /* the ref that gave its current value's type */
} an_tid;

/* load.c */
jn_status an_run_ids(an_ctx *c, int64_t **ids, int64_t *n);
jn_status an_load_optable(an_ctx *c);
jn_status an_step_ids(an_ctx *c, int64_t **steps, int64_t *n);
jn_status an_decode_step(an_ctx *c, int64_t step);
jn_status an_corrupt(an_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* segment.c */
jn_status an_note_uses_step(an_ctx *c);     /* pass 1 over the decoded step */
jn_status an_segment_step(an_ctx *c);       /* pass 2: segments -> exemplars */

/* regions.c: the verdict on every recorded region (jn_an_options.regions) */
jn_status an_regions_begin(an_ctx *c);      /* allocate its state (c->rg) */
jn_status an_regions_run(an_ctx *c);        /* a run starts: its regions and their code rows */
jn_status an_regions_step(an_ctx *c);       /* pass 2, over the decoded step */
jn_status an_regions_end(an_ctx *c);        /* the verdicts into opt->regions */
void an_regions_free(an_ctx *c);

/* functionalize.c */
jn_status an_functionalize(an_ctx *c, const an_event *ev, int64_t n);
uint64_t an_ex_hash(const an_ex *e);
int an_ex_same(const an_ex *a, const an_ex *b);

/* loops.c */
/* Tandem repeats of tokens[0..n): greedy, left to right, non-overlapping,
 * count >= 2.  Returns how many (*out malloc'ed), -1 on OOM. */
int32_t an_find_repeats(const uint64_t *tok, int32_t n, an_rep **out);

typedef struct {
    int32_t next_j, next_idx;     /* body op and output that feed the next iteration */
    int32_t init;                 /* E0 value that seeds iteration 0 */
} an_tcarry;

typedef struct {
    int32_t body_j, body_idx;     /* the body value collected over all iterations */
    int32_t consumer;             /* template op (after the loop) that stacks/cats them */
} an_tcollect;

typedef struct {
    int32_t tfirst, p;            /* template ops [tfirst, tfirst + p) are the body */
    int32_t *count, *estart;      /* per exemplar: trip count, op index of iteration 0 */
    an_tcarry *carry; int32_t ncarry;
    an_tcollect *coll; int32_t ncoll;
    uint32_t *kept;               /* per body op: bit k, output k is kept by Python in an
                                   * iteration before the last (autograd's saved values
                                   * across a sync): collected, each iteration's object
                                   * filled from its slice (JN_IR_MO_ALL) */
} an_tloop;

/* A read of another loop's body value, not through a carry: the body
 * value (j, idx) of loop `src` at the iteration c + i, or (trip - 1 - c) - i
 * when from_end, where i is the reading loop's iteration (0 for a plain op
 * after the loops).  The IR collects the value over src's iterations and
 * reads it back with select(collect, 0, index): how a backward loop reads
 * its forward loop's saved values in reverse, and how the peeled first and
 * last iterations around a loop read single ones.  With `param`, (j, idx)
 * is a carry's next and the carry's param (its input) is collected: the
 * seed at iteration 0, the next of iteration k - 1 at k (a cell's h[t-1]). */
typedef struct {
    int32_t src, j, idx;
    int32_t at;                   /* the reading template loop, -1 for a plain op */
    uint8_t from_end, param;
    int64_t c;
} an_txread;

/* How a structure's exemplars line up: template op t is op eop[e][t] of
 * exemplar e (iteration 0 inside a loop).  A structure without loops has
 * eop[e][t] == t. */
typedef struct an_tmpl {
    int32_t nt, m;
    int32_t *loop;                /* per template op: its loop, -1 */
    int32_t **eop;
    an_tloop *loops; int32_t nloops;
    int32_t *carry_of_ref;        /* E0 ref index -> carry + 1 for loop-carried inputs (iteration 0), 0 */
    int64_t *slope;               /* E0 int slot -> per-iteration step of a body attribute */
    an_txread *xr; int32_t nxr;   /* reads of other loops' values (see an_txread) */
    int32_t *xread_of_ref;        /* E0 ref index -> xr index + 1, 0 */
    int32_t *each_of_ref;         /* E0 ref index -> loop + 1: reads an outside tensor of
                                   * its own per iteration (a stacked input), 0 */
    int32_t *eachprev_of_ref;     /* E0 ref index -> the each_of_ref ref + 1 whose previous
                                   * iteration's tensor it reads (iteration 0: its own), 0 */
    int32_t *eachlast_of_ref;     /* E0 ref of an op after the loops -> the each_of_ref ref + 1
                                   * whose last iteration's tensor it reads, 0 */
} an_tmpl;

void an_tmpl_free(an_tmpl *t);
/* Plain template (no loops) for m exemplars of one structure. NULL on OOM. */
an_tmpl *an_tmpl_plain(an_ctx *c, const int32_t *ex, int32_t m);
/* Template with the repeats whose count varies across ex[] folded into
 * loops; *tmpl NULL (and *why set) when the exemplars cannot be expressed
 * with loops.  JN_OK unless out of memory. */
jn_status an_tmpl_loops(an_ctx *c, const int32_t *ex, int32_t m, an_tmpl **tmpl, const char **why);
/* Do a and b fold to the same item sequence (loop counts aside)? */
int an_folded_same(const an_ex *a, const an_ex *b);
uint64_t an_folded_hash(const an_ex *e);  /* equal for exemplars that fold the same */
jn_status an_fold(an_ex *e);

/* align.c */
typedef struct {
    int32_t group, variant, parent, diverge;
    int64_t decided, support;
    int32_t *ex; int32_t nex;
    char *reason;
    struct an_tmpl *tmpl;
} an_struct;
jn_status an_align(an_ctx *c, an_group *g, an_struct **out, int32_t *n);

/* generalize.c: the working state of one structure -> graph */
typedef struct {
    jn_ir_dim d;
    int32_t sym;
    int64_t *vec;             /* values over the exemplars; NULL = not matchable */
    /* a symbol for int slots that varied inside exemplars: the slots' hashes
     * combined over the exemplars, and their first values */
    uint64_t hseq, hdelta;
    int64_t *firsts;
    uint8_t position;         /* a position that never moved (ops_pos.def), an extent
                               * (gen_extent) or a data count, made a symbol anyway:
                               * bound through firsts, matched by no value */
    uint8_t promoted;         /* a dim that never varied here but did elsewhere in the
                               * recording (an_ctx.dimvar): matched by equal values */
    uint8_t count;            /* a count the data decides that never varied (counts.c): a
                               * symbol anyway, bound through firsts */
} an_cand;

typedef struct an_gen {
    an_ctx *c;
    jn_ir_graph *g;
    const an_ex **E;          /* the structure's exemplars */
    int m;
    int64_t *vec;             /* scratch, m entries */
    struct an_tmpl *T;
    int32_t *irval;           /* E0 value -> IR value, -1 */
    int32_t *irin;            /* external value -> IR input index, -1 */
    int32_t *ext_at_ref;      /* ref index -> the external value first referenced there, -1 */
    an_cand *cands; int64_t ncands, capcands;
    int32_t nsym, nivar, rng;
    int32_t *coll_out;        /* template op -> the collect it consumes (IR value), -1 */
    int32_t *ivar, *irloop;   /* per template loop: its induction symbol, its IR loop */
    int32_t *xcoll;           /* per cross-loop read (an_txread): the collect it selects from */
    int32_t *each_sel;        /* E0 ref of a stacked read: its select in the body, -1 */
    int32_t *eprev;           /* E0 ref of a previous-iteration stacked read: its carry + 1, 0 */
    int64_t *rng_vec;         /* per exemplar: the first random op's offset (the rng symbol) */
    /* The random ops before the next one, outside loops: their outputs' numel
     * summed as an expression of the graph's dims, and per exemplar as
     * recorded; rng_exact 0 once one is in a loop or a distance was not that
     * sum (the dispatcher advances the offset by each random op's numel). */
    jn_ir_dim rng_dist;
    int64_t *rng_sum;
    int rng_exact;
    int64_t *trip_lo, *trip_hi; int32_t ntrip;   /* per IR loop: trip counts seen */
    int32_t *node_of;         /* template op -> its IR node (gen_node), -1 */
    int32_t *out_t, *out_j;   /* per graph output: the template op and output it came from, */
    uint8_t *out_all;         /* ... 1: a collect of every iteration's object (an_tloop.kept) */
    char what[96];            /* what the dim or int being generalized is, for guard notes */
    int32_t *occ;             /* per E0 op: which of its line's ops it is, of how many, its iteration */
    uint64_t place;           /* an_dim_key of what an_gen_dim generalizes now, 0 none */
    int32_t pos_t;            /* template op whose positions gen_node is generalizing, -1 */
    jn_ir_dim pos_prev;       /* ... its previous position that never moved (a symbol), and */
    int64_t pos_prev_v;       /* ... that position's value: a later one is pos_prev + c */
    const char **sym_note; int64_t capnote;      /* per symbol: what it was first */
    struct an_fshare *fsh; int64_t nfsh, capfsh; /* float attributes' shared scalar inputs */
    /* counts.c: counts the data decides (a mask's) that never varied (ids 1..ncnt, their
     * values over the exemplars in cfirsts), and per E0 value dim and per
     * E0 op int slot the count it is, 0 none */
    int ncnt;
    int64_t *cfirsts;
#define AN_COUNT_SLOTS 16
    int8_t (*cval)[JN_MAX_DIMS];
    int8_t (*cslot)[AN_COUNT_SLOTS];
} an_gen;

jn_status an_generalize(an_ctx *c, const an_struct *s, const an_group *grp, jn_ir_graph *g);
/* an_generalize, then (why != NULL) the self-check of the graph (selfcheck.c):
 * *why says how it differs from a recorded exemplar, NULL when it is exact. */
jn_status an_generalize_checked(an_ctx *c, const an_struct *s, const an_group *grp, jn_ir_graph *g,
                                const char **why);
/* counts.c: G->cval, G->cslot (JN_ERR_NOMEM). */
jn_status an_counts(an_gen *G);
/* selfcheck.c: NULL when every exemplar of G expands exactly, else why not. */
const char *an_selfcheck(an_gen *G);
int32_t an_gen_sym(an_gen *G, const char *prefix, jn_ir_sym_kind kind, int64_t lo, int64_t hi, int64_t site);
jn_ir_dim an_gen_dim(an_gen *G, const int64_t *vec, jn_ir_sym_kind kind, int64_t site, jn_status *err);
/* an_ctx.dimvar's key, and its fill over every exemplar (before any graph). */
#define AN_SLOT_INT 1000      /* an_dim_key slot of int slot n: AN_SLOT_INT + n */
uint64_t an_dim_key(const an_op *o, const int32_t *occ, int slot, int dim);
jn_status an_dim_ranges(an_ctx *c);

/* matcher.c: the replay matcher's program for graph G->g (module index
 * gi, its group entered at `entry`: 0 step start, else the JN_SYNC_* before it), kept for jn_an_matcher_section; a graph it cannot describe gets
 * none (noted with a reason).  JN_OK unless out of memory. */
jn_status an_matcher_build(an_gen *G, int32_t gi, int entry);
void an_matcher_clear(void);

/* guards.c */
jn_status an_guard_tensor_input(an_gen *G, int32_t in, int64_t site);
jn_status an_guard_scalar_input(an_gen *G, int32_t in, int64_t site);
jn_status an_guard_symbols(an_gen *G);

/* analyze.c */
jn_status an_reason(an_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void an_use_site(an_ctx *c, int64_t site);
const char *an_site_str(an_ctx *c, int64_t site, char *buf, size_t n);
const char *an_op_name(int op);

#endif
