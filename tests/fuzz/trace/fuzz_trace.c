/* fuzz_trace.c -- libFuzzer harness of the recorded-event decoder
 * (db/trace.c): the input is a decompressed trace chunk.  Every event the
 * decoder accepts is encoded again (jn_db_encode_event) and that encoding
 * decoded and encoded once more: the two encodings must be equal bytes
 * (decode and encode agree on every field), and decoding must end with
 * JN_OK or the decoder's own "corrupt event chunk" error.  Seeds:
 * tests/fuzz/trace/seeds (chunks of recorded steps).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_db.h"

/* Decode all of data into buf, re-encoded; -1: decoding failed. */
static int recode(const uint8_t *data, size_t size, jn_db_buf *buf, size_t *nev) {
    jn_db_decoder *d = NULL;
    if (jn_db_decoder_new(data, size, &d) != JN_OK) return -1;
    int rc = 0;
    *nev = 0;
    for (;;) {
        jn_db_event ev;
        int got = 0;
        jn_status s = jn_db_decoder_next(d, &ev, &got);
        if (s != JN_OK) {
            if (s != JN_ERR_IO || !strstr(jn_errmsg(), "corrupt event chunk")) {
                fprintf(stderr, "decoder: unexpected status %d: %s\n", (int)s, jn_errmsg());
                abort();
            }
            rc = -1;
            break;
        }
        if (!got) break;
        (*nev)++;
        if (jn_db_encode_event(buf, &ev) != JN_OK) {
            fprintf(stderr, "an event the decoder accepted does not encode: %s\n", jn_errmsg());
            abort();
        }
    }
    jn_db_decoder_free(d);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    jn_db_buf a = {0}, b = {0};
    size_t na = 0, nb = 0;
    int ra = recode(data, size, &a, &na);
    /* what decoded (the whole input, or the events before the damage) round trips */
    if (recode(a.data, a.len, &b, &nb) != 0 || na != nb || a.len != b.len || (a.len && memcmp(a.data, b.data, a.len))) {
        fprintf(stderr, "decode/encode round trip differs (%zu vs %zu events, %zu vs %zu bytes)\n", na, nb, a.len,
                b.len);
        abort();
    }
    (void)ra;
    jn_db_buf_free(&a);
    jn_db_buf_free(&b);
    return 0;
}
