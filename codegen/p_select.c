/* p_select.c -- kernel selection: how each kernel will run (impl=).
 *
 * Rules:
 *   - gemm kernels: impl=gemm, the eager GEMM (OpenBLAS through the table
 *     kernel) writes the output and a generated epilogue finishes it in
 *     place;
 *   - ew and ew_reduce kernels: impl=gen (generated C) when every member
 *     computes in a dtype the generator handles (f32, f64, i64, i32, u8,
 *     bool: no f16/bf16 arithmetic in generated C yet) and on the CPU;
 *     otherwise impl=lib: the members run one by one through their eager
 *     table kernels, which is always correct;
 *   - lib kernels: impl=lib;
 *   - nodes outside every kernel run their eager table kernel (no entry).
 */
#include "cg_priv.h"

static int gen_dtype(jn_dtype d) { return d != JN_F16 && d != JN_BF16; }

jn_status jn_cg_pass_select(jn_cg_ctx *cx, jn_ir_graph *g) {
    (void)cx;
    for (int32_t k = 0; k < g->nkernels; k++) {
        jn_ir_kernel *K = &g->kernels[k];
        switch (K->kind) {
        case JN_IR_K_GEMM: K->impl = JN_IR_IMPL_GEMM; break;
        case JN_IR_K_LIB: K->impl = JN_IR_IMPL_LIB; break;
        default: K->impl = JN_IR_IMPL_GEN; break;
        }
    }
    for (int32_t n = 0; n < g->nnodes; n++) {
        const jn_ir_node *x = &g->nodes[n];
        if (x->kernel < 0 || g->kernels[x->kernel].kind == JN_IR_K_GEMM) continue;
        int ok = 1;
        for (int j = 0; j < x->nout; j++) {
            const jn_ir_value *v = &g->values[x->out[j]];
            ok &= gen_dtype(v->dtype) && v->device == JN_CPU;
        }
        for (int j = 0; j < x->nin; j++) ok &= gen_dtype(g->values[x->in[j]].dtype);
        if (!ok) g->kernels[x->kernel].impl = JN_IR_IMPL_LIB;
    }
    return JN_OK;
}
