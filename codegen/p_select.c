/* p_select.c -- kernel selection: how each kernel will run (impl=).
 *
 * Rules:
 *   - gemm kernels: impl=gemm, the eager GEMM (OpenBLAS through the table
 *     kernel) writes the output and a generated epilogue finishes it in
 *     place;
 *   - ew and ew_reduce kernels: impl=gen (generated C);
 *   - either becomes impl=lib (members run one by one through their eager
 *     table kernels, which is always correct) when the C emitter cannot
 *     generate it: jn_cg_emit_supported (codegen/emit_c.c) holds the one
 *     table of ops, dtypes (f32 f64 i64 i32 u8 bool on the CPU: no
 *     f16/bf16 arithmetic in generated C yet) and attribute bindings it
 *     generates;
 *   - lib kernels: impl=lib;
 *   - nodes outside every kernel run their eager table kernel (no entry).
 */
#include "cg_priv.h"

jn_status jn_cg_pass_select(jn_cg_ctx *cx, jn_ir_graph *g) {
    (void)cx;
    for (int32_t k = 0; k < g->nkernels; k++) {
        jn_ir_kernel *K = &g->kernels[k];
        switch (K->kind) {
        case JN_IR_K_GEMM: K->impl = JN_IR_IMPL_GEMM; break;
        case JN_IR_K_LIB: K->impl = JN_IR_IMPL_LIB; break;
        default: K->impl = JN_IR_IMPL_GEN; break;
        }
        if (K->impl != JN_IR_IMPL_LIB && !jn_cg_emit_supported(g, k, NULL, 0)) K->impl = JN_IR_IMPL_LIB;
    }
    return JN_OK;
}
