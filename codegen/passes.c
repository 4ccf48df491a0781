/* passes.c -- the one list of codegen passes, in pipeline order, and the
 * driver that runs it (jn_cg_optimize): over every graph of a module, each
 * pass in turn, skipping the names the options list, verifying after each
 * pass when asked, dumping the IR after the named passes, and collecting
 * per-pass statistics (nodes, kernels, arena bytes at the symbol maxima).
 *
 * Order matters: dce first so later passes see only live code; cse before
 * fold and simplify so equal constants are one value; simplify rewrites
 * nodes into equal ones (view(view(x)) chains) and leaves dead ones, and
 * unstack turns collects of rows into views (their collects die), so
 * cse and dce run again ("cse2", "dce2"); poolmask, hoist and remat
 * reorder or copy nodes for memory, after cse (which would merge remat's
 * copies) and before fuse groups what remains; plan
 * needs the kernels (a fused intermediate needs no buffer); select reads
 * the kernels last.
 */
#include <stdio.h>

#include "cg_priv.h"
#include "jn_settings.h"

jn_status jn_cg_pass_dce(jn_cg_ctx *cx, jn_ir_graph *g);
jn_status jn_cg_pass_cse(jn_cg_ctx *cx, jn_ir_graph *g);
jn_status jn_cg_pass_fold(jn_cg_ctx *cx, jn_ir_graph *g);
jn_status jn_cg_pass_simplify(jn_cg_ctx *cx, jn_ir_graph *g);
jn_status jn_cg_pass_unstack(jn_cg_ctx *cx, jn_ir_graph *g);
jn_status jn_cg_pass_poolmask(jn_cg_ctx *cx, jn_ir_graph *g);
jn_status jn_cg_pass_hoist(jn_cg_ctx *cx, jn_ir_graph *g);
jn_status jn_cg_pass_remat(jn_cg_ctx *cx, jn_ir_graph *g);
jn_status jn_cg_pass_wt(jn_cg_ctx *cx, jn_ir_graph *g);
jn_status jn_cg_pass_fuse(jn_cg_ctx *cx, jn_ir_graph *g);
jn_status jn_cg_pass_plan(jn_cg_ctx *cx, jn_ir_graph *g);
jn_status jn_cg_pass_select(jn_cg_ctx *cx, jn_ir_graph *g);

static jn_status pass_verify(jn_cg_ctx *cx, jn_ir_graph *g) {
    (void)cx;
    return jn_ir_verify(g);
}

const jn_cg_pass jn_cg_passes[] = {
    {"verify", "check the structural invariants of the graph (jn_ir_verify)", pass_verify},
    {"dce", "remove nodes, loop carries/collects and loops nothing live uses", jn_cg_pass_dce},
    {"cse", "merge nodes that compute the same op on the same inputs, and equal const inputs", jn_cg_pass_cse},
    {"fold", "evaluate 0-d nodes of const inputs at compile time into const inputs", jn_cg_pass_fold},
    {"simplify", "algebraic identities: x*1 x+0 x-0 x/1, no-op casts/expands/views, view chains, "
                 "transpose/permute pairs, squeeze(unsqueeze), neg(neg)", jn_cg_pass_simplify},
    {"unstack", "a loop's collect of select(x, d, i) over its induction variable i is a view of x "
                "(slice + permute): no row copied per iteration, no stacked buffer", jn_cg_pass_unstack},
    {"cse2", "common-subexpression elimination again: simplify makes nodes equal (view(view(x)))", jn_cg_pass_cse},
    {"dce2", "dead-code elimination again, after simplify and cse2", jn_cg_pass_dce},
    {"poolmask", "apply a mask of max_pool2d's input (relu's backward) at the pooled size, before "
                 "max_pool2d_backward: the full-size activation dies after the pool", jn_cg_pass_poolmask},
    {"hoist", "run state updates (optimizer steps) right after their last input: gradients die early",
     jn_cg_pass_hoist},
    {"remat", "recompute cheap values of graph inputs (the batch gather) before far-away readers instead of "
              "keeping them alive", jn_cg_pass_remat},
    {"wt", "a weight read by several small linears is transposed once (clone of its transpose): they run as NN "
           "products, same bits", jn_cg_pass_wt},
    {"fuse", "group elementwise chains, reduction tails and GEMM epilogues into kernels", jn_cg_pass_fuse},
    {"plan", "liveness-based buffer reuse into one static 64-byte aligned arena per graph", jn_cg_pass_plan},
    {"select", "choose generated C, the eager library kernel or GEMM per kernel", jn_cg_pass_select},
    {NULL, NULL, NULL},
};

int jn_cg_npasses(void) {
    int n = 0;
    while (jn_cg_passes[n].name) n++;
    return n;
}

const jn_cg_pass *jn_cg_pass_find(const char *name) {
    for (const jn_cg_pass *p = jn_cg_passes; p->name; p++)
        if (!strcmp(p->name, name)) return p;
    return NULL;
}

/* Is `name` in the comma list? */
static int listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        while (len && *p == ' ') p++, len--;
        while (len && p[len - 1] == ' ') len--;
        if (len == n && !strncmp(p, name, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static jn_status check_list(const char *list, const char *what, int allow_all) {
    char known[512];
    size_t at = 0;
    known[0] = 0;
    for (const jn_cg_pass *p = jn_cg_passes; p->name; p++)
        at += (size_t)snprintf(known + at, sizeof known - at, "%s%s", at ? ", " : "", p->name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        while (len && *p == ' ') p++, len--;
        while (len && p[len - 1] == ' ') len--;
        int ok = len == 0 || (allow_all && len == 3 && !strncmp(p, "all", 3));
        for (const jn_cg_pass *q = jn_cg_passes; !ok && q->name; q++)
            ok = strlen(q->name) == len && !strncmp(q->name, p, len);
        if (!ok)
            return jn_error(JN_ERR_VALUE, "%s names an unknown codegen pass '%.*s' (known: %s%s)", what,
                            (int)(len < 40 ? len : 40), p, known, allow_all ? ", or all" : "");
        if (!e) break;
        p = e + 1;
    }
    return JN_OK;
}

void jn_cg_options_from_env(jn_cg_options *o) {
    memset(o, 0, sizeof *o);
#ifndef NDEBUG
    o->verify_each = 1;
#endif
    /* LIST rows are never refused here: jn_cg_optimize checks the pass names */
    const char *d = "", *k = "";
    if (jn_setting_str(JN_S_DUMP_IR, &d) == JN_OK && *d && strcmp(d, "0")) {
        o->dump = stderr;
        o->dump_passes = d;
    }
    if (jn_setting_str(JN_S_SKIP_PASSES, &k) == JN_OK && *k) o->skip = k; /* the same graphs without a pass */
}

static void stat_graph(const jn_ir_graph *g, jn_cg_pass_stats *s) {
    s->nodes_after += g->nnodes;
    s->kernels += g->nkernels;
    int64_t naive = 0;
    if (jn_cg_naive_bytes(g, &naive) == JN_OK) s->naive_bytes += naive;
    size_t at = strlen(s->arena_text);
    if (g->arena == -1) return;
    int64_t b = 0;
    if (jn_cg_eval_at_max(g, g->arena, &b) == JN_OK) s->arena_bytes += b;
    char buf[128];
    jn_ir_dim_str(g, g->arena, buf, sizeof buf);
    if (at < sizeof s->arena_text - 1)
        snprintf(s->arena_text + at, sizeof s->arena_text - at, "%s%s=%s", at ? " " : "", g->name, buf);
}

jn_status jn_cg_optimize(jn_ir_module *m, const jn_cg_options *o, jn_cg_stats *st) {
    jn_cg_options def = {0};
    if (!o) o = &def;
    jn_status s = check_list(o->skip, "the codegen skip list (JANUS_SKIP_PASSES)", 0);
    if (s == JN_OK) s = check_list(o->dump_passes, "JANUS_DUMP_IR", 1);
    if (s != JN_OK) return s;
    jn_cg_ctx cx = {m, o};
    if (st) memset(st, 0, sizeof *st);
    int np = jn_cg_npasses();
    for (int i = 0; i < np; i++) {
        const jn_cg_pass *p = &jn_cg_passes[i];
        jn_cg_pass_stats *ps = st && i < JN_CG_MAX_PASSES ? &st->pass[i] : NULL;
        if (ps) {
            ps->pass = p->name;
            st->npasses = i + 1;
        }
        int skip = listed(o->skip, p->name);
        int dump = o->dump && (!o->dump_passes || listed(o->dump_passes, "all") || listed(o->dump_passes, p->name));
        for (int32_t k = 0; k < m->ngraphs; k++) {
            jn_ir_graph *g = m->graphs[k];
            if (ps) ps->nodes_before += g->nnodes;
            if (!skip) {
                s = p->run(&cx, g);
                if (s != JN_OK) return s;
                if (o->verify_each && (s = jn_ir_verify(g)) != JN_OK) {
                    char why[512]; /* jn_error formats into the buffer jn_errmsg() returns */
                    snprintf(why, sizeof why, "%s", jn_errmsg());
                    return jn_error(s, "codegen pass %s broke graph %s: %s", p->name, g->name, why);
                }
            }
            if (ps) stat_graph(g, ps);
            if (dump) {
                fprintf(o->dump, "# after %s%s (graph %s)\n", p->name, skip ? " (skipped)" : "", g->name);
                if ((s = jn_ir_print_graph(m, g, o->dump)) != JN_OK) return s;
            }
        }
    }
    return JN_OK;
}

jn_status jn_cg_run_pass(jn_ir_module *m, jn_ir_graph *g, const char *name) {
    const jn_cg_pass *p = jn_cg_pass_find(name);
    if (!p) return check_list(name, "jn_cg_run_pass", 0);
    jn_cg_options o = {0};
    jn_cg_ctx cx = {m, &o};
    return p->run(&cx, g);
}
