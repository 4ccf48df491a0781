/* fuzz_ir_text.c -- libFuzzer harness of the IR text parser (ir/parse.c):
 * the input is IR text.  A module jn_ir_parse accepts must verify, print,
 * parse back to the same text (print -> parse -> print is the identity)
 * and survive the binary form (serialize -> deserialize -> print: the same
 * text); a refusal is JN_ERR_VALUE with a message.  Seeds:
 * tests/fuzz/ir_text/seeds (golden modules, hand-written corner cases).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_ir.h"

static char *print(const jn_ir_module *m, size_t *n) {
    char *t = NULL;
    FILE *f = open_memstream(&t, n);
    if (!f) abort();
    if (jn_ir_print(m, f) != JN_OK) {
        fprintf(stderr, "a parsed module does not print: %s\n", jn_errmsg());
        abort();
    }
    fclose(f);
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    jn_ir_module *m = NULL;
    jn_status s = jn_ir_parse((const char *)data, size, &m);
    if (s != JN_OK) {
        if (m || !jn_errmsg()[0] || s == JN_ERR_RUNTIME) {
            fprintf(stderr, "refusal: status %d, module %p, message '%s'\n", (int)s, (void *)m, jn_errmsg());
            abort();
        }
        return 0;
    }
    if (jn_ir_verify_module(m) != JN_OK) {
        fprintf(stderr, "a parsed module does not verify: %s\n", jn_errmsg());
        abort();
    }
    size_t n1 = 0, n2 = 0, n3 = 0;
    char *t1 = print(m, &n1);
    jn_ir_module *m2 = NULL, *m3 = NULL;
    if (jn_ir_parse(t1, n1, &m2) != JN_OK) {
        fprintf(stderr, "printed text does not parse: %s\n%s", jn_errmsg(), t1);
        abort();
    }
    char *t2 = print(m2, &n2);
    if (n1 != n2 || memcmp(t1, t2, n1)) {
        fprintf(stderr, "print -> parse -> print differs:\n%s\n----\n%s", t1, t2);
        abort();
    }
    void *bin = NULL;
    size_t bl = 0;
    if (jn_ir_serialize(m, &bin, &bl) != JN_OK || jn_ir_deserialize(bin, bl, &m3) != JN_OK) {
        fprintf(stderr, "the binary round trip fails: %s\n", jn_errmsg());
        abort();
    }
    char *t3 = print(m3, &n3);
    if (n1 != n3 || memcmp(t1, t3, n1)) {
        fprintf(stderr, "serialize -> deserialize -> print differs:\n%s\n----\n%s", t1, t3);
        abort();
    }
    free(t1), free(t2), free(t3), free(bin);
    jn_ir_module_free(m);
    jn_ir_module_free(m2);
    jn_ir_module_free(m3);
    return 0;
}
