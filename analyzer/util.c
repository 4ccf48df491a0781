/* util.c -- small containers the analyzer's passes share: growable arrays
 * (an_grow) and an open-addressing hash map from uint64 keys to int64
 * values (tensor id -> last use, exemplar hash -> exemplar, ...).
 */
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

int an_grow(void *arrp, int64_t *cap, int64_t n, size_t es) {
    if (n <= *cap) return 0;
    int64_t nc = *cap ? *cap : 16;
    while (nc < n) nc *= 2;
    void **arr = arrp;
    void *p = realloc(*arr, (size_t)nc * es);
    if (!p) {
        jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
        return -1;
    }
    *arr = p;
    *cap = nc;
    return 0;
}

static size_t slot_of(uint64_t k, size_t cap) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

int64_t *an_map_find(const an_map *m, uint64_t k) {
    if (!m->cap) return NULL;
    size_t j = slot_of(k, m->cap);
    while (m->used[j]) {
        if (m->k[j] == k) return &m->v[j];
        j = (j + 1) & (m->cap - 1);
    }
    return NULL;
}

int64_t *an_map_get(an_map *m, uint64_t k, int64_t dflt, int *isnew) {
    if (2 * (m->n + 1) > m->cap) {
        size_t nc = m->cap ? 2 * m->cap : 64;
        uint64_t *nk = malloc(nc * sizeof *nk);
        int64_t *nv = malloc(nc * sizeof *nv);
        uint8_t *nu = calloc(nc, 1);
        if (!nk || !nv || !nu) {
            free(nk);
            free(nv);
            free(nu);
            jn_error(JN_ERR_NOMEM, "analyzer: out of memory");
            return NULL;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->used[i]) continue;
            size_t j = slot_of(m->k[i], nc);
            while (nu[j]) j = (j + 1) & (nc - 1);
            nu[j] = 1;
            nk[j] = m->k[i];
            nv[j] = m->v[i];
        }
        free(m->k);
        free(m->v);
        free(m->used);
        m->k = nk;
        m->v = nv;
        m->used = nu;
        m->cap = nc;
    }
    size_t j = slot_of(k, m->cap);
    while (m->used[j]) {
        if (m->k[j] == k) {
            if (isnew) *isnew = 0;
            return &m->v[j];
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->used[j] = 1;
    m->k[j] = k;
    m->v[j] = dflt;
    m->n++;
    if (isnew) *isnew = 1;
    return &m->v[j];
}

void an_map_clear(an_map *m) {
    if (m->cap > 1024 && (size_t)m->n * 8 < m->cap) {
        /* a map one huge segment grew: clearing it for every small one after
         * would cost its size each time; start small again */
        an_map_free(m);
        return;
    }
    if (m->n) memset(m->used, 0, m->cap);
    m->n = 0;
}

void an_map_free(an_map *m) {
    free(m->k);
    free(m->v);
    free(m->used);
    memset(m, 0, sizeof *m);
}
