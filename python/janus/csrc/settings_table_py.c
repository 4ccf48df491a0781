/* settings_table_py.c -- janus's settings table (runtime/settings.def) for
 * Python, through the one C parser (runtime/jn_settings.h):
 *
 *   _C._settings()            every row as a dict: name, type, default
 *                             (None when none), range (None when none),
 *                             kind, readers, doc
 *   _C._setting_value(name)   the variable's value parsed by its row (the
 *                             default when unset or empty): bool, int,
 *                             float or str by type, None when unset
 *                             without a default; ValueError with the
 *                             parser's message (naming the variable, the
 *                             value and what is accepted) when refused
 *
 * Python code reads a JANUS_* variable only through _setting_value, so C and
 * Python accept exactly the same spellings; janus/__init__.py refuses a bad
 * value of any setting at import.
 */
#include "jn_py.h"
#include "jn_settings.h"

static PyObject *text_or_none(const char *s) {
    if (*s) return PyUnicode_FromString(s);
    Py_RETURN_NONE;
}

static PyObject *py_settings(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    PyObject *list = PyList_New(JN_S__COUNT);
    for (int s = 0; list && s < JN_S__COUNT; s++) {
        const jn_setting_info *r = jn_setting_info_of((jn_setting)s);
        PyObject *d = Py_BuildValue("{s:s,s:s,s:N,s:N,s:s,s:s,s:s}", "name", r->name, "type",
                                    jn_setting_type_name(r->type), "default", text_or_none(r->dflt), "range",
                                    text_or_none(r->range), "kind", jn_setting_kind_name(r->kind), "readers",
                                    r->readers, "doc", r->doc);
        if (!d) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, s, d);
    }
    return list;
}

static PyObject *py_setting_value(PyObject *self, PyObject *arg) {
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    int s = jn_setting_find(name);
    if (s < 0) {
        PyErr_Format(PyExc_KeyError, "%s is not a janus setting (runtime/settings.def; `janus env --all` lists them)",
                     name);
        return NULL;
    }
    const jn_setting_info *r = jn_setting_info_of((jn_setting)s);
    const char *text = jn_setting_raw((jn_setting)s);
    if (!text) text = r->dflt;
    if (!*text) Py_RETURN_NONE;
    int b = 0;
    int64_t i = 0;
    double f = 0;
    if (jn_setting_parse((jn_setting)s, text, &b, &i, &f) != JN_OK) {
        PyErr_SetString(PyExc_ValueError, jn_errmsg());
        return NULL;
    }
    switch (r->type) {
    case JN_ST_BOOL: return PyBool_FromLong(b);
    case JN_ST_INT: return PyLong_FromLongLong((long long)i);
    case JN_ST_FLOAT: return PyFloat_FromDouble(f);
    default: return PyUnicode_FromString(text);
    }
}

PyMethodDef jn_py_settings_table_methods[] = {
    {"_settings", py_settings, METH_NOARGS, "_settings(): janus's settings table, one dict per JANUS_* variable"},
    {"_setting_value", py_setting_value, METH_O,
     "_setting_value(name): the variable's value as its row parses it (ValueError when refused)"},
    {NULL, NULL, 0, NULL}};
