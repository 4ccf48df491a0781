/* test_replay_cuda.c -- `janus replay` of a recording made on CUDA tensors,
 * end to end through replay's C API, without a GPU: record, optimize for
 * cuda:sm_90, replay (capture of device ops, the graph run as a CUDA
 * Graph, outputs and in-place state), a guard miss falling back eagerly,
 * and the counters and cuDNN choices written back.
 *
 * The "GPU" is tests/c/fake_libcuda.c (compiled here, named by
 * $JANUS_LIBCUDA): device pointers are host addresses, its "cubin" is a
 * shared object of the generated C kernels (jn_cg_compile_so), stream
 * capture records launches and host functions and cuGraphLaunch replays
 * them.  The eager "CUDA" backend (jn_rt_backends[JN_CUDA]) is the CPU
 * backend's table over host memory labelled cuda, and the graphs' library
 * nodes go through a runner that enqueues them as host functions on the
 * stream, so a capture holds them in order (as the real backend's kernels
 * are captured from its stream).  So this checks the plumbing -- what is
 * captured, what runs where and when, which bytes end up in which tensor
 * -- not CUDA code; a real GPU runs tests/python/test_replay_gpu.py.
 *
 * The model: a linear layer + relu trained by hand-written SGD on a fixed
 * batch (a GEMM, fused elementwise ops, a reduction, a transposed GEMM, two
 * in-place parameter updates with a Python-number learning rate).  Tensor
 * ids must be the recording's for the state guards, so the replay runs in
 * a child forked before the recording (same id counter), and checks there;
 * its eager reference runs after it in the same child.
 */
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jn_test.h"
#include "jn_test_db.h"
#include "jn_test_emit.h"
#include "jn_test_hostfn.h"

#include "jn_algos.h"
#include "jn_an.h"
#include "jn_backend.h"
#include "jn_bundle.h"
#include "jn_exec.h"
#include "jn_rec.h"
#include "jn_replay.h"
#if JANUS_HAVE_CUDA
#include "cuda/jn_cudnn.h"
#endif

enum { B = 16, IN = 4, OUT = 8, RECORD_STEPS = 6 };
static const char *ALGOS_DEV = "Fake GPU sm_90";

/* ------------------------------------------------ the fake CUDA backend */
static jn_rt_backend fake_be;
/* "Device memory" is what fake_new hands out, registered while alive, so a
 * pending cuda tensor filled with host bytes (jn_rt_storage_alloc instead
 * of the backend) is caught even though both are host memory here. */
enum { NLIVE = 4096 };
static void *live[NLIVE];
static int is_device_memory(const void *p) {
    for (int i = 0; i < NLIVE; i++)
        if (live[i] == p) return 1;
    return 0;
}
static void fake_release(void *p) {
    for (int i = 0; i < NLIVE; i++)
        if (live[i] == p) live[i] = NULL;
    free(p);
}
static jn_tensor *fake_new(const jn_meta *m) {
    size_t n = (size_t)jn_shape_numel(m->ndim, m->shape) * jn_dtype_size[m->dtype];
    void *p = malloc(n ? n : 1);
    int i = 0;
    while (i < NLIVE && live[i]) i++;
    if (!p || i == NLIVE) {
        free(p);
        jn_error(JN_ERR_NOMEM, "fake device: out of memory");
        return NULL;
    }
    jn_tensor *t = jn_tensor_from_memory(p, n, m->dtype, m->ndim, m->shape, NULL, 0, fake_release, p);
    if (!t) {
        free(p);
        return NULL;
    }
    live[i] = p;
    t->storage->device = JN_CUDA;
    return t;
}
/* host memory on both sides: the CPU copy over headers relabelled cpu */
static jn_status fake_copy(jn_tensor *dst, const jn_tensor *src) {
    jn_storage sd = *dst->storage, ss = *src->storage;
    sd.device = ss.device = JN_CPU;
    sd.lazy = ss.lazy = 0;
    jn_tensor d = *dst, s = *src;
    d.storage = &sd, s.storage = &ss;
    return jn_copy_into(&d, &s);
}

static void *fake_lib;
static int fake_count(const char *sym) {
    int (*f)(void) = NULL;
    if (fake_lib) *(void **)&f = dlsym(fake_lib, sym);
    return f ? f() : -1;
}

/* tests/c/fake_libcuda.c compiled into the scratch folder, $JANUS_LIBCUDA */
static int fake_setup(void) {
    fake_lib = jt_fake_driver_load(src_dir); /* the same copy the runtime dlopens */
    if (!fake_lib) return 0;
    jt_hostfn.be = &fake_be;
    fake_be = jn_rt_cpu_backend;
    fake_be.name = "cuda";
    fake_be.device = JN_CUDA;
    fake_be.tensor_new = fake_new;
    fake_be.copy_into = fake_copy;
    jn_rt_backends[JN_CUDA] = &fake_be;
    return jt_hostfn.launch != NULL;
}

/* ------------------------------------------------------------ the model */
typedef struct {
    jn_tensor *W, *b, *x, *y;
} model;

static jn_tensor *dev_tensor(int ndim, const int64_t *shape, uint64_t seed, double scale) {
    jn_meta m = {JN_F32, ndim, {0}};
    memcpy(m.shape, shape, sizeof(int64_t) * (size_t)ndim);
    jn_tensor *t = fake_new(&m);
    float *p = t ? (float *)jn_data(t) : NULL;
    for (int64_t i = 0; p && i < jn_numel(t); i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (float)(scale * ((double)(seed >> 40) / (double)(1ull << 24) - 0.5));
    }
    return t;
}

/* New values in the batch tensors, as a loader writing into fixed buffers. */
static void fill_batch(model *M, int step) {
    float *x = (float *)jn_data(M->x), *y = (float *)jn_data(M->y);
    for (int64_t i = 0; i < jn_numel(M->x); i++) x[i] = (float)((i * 7 + step * 13) % 17) / 8.0f - 1.0f;
    for (int64_t i = 0; i < jn_numel(M->y); i++) y[i] = (float)((i * 5 + step * 3) % 11) / 10.0f;
}

static void model_init(model *M, int64_t batch) {
    int64_t ws[2] = {IN, OUT}, bs[1] = {OUT}, xs[2] = {batch, IN}, ys[2] = {batch, OUT};
    M->W = dev_tensor(2, ws, 11, 1.0);
    M->b = dev_tensor(1, bs, 12, 0.5);
    M->x = dev_tensor(2, xs, 13, 1.0);
    M->y = dev_tensor(2, ys, 14, 1.0);
}

static void model_free(model *M) {
    jn_tensor *all[] = {M->W, M->b, M->x, M->y};
    for (int i = 0; i < 4; i++) jn_tensor_decref(all[i]);
    memset(M, 0, sizeof *M);
}

static jn_tensor *op(jn_op o, int nin, jn_tensor **in, const jn_attrs *a) {
    jn_attrs none;
    memset(&none, 0, sizeof none);
    if (!a) {
        a = &none;
        if (o == JN_OP_add || o == JN_OP_sub) none.a[0].f = 1; /* alpha */
    }
    jn_tensor *out = NULL;
    jn_status s = jn_dispatch(o, nin, in, a, &out);
    if (s) fprintf(stderr, "%s: %s\n", jn_op_info(o)->name, jn_errmsg());
    return out;
}

/* One SGD step of relu(x W + b) against y (mean squared error), by hand,
 * learning rate lr; returns the loss (a new reference), NULL on error. */
static jn_tensor *train_step(model *M, double lr_value, int int_lr) {
    jn_attrs red, tr, alpha;
    memset(&red, 0, sizeof red);
    red.a[2].i = -1; /* mean over everything */
    memset(&tr, 0, sizeof tr);
    tr.a[0].i = 0, tr.a[1].i = 1;
    memset(&alpha, 0, sizeof alpha);
    alpha.a[0].f = 1;
    int64_t batch = M->x->shape[0];
    jn_tensor *lr = int_lr ? jn_scalar_i64((int64_t)lr_value, JN_I64, 1) : jn_scalar_f64(lr_value, JN_F64, 1), *c = jn_scalar_f64(2.0 / (double)(batch * OUT), JN_F64, 1);
    jn_tensor *h = op(JN_OP_matmul, 2, (jn_tensor *[]){M->x, M->W}, NULL);
    jn_tensor *h2 = op(JN_OP_add, 2, (jn_tensor *[]){h, M->b}, NULL);
    jn_tensor *r = op(JN_OP_relu, 1, (jn_tensor *[]){h2}, NULL);
    jn_tensor *d = op(JN_OP_sub, 2, (jn_tensor *[]){r, M->y}, NULL);
    jn_tensor *sq = op(JN_OP_mul, 2, (jn_tensor *[]){d, d}, NULL);
    jn_tensor *loss = op(JN_OP_mean, 1, (jn_tensor *[]){sq}, &red);
    jn_tensor *g = op(JN_OP_mul, 2, (jn_tensor *[]){d, c}, NULL);
    jn_tensor *xt = op(JN_OP_transpose, 1, (jn_tensor *[]){M->x}, &tr);
    jn_tensor *gw = op(JN_OP_matmul, 2, (jn_tensor *[]){xt, g}, NULL);
    red.a[0].l.n = 1, red.a[0].l.v[0] = 0; /* over the batch */
    jn_tensor *gb = op(JN_OP_sum, 1, (jn_tensor *[]){g}, &red);
    jn_tensor *uw = op(JN_OP_mul, 2, (jn_tensor *[]){gw, lr}, NULL);
    jn_tensor *ub = op(JN_OP_mul, 2, (jn_tensor *[]){gb, lr}, NULL);
    int ok = h && h2 && r && d && sq && loss && g && xt && gw && gb && uw && ub;
    if (ok) ok = jn_dispatch_into(JN_OP_sub, 2, (jn_tensor *[]){M->W, uw}, &alpha, M->W) == JN_OK;
    if (ok) ok = jn_dispatch_into(JN_OP_sub, 2, (jn_tensor *[]){M->b, ub}, &alpha, M->b) == JN_OK;
    jn_tensor *tmp_[] = {lr, c, h, h2, r, d, sq, g, xt, gw, gb, uw, ub};
    for (size_t i = 0; i < sizeof tmp_ / sizeof tmp_[0]; i++) jn_tensor_decref(tmp_[i]);
    if (!ok) {
        jn_tensor_decref(loss);
        return NULL;
    }
    return loss;
}

/* --------------------------------------------------------- the recording */
static int64_t new_run(const char *db_path, const char *kind) {
    jn_db *db = NULL;
    if (jn_db_open(db_path, JN_DB_CREATE, &db)) return 0;
    char hash[24];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)jn_optable_hash());
    size_t cap = 64 * JN_NOPS, len = 0;
    char *ops = malloc(cap);
    for (int i = 0; ops && i < JN_NOPS; i++) {
        const jn_opinfo *oi = jn_op_info((jn_op)i);
        len += (size_t)snprintf(ops + len, cap - len, "%s %s\n", oi->name, oi->schema);
    }
    jn_db_run_info info = {.argv_json = "[\"python\", \"train.py\"]", .cwd = ".", .python_version = "3.12",
                           .janus_version = "test", .optable_hash = hash, .optable_ops = ops ? ops : "",
                           .device = "cuda", .kind = kind};
    int64_t id = 0;
    if (jn_db_run_begin(db, &info, &id)) id = 0;
    free(ops);
    jn_db_close(db);
    return id;
}

static void record(const char *db_path) {
    int64_t run = new_run(db_path, "record");
    CHECK(run > 0 && jn_rec_start(db_path, run, "3.12") == JN_OK);
    model M;
    model_init(&M, B);
    jn_rec_mark(M.W, JN_TR_PARAM), jn_rec_mark(M.b, JN_TR_PARAM);
    jn_rec_mark(M.x, JN_TR_HOST), jn_rec_mark(M.y, JN_TR_HOST);
    for (int s = 0; s < RECORD_STEPS; s++) {
        fill_batch(&M, s);
        jn_tensor *loss = train_step(&M, 0.05, 0);
        CHECK(loss != NULL);
        jn_rec_sync(JN_SYNC_ITEM, loss ? jn_load_f64(jn_data(loss), loss->dtype) : 0, loss); /* print(loss.item()) */
        jn_tensor_decref(loss);
        CHECK(jn_rec_end_step("optimizer") == JN_OK);
    }
    CHECK(jn_rec_stop() == JN_OK);
    model_free(&M);
}

/* analyze, the codegen passes, the generated C as the "cubin", the bundle */
static void optimize(const char *db_path) {
    jn_db *db = NULL;
    jn_ir_module *m = NULL;
    jn_an_stats st;
    jn_an_options ao = {0};
    CHECK(jn_db_open(db_path, JN_DB_WRITE, &db) == JN_OK && jn_an_analyze(db, &ao, &m, &st) == JN_OK && m);
    if (!m) {
        fprintf(stderr, "analyze: %s\n", jn_errmsg());
        jn_db_close(db);
        return;
    }
    int ngpu = 0;
    for (int32_t v = 0; m->ngraphs && v < m->graphs[0]->nvalues; v++) ngpu += m->graphs[0]->values[v].device == JN_CUDA;
    CHECK(m->ngraphs >= 1 && ngpu > 0); /* a graph of cuda values */
    jn_cg_options co;
    jn_cg_options_from_env(&co);
    co.verify_each = 1;
    jn_cg_stats cs;
    CHECK(jn_cg_optimize(m, &co, &cs) == JN_OK);
    char *src = NULL;
    size_t srclen = 0, solen = 0, mlen = 0;
    int nk = 0;
    void *so = NULL, *mdata = NULL;
    CHECK(jn_cg_emit_c(m, &src, &srclen, &nk) == JN_OK && nk > 0);
    CHECK(src && jn_cg_compile_so(src, srclen, NULL, &so, &solen, NULL) == JN_OK);
    CHECK(jn_an_matcher_section(&mdata, &mlen) == JN_OK);
    int64_t runs[1] = {1}, id = 0;
    jn_cg_bundle_meta meta = {.target = "cuda:sm_90", .cpu_features = "", .source_runs = runs, .nsource_runs = 1,
                              .source_steps = st.steps};
    jn_cg_bundle_section sec[2] = {
        {.kind = JN_CG_SEC_MATCHER, .name = "", .data = mdata, .len = mlen},
        {.kind = JN_CG_SEC_CUBIN, .flags = JN_CG_SEC_OPTIONAL, .name = "sm_90", .data = so, .len = solen}};
    CHECK(so && mdata && jn_cg_bundle_store(db, m, &meta, sec, 2, &id) == JN_OK);
    free(src), free(so), free(mdata);
    jn_ir_module_free(m);
    jn_db_close(db);
}

/* ------------------------------------------------------------ the replay */
enum { NSTEPS = 10, MISS_STEP = 6, LR_STEP = 8 };

typedef struct {
    float loss[NSTEPS];
    float W[NSTEPS][IN * OUT], b[NSTEPS][OUT];
    uint64_t version[NSTEPS]; /* W's: in-place writes counted as eagerly */
    const void *where[NSTEPS]; /* W's bytes: updated in place, never moved */
} trace;

/* The run the script makes: steps on the batch of B rows, MISS_STEP on a
 * batch of 5 (a size never recorded: a guard miss at the first op), LR_STEP
 * with the learning rate a Python int (its type is guarded: a miss late in
 * the segment, so the fallback fills pending tensors, the loss too; another
 * float would be fed to the graph), each step
 * ended as
 * Optimizer.step() ends it, the loss read after (a sync), and the
 * parameters snapshot on the host. */
static void run_steps(trace *t, jn_replay *replaying) {
    model M;
    model_init(&M, B);
    model small;
    model_init(&small, 5);
    jn_tensor_decref(small.W), jn_tensor_decref(small.b);
    small.W = M.W, small.b = M.b; /* the same parameters */
    for (int s = 0; s < NSTEPS; s++) {
        model *use = s == MISS_STEP ? &small : &M;
        fill_batch(use, s);
        jn_tensor *loss = train_step(use, s == LR_STEP ? 1 : 0.05, s == LR_STEP);
        CHECK(loss != NULL);
        if (replaying && loss) CHECK(jn_rp_sync(replaying, JN_SYNC_ITEM, loss) == JN_OK); /* loss.item() */
        if (replaying) CHECK(jn_rp_step(replaying) == JN_OK);                        /* the step's end */
        t->loss[s] = loss && loss->storage->data ? *(float *)jn_data(loss) : NAN;
        /* the graph's keep output (or the fallback's) in device memory */
        CHECK(loss && loss->storage->device == JN_CUDA && is_device_memory(loss->storage->data));
        CHECK(!M.W->storage->lazy && !M.b->storage->lazy);
        memcpy(t->W[s], jn_data(M.W), sizeof t->W[s]);
        memcpy(t->b[s], jn_data(M.b), sizeof t->b[s]);
        t->version[s] = M.W->storage->version;
        t->where[s] = M.W->storage->data;
        jn_tensor_decref(loss);
    }
    small.W = small.b = NULL;
    jn_tensor_decref(small.x), jn_tensor_decref(small.y);
    model_free(&M);
}

#if JANUS_HAVE_CUDA
/* a canonical cuDNN cache key (what a convolution of that size would use) */
static void conv_key(int64_t n, char *key, size_t len) {
    jn_rt_cudnn_conv c;
    int64_t x[4] = {n, 3, 8, 8}, w[4] = {4, 3, 3, 3}, one[2] = {1, 1}, zero[2] = {0, 0};
    CHECK(jn_rt_cudnn_conv_geom(&c, JN_F32, x, w, one, zero, one, 1, "test") == JN_OK);
    CHECK(jn_rt_cudnn_key(&c, JN_RT_CUDNN_FWD, key, len) > 0);
}
#endif

static void replay_child(const char *db_path) {
    jn_ex_cuda_graphs_runner r = {jt_host_node, jt_host_copy, NULL};
    jn_rp_config cfg;
    jn_rp_config_default(&cfg);
    cfg.cuda_runner = &r;
    cfg.algos_device = ALGOS_DEV;
    char key1[400] = "", key2[400] = ""; /* JN_RT_CUDNN_KEY_MAX */
#if JANUS_HAVE_CUDA
    conv_key(2, key1, sizeof key1);
    conv_key(4, key2, sizeof key2);
    jn_db *db = NULL;
    jn_db_algo row = {key1, 1, 4096, 0.5};
    CHECK(jn_db_open(db_path, JN_DB_WRITE, &db) == JN_OK && jn_db_algos_put(db, ALGOS_DEV, &row, 1) == JN_OK);
    jn_db_close(db);
    jn_rt_cudnn_cache_clear();
#endif
    int64_t run = new_run(db_path, "replay");
    CHECK(run > 0);
    trace rp, ref;
    memset(&rp, 0, sizeof rp);
    int launches0 = fake_count("fake_cuda_graph_launches");
    jn_replay *R = NULL;
    jn_status s = jn_rp_new(db_path, run, &cfg, &R);
    CHECK(s == JN_OK);
    if (s) fprintf(stderr, "replay start: %s\n", jn_errmsg());
#if JANUS_HAVE_CUDA
    int algo = -1;
    size_t ws = 0;
    CHECK(jn_rt_cudnn_cache_count() == 1 && jn_rt_cudnn_cache_get(key1, &algo, &ws) && algo == 1 && ws == 4096);
    jn_rt_cudnn_cache_put(key2, 2, 128); /* a choice this run made */
#endif
    jn_rp_stats st;
    memset(&st, 0, sizeof st);
    if (!s) {
        run_steps(&rp, R);
        jn_rp_get_stats(R, &st);
        char line[2048];
        jn_rp_summary(R, line, sizeof line);
        printf("  %s\n", line);
        CHECK(strstr(line, "on cuda:0 (CUDA Graphs: ") != NULL);
        for (int i = 0; i < 2; i++) { /* the two misses, each with its reason */
            int64_t n = 0;
            const char *why = jn_rp_miss(R, i, &n);
            printf("  miss %d (%lldx): %s\n", i, (long long)n, why ? why : "(none)");
            CHECK(why && n == 1);
        }
        CHECK(jn_rp_finish(R, 0) == JN_OK);
        jn_rp_free(R);
    }
    int graph_launches = fake_count("fake_cuda_graph_launches") - launches0;
    printf("  replay: %lld segments, %lld hits, %lld misses; CUDA Graphs: %lld captures (%lld updates), %lld replays, "
           "%lld plain runs; fake driver: %d graph launches\n",
           (long long)st.segments, (long long)st.hits, (long long)st.misses, (long long)st.cuda_captures,
           (long long)st.cuda_updates, (long long)st.cuda_replays, (long long)st.cuda_plain_runs, graph_launches);
    /* every step but the guard miss ran as its graph on the "GPU", as a CUDA Graph */
    CHECK(st.device == JN_CUDA && st.hits >= NSTEPS - 2 && st.misses >= 2);
    CHECK(st.cuda_captures >= 1 && st.cuda_replays >= 1 && st.cuda_plain_runs == 0);
    CHECK(graph_launches == st.cuda_captures + st.cuda_replays && graph_launches >= st.hits);
    CHECK(jt_hostfn.errors == 0);
    jt_hostfn_free();

    /* the same steps eagerly: every loss and parameter bitwise equal */
    run_steps(&ref, NULL);
    int same_loss = 0, same_w = 0;
    for (int i = 0; i < NSTEPS; i++) {
        same_loss += !memcmp(&rp.loss[i], &ref.loss[i], sizeof(float));
        same_w += !memcmp(rp.W[i], ref.W[i], sizeof rp.W[i]) && !memcmp(rp.b[i], ref.b[i], sizeof rp.b[i]);
        if (memcmp(&rp.loss[i], &ref.loss[i], sizeof(float)))
            fprintf(stderr, "  step %d: loss %.9g replayed, %.9g eager\n", i, rp.loss[i], ref.loss[i]);
    }
    printf("  %d/%d losses and %d/%d parameter snapshots bitwise equal to eager\n", same_loss, NSTEPS, same_w, NSTEPS);
    int same_ver = 0, in_place = 0;
    for (int i = 0; i < NSTEPS; i++) same_ver += rp.version[i] == ref.version[i], in_place += rp.where[i] == rp.where[0];
    CHECK(same_ver == NSTEPS && in_place == NSTEPS && rp.version[NSTEPS - 1] == NSTEPS);
    CHECK(same_loss == NSTEPS && same_w == NSTEPS);
    CHECK(memcmp(ref.W[0], ref.W[NSTEPS - 1], sizeof ref.W[0]) != 0); /* it trains */

    /* written back: the counters, and the cuDNN choices next to them */
    sqlite3 *h = NULL;
    CHECK(sqlite3_open_v2(db_path, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    char q[200];
    snprintf(q, sizeof q, "SELECT sum(hits) FROM replay_graphs WHERE run_id=%lld", (long long)run);
    CHECK(q_int(h, q) == st.hits);
    snprintf(q, sizeof q, "SELECT sum(count) FROM replay_misses WHERE run_id=%lld", (long long)run);
    CHECK(q_int(h, q) == st.misses);
#if JANUS_HAVE_CUDA
    CHECK(q_int(h, "SELECT count(*) FROM algos WHERE device='Fake GPU sm_90'") == 2);
    CHECK(q_int(h, "SELECT algo FROM algos WHERE workspace=128") == 2);
#endif
    sqlite3_close(h);
    (void)key1, (void)key2;
}

int main(void) {
    jt_emit_src_dir(__FILE__);
    (void)kernels_part, (void)check_goldens, (void)jt_each_ir, (void)parse_body, (void)run_passes;
    (void)jt_migrate_under_faults;
    CHECK(jt_tmp_begin("replay_cuda") == 0);
    if (!fake_setup()) {
        printf("not run: the fake CUDA driver could not be built (no C compiler?)\n");
        jt_tmp_end();
        JT_DONE();
    }
    const char *db_path = tmp("run.db");
    /* the replay child: forked now so its tensor ids are the recording's */
    int go[2];
    CHECK(pipe(go) == 0);
    fflush(stdout), fflush(stderr);
    pid_t child = fork();
    if (child == 0) {
        close(go[1]);
        char c = 0;
        if (read(go[0], &c, 1) != 1 || c != 'y') _exit(3);
        replay_child(db_path);
        printf("  replay child: %d passed, %d failed\n", jt_pass, jt_fail);
        fflush(stdout);
        exit(jt_fail ? 1 : 0); /* exit, not _exit: leak checks run in the child too */
    }
    close(go[0]);
    record(db_path);
    optimize(db_path);
    int status = 0;
    CHECK(write(go[1], jt_fail ? "n" : "y", 1) == 1);
    close(go[1]);
    CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    jt_tmp_end();
    JT_DONE();
}
