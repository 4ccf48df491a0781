/* jn_test.h -- a tiny C test harness: CHECK records a failure with its line
 * and goes on; main() ends with the plain "N passed, N failed" line. */
#ifndef JN_TEST_H
#define JN_TEST_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_runtime.h"

static int jt_pass, jt_fail;
#define CHECK(cond)                                                              \
    do {                                                                         \
        if (cond) jt_pass++;                                                     \
        else { jt_fail++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } \
    } while (0)
#define CHECK_NEAR(a, b, tol) CHECK(fabs((double)(a) - (double)(b)) <= (tol))
#define JT_DONE()                                                   \
    do {                                                            \
        printf("%d passed, %d failed\n", jt_pass, jt_fail);         \
        return jt_fail ? 1 : 0;                                     \
    } while (0)

/* Scratch files: jt_tmp_begin("db") makes /tmp/jn_test_db_XXXXXX, tmp(name)
 * names a file in it (four buffers in rotation), jt_tmp_end() removes it. */
static inline char *jt_tmpdir(void) {
    static char dir[256];
    return dir;
}
static inline int jt_tmp_begin(const char *tag) {
    snprintf(jt_tmpdir(), 256, "/tmp/jn_test_%s_XXXXXX", tag);
    if (mkdtemp(jt_tmpdir())) return 0;
    perror("mkdtemp");
    return -1;
}
static inline void jt_tmp_end(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", jt_tmpdir());
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", jt_tmpdir());
}
static inline const char *tmp(const char *name) {
    static char bufs[4][512];
    static int k;
    char *b = bufs[k++ & 3];
    snprintf(b, 512, "%s/%s", jt_tmpdir(), name);
    return b;
}
/* Does the last error message contain needle?  (Says what it was if not.) */
static inline int has(const char *needle) {
    int ok = strstr(jn_errmsg(), needle) != NULL;
    if (!ok) fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", jn_errmsg(), needle);
    return ok;
}
#endif
