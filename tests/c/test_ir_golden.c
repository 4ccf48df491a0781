/* test_ir_golden.c -- the IR text and binary forms on every golden dump in
 * tests/golden/<name>.ir (written by tests/python/test_analyzer_golden.py from
 * `janus optimize --dump-ir` of the scripts in tests/dynamic/): each parses,
 * verifies, prints -> parses -> prints to the same text, and serializes ->
 * deserializes -> prints to the same text; damaged copies (cut binary,
 * flipped bytes, a foreign op, an undefined operand, a missing operand, a
 * symbol declared twice, an unknown line, a cut text) are
 * refused with a message, never a crash.  The goldens are found beside this
 * file (tests/golden, from __FILE__, which CMake passes as an absolute
 * path) or in $JANUS_GOLDEN_DIR; none at all is no failure here (the Python
 * golden test fails for a missing golden). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_ir.h"
#include "jn_settings.h"
#include "jn_test.h"

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[n] = 0;
        *len = (size_t)n;
    }
    return b;
}

/* jn_ir_print into a malloc'd string (NULL on failure, message printed). */
static char *print_str(const jn_ir_module *m, const char *what) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return NULL;
    jn_status s = jn_ir_print(m, f);
    fclose(f);
    if (s) {
        fprintf(stderr, "  %s: jn_ir_print failed: %s\n", what, jn_errmsg());
        free(buf);
        return NULL;
    }
    return buf;
}

/* The golden with its op-table hash replaced by this build's: the goldens
 * carry 0000000000000000 (the hash changes whenever an op is added). */
static char *with_hash(const char *text) {
    char *t = strdup(text);
    char *p = t ? strstr(t, "optable=") : NULL;
    if (p && strlen(p) >= 8 + 16) {
        char h[17];
        snprintf(h, sizeof h, "%016llx", (unsigned long long)jn_optable_hash());
        memcpy(p + 8, h, 16);
    }
    return t;
}

/* Parsing (and, if that succeeds, verifying) `text` must fail with a message. */
static int refused(const char *text, const char *what, const char *needle) {
    jn_ir_module *m = NULL;
    jn_status s = jn_ir_parse(text, strlen(text), &m);
    if (!s) {
        s = jn_ir_verify_module(m);
        jn_ir_module_free(m);
    }
    if (!s) {
        fprintf(stderr, "  %s: accepted\n", what);
        return 0;
    }
    const char *msg = jn_errmsg();
    if (!msg || !*msg) {
        fprintf(stderr, "  %s: refused without a message\n", what);
        return 0;
    }
    if (getenv("JN_TEST_VERBOSE")) fprintf(stderr, "  %s: refused: %s\n", what, msg);
    if (needle && !strstr(msg, needle)) {
        fprintf(stderr, "  %s: message \"%s\" lacks \"%s\"\n", what, msg, needle);
        return 0;
    }
    return 1;
}

/* Text mutations of one golden, each of which must be refused. */
static void mutations(const char *name, const char *text) {
    char what[300];
    /* an op this build lacks, on the first node line */
    const char *node = strstr(text, "\n  %");
    const char *eq = node ? strstr(node, " = ") : NULL;
    const char *paren = eq ? strchr(eq, '(') : NULL;
    const char *nl = node ? strchr(node + 1, '\n') : NULL;
    if (eq && paren && nl && paren < nl) {
        size_t a = (size_t)(eq + 3 - text), b = (size_t)(paren - text);
        char *t = malloc(strlen(text) + 32);
        memcpy(t, text, a);
        strcpy(t + a, "frobnicate_op");
        strcat(t, text + b);
        snprintf(what, sizeof what, "%.200s with a foreign op", name);
        CHECK(refused(t, what, "frobnicate_op"));
        free(t);
    }
    /* an operand that no line defines, in the first node with operands */
    for (const char *p = strstr(text, "\n  %"); p; p = strstr(p + 1, "\n  %")) {
        const char *e = strchr(p + 1, '\n');
        const char *op = strstr(p, "(%");
        if (!e || !op || op > e) continue;
        size_t a = (size_t)(op + 2 - text);
        const char *end = op + 2;
        while (*end >= '0' && *end <= '9') end++;
        char *u = malloc(strlen(text) + 32);
        memcpy(u, text, a);
        strcpy(u + a, "987654");
        strcat(u, end);
        snprintf(what, sizeof what, "%.200s with an undefined operand", name);
        CHECK(refused(u, what, "line"));
        free(u);
        break;
    }
    /* a node that lost an operand: mul(%a, %b) -> mul(%a) (arity) */
    for (const char *p = strstr(text, "\n  %"); p; p = strstr(p + 1, "\n  %")) {
        const char *e = strchr(p + 1, '\n');
        const char *op = strstr(p, "= mul(%");
        const char *comma = op ? strstr(op, ", %") : NULL;
        const char *close = comma ? strchr(comma, ')') : NULL;
        if (!e || !close || close > e) continue;
        char *u = malloc(strlen(text) + 1);
        memcpy(u, text, (size_t)(comma - text));
        strcpy(u + (comma - text), close);
        snprintf(what, sizeof what, "%.200s with a one-operand mul", name);
        CHECK(refused(u, what, "mul"));
        free(u);
        break;
    }
    /* the same symbol declared twice */
    const char *sym = strstr(text, "\n  sym ");
    if (sym) {
        const char *e = strchr(sym + 1, '\n');
        size_t a = (size_t)(e - text);
        char *u = malloc(strlen(text) + (size_t)(e - sym) + 1);
        memcpy(u, text, a);
        memcpy(u + a, sym, (size_t)(e - sym));
        strcpy(u + a + (e - sym), e);
        snprintf(what, sizeof what, "%.200s with a symbol declared twice", name);
        CHECK(refused(u, what, NULL));
        free(u);
    }
    /* a line the grammar does not know, inside the first graph */
    const char *g = strstr(text, "{\n");
    if (g) {
        size_t a = (size_t)(g + 2 - text);
        char *t = malloc(strlen(text) + 64);
        memcpy(t, text, a);
        strcpy(t + a, "  wibble %1 %2\n");
        strcat(t, text + a);
        snprintf(what, sizeof what, "%.200s with an unknown line", name);
        CHECK(refused(t, what, "line"));
        free(t);
    }
    /* cut in the middle of the last graph: an unterminated graph */
    const char *last = strrchr(text, '}');
    if (last && last > text + 10) {
        char *t = strndup(text, (size_t)(last - text));
        snprintf(what, sizeof what, "%.200s cut before its last '}'", name);
        CHECK(refused(t, what, NULL));
        free(t);
    }
}

static void binary_damage(const char *name, const void *data, size_t len, const char *text1) {
    /* every cut of the binary form is refused (cuts thinned on large modules) */
    size_t stepn = len > 4000 ? len / 2000 : 1;
    int cut_ok = 1;
    for (size_t n = 0; n < len; n += stepn) {
        jn_ir_module *m = NULL;
        if (!jn_ir_deserialize(data, n, &m)) {
            fprintf(stderr, "  %s: binary cut at %zu of %zu bytes accepted\n", name, n, len);
            jn_ir_module_free(m);
            cut_ok = 0;
            break;
        }
        if (!*jn_errmsg()) cut_ok = 0;
    }
    CHECK(cut_ok);
    /* flipped bytes: refused, or a module that still verifies and prints */
    unsigned char *b = malloc(len);
    unsigned x = 12345;
    int flip_ok = 1;
    for (int k = 0; k < 300 && len; k++) {
        memcpy(b, data, len);
        x = x * 1103515245u + 12345u;
        size_t at = (x >> 8) % len;
        b[at] ^= (unsigned char)(1u << ((x >> 4) & 7));
        jn_ir_module *m = NULL;
        if (jn_ir_deserialize(b, len, &m)) {
            if (!*jn_errmsg()) flip_ok = 0;
            continue;
        }
        /* the bounds checks held; the verifier may still refuse what the
         * flip made of it, but with a message */
        if (jn_ir_verify_module(m)) {
            if (!*jn_errmsg()) flip_ok = 0;
        } else {
            char *t = print_str(m, name);
            if (!t) flip_ok = 0;
            free(t);
        }
        jn_ir_module_free(m);
    }
    CHECK(flip_ok);
    free(b);
    (void)text1;
}

static void one_golden(const char *dir, const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%.800s/%.200s", dir, file);
    size_t len = 0;
    char *raw = slurp(path, &len);
    CHECK(raw != NULL);
    if (!raw) return;
    char *text = with_hash(raw);
    jn_ir_module *m = NULL;
    jn_status s = jn_ir_parse(text, strlen(text), &m);
    if (s) fprintf(stderr, "  %s does not parse: %s\n", path, jn_errmsg());
    CHECK(s == JN_OK);
    if (s) goto out;
    s = jn_ir_verify_module(m);
    if (s) fprintf(stderr, "  %s does not verify: %s\n", path, jn_errmsg());
    CHECK(s == JN_OK);

    char *t1 = print_str(m, file);
    CHECK(t1 != NULL);
    if (t1) {
        jn_ir_module *m2 = NULL;
        s = jn_ir_parse(t1, strlen(t1), &m2);
        if (s) fprintf(stderr, "  %s: printed text does not parse back: %s\n", file, jn_errmsg());
        CHECK(s == JN_OK);
        if (!s) {
            char *t2 = print_str(m2, file);
            int same = t2 && strcmp(t1, t2) == 0;
            if (!same) fprintf(stderr, "  %s: print -> parse -> print changed the text\n", file);
            CHECK(same);
            free(t2);
            jn_ir_module_free(m2);
        }
        void *bin = NULL;
        size_t blen = 0;
        s = jn_ir_serialize(m, &bin, &blen);
        CHECK(s == JN_OK && blen > 4 && memcmp(bin, "JNIR", 4) == 0);
        if (!s) {
            jn_ir_module *m3 = NULL;
            s = jn_ir_deserialize(bin, blen, &m3);
            if (s) fprintf(stderr, "  %s: deserialize failed: %s\n", file, jn_errmsg());
            CHECK(s == JN_OK);
            if (!s) {
                CHECK(jn_ir_verify_module(m3) == JN_OK);
                char *t3 = print_str(m3, file);
                int same = t3 && strcmp(t1, t3) == 0;
                if (!same) fprintf(stderr, "  %s: serialize -> deserialize changed the module\n", file);
                CHECK(same);
                free(t3);
                jn_ir_module_free(m3);
            }
            binary_damage(file, bin, blen, t1);
        }
        free(bin);
        mutations(file, t1);
    }
    free(t1);
out:
    jn_ir_module_free(m);
    free(text);
    free(raw);
}

int main(void) {
    char dir[1024];
    const char *env = jn_setting_raw(JN_S_GOLDEN_DIR);
    if (env) snprintf(dir, sizeof dir, "%s", env);
    else {
        /* __FILE__ is <repo>/tests/c/test_ir_golden.c */
        snprintf(dir, sizeof dir, "%s", __FILE__);
        char *p = strrchr(dir, '/');
        if (p) *p = 0;
        p = strrchr(dir, '/');
        if (p) strcpy(p, "/golden");
        else snprintf(dir, sizeof dir, "../tests/golden");
    }
    DIR *d = opendir(dir);
    int n = 0;
    if (d) {
        struct dirent *e;
        char names[64][256];
        while ((e = readdir(d)) && n < 64) {
            size_t l = strlen(e->d_name);
            if (l > 3 && strcmp(e->d_name + l - 3, ".ir") == 0) snprintf(names[n++], 256, "%.250s", e->d_name);
        }
        closedir(d);
        for (int i = 0; i < n; i++) one_golden(dir, names[i]);
    }
    if (!n) printf("no goldens in %s (tests/python/test_analyzer_golden.py writes them)\n", dir);
    else printf("%d goldens in %s\n", n, dir);
    JT_DONE();
}
