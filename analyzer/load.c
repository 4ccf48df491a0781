/* load.c -- the analyzer's first pass: which runs and steps to read, the
 * run's op table mapped onto this build's, and one step's events decoded
 * and checked.
 *
 * Events name ops by their index in the RECORDING build's op table
 * (optables.ops, "name schema" rows in enum order).  Each name is looked up
 * in this build; a name it lacks, or the same name with another attribute
 * schema, means the events cannot be read faithfully, so the run is refused
 * with the fix (re-record with this janus).  A step's chunk is decoded
 * completely and every event checked against the op table (arity,
 * attribute kinds, dtype and device codes), so the later passes can trust
 * it; anything wrong is reported as "run R, step S: trace chunk is corrupt"
 * with JN_ERR_VALUE (and only that: a store that cannot be read or memory
 * running out keep their own status), so the caller can skip that step.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

jn_status an_corrupt(an_ctx *c, const char *fmt, ...) {
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return jn_error(JN_ERR_VALUE, "run %lld, step %lld: trace chunk is corrupt (%s); re-record the run or "
                    "delete this step", (long long)c->run, (long long)c->step, detail);
}

jn_status an_run_ids(an_ctx *c, int64_t **ids, int64_t *n) {
    int64_t only = c->opt ? c->opt->run_id : 0;
    jn_db_run_row *runs = NULL;
    int nruns = 0;
    *ids = NULL;
    *n = 0;
    jn_status s = jn_db_runs(c->db, only, &runs, &nruns);
    if (s) return s;
    if (only && !nruns)
        return jn_error(JN_ERR_VALUE, "the trace store has no run %lld; `janus inspect` lists its runs", (long long)only);
    if (nruns && !(*ids = malloc(sizeof **ids * (size_t)nruns))) s = jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    for (int i = 0; !s && i < nruns; i++) (*ids)[(*n)++] = runs[i].id;
    jn_db_runs_free(runs, nruns);
    return s;
}

jn_status an_step_ids(an_ctx *c, int64_t **steps, int64_t *n) {
    jn_db_step_row *rows = NULL;
    int nrows = 0;
    *steps = NULL;
    *n = 0;
    jn_status s = jn_db_steps(c->db, c->run, &rows, &nrows);
    if (s) return s;
    if (nrows && !(*steps = malloc(sizeof **steps * (size_t)nrows)))
        s = jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
    for (int i = 0; !s && i < nrows; i++) (*steps)[(*n)++] = rows[i].step;
    jn_db_steps_free(rows, nrows);
    return s;
}

jn_status an_load_optable(an_ctx *c) {
    jn_db_op_row *rows = NULL;
    int nrows = 0;
    free(c->opmap);
    c->opmap = NULL;
    c->nopmap = 0;
    jn_status s = jn_db_run_optable(c->db, c->run, &rows, &nrows);
    if (s) return s;
    if (!nrows) {
        s = jn_error(JN_ERR_VALUE, "run %lld has no op table in the trace store (it is damaged); re-record the run "
                     "with this janus", (long long)c->run);
        goto done;
    }
    if (!(c->opmap = malloc(sizeof *c->opmap * (size_t)nrows))) {
        s = jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
        goto done;
    }
    for (int i = 0; i < nrows; i++) {
        const char *name = rows[i].name, *schema = rows[i].schema;
        int op = jn_op_lookup(name);
        if (op < 0) {
            s = jn_error(JN_ERR_VALUE, "run %lld was recorded by a janus with op '%s', which this janus does not "
                         "have; re-record the run with this janus (or optimize it with the janus that "
                         "recorded it)", (long long)c->run, name);
            goto done;
        }
        const char *mine = jn_op_info((jn_op)op)->schema;
        if (strcmp(mine ? mine : "", schema)) {
            s = jn_error(JN_ERR_VALUE, "run %lld: op '%s' has attributes '%s' in the recording but '%s' in this "
                         "janus; re-record the run with this janus", (long long)c->run, name, schema,
                         mine ? mine : "");
            goto done;
        }
        c->opmap[c->nopmap++] = (int16_t)op;
    }
done:
    jn_db_run_optable_free(rows, nrows);
    return s;
}

/* Check one decoded op event against this build's op table. */
static jn_status check_op(an_ctx *c, const jn_db_event *e, int64_t k) {
    if (e->op >= (uint32_t)c->nopmap)
        return an_corrupt(c, "event %lld names op #%u, the run's op table has %d ops", (long long)k, e->op, c->nopmap);
    jn_op op = (jn_op)c->opmap[e->op];
    const jn_opinfo *in = jn_op_info(op);
    int variadic = (in->flags & JN_F_VARIADIC) != 0;
    if ((variadic ? e->nin < in->nin : e->nin != in->nin) || e->nout != in->nout || e->nout > JN_MAX_OUTS ||
        e->nin > JN_MAX_INS)
        return an_corrupt(c, "event %lld: %s with %d inputs and %d outputs", (long long)k, in->name, e->nin, e->nout);
    if (e->nattrs != in->nattrs)
        return an_corrupt(c, "event %lld: %s with %d attributes, expected %d", (long long)k, in->name, e->nattrs,
                          in->nattrs);
    for (int a = 0; a < e->nattrs; a++)
        if (e->attr_kind[a] != in->attr_kind[a])
            return an_corrupt(c, "event %lld: attribute %s of %s has the wrong kind", (long long)k, in->attr_name[a],
                              in->name);
    for (int i = 0; i < e->nin + e->nout; i++) {
        const jn_db_tref *t = i < e->nin ? &e->in[i] : &e->out[i - e->nin];
        if (t->dtype >= JN_NDTYPES || t->device > JN_CUDA || t->pytype > 3)
            return an_corrupt(c, "event %lld: %s tensor %d has a bad dtype, device or Python type", (long long)k,
                              in->name, i);
        for (int d = 0; d < t->ndim; d++)
            if (t->shape[d] < 0)
                return an_corrupt(c, "event %lld: %s tensor %d has a negative size", (long long)k, in->name, i);
    }
    return JN_OK;
}

/* Contiguous strides and no offset?  (Writes through a strided external are
 * refused, see functionalize.c.) */
static void compact(an_tref *o, const jn_db_tref *t) {
    o->id = t->id;
    o->scalar = t->scalar;
    o->dtype = t->dtype;
    o->ndim = t->ndim;
    o->device = t->device;
    o->role = t->role;
    o->pytype = t->pytype;
    memcpy(o->shape, t->shape, sizeof(int64_t) * t->ndim);
    uint64_t s = 1; /* unsigned: garbage sizes must not overflow */
    o->contig = t->offset == 0;
    for (int d = t->ndim - 1; d >= 0 && o->contig; d--) {
        if (t->shape[d] != 1 && (uint64_t)t->strides[d] != s) o->contig = 0;
        s *= (uint64_t)t->shape[d];
    }
}

jn_status an_decode_step(an_ctx *c, int64_t step) {
    c->step = step;
    an_stepbuf *b = &c->sb;
    b->nev = b->ntr = b->nattrs = b->nreg = b->nrargs = 0;
    void *data = NULL;
    size_t len = 0;
    jn_status s = jn_db_read_chunk(c->db, c->run, step, &data, &len);
    if (s) {
        if (s != JN_ERR_VALUE) return s; /* out of memory, the store unreadable: not this step's fault */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", jn_errmsg());
        return an_corrupt(c, "%s", msg);
    }
    jn_db_decoder *d = NULL;
    if ((s = jn_db_decoder_new(data, len, &d))) {
        free(data);
        return s;
    }
    for (int64_t k = 0;; k++) {
        jn_db_event e;
        int got = 0;
        if ((s = jn_db_decoder_next(d, &e, &got))) {
            if (s != JN_ERR_NOMEM) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s", jn_errmsg());
                char *cut = strstr(msg, " (the trace store");
                if (cut) *cut = 0;
                s = an_corrupt(c, "%s", msg);
            }
            break;
        }
        if (!got) break;
        if (e.kind == JN_EV_REGION) { /* beside the events (an_regev) */
            if (an_grow(&b->reg, &b->capreg, b->nreg + 1, sizeof *b->reg) ||
                an_grow(&b->rargs, &b->caprargs, b->nrargs + e.nargs, sizeof *b->rargs)) {
                s = JN_ERR_NOMEM;
                break;
            }
            b->reg[b->nreg++] = (an_regev){b->nev, e.region, e.region_enter, b->nrargs, e.nargs};
            for (uint32_t i = 0; i < e.nargs; i++) b->rargs[b->nrargs++] = e.args[i];
            continue;
        }
        if (e.kind == JN_EV_OP && (s = check_op(c, &e, k))) break;
        if (e.kind == JN_EV_SYNC && (e.sync_kind < JN_SYNC_ITEM || e.sync_kind > JN_SYNC_LAST)) {
            s = an_corrupt(c, "event %lld: unknown sync kind %d", (long long)k, e.sync_kind);
            break;
        }
        if (an_grow(&b->ev, &b->capev, b->nev + 1, sizeof *b->ev) ||
            an_grow(&b->tr, &b->captr, b->ntr + e.nin + e.nout + e.nlive, sizeof *b->tr) ||
            an_grow(&b->attrs, &b->capattrs, b->nattrs + e.nattrs, sizeof *b->attrs)) {
            s = JN_ERR_NOMEM;
            break;
        }
        an_event *o = &b->ev[b->nev++];
        memset(o, 0, sizeof *o);
        o->kind = e.kind;
        o->callsite = e.callsite;
        o->stack = e.stack;
        if (e.kind == JN_EV_OP) {
            o->op = c->opmap[e.op];
            o->inplace = e.inplace;
            o->nattrs = e.nattrs;
            o->attr0 = (int32_t)b->nattrs;
            for (int k = 0; k < e.nattrs; k++) b->attrs[b->nattrs++] = e.attrs.a[k];
            o->nin = e.nin;
            o->nout = e.nout;
            o->ref0 = b->ntr;
            for (int i = 0; i < e.nin + e.nout; i++)
                compact(&b->tr[b->ntr++], i < e.nin ? &e.in[i] : &e.out[i - e.nin]);
        } else if (e.kind == JN_EV_SYNC) {
            o->sync_kind = e.sync_kind;
            o->value = e.value;
            o->tensor_id = e.tensor_id;
        } else if (e.kind == JN_EV_LIVE) { /* ids only */
            o->ref0 = b->ntr;
            o->nlive = (int32_t)e.nlive;
            for (uint32_t i = 0; i < e.nlive; i++) {
                an_tref *t = &b->tr[b->ntr++];
                memset(t, 0, sizeof *t);
                t->id = e.live[i];
            }
        } else {
            o->dec_kind = e.dec_kind;
            o->outcome = e.outcome;
        }
    }
    jn_db_decoder_free(d);
    free(data);
    if (s == JN_ERR_NOMEM) return jn_error(JN_ERR_NOMEM, "out of memory decoding run %lld, step %lld",
                                           (long long)c->run, (long long)step);
    return s;
}
