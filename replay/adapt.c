/* adapt.c -- timing graphs against eager (config adapt), and the dispatch
 * hook that sees every op run eagerly.
 *
 * After its first hit, a graph's segments cycle through four phases: an
 * untimed compiled run, a timed one, an untimed eager run and a timed one
 * -- eager runs still feed the matcher (rp_eager_after), so the time is
 * known to be the graph's -- until AD_PAIRS (compiled, eager) pairs are
 * timed, or AD_SURE all on one side of the margin, each run as time per op
 * (a segment's length may follow the data); then the graph is kept, or
 * left to eager when the median of the pairs' compiled/eager ratios is
 * above 1 + margin: its segments then run eagerly from their first op,
 * without capture.  The untimed runs absorb a switch: before an eager run
 * the graphs' idle memory is given back (else eager's buffers come on top
 * of it), and the compiled run after it allocates and faults its arena in
 * again; each would otherwise be timed as the mode's cost.  Pairs, not two
 * medians: this machine's speed drifts within a run by more than the
 * difference measured.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_db.h"
#include "rp_internal.h"

static double median(double *v, int n) {
    for (int i = 1; i < n; i++) /* n <= AD_PAIRS: insertion sort */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Graph gi is left to eager: its idle memory goes, and the reason its
 * segments count as fallbacks is written once. */
static void leave_to_eager(jn_replay *R, int32_t gi, double mc, double me) {
    rp_adapt *ad = &R->g[gi].ad;
    jn_ex_release_idle(1); /* a graph still kept allocates it again at its next run */
    if (!R->nops) { /* the pending list's arrays, sized for its captures, too */
        free(R->ops);
        free(R->refs);
        free(R->attrs);
        R->ops = NULL;
        R->refs = NULL;
        R->attrs = NULL;
        R->capops = R->caprefs = R->capattrs = 0;
    }
    char why[512];
    snprintf(why, sizeof why,
             "graph %s left to eager: compiled, its segment took %.2fx the eager time (per op, median of %d "
             "back-to-back pairs: %.2f vs %.2f us); JANUS_REPLAY_ADAPT=0 keeps it",
             R->m->graphs[gi]->name, ad->med, ad->npairs, 1e6 * mc, 1e6 * me);
    ad->why = strdup(why);
    if (!ad->why) ad->state = AD_KEEP; /* out of memory: nothing to report it with */
}

/* Keep graph gi or leave it to eager, once its pairs are timed. */
static void adapt_decide(jn_replay *R, int32_t gi) {
    rp_adapt *ad = &R->g[gi].ad;
    const char *name = R->m->graphs[gi]->name;
    if (ad->state != AD_PROBE) return;
    if (ad->npairs < AD_PAIRS && ad->obs_turns > 8 * AD_PAIRS) { /* its eager runs never came out as it */
        ad->state = AD_KEEP;
        if (R->cfg.debug) fprintf(stderr, "[rp] graph %s kept: its eager runs could not be timed\n", name);
        return;
    }
    /* AD_SURE pairs all on one side of the margin decide early (each pair
     * costs an untimed run of each mode too); else all AD_PAIRS are timed */
    int n = ad->npairs, above = 0;
    for (int i = 0; i < n; i++) above += ad->ratio[i] > 1 + R->cfg.margin;
    if (n < AD_PAIRS && (n < AD_SURE || (above && above < n))) return;
    double r[AD_PAIRS], c[AD_PAIRS], e[AD_PAIRS];
    memcpy(r, ad->ratio, sizeof r);
    memcpy(c, ad->cap, sizeof c);
    memcpy(e, ad->obs, sizeof e);
    ad->med = median(r, n);
    double mc = median(c, n), me = median(e, n);
    ad->state = ad->med > 1 + R->cfg.margin ? AD_EAGER : AD_KEEP;
    if (R->cfg.debug)
        fprintf(stderr, "[rp] graph %s %s: compiled/eager %.2fx per op (median of %d pairs; medians %.2f vs %.2f us)\n",
                name, ad->state == AD_EAGER ? "left to eager" : "kept", ad->med, n, 1e6 * mc, 1e6 * me);
    if (ad->state == AD_EAGER) leave_to_eager(R, gi, mc, me);
}

/* The dispatch hook, installed for the whole replay, sees every op that
 * ran eagerly: it keeps the latest comparison (which bool() a sync is) and
 * feeds the matcher the ops of an observed segment. */
void rp_eager_after(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                    jn_tensor *const *out) {
    jn_replay *R = ctx;
    if (R->rg_observing) rp_region_tap(R, op, nin, in, a, nout, out);
    if (jn_rt_capturing) return; /* rp_cap_capture had it */
    R->seg_any = 1;
    rp_tl_eager_op(&R->tl, nout ? out[0]->id : -1);
    if (jn_op_is_comparison(op)) R->last_cmp = out[0]->id;
    if (R->seg_mode != SEG_OBSERVE) return;
    if (R->obs_skip) {
        R->obs_skip = 0;
        return;
    }
    jn_rp_match_arg ai[JN_MAX_INS], ao[JN_MAX_OUTS];
    for (int i = 0; i < nin; i++) rp_fill_arg(&ai[i], in[i], 0);
    for (int k = 0; k < nout; k++) rp_fill_arg(&ao[k], out[k], 1);
    jn_rp_match_event ev = {op, a->a, nin, nout, ai, ao};
    jn_rp_match_result res;
    if (jn_rp_match_feed(R->mt, &ev, &res) != JN_RP_MATCH_MISS) return;
    R->seg_mode = SEG_OFF;
    R->segments++;
    rp_note_miss(R, res.graph, res.guard, res.token, res.seen, res.why ? res.why : "no graph fits");
    jn_rp_match_reset(R->mt);
}

/* After a segment's first op (captured, fed, CONTINUE or COMPLETE): run it
 * eagerly from here when every graph it can become was left to eager, or
 * when a graph being timed wants an eager run; time it when a graph it
 * can become is being timed. */
jn_status rp_adapt_first(jn_replay *R, int into) {
    int32_t alive[64];
    int32_t n = jn_rp_match_alive(R->mt, alive, 64), probe = -1, all_eager = n > 0;
    for (int32_t i = 0; i < n; i++) {
        int st = R->g[alive[i]].ad.state;
        all_eager &= st == AD_EAGER;
        /* the one standing for the most recorded segments drives (as jn_rp_match_end prefers it) */
        if (st == AD_PROBE && (probe < 0 || R->m->graphs[alive[i]]->support > R->m->graphs[probe]->support))
            probe = alive[i];
    }
    if (!all_eager && probe < 0) return JN_OK;
    if (all_eager) {
        R->seg_mode = SEG_PLAIN;
        R->seg_graph = alive[0];
        jn_rp_match_reset(R->mt);
        /* a graph still kept may have run since: eager's buffers would
         * come on top of its arena (a free: no trim, no block cache) */
        jn_ex_release_idle(0);
    } else {
        rp_adapt *ad = &R->g[probe].ad;
        if (ad->phase < PH_EAGER_WARM) { /* a compiled run */
            R->seg_t0 = jn_rt_seconds();
            return JN_OK;
        }
        if (++ad->obs_turns > 8 * AD_PAIRS) {
            adapt_decide(R, probe); /* kept: its eager runs never came out as it */
            return JN_OK;
        }
        R->seg_mode = SEG_OBSERVE;
        R->obs_skip = !into; /* jn_dispatch calls the hook for this very op when capture returns */
        if (ad->phase == PH_EAGER_WARM) jn_ex_release_idle(1);
        R->seg_t0 = jn_rt_seconds();
    }
    jn_rt_capturing = 0;
    return rp_fallback(R, RP_BW_FELL_CHOICE); /* the first op */
}

void rp_adapt_hit(jn_replay *R, int32_t gi, int64_t nevents) {
    rp_adapt *ad = &R->g[gi].ad;
    if (ad->state != AD_PROBE || ad->phase >= PH_EAGER_WARM) return;
    if (ad->phase == PH_CAP && R->seg_t0 > 0 && nevents > 0) ad->last_cap = (jn_rt_seconds() - R->seg_t0) / (double)nevents;
    ad->phase++;
}

/* The end of a segment that ran eagerly by choice (SEG_OBSERVE, SEG_PLAIN,
 * SEG_OFF). */
jn_status rp_seg_end_eager(jn_replay *R) {
    int mode = R->seg_mode;
    R->seg_mode = SEG_CAPTURE;
    if (mode == SEG_OFF) return JN_OK;
    R->segments++;
    R->chosen++;
    if (mode == SEG_PLAIN) {
        rp_note_miss(R, R->seg_graph, JN_DB_MISS_CHOICE, -1, NAN, R->g[R->seg_graph].ad.why);
        return JN_OK;
    }
    jn_rp_match_result res;
    jn_rp_match_kind k = jn_rp_match_end(R->mt, &res);
    if (k != JN_RP_MATCH_COMPLETE) {
        R->chosen--;
        rp_note_miss(R, res.graph, res.guard, res.token, res.seen, res.why ? res.why : "the segment matched no graph");
        return JN_OK;
    }
    rp_adapt *ad = &R->g[res.graph].ad;
    double t = res.nevents > 0 ? (jn_rt_seconds() - R->seg_t0) / (double)res.nevents : 0; /* per op: lengths vary */
    if (ad->state == AD_PROBE && ad->phase == PH_EAGER_WARM) {
        ad->phase = PH_EAGER;
    } else if (ad->state == AD_PROBE && ad->phase == PH_EAGER) {
        if (t > 0 && ad->last_cap > 0 && ad->npairs < AD_PAIRS) {
            ad->cap[ad->npairs] = ad->last_cap;
            ad->obs[ad->npairs] = t;
            ad->ratio[ad->npairs++] = ad->last_cap / t;
        }
        ad->phase = PH_CAP_WARM;
    }
    char why[256];
    snprintf(why, sizeof why, "graph %s ran eagerly to time it against its compiled run (JANUS_REPLAY_ADAPT)",
             R->m->graphs[res.graph]->name);
    rp_note_miss(R, res.graph, JN_DB_MISS_CHOICE, -1, NAN, why);
    adapt_decide(R, res.graph);
    return JN_OK;
}
