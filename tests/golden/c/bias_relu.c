/* Golden generated C (tests/c/test_emit.c; JANUS_UPDATE_GOLDEN=1 rewrites it) */
/* graph g kernel K0 (gemm epilogue: add relu); operands: %3:f32 %2:f32 -> %5:f32 */
static void jn_k0_0_rows(int64_t u0, int64_t u1, void *ctx_) {
    const jn_kcall *c = (const jn_kcall *)ctx_;
    const int nd = c->ndim, no = nd - 1;
    const int64_t *sh = c->shape, *st = c->strides;
    const int64_t n = no < nd ? sh[nd - 1] : 1;
    const int64_t t0 = no < nd ? st[0 * nd + nd - 1] : 0;
    const int64_t t1 = no < nd ? st[1 * nd + nd - 1] : 0;
    const int64_t t2 = no < nd ? st[2 * nd + nd - 1] : 0;
    const int fast = 1 && t0 == 4 && t1 == 4 && t2 == 4;
    const int64_t nch = jn_nchunks(c, no, n), chl = (n + nch - 1) / nch;
    for (int64_t u = u0; u < u1; u++) {
        const int64_t r = u / nch, i0 = (u % nch) * chl, i1 = i0 + chl < n ? i0 + chl : n;
        char *b0 = c->data[0];
        char *b1 = c->data[1];
        char *b2 = c->data[2];
        for (int64_t q = r, d = no - 1; d >= 0; d--) {
            const int64_t x = q % sh[d];
            q /= sh[d];
            b0 += x * st[0 * nd + d];
            b1 += x * st[1 * nd + d];
            b2 += x * st[2 * nd + d];
        }
        {
            const int64_t mq = 0;
            char *p0 = b0;
            char *p1 = b1;
            char *p2 = b2;
            for (int64_t q = mq, d = nd - 2; d >= no; d--) {
                const int64_t x = q % sh[d];
                q /= sh[d];
                p0 += x * st[0 * nd + d];
                p1 += x * st[1 * nd + d];
                p2 += x * st[2 * nd + d];
            }
            if (fast) {
                for (int64_t i = i0; i < i1; i++) {
                    const float v3 = ((const float *)p0)[i];
                    const float v2 = ((const float *)p1)[i];
                    float v4; /* add */
                    { const float a = v3; const float b = v2; const double al = (0x1p+0); v4 = (jn_ew_add_f32(a, b, al)); }
                    float v5; /* relu */
                    { const float x = v4; v5 = (jn_ew_relu_f32(x)); }
                    ((float *)p2)[i] = v5;
                }
            } else {
                for (int64_t i = i0; i < i1; i++) {
                    const float v3 = *(const float *)(p0 + i * t0);
                    const float v2 = *(const float *)(p1 + i * t1);
                    float v4; /* add */
                    { const float a = v3; const float b = v2; const double al = (0x1p+0); v4 = (jn_ew_add_f32(a, b, al)); }
                    float v5; /* relu */
                    { const float x = v4; v5 = (jn_ew_relu_f32(x)); }
                    *(float *)(p2 + i * t2) = v5;
                }
            }
        }
    }
}
void jn_k0_0(const jn_kcall *c) { jn_krun(c, jn_k0_0_rows); }
