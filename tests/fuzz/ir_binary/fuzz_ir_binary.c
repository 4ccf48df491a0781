/* fuzz_ir_binary.c -- libFuzzer harness of the IR binary deserializer
 * (ir/serial.c): the input is jn_ir_serialize bytes, whose trailing
 * checksum the harness rewrites to match (so mutations reach the tables
 * instead of stopping at the checksum).  A module
 * jn_ir_deserialize accepts must verify and print, and serialize ->
 * deserialize -> serialize must give the same bytes twice (a fixed
 * point), with the same text; a refusal is JN_ERR_VALUE with a message.
 * Seeds: tests/fuzz/ir_binary/seeds (`janus optimize --ir-out` of
 * recordings, the golden modules serialized).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_db.h" /* jn_db_fnv1a64: the same FNV-1a 64 */
#include "jn_ir.h"

static char *print(const jn_ir_module *m, size_t *n) {
    char *t = NULL;
    FILE *f = open_memstream(&t, n);
    if (!f) abort();
    if (jn_ir_print(m, f) != JN_OK) {
        fprintf(stderr, "a deserialized module does not print: %s\n", jn_errmsg());
        abort();
    }
    fclose(f);
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *p = malloc(size ? size : 1);
    if (!p) return 0;
    memcpy(p, data, size);
    if (size >= 8) {
        uint64_t h = jn_db_fnv1a64(p, size - 8);
        for (int i = 0; i < 8; i++) p[size - 8 + i] = (uint8_t)(h >> (8 * i));
    }
    jn_ir_module *m = NULL;
    jn_status s = jn_ir_deserialize(p, size, &m);
    free(p);
    if (s != JN_OK) {
        if (m || !jn_errmsg()[0] || s == JN_ERR_RUNTIME) {
            fprintf(stderr, "refusal: status %d, module %p, message '%s'\n", (int)s, (void *)m, jn_errmsg());
            abort();
        }
        return 0;
    }
    if (jn_ir_verify_module(m) != JN_OK) {
        fprintf(stderr, "a deserialized module does not verify: %s\n", jn_errmsg());
        abort();
    }
    size_t n1 = 0, n2 = 0, b1 = 0, b2 = 0;
    char *t1 = print(m, &n1);
    void *s1 = NULL, *s2 = NULL;
    jn_ir_module *m2 = NULL;
    if (jn_ir_serialize(m, &s1, &b1) != JN_OK || jn_ir_deserialize(s1, b1, &m2) != JN_OK ||
        jn_ir_serialize(m2, &s2, &b2) != JN_OK) {
        fprintf(stderr, "the binary round trip fails: %s\n", jn_errmsg());
        abort();
    }
    if (b1 != b2 || memcmp(s1, s2, b1)) {
        fprintf(stderr, "serialize -> deserialize -> serialize differs (%zu vs %zu bytes)\n", b1, b2);
        abort();
    }
    char *t2 = print(m2, &n2);
    if (n1 != n2 || memcmp(t1, t2, n1)) {
        fprintf(stderr, "the round trip changes the text:\n%s\n----\n%s", t1, t2);
        abort();
    }
    free(t1), free(t2), free(s1), free(s2);
    jn_ir_module_free(m);
    jn_ir_module_free(m2);
    return 0;
}
