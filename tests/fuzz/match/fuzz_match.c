/* fuzz_match.c -- libFuzzer harness of replay's matcher section loader
 * (replay/match.c, jn_rp_match_new): the input is a module and a section,
 *   u32 n (little-endian), n bytes of jn_ir_serialize, the JN_CG_SEC_MATCHER
 *   section (the rest)
 * as a bundle carries them (the IR's checksum rewritten to match).  An
 * input whose module does not deserialize is
 * skipped; otherwise the loader must refuse (JN_ERR_VALUE naming the
 * matcher section) or build a matcher, which then takes a segment of a
 * few events made from the section's first graph's ops without crashing.
 * Seeds: tests/fuzz/match/seeds (module + section pairs `janus optimize`
 * stored for recordings).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_db.h" /* jn_db_fnv1a64: the IR checksum */
#include "jn_ir.h"
#include "jn_match.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 4) return 0;
    uint32_t n = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
    if (n > size - 4) return 0;
    uint8_t *ir = malloc(n ? n : 1);
    if (!ir) return 0;
    memcpy(ir, data + 4, n);
    if (n >= 8) {
        uint64_t h = jn_db_fnv1a64(ir, n - 8);
        for (int i = 0; i < 8; i++) ir[n - 8 + i] = (uint8_t)(h >> (8 * i));
    }
    jn_ir_module *m = NULL;
    jn_status ds = jn_ir_deserialize(ir, n, &m);
    free(ir);
    if (ds != JN_OK) return 0;
    const uint8_t *sec = data + 4 + n;
    size_t len = size - 4 - n;
    /* an exact-size copy of the section, so a read past its end is caught */
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) abort();
    memcpy(copy, sec, len);
    jn_rp_matcher *mt = NULL;
    jn_status s = jn_rp_match_new(m, copy, len, &mt);
    if (s != JN_OK) {
        if (mt || s != JN_ERR_VALUE || !strstr(jn_errmsg(), "matcher section")) {
            fprintf(stderr, "refusal: status %d, matcher %p, message '%s'\n", (int)s, (void *)mt, jn_errmsg());
            abort();
        }
    } else {
        /* the first node of every graph, fed as ops on [2, 3] float tensors */
        int64_t shape[2] = {2, 3};
        jn_rp_match_arg args[8];
        for (int i = 0; i < 8; i++)
            args[i] = (jn_rp_match_arg){.id = 100 + i, .shape = shape, .ndim = 2, .dtype = JN_F32};
        jn_rp_match_result r;
        for (int32_t gi = 0; gi < m->ngraphs && gi < 4; gi++) {
            const jn_ir_graph *g = m->graphs[gi];
            jn_rp_match_begin(mt, 0);
            for (int32_t k = 0; k < g->nnodes && k < 6; k++) {
                const jn_ir_node *x = &g->nodes[k];
                if (x->nin > 4 || x->nout > 4) break;
                jn_rp_match_event ev = {x->op, x->attrs.a, x->nin, x->nout, args, args + 4};
                if (jn_rp_match_feed(mt, &ev, &r) == JN_RP_MATCH_MISS) break;
            }
            jn_rp_match_end(mt, &r);
        }
        jn_rp_match_free(mt);
    }
    free(copy);
    jn_ir_module_free(m);
    return 0;
}
