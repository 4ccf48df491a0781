/* Golden generated CUDA (tests/c/test_emit_cuda.c; JANUS_UPDATE_GOLDEN=1 rewrites it) */
/* graph g kernel K0 (gemm epilogue: add relu); operands: %3:f32 %2:f32 -> %5:f32 */
extern "C" __global__ void __launch_bounds__(JN_DK_BLOCK) jn_k0_0(const __grid_constant__ jn_dkcall c_) {
    const jn_dkcall *c = &c_;
    const int nd = c->ndim;
    int64_t total = 1;
    for (int d = 0; d < nd; d++) total *= c->shape[d];
    for (int64_t el = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; el < total; el += (int64_t)gridDim.x * blockDim.x) {
        char *p0 = c->data[0];
        char *p1 = c->data[1];
        char *p2 = c->data[2];
        for (int64_t q = el, d = (int64_t)nd - 1; d >= 0; d--) {
            const int64_t x = q % c->shape[d];
            q /= c->shape[d];
            p0 += x * c->strides[0][d];
            p1 += x * c->strides[1][d];
            p2 += x * c->strides[2][d];
        }
        const float v3 = *(const float *)p0;
        const float v2 = *(const float *)p1;
        float v4; /* add */
        { const float a = v3; const float b = v2; const double al = (0x1p+0); v4 = (jn_ew_add_f32(a, b, al)); }
        float v5; /* relu */
        { const float x = v4; v5 = (jn_ew_relu_f32(x)); }
        *(float *)p2 = v5;
    }
}
