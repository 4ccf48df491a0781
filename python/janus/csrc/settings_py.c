/* settings_py.c -- janus._C's view of the settings table (runtime/
 * settings.def, jn_settings.h): Python reads every JANUS_* variable through
 * the same parser as C, so a value means the same on both sides and a bad
 * one is refused with the same message.
 */
#include "jn_py.h"

#include "jn_settings.h"

/* _setting(name) -> the parsed value of the variable (or of its default):
 * bool for BOOL rows, int for INT, float for FLOAT, str for PATH, LIST and
 * CHOICE; None when it is unset and the row has no default.  name is
 * "JANUS_X" or "X".  ValueError (jn_errmsg's text, naming the variable) for
 * a value the row refuses; KeyError for a name that is no row. */
static PyObject *py_setting(PyObject *self, PyObject *arg) {
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    int id = jn_setting_find(name);
    if (id < 0) {
        PyErr_Format(PyExc_KeyError, "%s is not a janus setting (runtime/settings.def lists them; `janus env` "
                     "prints them)", name);
        return NULL;
    }
    const jn_setting_info *r = jn_setting_info_of((jn_setting)id);
    const char *text = jn_setting_raw((jn_setting)id);
    if (!text) text = *r->dflt ? r->dflt : NULL;
    if (!text) Py_RETURN_NONE;
    int b = 0;
    int64_t i = 0;
    double f = 0;
    if (jn_setting_parse((jn_setting)id, text, &b, &i, &f)) return jn_py_raise(JN_ERR_VALUE);
    switch (r->type) {
    case JN_ST_BOOL: return PyBool_FromLong(b);
    case JN_ST_INT: return PyLong_FromLongLong((long long)i);
    case JN_ST_FLOAT: return PyFloat_FromDouble(f);
    default: return PyUnicode_FromString(text);
    }
}

PyMethodDef jn_py_settings_methods[] = {
    {"_setting", py_setting, METH_O,
     "_setting(name): the parsed value of a JANUS_* setting (bool/int/float/str), None when unset without "
     "default; ValueError for a refused value"},
    {NULL, NULL, 0, NULL}};
