/* jn_test.h -- a tiny C test harness: CHECK records a failure with its line
 * and goes on; main() ends with the plain "N passed, N failed" line. */
#ifndef JN_TEST_H
#define JN_TEST_H
#include <math.h>
#include <stdio.h>

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
#endif
