/* settings.c -- the one parser of janus's JANUS_* variables (jn_settings.h).
 *
 * Rows come from settings.def.  Booleans take 1/0, yes/no, true/false,
 * on/off in any case; numbers must parse whole and fall inside the row's
 * range; a choice must be one of its words.  Every refusal names the
 * variable, the value seen and what is accepted, so a typo never turns a
 * switch the wrong way.
 */
#include "jn_settings.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define JN_ST_(t) JN_ST_##t
#define JN_SK_(k) JN_SK_##k
static const jn_setting_info table[JN_S__COUNT] = {
#define X(id, type, dflt, range, kind, readers, doc) {"JANUS_" #id, JN_ST_(type), dflt, range, JN_SK_(kind), readers, doc},
#include "settings.def"
#undef X
};

const jn_setting_info *jn_setting_info_of(jn_setting s) { return &table[s]; }

int jn_setting_find(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < JN_S__COUNT; i++)
        if (!strcmp(table[i].name, name) || !strcmp(table[i].name + 6, name)) return i;
    return -1;
}

const char *jn_setting_type_name(jn_setting_type t) {
    static const char *n[] = {"bool", "int", "float", "path", "list", "choice"};
    return n[t];
}

const char *jn_setting_kind_name(jn_setting_kind k) {
    static const char *n[] = {"user", "child", "test", "bench", "build"};
    return n[k];
}

const char *jn_setting_raw(jn_setting s) {
    const char *v = getenv(table[s].name);
    return v && *v ? v : NULL;
}

/* "lo..hi" of a numeric row.  hi is read after the "..", not after where
 * strtod stopped: it takes "1." of "1..1024" as a number (hi was 24). */
static void range_of(const jn_setting_info *r, double *lo, double *hi) {
    *lo = strtod(r->range, NULL);
    *hi = strtod(strstr(r->range, "..") + 2, NULL);
}

/* Whether word is one of the '|'-separated words of list. */
static int in_list(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, '|');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && !strncmp(p, word, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

jn_status jn_setting_parse(jn_setting s, const char *text, int *b, int64_t *i, double *f) {
    const jn_setting_info *r = &table[s];
    switch (r->type) {
    case JN_ST_BOOL: {
        static const char *const on[] = {"1", "yes", "true", "on"}, *const off[] = {"0", "no", "false", "off"};
        for (int k = 0; k < 4; k++) {
            if (!strcasecmp(text, on[k])) return *b = 1, JN_OK;
            if (!strcasecmp(text, off[k])) return *b = 0, JN_OK;
        }
        return jn_error(JN_ERR_VALUE, "%s=%s is not a switch: use 1/yes/true/on or 0/no/false/off (%s; default %s)",
                        r->name, text, r->doc, r->dflt);
    }
    case JN_ST_INT:
    case JN_ST_FLOAT: {
        double lo, hi, v;
        long long x = 0;
        range_of(r, &lo, &hi);
        char *end;
        errno = 0;
        if (r->type == JN_ST_INT) {
            x = strtoll(text, &end, 10);
            v = (double)x;
        } else {
            v = strtod(text, &end);
        }
        if (*end || errno || end == text || isspace((unsigned char)*text) || !isfinite(v))
            return jn_error(JN_ERR_VALUE, "%s=%s is not %s (%s; accepted: %s%s%s)", r->name, text,
                            r->type == JN_ST_INT ? "a whole number" : "a number", r->doc, r->range,
                            *r->dflt ? ", default " : "", r->dflt);
        /* whole numbers compare as integers: 9.0e18 + 1 is 9.0e18 as a double */
        if (r->type == JN_ST_INT ? x < (long long)lo || x > (long long)hi : v < lo || v > hi)
            return jn_error(JN_ERR_VALUE, "%s=%s is out of range: accepted %s (%s%s%s)", r->name, text, r->range,
                            r->doc, *r->dflt ? "; default " : "", r->dflt);
        if (r->type == JN_ST_INT) *i = x;
        else *f = v;
        return JN_OK;
    }
    case JN_ST_CHOICE:
        if (!in_list(r->range, text))
            return jn_error(JN_ERR_VALUE, "%s=%s is not one of %s (%s)", r->name, text, r->range, r->doc);
        return JN_OK;
    case JN_ST_PATH:
    case JN_ST_LIST:
        return JN_OK;
    }
    return jn_error(JN_ERR_VALUE, "%s: unknown setting type", r->name);
}

/* The text to parse (the variable, else the default) or NULL when neither. */
static const char *text_of(jn_setting s) {
    const char *v = jn_setting_raw(s);
    return v ? v : (*table[s].dflt ? table[s].dflt : NULL);
}

jn_status jn_setting_bool(jn_setting s, int *out) {
    assert(table[s].type == JN_ST_BOOL);
    const char *t = text_of(s);
    *out = 0;
    if (!t) return JN_OK;
    int b = 0;
    jn_status st = jn_setting_parse(s, t, &b, NULL, NULL);
    if (!st) *out = b;
    return st;
}

jn_status jn_setting_int(jn_setting s, int64_t *out) {
    assert(table[s].type == JN_ST_INT);
    const char *t = text_of(s);
    *out = 0;
    if (!t) return JN_OK;
    int64_t v = 0;
    jn_status st = jn_setting_parse(s, t, NULL, &v, NULL);
    if (!st) *out = v;
    return st;
}

jn_status jn_setting_float(jn_setting s, double *out) {
    assert(table[s].type == JN_ST_FLOAT);
    const char *t = text_of(s);
    *out = 0;
    if (!t) return JN_OK;
    double v = 0;
    jn_status st = jn_setting_parse(s, t, NULL, NULL, &v);
    if (!st) *out = v;
    return st;
}

jn_status jn_setting_str(jn_setting s, const char **out) {
    assert(table[s].type >= JN_ST_PATH);
    const char *t = text_of(s);
    *out = t ? t : "";
    return t ? jn_setting_parse(s, t, NULL, NULL, NULL) : JN_OK;
}

/* Parses the variable's text as its row does (any type); JN_OK when unset. */
static jn_status check_one(jn_setting s) {
    const char *v = jn_setting_raw(s);
    int b = 0;
    int64_t i = 0;
    double d = 0;
    return v ? jn_setting_parse(s, v, &b, &i, &d) : JN_OK;
}

jn_status jn_setting_check(unsigned kind_mask) {
    for (int s = 0; s < JN_S__COUNT; s++) {
        if (!(kind_mask & (1u << table[s].kind))) continue;
        jn_status st = check_one((jn_setting)s);
        if (st) return st;
    }
    return JN_OK;
}

int64_t jn_setting_int_lazy(jn_setting s) {
    int64_t v = 0;
    if (jn_setting_int(s, &v) == JN_OK) return v;
    fprintf(stderr, "janus: %s; using %s\n", jn_errmsg(), *table[s].dflt ? table[s].dflt : "the default");
    v = 0;
    if (*table[s].dflt) jn_setting_parse(s, table[s].dflt, NULL, &v, NULL); /* test_settings: defaults parse */
    return v;
}

int jn_setting_print(FILE *f, unsigned kind_mask) {
    static const char *const heading[] = {"user settings", "child: set by janus for the process it starts",
                                          "test: tests and fault injection", "bench: benchmarks",
                                          "build: where to find a build"};
    int bad = 0;
    for (int k = JN_SK_USER; k <= JN_SK_BUILD; k++) {
        if (!(kind_mask & (1u << k))) continue;
        int first = 1;
        for (int s = 0; s < JN_S__COUNT; s++) {
            const jn_setting_info *r = &table[s];
            if ((int)r->kind != k) continue;
            if (first) fprintf(f, "%s-- %s\n", k == JN_SK_USER ? "" : "\n", heading[k]);
            first = 0;
            fprintf(f, "%s  (%s", r->name, jn_setting_type_name(r->type));
            if (*r->range) fprintf(f, " %s", r->range);
            fprintf(f, "; default %s)\n", *r->dflt ? r->dflt : "none");
            fprintf(f, "    %s [%s]\n", r->doc, r->readers);
            const char *v = jn_setting_raw((jn_setting)s);
            if (v) {
                if (check_one((jn_setting)s)) {
                    fprintf(f, "    now: %s -- REFUSED: %s\n", v, jn_errmsg());
                    bad++;
                } else {
                    fprintf(f, "    now: %s\n", v);
                }
            }
        }
    }
    return bad;
}
