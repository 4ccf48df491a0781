/* replay.c -- the replay object (jn_replay.h): its config from the
 * settings, making and freeing it, and the segments it follows.
 *
 * A segment starts at a step start or after a sync point (seg_begin:
 * capture on, the matcher told where it starts) and ends at the next one,
 * or when something reads a pending tensor (rp_seg_end): a COMPLETE match
 * runs its graph (graph_run.c), anything else the pending ops eagerly
 * (capture.c), or the segment already ran eagerly by choice (adapt.c).
 * The other concerns live in their own files (rp_internal.h lists them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_autograd.h"
#include "jn_db.h"
#include "jn_settings.h"
#include "rp_internal.h"


/* ------------------------------------------------------------ config */
void jn_rp_config_default(jn_rp_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->defer = 1;
    cfg->adapt = 1;
    cfg->margin = 0.10;
    cfg->region_batch = 1;
    cfg->backward_skip = 1;
    cfg->backward_plans = 256;
}

jn_status jn_rp_config_from_env(jn_rp_config *cfg) {
    jn_rp_config c;
    jn_rp_config_default(&c);
    jn_status s = jn_setting_bool(JN_S_REPLAY_STRICT, &c.strict);
    if (!s) s = jn_setting_bool(JN_S_REPLAY_SPECULATE, &c.speculate);
    if (!s) s = jn_setting_bool(JN_S_REPLAY_DEFER, &c.defer);
    if (!s) s = jn_setting_bool(JN_S_REPLAY_DEBUG, &c.debug);
    if (!s) s = jn_setting_bool(JN_S_REPLAY_ADAPT, &c.adapt);
    if (!s) s = jn_setting_float(JN_S_REPLAY_ADAPT_MARGIN, &c.margin);
    if (!s) s = jn_setting_bool(JN_S_MATCH_DUMP, &c.match_dump);
    if (!s) s = jn_setting_bool(JN_S_REPLAY_REGION_BATCH, &c.region_batch);
    if (!s) s = jn_setting_bool(JN_S_REPLAY_BACKWARD_SKIP, &c.backward_skip);
    if (!s) s = jn_setting_int(JN_S_REPLAY_BACKWARD_PLANS, &c.backward_plans);
    if (s) { /* the message names the variable and what it takes */
        jn_rp_config_default(cfg);
        return s;
    }
    /* debug's per-op prints would be timed as capture: on only when asked for */
    if (c.debug && !jn_setting_raw(JN_S_REPLAY_ADAPT)) c.adapt = 0;
    *cfg = c;
    return JN_OK;
}

/* ---------------------------------------------------------- segments */
/* The end of a captured segment: its graph, or its ops eagerly. */
static jn_status seg_end_captured(jn_replay *R) {
    jn_rt_capturing = 0;
    jn_rp_match_result res;
    jn_rp_match_kind k = jn_rp_match_end(R->mt, &res);
    if (k == JN_RP_MATCH_NONE && !R->nops) return JN_OK;
    R->segments++;
    if (R->cfg.debug)
        fprintf(stderr, "[rp] segment of %lld ops captured in %.3f ms\n", (long long)R->nops,
                1e3 * (jn_rt_seconds() - R->t_begin));
    char why[1024] = "";
    int cause = RP_BW_FELL_MISS;
    if (k == JN_RP_MATCH_COMPLETE) {
        jn_rt_private_ids++; /* its scalars, arena and outputs: not the ids Python sees */
        int rc = rp_run_graph(R, &res, why, sizeof why);
        jn_rt_private_ids--;
        if (rc == 0) {
            R->hits++;
            rp_clear_list(R); /* part of what a compiled segment costs */
            rp_adapt_hit(R, res.graph, res.nevents);
            R->g[res.graph].hits++;
            if (res.nextrap) rp_note_extrap(R, res.graph, res.extrap, res.nextrap);
            rp_tl_hit(&R->tl, res.graph, res.nevents, R->g[res.graph].seconds);
            if (R->cfg.debug)
                fprintf(stderr, "[rp] segment done %.3f ms after its start (t=%.3f)\n", 1e3 * (jn_rt_seconds() - R->t_begin),
                        jn_rt_seconds());
            return JN_OK;
        }
        if (rc < 0) {
            rp_clear_list(R);
            return jn_error(R->fatal ? R->fatal : JN_ERR_RUNTIME, "janus replay: %s", why);
        }
        rp_note_miss(R, res.graph, -1, -1, NAN, why);
        cause = RP_BW_FELL_REFUSED;
    } else {
        snprintf(why, sizeof why, "%s", res.why ? res.why : "the segment matched no graph");
        rp_note_miss(R, res.graph, res.guard, res.token, res.seen, why);
    }
    jn_status s = rp_fallback(R, cause);
    if (s == JN_OK && R->cfg.strict) s = rp_strict_error(why);
    return s;
}

/* The segment ends: run its graph or its ops.  Capture stays off until the
 * caller starts the next segment. */
jn_status rp_seg_end(jn_replay *R) {
    if (R->seg_mode != SEG_CAPTURE) return rp_seg_end_eager(R);
    return jn_rt_capturing ? seg_end_captured(R) : JN_OK;
}

/* step: a step starts here (entry 0 may also be a sync after an empty
 * segment that began at a step start) */
static void seg_begin(jn_replay *R, int entry, int step) {
    if (!R->on) return;
    rp_tl_boundary(&R->tl, step, jn_rt_seconds());
    if (R->deferred) rp_slice_gc(R);
    jn_rp_match_begin(R->mt, entry);
    R->seg_entry = entry;
    R->seg_any = 0;
    jn_rt_capturing = 1;
    R->seg_seq0 = jn_ag_seq_now() + 1;
    R->seg_t0 = 0;
    if (R->cfg.debug) R->t_begin = jn_rt_seconds();
}

/* ------------------------------------------------------------ object */
/* Stop following segments: both hooks off. */
static void uninstall(jn_replay *R) {
    if (!R->on) return;
    jn_rt_set_capture_hook(NULL);
    jn_set_dispatch_hook(NULL);
    R->seg_mode = SEG_CAPTURE;
    R->on = 0;
}

jn_status jn_rp_new(const char *db_path, int64_t run_id, const jn_rp_config *cfg, jn_replay **out) {
    *out = NULL;
    if (jn_rt_capture_hook_installed())
        return jn_error(JN_ERR_RUNTIME, "a replay is already running in this process");
    if (jn_dispatch_hook_installed()) /* its hook is the recorder's */
        return jn_error(JN_ERR_RUNTIME, "this process is being recorded (janus record, JANUS_RECORD_DB); a "
                                        "recording runs eagerly, so replay and record do not combine");
    jn_replay *R = calloc(1, sizeof *R);
    if (!R || !(R->db_path = strdup(db_path))) {
        free(R);
        return jn_error(JN_ERR_NOMEM, "out of memory starting a replay of %s", db_path);
    }
    R->cfg = *cfg;
    if (cfg->cuda_runner) R->runner = *cfg->cuda_runner;
    R->cfg.cuda_runner = cfg->cuda_runner ? &R->runner : NULL;
    snprintf(R->algos_dev, sizeof R->algos_dev, "%s", cfg->algos_device ? cfg->algos_device : "");
    R->cfg.algos_device = R->algos_dev;
    R->run_id = run_id;
    jn_status s = rp_load(R, db_path);
    if (s) {
        jn_rp_free(R);
        return s;
    }
    if (R->dev != JN_CPU) R->cfg.defer = 0; /* deferred slices snapshot host bytes: on a GPU the slice runs first */
    /* timing graphs against eager: host clocks time a CPU graph, not a GPU's
     * asynchronous work; strict mode wants every graph that fits to run */
    if (R->dev != JN_CPU || R->cfg.strict) R->cfg.adapt = 0;
    R->seg_mode = SEG_CAPTURE;
    R->on = 1;
    jn_rt_capture_hook h = {.capture = rp_cap_capture, .materialize = rp_cap_materialize, .held_only = rp_cap_held_only,
                            .held_refs = rp_cap_held_refs, .backward = rp_bw_hook, .expects = rp_cap_expects, .ctx = R, .device = R->dev};
    jn_rt_set_capture_hook(&h);
    jn_dispatch_hook dh = {rp_eager_after, R};
    jn_set_dispatch_hook(&dh);
    seg_begin(R, 0, 1);
    /* after the first seg_begin (no step of its own); out of memory: no timeline, the replay goes on */
    (void)rp_tl_begin(&R->tl, R->m->ngraphs, jn_rt_seconds());
    *out = R;
    return JN_OK;
}

jn_status jn_rp_step(jn_replay *R) {
    if (!R->on) return JN_OK;
    jn_status s = rp_seg_end(R);
    seg_begin(R, 0, 1);
    return s;
}

void jn_rp_quiet(jn_replay *R, int delta) { R->quiet += delta; }

jn_status jn_rp_sync(jn_replay *R, int kind, jn_tensor *t) {
    if (R->rg_observing) rp_region_sync_tap(R);
    if (!R->on) return JN_OK;
    jn_status s = JN_OK;
    int empty = !R->seg_any; /* before the reads below, whose kernels may dispatch */
    if (!R->quiet) {
        if (kind == JN_SYNC_BOOL && t && t->id == R->last_cmp) kind = JN_SYNC_COMPARE;
        s = rp_seg_end(R);
    }
    if (s == JN_OK && t) s = jn_rt_materialize(t);
    /* a sync that ends an empty segment (a print right after opt.step())
     * leaves the next segment starting where the empty one did, as the
     * analyzer groups it (segment.c) */
    if (!R->quiet) seg_begin(R, empty ? R->seg_entry : kind, 0);
    return s;
}

jn_status jn_rp_finish(jn_replay *R, int print_summary) {
    if (!R->on) return JN_OK;
    jn_status s = rp_seg_end(R);
    rp_slice_settle(R);
    rp_clear_list(R);
    uninstall(R);
    rp_print_end(R, print_summary);
    rp_write_counters(R);
    return s;
}

void jn_rp_free(jn_replay *R) {
    if (!R) return;
    (void)jn_rp_finish(R, 0);
    rp_unload(R);
    rp_pool_free(&R->pool);
    rp_miss_free(R);
    rp_tl_free(&R->tl);
    rp_region_free(R);
    rp_bw_free(R);
    free(R->db_path);
    free(R->ops);
    free(R->refs);
    free(R->attrs);
    free(R);
}
