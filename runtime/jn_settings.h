/* jn_settings.h -- janus's JANUS_* environment variables, expanded from
 * settings.def: the enum, the info table and one parser.
 *
 * A setting is read where it is used, each time (the environment is the only
 * state: nothing is cached here, so a test may set a variable and read it
 * back).  Unset or empty means the row's default.  A value the row does not
 * accept is refused: JN_ERR_VALUE with a message naming the variable, the
 * value and what is accepted -- never a silent default.  Python reads the
 * same table through janus._C (_settings, _setting_value), `janus env`
 * prints it.  Readers that cannot return a jn_status (sizes fixed lazily
 * inside a kernel) use jn_setting_int_lazy, and `import janus` and the
 * janus command (jn_setting_check) refuse their bad values first.
 *
 * Prefix jn_setting_.  Thread-safe (reads only).
 */
#ifndef JN_SETTINGS_H
#define JN_SETTINGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jn_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
#define X(id, type, dflt, range, kind, readers, doc) JN_S_##id,
#include "settings.def"
#undef X
    JN_S__COUNT
} jn_setting;

typedef enum { JN_ST_BOOL, JN_ST_INT, JN_ST_FLOAT, JN_ST_PATH, JN_ST_LIST, JN_ST_CHOICE } jn_setting_type;
typedef enum { JN_SK_USER, JN_SK_CHILD, JN_SK_TEST, JN_SK_BENCH, JN_SK_BUILD } jn_setting_kind;

typedef struct {
    const char *name;      /* "JANUS_NUM_THREADS" */
    jn_setting_type type;
    const char *dflt;      /* text; "" none */
    const char *range;     /* "lo..hi" (INT/FLOAT), "a|b" (CHOICE), "" */
    jn_setting_kind kind;
    const char *readers;
    const char *doc;
} jn_setting_info;

const jn_setting_info *jn_setting_info_of(jn_setting s);
/* The row named name ("JANUS_CACHE_MB" or "CACHE_MB"), or -1. */
int jn_setting_find(const char *name);
const char *jn_setting_type_name(jn_setting_type t);
/* "user", "child", "test", "bench", "build" (as janus._C._settings says). */
const char *jn_setting_kind_name(jn_setting_kind k);

/* The raw text: NULL when unset or empty (the default applies). */
const char *jn_setting_raw(jn_setting s);

/* Typed reads of the variable (or of its default).  Each checks the type
 * and range and refuses (JN_ERR_VALUE, message set) a bad value. */
jn_status jn_setting_bool(jn_setting s, int *out);
jn_status jn_setting_int(jn_setting s, int64_t *out);
jn_status jn_setting_float(jn_setting s, double *out);
/* PATH, LIST and CHOICE: the text (the default when unset; "" when neither). */
jn_status jn_setting_str(jn_setting s, const char **out);

/* Parse text as setting s would be: what the typed reads use, and what
 * Python's janus._C._setting calls.  Exactly one of the outputs is
 * written, by type (BOOL -> *b, INT -> *i, FLOAT -> *f, others -> none:
 * the text itself is the value). */
jn_status jn_setting_parse(jn_setting s, const char *text, int *b, int64_t *i, double *f);

/* Every setting of a kind in kind_mask (1 << JN_SK_*) that is set now is
 * parsed; the first refused one is returned (JN_ERR_VALUE, message set).
 * The janus command runs it before any command, on all but CHILD rows
 * (JN_SETTING_CHECKED): those janus sets itself, and their readers say
 * what a bad one means. */
jn_status jn_setting_check(unsigned kind_mask);
#define JN_SETTING_CHECKED (~(1u << JN_SK_CHILD))

/* For a reader that cannot return a jn_status (a size fixed lazily inside
 * a kernel): the value, or the row's default (0 when none) after one line
 * on stderr naming the variable when it is refused -- which only happens
 * when nothing checked it first (`import janus` does, janus/__init__.py,
 * and the janus command; not a C program) or it changed since.
 * scripts/check_settings.py requires janus/__init__.py to name each. */
int64_t jn_setting_int_lazy(jn_setting s);

/* The table as text, one setting per paragraph (name, type, default,
 * range, value now if set, readers, doc), kinds in kind_mask (1 << JN_SK_*):
 * what `janus env` prints.  Returns how many values set now are refused
 * (each marked so). */
int jn_setting_print(FILE *f, unsigned kind_mask);

#ifdef __cplusplus
}
#endif
#endif
