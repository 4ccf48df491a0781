/* bundle.c -- loading a store's bundle into the replay object, and giving
 * it back.
 *
 * The bundle of the device the recording used: the cpu one unless its
 * graphs hold GPU values (or there is none); then the CUDA bundle for this
 * machine's GPU (jn_rp_pick_cuda), its module and the graphs' device table
 * over the eager CUDA backend.  Then the bundle's matcher and compiled
 * kernels.  Every refusal names what is missing and the fix; the caller
 * then runs the script eagerly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_algos.h"
#include "jn_backend.h"
#include "jn_cg.h"
#include "jn_db.h"
#include "rp_internal.h"

/* The device the recorded graphs ran on: JN_CPU unless a value is on a GPU
 * (the analyzer puts the recorded device on every value). */
static int module_device(const jn_ir_module *m) {
    for (int32_t gi = 0; gi < m->ngraphs; gi++)
        for (int32_t v = 0; v < m->graphs[gi]->nvalues; v++)
            if (m->graphs[gi]->values[v].device != JN_CPU) return m->graphs[gi]->values[v].device;
    return JN_CPU;
}

jn_status jn_rp_pick_cuda(const char *const *targets, int n, int dev_major, int dev_minor, const char **pick) {
    char want[32];
    snprintf(want, sizeof want, "cuda:sm_%d%d", dev_major, dev_minor);
    *pick = NULL;
    for (int i = 0; i < n; i++) {
        if (strncmp(targets[i], "cuda:", 5)) continue;
        if (!strcmp(targets[i], want)) { /* the device's own arch wins */
            *pick = targets[i];
            return JN_OK;
        }
        *pick = targets[i]; /* else the newest (oldest first): jn_ex_cuda_pick_image decides */
    }
    return *pick ? JN_OK : JN_ERR_VALUE;
}

/* The CUDA bundle R->b fits the device (dname, sm_<major><minor>): the
 * eager CUDA backend (library nodes, buffers, the stream), the bundle's
 * module (its cubin or PTX; none when the graphs have no generated
 * kernels) and the graphs' device table over both, into R->dlib / R->cg.
 * Refusals name what is missing; nothing is left open on failure. */
static jn_status open_device_exec(jn_replay *R, const char *db_path, const char *dname, int major, int minor) {
    char why[1024];
    jn_status s = jn_rt_backends[JN_CUDA] ? JN_OK : jn_cuda_init();
    if (s) {
        snprintf(why, sizeof why, "%s", jn_errmsg());
        return jn_error(s, "the %s bundle of %s fits %s (sm_%d%d), but the eager CUDA backend cannot start, and "
                        "the graphs need it (buffers, stream, library nodes): %s", R->b->target, db_path, dname, major,
                        minor, why);
    }
    const jn_cg_bundle_section *cubin = jn_cg_bundle_section_find(R->b, JN_CG_SEC_CUBIN);
    const jn_cg_bundle_section *ptx = jn_cg_bundle_section_find(R->b, JN_CG_SEC_PTX);
    if (cubin || ptx) {
        uint64_t h = 0;
        char origin[512];
        snprintf(origin, sizeof origin, "the %s bundle of %s", R->b->target, db_path);
        if ((s = jn_cg_module_hash(R->b->module, &h)) ||
            (s = jn_ex_dlib_open(cubin ? cubin->data : NULL, cubin ? cubin->len : 0, ptx ? (const char *)ptx->data : NULL,
                                 ptx ? ptx->len : 0, R->b->target, h, origin, 0, &R->dlib)))
            return s;
    }
    if ((s = jn_ex_cuda_graphs_new(R->dlib, NULL, R->cfg.cuda_stream, &R->cg))) {
        if (R->dlib) jn_ex_dlib_close(R->dlib);
        R->dlib = NULL;
        return s;
    }
    if (R->cfg.cuda_runner) jn_ex_cuda_graphs_set_runner(R->cg, &R->runner);
    R->dev = JN_CUDA;
    return JN_OK;
}

/* The recording ran on a GPU (or the store has no cpu bundle): the bundle
 * for this machine's GPU, into R->b; `cpu_why` is why the cpu bundle could
 * not be used ("" when it loaded but holds GPU graphs).  Every refusal names
 * what is missing and the fix; the caller then runs the script eagerly. */
static jn_status open_device_bundle(jn_replay *R, jn_db *db, const char *db_path, const char *cpu_why) {
    jn_db_bundle *list = NULL;
    int nb = 0;
    jn_status s = jn_db_bundle_list(db, &list, &nb);
    if (s) return s;
    const char **targets = calloc((size_t)nb + 1, sizeof *targets);
    if (!targets) {
        jn_db_bundle_list_free(list, nb);
        return jn_error(JN_ERR_NOMEM, "out of memory listing the bundles of %s", db_path);
    }
    int ncuda = 0;
    for (int i = 0; i < nb; i++)
        if (!strncmp(list[i].target, "cuda:", 5)) targets[ncuda++] = list[i].target;
    char dname[256] = "", err[1024] = "";
    int major = 0, minor = 0;
    jn_status ds = JN_OK;
    if (ncuda || !cpu_why[0]) { /* the driver only when a GPU bundle could be used */
        ds = jn_ex_cuda_device(0, &major, &minor, dname, sizeof dname);
        if (ds) snprintf(err, sizeof err, "%s", jn_errmsg());
    }
    const char *pick = NULL;
    if (!ncuda && cpu_why[0]) { /* no bundle at all, or a cpu one that does not load: as before */
        s = jn_error(JN_ERR_VALUE, "%s", cpu_why);
    } else if (!ncuda) {
        char fix[32];
        if (ds) snprintf(fix, sizeof fix, "cuda:sm_90");
        else snprintf(fix, sizeof fix, "cuda:sm_%d%d", major, minor);
        s = jn_error(JN_ERR_VALUE, "the graphs in %s were recorded on cuda tensors, and %s has no CUDA bundle; run "
                     "`janus optimize --target %s %s`", db_path, db_path, fix, db_path);
    } else if (ds) {
        s = jn_error(ds, "the graphs in %s were recorded on cuda tensors, and this machine cannot run them: %s", db_path,
                     err);
    } else {
        jn_rp_pick_cuda(targets, ncuda, major, minor, &pick);
        jn_cg_bundle_expect ex = {0};
        ex.db_path = db_path;
        ex.target = pick;
        if (!(s = jn_cg_bundle_open(db, &ex, &R->b))) {
            int image = 0;
            s = jn_ex_cuda_pick_image(R->b->target, jn_cg_bundle_section_find(R->b, JN_CG_SEC_CUBIN) != NULL,
                                      jn_cg_bundle_section_find(R->b, JN_CG_SEC_PTX) != NULL, major, minor, dname,
                                      &image);
            (void)image; /* jn_ex_dlib_open makes the same choice when it loads the module */
            if (!s) s = open_device_exec(R, db_path, dname, major, minor);
            if (s) {
                jn_cg_bundle_free(R->b);
                R->b = NULL;
            }
        }
    }
    free(targets);
    jn_db_bundle_list_free(list, nb);
    return s;
}

/* The bundle of the store at db_path, its matcher and compiled kernels,
 * into R (the device's bundle when the recording ran on a GPU); on a
 * refusal everything loaded is given back. */
jn_status rp_load(jn_replay *R, const char *db_path) {
    jn_db *db = NULL;
    jn_status s = jn_db_open(db_path, JN_DB_READONLY, &db);
    if (s) return s;
    jn_cg_bundle_expect ex = {0};
    ex.db_path = db_path;
    s = jn_cg_bundle_open(db, &ex, &R->b);
    /* the bundle of the device the recording used: the cpu one unless its
     * graphs hold GPU values (or there is none) -- a startup test only */
    if (s || module_device(R->b->module) != JN_CPU) {
        char cpu_why[1024] = "";
        if (s) snprintf(cpu_why, sizeof cpu_why, "%s", jn_errmsg());
        if (R->b) jn_cg_bundle_free(R->b);
        R->b = NULL;
        s = open_device_bundle(R, db, db_path, cpu_why);
    }
    if (!s && R->dev == JN_CUDA) { /* cuDNN's choices of earlier runs on this GPU (a failure only costs time) */
        int n = 0;
        jn_status as = R->algos_dev[0] ? jn_ex_cuda_algos_load_for(db, R->algos_dev, &n) : jn_ex_cuda_algos_load(db, &n);
        if (as)
            fprintf(stderr, "janus replay: could not load the cuDNN algorithm choices from %s (they are chosen "
                    "again): %s\n", db_path, jn_errmsg());
    }
    jn_db_close(db);
    if (s) return s;
    R->m = R->b->module;
    const jn_cg_bundle_section *ms = jn_cg_bundle_section_find(R->b, JN_CG_SEC_MATCHER);
    if (!ms)
        s = jn_error(JN_ERR_VALUE, "the bundle in %s has no replay matcher; re-run `janus optimize %s`", db_path,
                     db_path);
    if (!s) s = jn_rp_match_new(R->m, ms->data, ms->len, &R->mt);
    if (!s && R->cfg.match_dump) jn_rp_match_dump(R->mt, stderr);
    const jn_cg_bundle_section *so = jn_cg_bundle_section_find(R->b, JN_CG_SEC_SO);
    if (!s && so) {
        uint64_t h = 0;
        char origin[512];
        snprintf(origin, sizeof origin, "the compiled kernels in %s", db_path);
        if (!(s = jn_cg_module_hash(R->m, &h))) s = jn_ex_lib_open(so->data, so->len, h, origin, &R->lib);
    }
    if (!s && !(R->g = calloc((size_t)R->m->ngraphs + 1, sizeof *R->g)))
        s = jn_error(JN_ERR_NOMEM, "out of memory loading the bundle of %s", db_path);
    if (s) {
        rp_unload(R);
        return s;
    }
    for (int32_t i = 0; i < R->m->ngraphs; i++) {
        R->g[i].ad.phase = PH_FIRST;
        /* a graph holding a collective is kept compiled, never timed: its
         * time is mostly the wait for the other ranks, and each rank would
         * choose on its own noise (the ranks' choices may differ anyway;
         * the order of collectives does not) */
        const jn_ir_graph *g = R->m->graphs[i];
        for (int32_t n = 0; n < g->nnodes && R->g[i].ad.state != AD_KEEP; n++)
            if (jn_op_info(g->nodes[n].op)->flags & JN_F_COLL) R->g[i].ad.state = AD_KEEP;
    }
    return JN_OK;
}

/* Gives back the bundle and everything made from it (the hooks are off). */
void rp_unload(jn_replay *R) {
    rp_clear_list(R);
    if (R->dlib) (void)jn_ex_dlib_sync(R->dlib); /* nothing in flight uses what is freed below */
    for (int32_t i = 0; R->g && R->m && i < R->m->ngraphs; i++) rp_graph_free(&R->g[i]);
    rp_runbuf_free(R);
    free(R->g);
    R->g = NULL;
    jn_ex_cuda_graphs_free(R->cg); /* after the executors that use its table */
    R->cg = NULL;
    if (R->dlib) jn_ex_dlib_close(R->dlib);
    R->dlib = NULL;
    R->dev = JN_CPU;
    if (R->mt) jn_rp_match_free(R->mt);
    R->mt = NULL;
    if (R->lib) jn_ex_lib_close(R->lib);
    R->lib = NULL;
    if (R->b) jn_cg_bundle_free(R->b);
    R->b = NULL;
    R->m = NULL;
}
