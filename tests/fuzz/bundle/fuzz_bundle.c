/* fuzz_bundle.c -- libFuzzer harness of the bundle loader (codegen/
 * bundle.c) from bytes: the input is a bundle payload whose size and
 * checksum fields the harness rewrites to match, and its IR section's
 * checksum too (so mutations reach the header, section table and IR
 * parsing instead of stopping at a checksum).  jn_cg_bundle_peek, then jn_cg_bundle_load expecting exactly
 * what the header claims (version, op table, target, CPU features): either
 * a refusal (JN_ERR_VALUE with a message) or a bundle whose module
 * verifies and whose sections lie inside the payload.  Seeds:
 * tests/fuzz/bundle/seeds (payloads `janus optimize` stored).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_bundle.h"

static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void check_refusal(jn_status s, const char *what) {
    if (s == JN_ERR_VALUE && jn_errmsg()[0]) return;
    fprintf(stderr, "%s: status %d (%s): expected a JN_ERR_VALUE refusal\n", what, (int)s, jn_errmsg());
    abort();
}

/* Sections point into the bundle's own copy of the payload. */
static void check_bundle(const jn_cg_bundle *b, size_t len) {
    const uint8_t *p = b->payload;
    if (b->len != len) {
        fprintf(stderr, "the bundle holds %zu of %zu payload bytes\n", b->len, len);
        abort();
    }
    for (int i = 0; i < b->nsections; i++) {
        const jn_cg_bundle_section *s = &b->sections[i];
        const uint8_t *d = s->data;
        if (s->len && (d < p || d > p + len || s->len > (size_t)(p + len - d))) {
            fprintf(stderr, "section %d lies outside the payload\n", i);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *p = malloc(size ? size : 1);
    if (!p) return 0;
    memcpy(p, data, size);
    if (size >= 24) {
        put_u64(p + 8, size);
        put_u64(p + 16, jn_db_fnv1a64(p + 24, size - 24));
    }
    jn_cg_bundle *b = NULL;
    jn_status s = jn_cg_bundle_peek(p, size, &b);
    const jn_cg_bundle_section *ir = s == JN_OK ? jn_cg_bundle_section_find(b, JN_CG_SEC_IR) : NULL;
    if (ir && ir->len >= 8) { /* the IR blob's own checksum, then the payload's again */
        uint8_t *q = p + ((const uint8_t *)ir->data - (const uint8_t *)b->payload);
        put_u64(q + ir->len - 8, jn_db_fnv1a64(q, ir->len - 8));
        put_u64(p + 16, jn_db_fnv1a64(p + 24, size - 24));
        jn_cg_bundle_free(b);
        b = NULL;
        s = jn_cg_bundle_peek(p, size, &b);
    }
    if (s != JN_OK) {
        check_refusal(s, "peek");
        free(p);
        return 0;
    }
    check_bundle(b, size);
    char version[256], target[256], features[1024];
    snprintf(version, sizeof version, "%s", b->janus_version ? b->janus_version : "");
    snprintf(target, sizeof target, "%s", b->target ? b->target : "");
    snprintf(features, sizeof features, "%s", b->cpu_features ? b->cpu_features : "");
    jn_cg_bundle_expect e = {.janus_version = version, .optable_hash = b->optable_hash ? b->optable_hash : 1,
                             .target = target, .cpu_features = features, .origin = "fuzz bundle"};
    jn_cg_bundle_free(b);
    b = NULL;
    s = jn_cg_bundle_load(p, size, &e, &b);
    if (s != JN_OK) {
        check_refusal(s, "load");
    } else {
        check_bundle(b, size);
        if (!b->module || jn_ir_verify_module(b->module) != JN_OK) {
            fprintf(stderr, "a loaded bundle's module does not verify: %s\n", jn_errmsg());
            abort();
        }
        jn_cg_bundle_section_find(b, JN_CG_SEC_MATCHER);
    }
    jn_cg_bundle_free(b);
    free(p);
    return 0;
}
