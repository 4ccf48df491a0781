/* Golden generated C (tests/c/test_emit.c; JANUS_UPDATE_GOLDEN=1 rewrites it) */
/* graph g kernel K0 (ew_reduce: sub exp sum); operands: %0:f32 %1:f32 -> %3:f32 %4:f32 */
static void jn_k0_0_rows(int64_t u0, int64_t u1, void *ctx_) {
    const jn_kred *k = (const jn_kred *)ctx_;
    const jn_kcall *c = k->c;
    const int nd = c->ndim, no = nd - c->nred;
    const int64_t *sh = c->shape, *st = c->strides;
    const int64_t n = no < nd ? sh[nd - 1] : 1;
    const int64_t t0 = no < nd ? st[0 * nd + nd - 1] : 0;
    const int64_t t1 = no < nd ? st[1 * nd + nd - 1] : 0;
    const int64_t t2 = no < nd ? st[2 * nd + nd - 1] : 0;
    const int64_t t3 = no < nd ? st[3 * nd + nd - 1] : 0;
    const int fast = 1 && t0 == 4 && t1 == 0 && t2 == 4;
    int64_t cnt = 1;
    for (int d = no; d < nd; d++) cnt *= sh[d];
    (void)t3;
    for (int64_t u = u0; u < u1; u++) {
        const int64_t r = k->part ? u / k->nch : u;
        const int64_t ch0 = k->part ? u % k->nch : 0, ch1 = k->part ? ch0 + 1 : k->nch;
        char *b0 = c->data[0];
        char *b1 = c->data[1];
        char *b2 = c->data[2];
        char *b3 = c->data[3];
        for (int64_t q = r, d = no - 1; d >= 0; d--) {
            const int64_t x = q % sh[d];
            q /= sh[d];
            b0 += x * st[0 * nd + d];
            b1 += x * st[1 * nd + d];
            b2 += x * st[2 * nd + d];
            b3 += x * st[3 * nd + d];
        }
        double racc = (double)0;
        for (int64_t ch = ch0; ch < ch1; ch++) {
            const int64_t rb = ch * k->clen, re = rb + k->clen < cnt ? rb + k->clen : cnt;
            const int64_t full = rb + (re - rb) / 32 * 32;
            double acc = (double)0;
            double l[32];
            for (int q_ = 0; q_ < 32; q_++) l[q_] = (double)0;
            if (fast && n == cnt) {
                const int64_t mq = 0;
                char *p0 = b0;
                char *p1 = b1;
                char *p2 = b2;
                char *p3 = b3;
                (void)p3;
                for (int64_t q = mq, d = nd - 2; d >= no; d--) {
                    const int64_t x = q % sh[d];
                    q /= sh[d];
                    p0 += x * st[0 * nd + d];
                    p1 += x * st[1 * nd + d];
                    p2 += x * st[2 * nd + d];
                    p3 += x * st[3 * nd + d];
                }
                const float s1 = *(const float *)p1;
                for (int64_t ib = rb; ib < full; ib += 32)
                    for (int64_t q = 0; q < 32; q++) {
                        const int64_t i = ib + q;
                        const float v0 = ((const float *)p0)[i];
                        const float v1 = s1;
                        float v2; /* sub */
                        { const float a = v0; const float b = v1; const double al = (0x1p+0); v2 = (jn_ew_sub_f32(a, b, al)); }
                        float v3; /* exp */
                        { const float x = v2; v3 = (jn_ew_exp_f32(x)); }
                        l[q] += (double)v3;
                        ((float *)p2)[i] = v3;
                    }
                for (int q = 0; q < 32; q++) {
                    acc += l[q];
                }
                for (int64_t i = full; i < re; i++) {
                    const float v0 = ((const float *)p0)[i];
                    const float v1 = s1;
                    float v2; /* sub */
                    { const float a = v0; const float b = v1; const double al = (0x1p+0); v2 = (jn_ew_sub_f32(a, b, al)); }
                    float v3; /* exp */
                    { const float x = v2; v3 = (jn_ew_exp_f32(x)); }
                    acc += (double)v3;
                    ((float *)p2)[i] = v3;
                }
            } else {
                for (int64_t pos = rb; pos < re;) {
                    const int64_t mq = pos / n, ia = pos % n, ie = re - mq * n < n ? re - mq * n : n;
                    char *p0 = b0;
                    char *p1 = b1;
                    char *p2 = b2;
                    char *p3 = b3;
                    (void)p3;
                    for (int64_t q = mq, d = nd - 2; d >= no; d--) {
                        const int64_t x = q % sh[d];
                        q /= sh[d];
                        p0 += x * st[0 * nd + d];
                        p1 += x * st[1 * nd + d];
                        p2 += x * st[2 * nd + d];
                        p3 += x * st[3 * nd + d];
                    }
                    for (int64_t i = ia; i < ie; i++, pos++) {
                        if (pos == full)
                            for (int q = 0; q < 32; q++) {
                                acc += l[q];
                            }
                        double *const a_ = pos < full ? &l[(pos - rb) & 31] : &acc;
                        const float v0 = *(const float *)(p0 + i * t0);
                        const float v1 = *(const float *)(p1 + i * t1);
                        float v2; /* sub */
                        { const float a = v0; const float b = v1; const double al = (0x1p+0); v2 = (jn_ew_sub_f32(a, b, al)); }
                        float v3; /* exp */
                        { const float x = v2; v3 = (jn_ew_exp_f32(x)); }
                        *a_ += (double)v3;
                        *(float *)(p2 + i * t2) = v3;
                    }
                }
                if (full == re)
                    for (int q = 0; q < 32; q++) {
                        acc += l[q];
                    }
            }
            double cacc = (double)0;
            cacc += acc;
            if (ch == ch0) racc = cacc;
            else {
                racc += cacc;
            }
        }
        if (k->part) {
            ((double *)k->part)[u] = racc;
        } else {
            const double acc = racc;
            *(float *)b3 = (float)(acc);
        }
    }
}
static void jn_k0_0_fin(const jn_kred *k) {
    const jn_kcall *c = k->c;
    const int nd = c->ndim, no = nd - c->nred;
    const int64_t *sh = c->shape, *st = c->strides;
    int64_t rows = 1, cnt = 1;
    for (int d = 0; d < nd; d++) {
        if (d < no) rows *= sh[d];
        else cnt *= sh[d];
    }
    (void)cnt;
    for (int64_t r = 0; r < rows; r++) {
        double acc = ((const double *)k->part)[r * k->nch];
        for (int64_t ch = 1; ch < k->nch; ch++) {
            acc += ((const double *)k->part)[r * k->nch + ch];
        }
        char *b3 = c->data[3];
        for (int64_t q = r, d = no - 1; d >= 0; d--) {
            const int64_t x = q % sh[d];
            q /= sh[d];
            b3 += x * st[3 * nd + d];
        }
        *(float *)b3 = (float)(acc);
    }
}
void jn_k0_0(const jn_kcall *c) { jn_kred_run(c, sizeof(double), jn_k0_0_rows, jn_k0_0_fin); }
