/* jn_bundle.h -- bundles: what `janus optimize` leaves for replay.
 *
 * A bundle packs, for one target, the optimized graphs (the IR module), the
 * data the replay matcher needs, the compiled kernels and the memory plans.
 * It is stored in run.db (jn_db_bundle_put: zstd-compressed, checksummed,
 * one current bundle per target, replaced atomically) and refused at load,
 * with one clear sentence and eager execution going on, when it is corrupt,
 * truncated, of another payload format, from another janus version or op
 * table, for another target, or built for CPU features this machine lacks.
 *
 * ------------------------------------------------------ payload format
 * Little-endian, fixed-width integers; strings are u32 length + bytes.
 *   0   "JNBD"
 *   4   u32  format version (JN_CG_BUNDLE_FORMAT)
 *   8   u64  total size of the payload in bytes
 *   16  u64  FNV-1a 64 of bytes [24, total)
 *   24  header: str janus_version, u64 optable_hash, str target,
 *               str cpu_features (required, space separated),
 *               str source_runs (JSON array of run ids), i64 source_steps,
 *               u32 ngraphs
 *       u32 nsections, then per section: u32 kind, u32 flags, str name,
 *               u64 offset (from the start of the payload), u64 length
 *   ... section bytes (each within [end of table, total))
 * Exactly one JN_CG_SEC_IR section (jn_ir_serialize bytes).  A section
 * kind this janus does not know is skipped when flagged
 * JN_CG_SEC_OPTIONAL, else the bundle is refused (made by a newer janus),
 * so later parts can add sections without a new format version.
 *
 * Targets: "cpu" (a JN_CG_SEC_SO section holds the kernels) or
 * "cuda:sm_XX" (JN_CG_SEC_PTX and JN_CG_SEC_CUBIN, written flagged
 * JN_CG_SEC_OPTIONAL: the graphs are usable without them, and a janus that
 * predates them still peeks the bundle; cpu_features is "" as no CPU code
 * is inside).  The target string keys the GPU architecture: the loader
 * refuses a bundle whose target differs from the one asked for.
 */
#ifndef JN_BUNDLE_H
#define JN_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "jn_db.h"
#include "jn_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

#define JN_CG_BUNDLE_FORMAT 1

enum {
    JN_CG_SEC_IR = 1,      /* the IR module, jn_ir_serialize bytes (required, exactly one) */
    JN_CG_SEC_SO = 2,      /* a compiled shared object; name = its target, e.g. "cpu" */
    JN_CG_SEC_MEMPLAN = 3, /* memory plans (codegen) */
    JN_CG_SEC_MATCHER = 4, /* data the replay matcher needs */
    JN_CG_SEC_PTX = 5,     /* generated CUDA kernels as PTX text (codegen/emit_cuda.c, NVRTC);
                            * name = the virtual arch, e.g. "compute_90" */
    JN_CG_SEC_CUBIN = 6,   /* the same kernels as a cubin (ELF) for the bundle's GPU arch;
                            * name = the arch, e.g. "sm_90" */
    JN_CG_SEC_KNOWN_MAX = 6
};
enum { JN_CG_SEC_OPTIONAL = 1 }; /* flags: an unknown kind may be skipped */

typedef struct {
    uint32_t kind, flags;
    const char *name;      /* short tag ("" if none) */
    const void *data;
    size_t len;
} jn_cg_bundle_section;

/* What the builder records besides the module. */
typedef struct {
    const char *target;         /* NULL: "cpu" */
    const char *cpu_features;   /* required by the code; NULL: jn_rt_cpu_features() of this machine */
    const char *janus_version;  /* NULL: this build's JANUS_VERSION */
    const int64_t *source_runs; /* the runs the traces came from */
    int nsource_runs;
    int64_t source_steps;       /* how many recorded steps were mined */
} jn_cg_bundle_meta;

/* What the loader demands.  NULL / 0 fields: this build and machine. */
typedef struct {
    const char *janus_version;  /* NULL: JANUS_VERSION */
    uint64_t optable_hash;      /* 0: jn_optable_hash() */
    const char *target;         /* NULL: "cpu" */
    const char *cpu_features;   /* what this machine has; NULL: jn_rt_cpu_features() */
    const char *origin;         /* for messages, e.g. "run.db bundle 3"; NULL: "the bundle" */
    const char *db_path;        /* for the fix in messages (`janus optimize PATH`); NULL: "run.db"
                                 * (jn_cg_bundle_open: the store's path) */
} jn_cg_bundle_expect;

/* A loaded bundle.  Sections point into `payload` (owned). */
typedef struct {
    uint32_t format;
    char *janus_version, *target, *cpu_features, *source_runs;
    uint64_t optable_hash;
    int64_t source_steps;
    int32_t ngraphs;
    jn_ir_module *module;       /* NULL after jn_cg_bundle_peek */
    jn_cg_bundle_section *sections;
    int nsections;
    void *payload;
    size_t len;
} jn_cg_bundle;

/* The payload of module m (which must verify) and the extra sections;
 * *payload is malloc'ed (free()).  The op-table hash is m->optable_hash. */
jn_status jn_cg_bundle_build(const jn_ir_module *m, const jn_cg_bundle_meta *meta,
                             const jn_cg_bundle_section *sections, int nsections, void **payload, size_t *len);
/* Check everything (integrity, format, janus version, op table, target, CPU
 * features), deserialize the IR and check its op-table hash.  JN_ERR_VALUE
 * with one sentence saying what is wrong and the fix; *out NULL then. */
jn_status jn_cg_bundle_load(const void *payload, size_t len, const jn_cg_bundle_expect *expect,
                            jn_cg_bundle **out);
/* Integrity and header only (no compatibility checks, module NULL): for
 * `janus inspect`, which lists bundles of any janus. */
jn_status jn_cg_bundle_peek(const void *payload, size_t len, jn_cg_bundle **out);
void jn_cg_bundle_free(jn_cg_bundle *b);
/* The first section of `kind` (NULL if none). */
const jn_cg_bundle_section *jn_cg_bundle_section_find(const jn_cg_bundle *b, uint32_t kind);

/* ------------------------------------------------------ with run.db */
/* Build the payload and store it as the bundle of meta->target in db,
 * replacing that target's old bundles atomically.  *id may be NULL.  This
 * is what `janus optimize` calls. */
jn_status jn_cg_bundle_store(jn_db *db, const jn_ir_module *m, const jn_cg_bundle_meta *meta,
                             const jn_cg_bundle_section *sections, int nsections, int64_t *id);
/* The current bundle of expect->target from db, verified and loaded.  Also
 * checks that the row's metadata matches its payload. */
jn_status jn_cg_bundle_open(jn_db *db, const jn_cg_bundle_expect *expect, jn_cg_bundle **out);

#ifdef __cplusplus
}
#endif
#endif
