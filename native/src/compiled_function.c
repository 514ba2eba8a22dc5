/* cuvil_aot.runtime.native.CompiledFunction: what a marked function becomes once its
 * module is compiled. Calls go straight to the generated METH_FASTCALL
 * function through vectorcall (no Python frame in between); the object also
 * carries what users expect of a function: __name__, __doc__, __wrapped__ and
 * py_func (the original), and the fallback to it when no signature matches. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "internal.h"

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *compiled;    /* the generated builtin function */
    PyObject *py_func;     /* the original Python function */
    PyObject *fallback;    /* None, or the SignatureError type to fall back on */
    PyObject *defaults;    /* tuple of (position, name, value): parameters with defaults */
    PyObject *dict;        /* __name__, __doc__, ... copied from py_func */
    int warned;
} CompiledFunction;

static PyObject *cf_fallback(CompiledFunction *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames) {
    if (!self->warned) {
        self->warned = 1;
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        PyObject *name = PyObject_GetAttrString(self->py_func, "__qualname__");
        PyObject *msg = name ? PyUnicode_FromFormat("%S: no compiled signature matches, "
                                                    "running the Python function (%S)", name,
                                                    value)
                             : NULL;
        Py_XDECREF(name);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        if (!msg) return NULL;
        int rc = PyErr_WarnEx(PyExc_RuntimeWarning, PyUnicode_AsUTF8(msg), 1);
        Py_DECREF(msg);
        if (rc < 0) return NULL;
    } else {
        PyErr_Clear();
    }
    return PyObject_Vectorcall(self->py_func, args, nargsf, kwnames);
}

static int cf_named(PyObject *kwnames, PyObject *name) {
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++)
        if (PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, k), name) == 0) return 1;
    return 0;
}

/* The compiled function with the defaults of the parameters the call leaves out passed
 * by keyword, as Python would bind them; NULL and no error when none is left out. */
static PyObject *cf_call_with_defaults(CompiledFunction *self, PyObject *const *args,
                                       size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    Py_ssize_t nd = PyTuple_GET_SIZE(self->defaults), missing = 0;
    PyObject **stack = PyMem_Malloc(sizeof(PyObject *) * (size_t)(nargs + nkw + nd + 1));
    PyObject *names = PyList_New(0);
    PyObject *result = NULL;
    if (!stack || !names) goto done;
    for (Py_ssize_t i = 0; i < nargs + nkw; i++) stack[i] = args[i];
    for (Py_ssize_t k = 0; k < nkw; k++)
        if (PyList_Append(names, PyTuple_GET_ITEM(kwnames, k)) < 0) goto done;
    for (Py_ssize_t d = 0; d < nd; d++) {
        PyObject *entry = PyTuple_GET_ITEM(self->defaults, d);
        PyObject *name = PyTuple_GET_ITEM(entry, 1);
        if (PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 0)) < nargs || cf_named(kwnames, name))
            continue;
        stack[nargs + nkw + missing++] = PyTuple_GET_ITEM(entry, 2);
        if (PyList_Append(names, name) < 0) goto done;
    }
    if (missing == 0) goto done;
    PyObject *all = PyList_AsTuple(names);
    if (!all) goto done;
    result = PyObject_Vectorcall(self->compiled, stack, (size_t)nargs, all);
    Py_DECREF(all);
done:
    if (!stack && !PyErr_Occurred()) PyErr_NoMemory();
    PyMem_Free(stack);
    Py_XDECREF(names);
    return result;
}

static PyObject *cf_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames) {
    CompiledFunction *self = (CompiledFunction *)callable;
    PyObject *result = NULL;
    if (PyTuple_GET_SIZE(self->defaults) > 0) {
        result = cf_call_with_defaults(self, args, nargsf, kwnames);
        if (!result && PyErr_Occurred()) goto failed;
    }
    if (!result) result = PyObject_Vectorcall(self->compiled, args, nargsf, kwnames);
failed:
    if (!result && self->fallback != Py_None && PyErr_ExceptionMatches(self->fallback))
        return cf_fallback(self, args, nargsf, kwnames);
    return result;
}

static PyObject *cf_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"compiled", "py_func", "fallback", "defaults", NULL};
    PyObject *compiled, *py_func, *fallback = Py_None, *defaults = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|OO!", kwlist, &compiled, &py_func,
                                     &fallback, &PyTuple_Type, &defaults))
        return NULL;
    Py_ssize_t nd = defaults ? PyTuple_GET_SIZE(defaults) : 0;
    for (Py_ssize_t d = 0; d < nd; d++) {
        PyObject *e = PyTuple_GET_ITEM(defaults, d);
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 3 || !PyLong_Check(PyTuple_GET_ITEM(e, 0))
            || !PyUnicode_Check(PyTuple_GET_ITEM(e, 1))) {
            PyErr_SetString(PyExc_TypeError, "defaults must be (position, name, value) tuples");
            return NULL;
        }
    }
    if (!PyCallable_Check(compiled) || !PyCallable_Check(py_func)) {
        PyErr_SetString(PyExc_TypeError, "compiled and py_func must be callable");
        return NULL;
    }
    CompiledFunction *self = (CompiledFunction *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->vectorcall = cf_vectorcall;
    self->compiled = Py_NewRef(compiled);
    self->py_func = Py_NewRef(py_func);
    self->fallback = Py_NewRef(fallback);
    self->defaults = defaults ? Py_NewRef(defaults) : PyTuple_New(0);
    self->dict = PyDict_New();
    if (!self->defaults || !self->dict) {
        Py_DECREF(self);
        return NULL;
    }
    static const char *copied[] = {"__name__", "__qualname__", "__module__", "__doc__", NULL};
    for (const char **name = copied; *name; name++) {
        PyObject *value = PyObject_GetAttrString(py_func, *name);
        if (!value) {
            PyErr_Clear();
            continue;
        }
        int rc = PyDict_SetItemString(self->dict, *name, value);
        Py_DECREF(value);
        if (rc < 0) {
            Py_DECREF(self);
            return NULL;
        }
    }
    if (PyDict_SetItemString(self->dict, "__wrapped__", py_func) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int cf_traverse(CompiledFunction *self, visitproc visit, void *arg) {
    Py_VISIT(self->compiled);
    Py_VISIT(self->py_func);
    Py_VISIT(self->fallback);
    Py_VISIT(self->defaults);
    Py_VISIT(self->dict);
    return 0;
}

static int cf_clear(CompiledFunction *self) {
    Py_CLEAR(self->compiled);
    Py_CLEAR(self->py_func);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->defaults);
    Py_CLEAR(self->dict);
    return 0;
}

static void cf_dealloc(CompiledFunction *self) {
    PyObject_GC_UnTrack(self);
    cf_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *cf_repr(CompiledFunction *self) {
    return PyUnicode_FromFormat("<cuvil_aot compiled function %R>", self->py_func);
}

/* As a class's attribute (a marked method), `obj.f` binds the instance as functions do;
 * with Py_TPFLAGS_METHOD_DESCRIPTOR, `obj.f(x)` calls f(obj, x) with no bound method made. */
static PyObject *cf_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
    (void)type;
    if (obj == NULL || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyMemberDef cf_members[] = {
    {"py_func", T_OBJECT, offsetof(CompiledFunction, py_func), READONLY,
     "the original Python function"},
    {"compiled", T_OBJECT, offsetof(CompiledFunction, compiled), READONLY,
     "the generated extension function"},
    {"__dictoffset__", T_PYSSIZET, offsetof(CompiledFunction, dict), READONLY, NULL},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(CompiledFunction, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject cv_CompiledFunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cuvil_aot.runtime.native.CompiledFunction",
    .tp_doc = "A marked function bound to its compiled code.",
    .tp_basicsize = sizeof(CompiledFunction),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = cf_new,
    .tp_dealloc = (destructor)cf_dealloc,
    .tp_traverse = (traverseproc)cf_traverse,
    .tp_clear = (inquiry)cf_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(CompiledFunction, vectorcall),
    .tp_dictoffset = offsetof(CompiledFunction, dict),
    .tp_repr = (reprfunc)cf_repr,
    .tp_members = cf_members,
    .tp_descr_get = cf_descr_get,
};
