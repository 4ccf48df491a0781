/* Golden generated C (tests/c/test_emit.c; JANUS_UPDATE_GOLDEN=1 rewrites it) */
/* graph g kernel K0 (ew: sub mul exp tanh add sigmoid log gelu erf silu abs sqrt mul div maximum pow rsqrt add floor neg); operands: %0:f32 %1:f32 %2:f32 %3:f64 -> %6:f32 %9:f32 %11:f32 %13:f32 %17:f32 %19:f32 %21:f32 %23:f32 */
static void jn_k0_0_rows(int64_t u0, int64_t u1, void *ctx_) {
    const jn_kcall *c = (const jn_kcall *)ctx_;
    const int nd = c->ndim, no = nd - 1;
    const int64_t *sh = c->shape, *st = c->strides;
    const int64_t n = no < nd ? sh[nd - 1] : 1;
    const int64_t t0 = no < nd ? st[0 * nd + nd - 1] : 0;
    const int64_t t1 = no < nd ? st[1 * nd + nd - 1] : 0;
    const int64_t t2 = no < nd ? st[2 * nd + nd - 1] : 0;
    const int64_t t3 = no < nd ? st[3 * nd + nd - 1] : 0;
    const int64_t t4 = no < nd ? st[4 * nd + nd - 1] : 0;
    const int64_t t5 = no < nd ? st[5 * nd + nd - 1] : 0;
    const int64_t t6 = no < nd ? st[6 * nd + nd - 1] : 0;
    const int64_t t7 = no < nd ? st[7 * nd + nd - 1] : 0;
    const int64_t t8 = no < nd ? st[8 * nd + nd - 1] : 0;
    const int64_t t9 = no < nd ? st[9 * nd + nd - 1] : 0;
    const int64_t t10 = no < nd ? st[10 * nd + nd - 1] : 0;
    const int64_t t11 = no < nd ? st[11 * nd + nd - 1] : 0;
    const int fast = 1 && t0 == 4 && t1 == 0 && t2 == 4 && t3 == 0 && t4 == 4 && t5 == 4 && t6 == 4 && t7 == 4 && t8 == 4 && t9 == 4 && t10 == 4 && t11 == 4;
    const int64_t nch = jn_nchunks(c, no, n), chl = (n + nch - 1) / nch;
    for (int64_t u = u0; u < u1; u++) {
        const int64_t r = u / nch, i0 = (u % nch) * chl, i1 = i0 + chl < n ? i0 + chl : n;
        char *b0 = c->data[0];
        char *b1 = c->data[1];
        char *b2 = c->data[2];
        char *b3 = c->data[3];
        char *b4 = c->data[4];
        char *b5 = c->data[5];
        char *b6 = c->data[6];
        char *b7 = c->data[7];
        char *b8 = c->data[8];
        char *b9 = c->data[9];
        char *b10 = c->data[10];
        char *b11 = c->data[11];
        for (int64_t q = r, d = no - 1; d >= 0; d--) {
            const int64_t x = q % sh[d];
            q /= sh[d];
            b0 += x * st[0 * nd + d];
            b1 += x * st[1 * nd + d];
            b2 += x * st[2 * nd + d];
            b3 += x * st[3 * nd + d];
            b4 += x * st[4 * nd + d];
            b5 += x * st[5 * nd + d];
            b6 += x * st[6 * nd + d];
            b7 += x * st[7 * nd + d];
            b8 += x * st[8 * nd + d];
            b9 += x * st[9 * nd + d];
            b10 += x * st[10 * nd + d];
            b11 += x * st[11 * nd + d];
        }
        {
            const int64_t mq = 0;
            char *p0 = b0;
            char *p1 = b1;
            char *p2 = b2;
            char *p3 = b3;
            char *p4 = b4;
            char *p5 = b5;
            char *p6 = b6;
            char *p7 = b7;
            char *p8 = b8;
            char *p9 = b9;
            char *p10 = b10;
            char *p11 = b11;
            for (int64_t q = mq, d = nd - 2; d >= no; d--) {
                const int64_t x = q % sh[d];
                q /= sh[d];
                p0 += x * st[0 * nd + d];
                p1 += x * st[1 * nd + d];
                p2 += x * st[2 * nd + d];
                p3 += x * st[3 * nd + d];
                p4 += x * st[4 * nd + d];
                p5 += x * st[5 * nd + d];
                p6 += x * st[6 * nd + d];
                p7 += x * st[7 * nd + d];
                p8 += x * st[8 * nd + d];
                p9 += x * st[9 * nd + d];
                p10 += x * st[10 * nd + d];
                p11 += x * st[11 * nd + d];
            }
            if (fast) {
                const float s1 = *(const float *)p1;
                const double s3 = *(const double *)p3;
                for (int64_t ib = i0; ib < i1; ib += 192) {
                    const int64_t bn = i1 - ib < 192 ? i1 - ib : 192;
                    const float *A0 = (const float *)p0 + ib;
                    const float *A2 = (const float *)p2 + ib;
                    float t4[192]; /* sub */
                    for (int64_t i = 0; i < bn; i++)
                        { const float a = A0[i]; const float b = s1; const double al = (0x1p+0); t4[i] = (jn_ew_sub_f32(a, b, al)); }
                    float t5[192]; /* mul */
                    for (int64_t i = 0; i < bn; i++)
                        { const float a = t4[i]; const float b = A2[i]; t5[i] = (jn_ew_mul_f32(a, b)); }
                    float t6[192]; /* exp */
                    for (int64_t i = 0; i < bn; i++)
                        { const float x = t5[i]; t6[i] = (jn_ew_exp_f32(x)); }
                    float t7[192]; /* tanh */
                    for (int64_t i = 0; i < bn; i++)
                        { const float x = t4[i]; t7[i] = (jn_ew_tanh_f32(x)); }
                    float t8[192]; /* add */
                    for (int64_t i = 0; i < bn; i++)
                        { const float a = t6[i]; const float b = t7[i]; const double al = (0x1p-2); t8[i] = (jn_ew_add_f32(a, b, al)); }
                    float t9[192]; /* sigmoid */
                    for (int64_t i = 0; i < bn; i++)
                        { const float x = t8[i]; t9[i] = (jn_ew_sigmoid_f32(x)); }
                    float t10[192]; /* log */
                    for (int64_t i = 0; i < bn; i++)
                        { const float x = t9[i]; t10[i] = (jn_ew_log_f32(x)); }
                    float t11[192]; /* gelu */
                    for (int64_t i = 0; i < bn; i++)
                        { const float x = t10[i]; t11[i] = (jn_ew_gelu_erf_f32(x)); }
                    float t12[192]; /* erf */
                    for (int64_t i = 0; i < bn; i++)
                        { const float x = t11[i]; t12[i] = (jn_ew_erf_f32(x)); }
                    float t13[192]; /* silu */
                    for (int64_t i = 0; i < bn; i++)
                        { const float x = t12[i]; t13[i] = (jn_ew_silu_f32(x)); }
                    float t14[192]; /* abs */
                    for (int64_t i = 0; i < bn; i++)
                        { const float x = t13[i]; t14[i] = (jn_ew_abs_f32(x)); }
                    float t15[192]; /* sqrt */
                    for (int64_t i = 0; i < bn; i++)
                        { const float x = t14[i]; t15[i] = (jn_ew_sqrt_f32(x)); }
                    float t16[192]; /* mul */
                    for (int64_t i = 0; i < bn; i++)
                        { const float a = t15[i]; const float b = (float)(s3); t16[i] = (jn_ew_mul_f32(a, b)); }
                    float t17[192]; /* div */
                    for (int64_t i = 0; i < bn; i++)
                        { const float a = t16[i]; const float b = s1; t17[i] = (jn_ew_div_true_f32(a, b)); }
                    float t18[192]; /* maximum */
                    for (int64_t i = 0; i < bn; i++)
                        { const float a = t17[i]; const float b = t4[i]; t18[i] = (jn_ew_maximum_f32(a, b)); }
                    float t19[192]; /* pow */
                    for (int64_t i = 0; i < bn; i++)
                        { const float a = t18[i]; const float b = (float)(s3); t19[i] = (jn_ew_pow_f32(a, b)); }
                    float t20[192]; /* rsqrt */
                    for (int64_t i = 0; i < bn; i++)
                        { const float x = t14[i]; t20[i] = (jn_ew_rsqrt_f32(x)); }
                    float t21[192]; /* add */
                    for (int64_t i = 0; i < bn; i++)
                        { const float a = t19[i]; const float b = t20[i]; const double al = (0x1p+0); t21[i] = (jn_ew_add_f32(a, b, al)); }
                    float t22[192]; /* floor */
                    for (int64_t i = 0; i < bn; i++)
                        { const float x = t21[i]; t22[i] = (jn_ew_floor_f32(x)); }
                    float t23[192]; /* neg */
                    for (int64_t i = 0; i < bn; i++)
                        { const float x = t22[i]; t23[i] = (jn_ew_neg_f32(x)); }
                    for (int64_t i = 0; i < bn; i++) ((float *)p4 + ib)[i] = t6[i];
                    for (int64_t i = 0; i < bn; i++) ((float *)p5 + ib)[i] = t9[i];
                    for (int64_t i = 0; i < bn; i++) ((float *)p6 + ib)[i] = t11[i];
                    for (int64_t i = 0; i < bn; i++) ((float *)p7 + ib)[i] = t13[i];
                    for (int64_t i = 0; i < bn; i++) ((float *)p8 + ib)[i] = t17[i];
                    for (int64_t i = 0; i < bn; i++) ((float *)p9 + ib)[i] = t19[i];
                    for (int64_t i = 0; i < bn; i++) ((float *)p10 + ib)[i] = t21[i];
                    for (int64_t i = 0; i < bn; i++) ((float *)p11 + ib)[i] = t23[i];
                }
            } else {
                for (int64_t i = i0; i < i1; i++) {
                    const float v0 = *(const float *)(p0 + i * t0);
                    const float v1 = *(const float *)(p1 + i * t1);
                    const float v2 = *(const float *)(p2 + i * t2);
                    const double v3 = *(const double *)(p3 + i * t3);
                    float v4; /* sub */
                    { const float a = v0; const float b = v1; const double al = (0x1p+0); v4 = (jn_ew_sub_f32(a, b, al)); }
                    float v5; /* mul */
                    { const float a = v4; const float b = v2; v5 = (jn_ew_mul_f32(a, b)); }
                    float v6; /* exp */
                    { const float x = v5; v6 = (jn_ew_exp_f32(x)); }
                    float v7; /* tanh */
                    { const float x = v4; v7 = (jn_ew_tanh_f32(x)); }
                    float v8; /* add */
                    { const float a = v6; const float b = v7; const double al = (0x1p-2); v8 = (jn_ew_add_f32(a, b, al)); }
                    float v9; /* sigmoid */
                    { const float x = v8; v9 = (jn_ew_sigmoid_f32(x)); }
                    float v10; /* log */
                    { const float x = v9; v10 = (jn_ew_log_f32(x)); }
                    float v11; /* gelu */
                    { const float x = v10; v11 = (jn_ew_gelu_erf_f32(x)); }
                    float v12; /* erf */
                    { const float x = v11; v12 = (jn_ew_erf_f32(x)); }
                    float v13; /* silu */
                    { const float x = v12; v13 = (jn_ew_silu_f32(x)); }
                    float v14; /* abs */
                    { const float x = v13; v14 = (jn_ew_abs_f32(x)); }
                    float v15; /* sqrt */
                    { const float x = v14; v15 = (jn_ew_sqrt_f32(x)); }
                    float v16; /* mul */
                    { const float a = v15; const float b = (float)(v3); v16 = (jn_ew_mul_f32(a, b)); }
                    float v17; /* div */
                    { const float a = v16; const float b = v1; v17 = (jn_ew_div_true_f32(a, b)); }
                    float v18; /* maximum */
                    { const float a = v17; const float b = v4; v18 = (jn_ew_maximum_f32(a, b)); }
                    float v19; /* pow */
                    { const float a = v18; const float b = (float)(v3); v19 = (jn_ew_pow_f32(a, b)); }
                    float v20; /* rsqrt */
                    { const float x = v14; v20 = (jn_ew_rsqrt_f32(x)); }
                    float v21; /* add */
                    { const float a = v19; const float b = v20; const double al = (0x1p+0); v21 = (jn_ew_add_f32(a, b, al)); }
                    float v22; /* floor */
                    { const float x = v21; v22 = (jn_ew_floor_f32(x)); }
                    float v23; /* neg */
                    { const float x = v22; v23 = (jn_ew_neg_f32(x)); }
                    *(float *)(p4 + i * t4) = v6;
                    *(float *)(p5 + i * t5) = v9;
                    *(float *)(p6 + i * t6) = v11;
                    *(float *)(p7 + i * t7) = v13;
                    *(float *)(p8 + i * t8) = v17;
                    *(float *)(p9 + i * t9) = v19;
                    *(float *)(p10 + i * t10) = v21;
                    *(float *)(p11 + i * t11) = v23;
                }
            }
        }
    }
}
void jn_k0_0(const jn_kcall *c) { jn_krun(c, jn_k0_0_rows); }
