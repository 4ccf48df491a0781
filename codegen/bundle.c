/* bundle.c -- building, checking and loading bundle payloads (format in
 * jn_bundle.h), and storing/fetching them through the trace store.
 *
 * The payload carries its own size and checksum although the store checks
 * both too: a bundle may be copied out of run.db, and the loader must never
 * trust bytes it did not verify.  Every refusal is JN_ERR_VALUE with one
 * sentence that names the bundle, what is wrong and the fix (re-run `janus
 * optimize`); replay then goes on eagerly.  The header is parsed with a
 * bounds-checked reader, so a payload that passes the checksum but was
 * built wrong still cannot make the loader read out of bounds.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_bundle.h"

#ifndef JANUS_VERSION
#define JANUS_VERSION "unknown"
#endif

#define MAGIC "JNBD"
#define FIXED 24 /* magic, format, total, checksum */

/* ------------------------------------------------------------- writer */
typedef struct {
    uint8_t *p;
    size_t len, cap;
    int oom;
} wbuf;

static void w_bytes(wbuf *w, const void *d, size_t n) {
    if (w->oom) return;
    if (w->len + n > w->cap) {
        size_t nc = w->cap ? w->cap : 256;
        while (nc < w->len + n) nc *= 2;
        uint8_t *q = realloc(w->p, nc);
        if (!q) {
            w->oom = 1;
            return;
        }
        w->p = q;
        w->cap = nc;
    }
    if (n) memcpy(w->p + w->len, d, n);
    w->len += n;
}

static void w_u32(wbuf *w, uint32_t v) {
    uint8_t b[4];
    for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
    w_bytes(w, b, 4);
}

static void w_u64(wbuf *w, uint64_t v) {
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
    w_bytes(w, b, 8);
}

static void w_str(wbuf *w, const char *s) {
    size_t n = s ? strlen(s) : 0;
    w_u32(w, (uint32_t)n);
    w_bytes(w, s, n);
}

static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* "[1,2,3]" */
static char *runs_json(const int64_t *runs, int n) {
    size_t cap = (size_t)(n > 0 ? n : 0) * 22 + 3, len = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    s[len++] = '[';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s%" PRId64, i ? "," : "", runs[i]);
    s[len++] = ']';
    s[len] = 0;
    return s;
}

jn_status jn_cg_bundle_build(const jn_ir_module *m, const jn_cg_bundle_meta *meta,
                             const jn_cg_bundle_section *sections, int nsections, void **payload, size_t *len) {
    if (!payload || !len) return jn_error(JN_ERR_VALUE, "jn_cg_bundle_build: NULL output");
    *payload = NULL;
    *len = 0;
    if (!m) return jn_error(JN_ERR_VALUE, "jn_cg_bundle_build: NULL module");
    if (nsections < 0 || (nsections && !sections))
        return jn_error(JN_ERR_VALUE, "jn_cg_bundle_build: bad section list (%d)", nsections);
    jn_cg_bundle_meta none = {0};
    if (!meta) meta = &none;
    if (meta->nsource_runs < 0 || (meta->nsource_runs && !meta->source_runs))
        return jn_error(JN_ERR_VALUE, "jn_cg_bundle_build: bad source run list (%d)", meta->nsource_runs);
    for (int i = 0; i < nsections; i++) {
        if (sections[i].kind == JN_CG_SEC_IR || sections[i].kind == 0 || (sections[i].len && !sections[i].data))
            return jn_error(JN_ERR_VALUE, "jn_cg_bundle_build: section %d has kind %u%s (the IR section is made "
                            "from the module; kinds start at 2)", i, sections[i].kind,
                            sections[i].len && !sections[i].data ? " and no data" : "");
    }
    char features[512];
    const char *cpu = meta->cpu_features;
    if (!cpu) {
        if (jn_rt_cpu_features(features, sizeof features) >= sizeof features)
            return jn_error(JN_ERR_RUNTIME, "jn_cg_bundle_build: this machine's CPU feature list is too long");
        cpu = features;
    }

    void *ir = NULL;
    size_t irlen = 0;
    jn_status s = jn_ir_serialize(m, &ir, &irlen);
    if (s) return s;
    char *runs = runs_json(meta->source_runs, meta->nsource_runs);
    if (!runs) {
        free(ir);
        return jn_error(JN_ERR_NOMEM, "out of memory building a bundle");
    }

    /* Header and table first with placeholder offsets, then the data. */
    wbuf w = {0};
    w_bytes(&w, MAGIC, 4);
    w_u32(&w, JN_CG_BUNDLE_FORMAT);
    w_u64(&w, 0); /* total, patched */
    w_u64(&w, 0); /* checksum, patched */
    w_str(&w, meta->janus_version ? meta->janus_version : JANUS_VERSION);
    w_u64(&w, m->optable_hash);
    w_str(&w, meta->target ? meta->target : "cpu");
    w_str(&w, cpu);
    w_str(&w, runs);
    w_u64(&w, (uint64_t)meta->source_steps);
    w_u32(&w, (uint32_t)m->ngraphs);
    int nsec = nsections + 1;
    w_u32(&w, (uint32_t)nsec);
    size_t *offpos = calloc((size_t)nsec, sizeof *offpos);
    if (!offpos) w.oom = 1;
    for (int i = 0; i < nsec && !w.oom; i++) {
        const jn_cg_bundle_section *sec = i ? &sections[i - 1] : NULL;
        w_u32(&w, sec ? sec->kind : JN_CG_SEC_IR);
        w_u32(&w, sec ? sec->flags : 0);
        w_str(&w, sec && sec->name ? sec->name : "");
        offpos[i] = w.len;
        w_u64(&w, 0);
        w_u64(&w, sec ? (uint64_t)sec->len : (uint64_t)irlen);
    }
    for (int i = 0; i < nsec && !w.oom; i++) {
        const jn_cg_bundle_section *sec = i ? &sections[i - 1] : NULL;
        size_t at = w.len;
        w_bytes(&w, sec ? sec->data : ir, sec ? sec->len : irlen);
        if (!w.oom) put_u64(w.p + offpos[i], (uint64_t)at);
    }
    free(offpos);
    free(ir);
    free(runs);
    if (w.oom) {
        free(w.p);
        return jn_error(JN_ERR_NOMEM, "out of memory building a bundle");
    }
    put_u64(w.p + 8, (uint64_t)w.len);
    put_u64(w.p + 16, jn_db_fnv1a64(w.p + FIXED, w.len - FIXED));
    *payload = w.p;
    *len = w.len;
    return JN_OK;
}

/* ------------------------------------------------------------- reader */
typedef struct {
    const uint8_t *b, *p, *end;
    const char *bad; /* first thing that did not fit */
} rbuf;

static int r_need(rbuf *r, size_t n, const char *what) {
    if (r->bad) return 0;
    if ((size_t)(r->end - r->p) < n) {
        r->bad = what;
        return 0;
    }
    return 1;
}

static uint32_t r_u32(rbuf *r, const char *what) {
    if (!r_need(r, 4, what)) return 0;
    uint32_t v = get_u32(r->p);
    r->p += 4;
    return v;
}

static uint64_t r_u64(rbuf *r, const char *what) {
    if (!r_need(r, 8, what)) return 0;
    uint64_t v = get_u64(r->p);
    r->p += 8;
    return v;
}

/* A malloc'ed NUL-terminated copy; NULL when out of bounds or memory. */
static char *r_str(rbuf *r, const char *what) {
    uint32_t n = r_u32(r, what);
    if (!r_need(r, n, what)) return NULL;
    if (memchr(r->p, 0, n)) {
        r->bad = what;
        return NULL;
    }
    char *s = malloc((size_t)n + 1);
    if (!s) {
        r->bad = "memory";
        return NULL;
    }
    memcpy(s, r->p, n);
    s[n] = 0;
    r->p += n;
    return s;
}

void jn_cg_bundle_free(jn_cg_bundle *b) {
    if (!b) return;
    free(b->janus_version);
    free(b->target);
    free(b->cpu_features);
    free(b->source_runs);
    for (int i = 0; i < b->nsections; i++) free((void *)b->sections[i].name);
    free(b->sections);
    jn_ir_module_free(b->module);
    free(b->payload);
    free(b);
}

const jn_cg_bundle_section *jn_cg_bundle_section_find(const jn_cg_bundle *b, uint32_t kind) {
    for (int i = 0; b && i < b->nsections; i++)
        if (b->sections[i].kind == kind) return &b->sections[i];
    return NULL;
}

/* Integrity and header: everything but the compatibility checks. */
static jn_status parse(const void *payload, size_t len, const char *origin, const char *db, jn_cg_bundle **out) {
    *out = NULL;
    const uint8_t *p = payload;
    if (!p && len) return jn_error(JN_ERR_VALUE, "jn_cg_bundle_load: NULL payload");
    if (len >= 4 && memcmp(p, MAGIC, 4) != 0)
        return jn_error(JN_ERR_VALUE, "%s is not a janus bundle (bad magic; expected \"JNBD\"); re-run `janus "
                        "optimize %s`", origin, db);
    if (len < FIXED)
        return jn_error(JN_ERR_VALUE, "%s is truncated (%zu bytes; the fixed header alone has %d); re-run `janus "
                        "optimize %s`", origin, len, FIXED, db);
    uint32_t format = get_u32(p + 4);
    if (format != JN_CG_BUNDLE_FORMAT)
        return jn_error(JN_ERR_VALUE, "%s has payload format %u, but this janus (%s) reads format %d; re-run "
                        "`janus optimize %s`", origin, format, JANUS_VERSION, JN_CG_BUNDLE_FORMAT, db);
    uint64_t total = get_u64(p + 8);
    if (total > len)
        return jn_error(JN_ERR_VALUE, "%s is truncated (%zu of %" PRIu64 " bytes); re-run `janus optimize %s`",
                        origin, len, total, db);
    if (total < len)
        return jn_error(JN_ERR_VALUE, "%s is corrupt (%zu bytes where its header says %" PRIu64 "); re-run `janus "
                        "optimize %s`", origin, len, total, db);
    uint64_t sum = jn_db_fnv1a64(p + FIXED, len - FIXED);
    if (sum != get_u64(p + 16))
        return jn_error(JN_ERR_VALUE, "%s is corrupt (checksum %016" PRIx64 ", recorded %016" PRIx64 "); re-run "
                        "`janus optimize %s`", origin, sum, get_u64(p + 16), db);

    jn_cg_bundle *b = calloc(1, sizeof *b);
    if (!b) return jn_error(JN_ERR_NOMEM, "out of memory loading %s", origin);
    b->format = format;
    rbuf r = {p, p + FIXED, p + len, NULL};
    b->janus_version = r_str(&r, "janus version");
    b->optable_hash = r_u64(&r, "op-table hash");
    b->target = r_str(&r, "target");
    b->cpu_features = r_str(&r, "CPU features");
    b->source_runs = r_str(&r, "source runs");
    b->source_steps = (int64_t)r_u64(&r, "source steps");
    uint32_t ngraphs = r_u32(&r, "graph count");
    uint32_t nsec = r_u32(&r, "section count");
    /* each table entry takes at least 28 bytes: bounds before allocating */
    if (!r.bad && nsec > (size_t)(r.end - r.p) / 28) r.bad = "section count";
    if (!r.bad && ngraphs > INT32_MAX) r.bad = "graph count";
    b->ngraphs = (int32_t)ngraphs;
    if (!r.bad && nsec && !(b->sections = calloc(nsec, sizeof *b->sections))) r.bad = "memory";
    for (uint32_t i = 0; i < nsec && !r.bad; i++) {
        jn_cg_bundle_section *s = &b->sections[i];
        s->kind = r_u32(&r, "section kind");
        s->flags = r_u32(&r, "section flags");
        s->name = r_str(&r, "section name");
        uint64_t off = r_u64(&r, "section offset"), n = r_u64(&r, "section length");
        b->nsections = (int)i + 1;
        if (r.bad) break;
        if (off > len || n > len - off) {
            r.bad = "section bounds";
            break;
        }
        s->data = p + off;
        s->len = (size_t)n;
    }
    /* section data lies after the table */
    size_t table_end = (size_t)(r.p - p);
    int nir = 0;
    for (int i = 0; i < b->nsections && !r.bad; i++) {
        const jn_cg_bundle_section *s = &b->sections[i];
        if ((size_t)((const uint8_t *)s->data - p) < table_end) r.bad = "section offset";
        if (s->kind == JN_CG_SEC_IR) nir++;
    }
    if (!r.bad && nir != 1) r.bad = nir ? "second IR section" : "IR section (missing)";
    if (r.bad) {
        jn_status st = !strcmp(r.bad, "memory")
                           ? jn_error(JN_ERR_NOMEM, "out of memory loading %s", origin)
                           : jn_error(JN_ERR_VALUE, "%s is corrupt (bad %s in its header); re-run `janus optimize %s`",
                                      origin, r.bad, db);
        jn_cg_bundle_free(b);
        return st;
    }
    for (int i = 0; i < b->nsections; i++) {
        const jn_cg_bundle_section *s = &b->sections[i];
        if ((s->kind == 0 || s->kind > JN_CG_SEC_KNOWN_MAX) && !(s->flags & JN_CG_SEC_OPTIONAL)) {
            jn_status st = jn_error(JN_ERR_VALUE, "%s has a section of kind %u that this janus (%s) does not know; "
                                    "it was made by a newer janus: upgrade, or re-run `janus optimize %s`",
                                    origin, s->kind, JANUS_VERSION, db);
            jn_cg_bundle_free(b);
            return st;
        }
    }
    /* own a copy so the sections outlive the caller's buffer */
    b->payload = malloc(len);
    if (!b->payload) {
        jn_cg_bundle_free(b);
        return jn_error(JN_ERR_NOMEM, "out of memory loading %s", origin);
    }
    memcpy(b->payload, p, len);
    b->len = len;
    for (int i = 0; i < b->nsections; i++)
        b->sections[i].data = (uint8_t *)b->payload + ((const uint8_t *)b->sections[i].data - p);
    *out = b;
    return JN_OK;
}

jn_status jn_cg_bundle_peek(const void *payload, size_t len, jn_cg_bundle **out) {
    if (!out) return jn_error(JN_ERR_VALUE, "jn_cg_bundle_peek: NULL output");
    return parse(payload, len, "the bundle", "run.db", out);
}

/* The first word of `need` missing from `have` (space separated), copied
 * into buf as a space-separated list of all missing ones; 0 if none. */
static int missing_features(const char *need, const char *have, char *buf, size_t n) {
    size_t len = 0;
    int count = 0;
    buf[0] = 0;
    for (const char *w = need; *w;) {
        while (*w == ' ') w++;
        size_t wl = strcspn(w, " ");
        if (!wl) break;
        int found = 0;
        for (const char *h = have; *h && !found;) {
            while (*h == ' ') h++;
            size_t hl = strcspn(h, " ");
            if (hl == wl && !memcmp(h, w, wl)) found = 1;
            h += hl;
        }
        if (!found) {
            count++;
            if (len + wl + 2 < n) {
                if (len) buf[len++] = ' ';
                memcpy(buf + len, w, wl);
                len += wl;
                buf[len] = 0;
            }
        }
        w += wl;
    }
    return count;
}

jn_status jn_cg_bundle_load(const void *payload, size_t len, const jn_cg_bundle_expect *expect,
                            jn_cg_bundle **out) {
    if (!out) return jn_error(JN_ERR_VALUE, "jn_cg_bundle_load: NULL output");
    *out = NULL;
    jn_cg_bundle_expect none = {0};
    if (!expect) expect = &none;
    const char *origin = expect->origin ? expect->origin : "the bundle";
    const char *db = expect->db_path ? expect->db_path : "run.db";
    const char *version = expect->janus_version ? expect->janus_version : JANUS_VERSION;
    uint64_t hash = expect->optable_hash ? expect->optable_hash : jn_optable_hash();
    const char *target = expect->target ? expect->target : "cpu";
    char features[512];
    const char *have = expect->cpu_features;
    if (!have) {
        jn_rt_cpu_features(features, sizeof features);
        have = features;
    }

    jn_cg_bundle *b;
    jn_status s = parse(payload, len, origin, db, &b);
    if (s) return s;
    char buf[256];
    if (strcmp(b->janus_version, version) != 0)
        s = jn_error(JN_ERR_VALUE, "%s was built by janus %s, but this is janus %s; re-run `janus optimize %s`",
                     origin, b->janus_version, version, db);
    else if (b->optable_hash != hash)
        s = jn_error(JN_ERR_VALUE, "%s was built by janus %s with another op table (hash %016" PRIx64 ", this "
                     "build's is %016" PRIx64 "); re-run `janus optimize %s`",
                     origin, b->janus_version, b->optable_hash, hash, db);
    else if (strcmp(b->target, target) != 0)
        s = jn_error(JN_ERR_VALUE, "%s was built for target %s, not %s; re-run `janus optimize %s` for %s",
                     origin, b->target, target, db, target);
    else if (missing_features(b->cpu_features, have, buf, sizeof buf))
        s = jn_error(JN_ERR_VALUE, "%s was built for CPU features %s that this machine lacks; re-run `janus "
                     "optimize %s` here", origin, buf, db);
    if (s) {
        jn_cg_bundle_free(b);
        return s;
    }
    const jn_cg_bundle_section *ir = jn_cg_bundle_section_find(b, JN_CG_SEC_IR);
    if ((s = jn_ir_deserialize(ir->data, ir->len, &b->module))) {
        char why[768];
        snprintf(why, sizeof why, "%s", jn_errmsg());
        jn_cg_bundle_free(b);
        return jn_error(s, "%s holds an IR module that does not load (%s); re-run `janus optimize %s`", origin,
                        why, db);
    }
    if (b->module->optable_hash != hash)
        s = jn_error(JN_ERR_VALUE, "%s holds graphs made with another op table (hash %016" PRIx64 ", this build's "
                     "is %016" PRIx64 "); re-run `janus optimize %s`", origin, b->module->optable_hash, hash, db);
    else if (b->module->ngraphs != b->ngraphs)
        s = jn_error(JN_ERR_VALUE, "%s is corrupt (its header says %d graphs, its IR holds %d); re-run `janus "
                     "optimize %s`", origin, b->ngraphs, b->module->ngraphs, db);
    if (s) {
        jn_cg_bundle_free(b);
        return s;
    }
    *out = b;
    return JN_OK;
}

/* ------------------------------------------------------ with run.db */
jn_status jn_cg_bundle_store(jn_db *db, const jn_ir_module *m, const jn_cg_bundle_meta *meta,
                             const jn_cg_bundle_section *sections, int nsections, int64_t *id) {
    if (!db) return jn_error(JN_ERR_VALUE, "jn_cg_bundle_store: NULL trace store");
    void *payload = NULL;
    size_t len = 0;
    jn_status s = jn_cg_bundle_build(m, meta, sections, nsections, &payload, &len);
    if (s) return s;
    /* the row's columns are read back from the payload: one source of truth */
    jn_cg_bundle *b = NULL;
    if ((s = parse(payload, len, "the new bundle", "run.db", &b))) {
        free(payload);
        return s;
    }
    char hash[17];
    snprintf(hash, sizeof hash, "%016" PRIx64, b->optable_hash);
    jn_db_bundle row = {
        .target = b->target, .optable_hash = hash, .janus_version = b->janus_version,
        .cpu_features = b->cpu_features, .source_runs = b->source_runs, .source_steps = b->source_steps,
        .format = b->format, .data = payload, .len = len,
    };
    s = jn_db_bundle_put(db, &row, id);
    jn_cg_bundle_free(b);
    free(payload);
    return s;
}

jn_status jn_cg_bundle_open(jn_db *db, const jn_cg_bundle_expect *expect, jn_cg_bundle **out) {
    if (!out) return jn_error(JN_ERR_VALUE, "jn_cg_bundle_open: NULL output");
    *out = NULL;
    if (!db) return jn_error(JN_ERR_VALUE, "jn_cg_bundle_open: NULL trace store");
    jn_cg_bundle_expect e = expect ? *expect : (jn_cg_bundle_expect){0};
    if (!e.target) e.target = "cpu";
    if (!e.db_path) e.db_path = jn_db_path(db);
    jn_db_bundle row;
    jn_status s = jn_db_bundle_get(db, e.target, &row);
    if (s) return s;
    char origin[512];
    snprintf(origin, sizeof origin, "bundle %" PRId64 " (target %s) of trace store %s", row.id, row.target,
             e.db_path);
    e.origin = origin;
    jn_cg_bundle *b = NULL;
    s = jn_cg_bundle_load(row.data, row.len, &e, &b);
    if (!s) {
        char hash[17];
        snprintf(hash, sizeof hash, "%016" PRIx64, b->optable_hash);
        /* the row is what inspect shows: it must describe the payload */
        if (row.format != (int64_t)b->format || strcmp(row.optable_hash, hash) || strcmp(row.janus_version,
            b->janus_version) || strcmp(row.cpu_features, b->cpu_features) || strcmp(row.target, b->target)) {
            s = jn_error(JN_ERR_VALUE, "%s is corrupt (its row in the bundles table does not match its payload); "
                         "re-run `janus optimize %s`", origin, e.db_path);
            jn_cg_bundle_free(b);
            b = NULL;
        }
    }
    jn_db_bundle_free(&row);
    *out = b;
    return s;
}
