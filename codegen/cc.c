/* cc.c -- the C compiler driver (stub; being written). */
#include "cg_priv.h"

jn_status jn_cg_compile_so(const char *src, size_t len, const jn_cg_cc_options *o, void **so, size_t *solen,
                           double *seconds) {
    (void)src, (void)len, (void)o;
    *so = NULL, *solen = 0;
    if (seconds) *seconds = 0;
    return jn_error(JN_ERR_UNSUPPORTED, "the C compiler driver is not built yet");
}
