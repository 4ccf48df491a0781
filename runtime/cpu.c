/* cpu.c -- the CPU features this machine offers that generated code may use.
 *
 * One list shared by everything that records or checks them: a bundle
 * records the features its compiled kernels were built for (the ones gcc's
 * -march=native would turn on), and the loader refuses a bundle that needs a
 * feature this machine lacks -- running it would die of SIGILL instead of
 * falling back to eager execution.  On x86 the answer comes from
 * __builtin_cpu_supports (which also checks that the OS saves the AVX
 * state); elsewhere from the Features line of /proc/cpuinfo, filtered to
 * the vector extensions that matter.  Names are gcc's spelling ("sse4.2").
 */
#include "jn_runtime.h"

#include <stdio.h>
#include <string.h>
#if defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#endif

/* Append word to buf (space separated); returns the new length even when
 * it no longer fits, like snprintf. */
static size_t add_word(char *buf, size_t n, size_t len, const char *w) {
    size_t wl = strlen(w) + (len ? 1 : 0);
    if (buf && len + wl < n) {
        if (len) buf[len] = ' ';
        memcpy(buf + len + (len ? 1 : 0), w, strlen(w) + 1);
    }
    return len + wl;
}

#if defined(__x86_64__) || defined(__i386__)
/* F16C (CPUID.1:ECX bit 29): clang's __builtin_cpu_supports lacks the name */
static int has_f16c(void) {
#if defined(__clang__)
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1);
#else
    return __builtin_cpu_supports("f16c");
#endif
}
#endif

size_t jn_rt_cpu_features(char *buf, size_t n) {
    size_t len = 0;
    if (buf && n) buf[0] = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    /* __builtin_cpu_supports needs a string literal, hence the macro. */
#define F(name) if (__builtin_cpu_supports(name)) len = add_word(buf, n, len, name);
    F("sse4.2") F("popcnt") F("avx")
    if (has_f16c()) len = add_word(buf, n, len, "f16c");
    F("fma") F("bmi") F("bmi2") F("avx2")
    F("avx512f") F("avx512cd") F("avx512bw") F("avx512dq") F("avx512vl") F("avx512ifma")
    F("avx512vbmi") F("avx512vnni") F("avx512bf16")
#undef F
#else
    static const char *const wanted[] = {"asimd", "asimdhp", "fphp", "sve", "sve2", "bf16", "i8mm"};
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "Features", 8) && strncmp(line, "flags", 5)) continue;
        for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
            size_t wl = strlen(wanted[i]);
            for (const char *p = strchr(line, ':'); p && (p = strstr(p, wanted[i])); p += wl)
                if ((p[-1] == ' ' || p[-1] == '\t') && (p[wl] == ' ' || p[wl] == '\n' || !p[wl])) {
                    len = add_word(buf, n, len, wanted[i]);
                    break;
                }
        }
        break;
    }
    if (f) fclose(f);
#endif
    return len;
}
