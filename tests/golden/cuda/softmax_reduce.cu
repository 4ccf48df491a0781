/* Golden generated CUDA (tests/c/test_emit_cuda.c; JANUS_UPDATE_GOLDEN=1 rewrites it) */
/* graph g kernel K0 (ew_reduce: sub exp sum); operands: %0:f32 %1:f32 -> %3:f32 %4:f32 */
extern "C" __global__ void __launch_bounds__(JN_DK_BLOCK) jn_k0_0(const __grid_constant__ jn_dkcall c_) {
    const jn_dkcall *c = &c_;
    const int nd = c->ndim;
    const int no = nd - c->nred;
    int64_t rows = 1, cnt = 1;
    for (int d = 0; d < nd; d++) {
        if (d < no) rows *= c->shape[d];
        else cnt *= c->shape[d];
    }
    __shared__ float red[JN_DK_BLOCK];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        char *base[4];
        {
            char *p0 = c->data[0];
            char *p1 = c->data[1];
            char *p2 = c->data[2];
            char *p3 = c->data[3];
            for (int64_t q = row, d = (int64_t)no - 1; d >= 0; d--) {
                const int64_t x = q % c->shape[d];
                q /= c->shape[d];
                p0 += x * c->strides[0][d];
                p1 += x * c->strides[1][d];
                p2 += x * c->strides[2][d];
                p3 += x * c->strides[3][d];
            }
            base[0] = p0;
            base[1] = p1;
            base[2] = p2;
            base[3] = p3;
        }
        float acc = (float)0;
        for (int64_t el = threadIdx.x; el < cnt; el += blockDim.x) {
            char *p0 = base[0];
            char *p1 = base[1];
            char *p2 = base[2];
            char *p3 = base[3];
            for (int64_t q = el, d = (int64_t)nd - 1; d >= no; d--) {
                const int64_t x = q % c->shape[d];
                q /= c->shape[d];
                p0 += x * c->strides[0][d];
                p1 += x * c->strides[1][d];
                p2 += x * c->strides[2][d];
                p3 += x * c->strides[3][d];
            }
            (void)p3;
            const float v0 = *(const float *)p0;
            const float v1 = *(const float *)p1;
            float v2; /* sub */
            { const float a = v0; const float b = v1; const double al = (0x1p+0); v2 = (jn_ew_sub_f32(a, b, al)); }
            float v3; /* exp */
            { const float x = v2; v3 = (jn_ew_exp_f32(x)); }
            acc += (float)v3;
            *(float *)p2 = v3;
        }
        red[threadIdx.x] = acc;
        __syncthreads();
        for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) {
                acc += red[threadIdx.x + s];
                red[threadIdx.x] = acc;
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            acc = red[0];
            *(float *)base[3] = acc;
        }
        __syncthreads(); /* red is reused by the next row */
    }
}
