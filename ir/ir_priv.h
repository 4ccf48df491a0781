/* ir_priv.h -- what the files of ir/ share and nobody else sees: the pool
 * (a chunked arena plus the string-interning and expression hash-consing
 * tables), array growth, the keyword tables of the text form, and the
 * helpers the parser and the deserializer use to place values, loops and
 * attributes at the indices a text or blob names (the public API appends).
 */
#ifndef JN_IR_PRIV_H
#define JN_IR_PRIV_H

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "jn_ir.h"

/* Limits that keep hostile input (fuzzed text or blobs) from recursing
 * deeply or nesting without end. */
#define JN_IR_MAX_EXPR_DEPTH 200  /* operator depth of one expression */
#define JN_IR_MAX_LOOP_DEPTH 64   /* loop nesting */

/* Expression index of a ref, -1 when d is no ref or beyond any table. */
static inline int32_t jn_ir__eidx(jn_ir_dim d) {
    return jn_ir_is_expr(d) && d >= JN_IR_EXPR_BASE - INT32_MAX ? jn_ir_expr_index(d) : -1;
}

struct jn_ir_pool *jn_ir__pool_new(void);
void jn_ir__pool_free(struct jn_ir_pool *p);
void *jn_ir__alloc(struct jn_ir_pool *p, size_t n);             /* NULL on OOM (error set) */
const char *jn_ir__intern_n(struct jn_ir_pool *p, const char *s, size_t len);

/* realloc `arr` to hold at least `need` elements (capacity doubles);
 * NULL on OOM (error set; arr and *cap untouched). */
void *jn_ir__resize(void *arr, int32_t *cap, int64_t need, size_t elsize);
#define JN_IR_RESERVE(arr, cap, need, onfail)                                  \
    do {                                                                       \
        if ((int64_t)(need) > (int64_t)(cap)) {                                \
            void *np_ = jn_ir__resize((arr), &(cap), (need), sizeof *(arr));   \
            if (!np_) { onfail; }                                              \
            (arr) = np_;                                                       \
        }                                                                      \
    } while (0)

/* Loop carry/collect arrays have no capacity field: they grow by powers of
 * two of their count. 0 ok, -1 OOM. */
int jn_ir__loop_reserve(jn_ir_loop *l, int carries, int collects);

uint64_t jn_ir__fnv(const void *p, size_t n, uint64_t h);
#define JN_IR_FNV_INIT 0xcbf29ce484222325ull
int jn_ir__is_ident(const char *s);

/* Keyword tables of the text form, indexed by the enums. */
extern const char *const jn_ir__sym_kinds[4];
extern const char *const jn_ir__input_kinds[6];
extern const char *const jn_ir__guard_kinds[8];
extern const char *const jn_ir__pytypes[4];
extern const char *const jn_ir__devices[2];
int jn_ir__lookup(const char *const *names, int n, const char *s, size_t len); /* -1 if absent */

/* The existing SYM expression of symbol s, or 0 when none was made. */
jn_ir_dim jn_ir__sym_ref(const jn_ir_graph *g, int32_t s);
/* Appends text to buf[*at..n) like snprintf, truncating safely. */
void jn_ir__put(char *buf, size_t n, size_t *at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void jn_ir__dim_put(const jn_ir_graph *g, jn_ir_dim d, char *buf, size_t n, size_t *at);

/* Number formatting shared by printer and explanations: %.17g with inf/nan
 * spelled so the parser reads them back; as_float forces a '.' or exponent
 * so the text says "this was a float". */
void jn_ir__fmt_double(double v, int as_float, char *buf, size_t n);

/* Placement helpers for parser and deserializer: grow the value table to
 * hold index v (new slots zeroed); 0 ok, -1 OOM. */
int jn_ir__values_upto(jn_ir_graph *g, int32_t v);
/* An empty loop slot at index l (grows the table). */
int jn_ir__loops_upto(jn_ir_graph *g, int32_t l);
/* Schema defaults into a (numbers from ops.def, dtypes -1, lists empty). */
void jn_ir__attr_defaults(jn_op op, jn_attrs *a);

#endif
