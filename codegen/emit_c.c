/* emit_c.c -- the C emitter (stub; being written). */
#include "cg_priv.h"

jn_status jn_cg_emit_c(const jn_ir_module *m, char **src, size_t *len, int *nkernels) {
    (void)m;
    *src = NULL, *len = 0, *nkernels = 0;
    return jn_error(JN_ERR_UNSUPPORTED, "C emission is not built yet");
}

int jn_cg_emit_supported(const jn_ir_graph *g, int32_t k, char *why, size_t n) {
    (void)g, (void)k;
    if (why && n) snprintf(why, n, "C emission is not built yet");
    return 0;
}
