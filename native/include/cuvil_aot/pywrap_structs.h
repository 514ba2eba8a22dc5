/* Dict, list and instance arguments of the CPython wrappers (codegen/struct_arguments.py):
 * each declared item taken out by key, attribute or position, the instance's class and
 * what it may hide checked. Included by pywrap.h, whose cv_describe and
 * cv_SignatureError it uses. */
#ifndef CUVIL_AOT_PYWRAP_STRUCTS_H
#define CUVIL_AOT_PYWRAP_STRUCTS_H

/* Item `key` of argument `label` declared as a dict: a new reference, or NULL with
 * SignatureError set (no mapping, or no such key). `*cached` holds the key's string. */
static PyObject *cv_dict_item(const char *fname, const char *label, PyObject *obj,
                              const char *key, PyObject **cached) {
    char got[160];
    if (!*cached && !(*cached = PyUnicode_InternFromString(key))) return NULL;
    if (PyDict_Check(obj)) {
        PyObject *item = PyDict_GetItemWithError(obj, *cached);
        if (item) return Py_NewRef(item);
        if (PyErr_Occurred()) return NULL;
    } else if (PyMapping_Check(obj) && !PySequence_Check(obj)) {
        PyObject *item = PyObject_GetItem(obj, *cached);
        if (item || !PyErr_ExceptionMatches(PyExc_KeyError)) return item;
        PyErr_Clear();
    } else {
        cv_describe(obj, got, sizeof got);
        PyErr_Format(cv_SignatureError, "%s(): argument '%s': expected a dict, got %s", fname,
                     label, got);
        return NULL;
    }
    PyErr_Format(cv_SignatureError, "%s(): argument '%s': expected a dict with the key '%s' "
                 "(the signature declares it), got a %s without it", fname, label, key,
                 Py_TYPE(obj)->tp_name);
    return NULL;
}

/* Argument `label`, a dict holding its `n` declared keys (`declared`, for the message),
 * whose keys the function looks at (a loop over it, len, in, .get, **): 0 where it has no
 * others, else -1 with SignatureError set (Python would have seen them). */
static int cv_dict_exact(const char *fname, const char *label, PyObject *obj, Py_ssize_t n,
                         const char *declared) {
    Py_ssize_t len = PyObject_Length(obj);
    if (len < 0) return -1;
    if (len == n) return 0;
    PyErr_Format(cv_SignatureError, "%s(): argument '%s': expected exactly the keys %s, got "
                 "%zd keys: the function looks at the dict's keys (a loop over it, len, in, "
                 ".get or **), so Python's answer depends on the keys the signature does not "
                 "declare", fname, label, declared, len);
    return -1;
}

/* Argument `label`, an instance of `cls` (named `shown`): of that class, or of a subclass
 * that finds the same as `cls` under each of `same` ("a\0b\0": what the compiled code
 * took from the class; NULL: the class itself only). 0, else -1 with SignatureError set. */
static int cv_instance_check(const char *fname, const char *label, PyObject *obj,
                             PyObject *cls, const char *shown, const char *same) {
    char got[160];
    if (cls && Py_TYPE(obj) == (PyTypeObject *)cls) return 0;
    if (!cls) {
        PyErr_Format(PyExc_RuntimeError, "%s(): the class %s was not bound to this module",
                     fname, shown);
        return -1;
    }
    const char *changed = NULL;
    if (same && PyObject_TypeCheck(obj, (PyTypeObject *)cls)) {
        for (const char *n = same; *n && !changed; n += strlen(n) + 1) {
            PyObject *mine = PyObject_GetAttrString((PyObject *)Py_TYPE(obj), n);
            PyObject *theirs = mine ? PyObject_GetAttrString(cls, n) : NULL;
            if (!mine || !theirs) {
                Py_XDECREF(mine);
                return -1;
            }
            if (mine != theirs) changed = n;  /* a bound classmethod is new: refused too */
            Py_DECREF(mine);
            Py_DECREF(theirs);
        }
        if (!changed) return 0;
    }
    cv_describe(obj, got, sizeof got);
    if (changed)
        PyErr_Format(cv_SignatureError, "%s(): argument '%s': expected a %s or a subclass that "
                     "keeps what the compiled code inlined, got %s, whose '%s' is its own",
                     fname, label, shown, got, changed);
    else
        PyErr_Format(cv_SignatureError, "%s(): argument '%s': expected a %s%s, got %s", fname,
                     label, shown, same ? " or a subclass of it" : " (that class itself: the "
                     "compiled code answered isinstance or a class method for it)", got);
    return -1;
}

/* The attribute `name` of instance argument `label` (a new reference), or NULL with
 * SignatureError set where it has none (*cached: the interned name). */
static PyObject *cv_attribute(const char *fname, const char *label, PyObject *obj,
                              const char *name, PyObject **cached) {
    if (!*cached && !(*cached = PyUnicode_InternFromString(name))) return NULL;
    PyObject *item = PyObject_GetAttr(obj, *cached);
    if (item || !PyErr_ExceptionMatches(PyExc_AttributeError)) return item;
    PyErr_Clear();
    PyErr_Format(cv_SignatureError, "%s(): argument '%s': expected the attribute '%s' (its "
                 "class declares it), got a %s without it", fname, label, name,
                 Py_TYPE(obj)->tp_name);
    return NULL;
}

/* Whether an instance's own attribute `mine` is what Python would find on its class,
 * `theirs`: the same object, or a bool, int, float or str of the same type and value
 * (transformers' `self.is_decoder = config.is_decoder` beside a class's `is_decoder = False`). */
static int cv_same_as_class(PyObject *mine, PyObject *theirs) {
    if (mine == theirs) return 1;
    if (Py_TYPE(mine) != Py_TYPE(theirs)) return 0;
    if (!PyBool_Check(mine) && !PyLong_CheckExact(mine) && !PyFloat_CheckExact(mine) &&
        !PyUnicode_CheckExact(mine))
        return 0;
    return PyObject_RichCompareBool(mine, theirs, Py_EQ);
}

/* Instance argument `label` holds none of `names` ("a\0b\0\0": what the compiled code
 * read from its class: methods, constants) in its __dict__, where it would hide them from
 * Python's lookup, unless as the class's own value (cv_same_as_class): 0, else -1 with
 * SignatureError set. */
static int cv_not_hidden(const char *fname, const char *label, PyObject *obj,
                         const char *names) {
    PyObject *dict = PyObject_GenericGetDict(obj, NULL);  /* a new reference */
    if (!dict) {  /* no __dict__ (__slots__): nothing can hide them */
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        return 0;
    }
    for (const char *n = names; *n; n += strlen(n) + 1) {
        PyObject *mine = PyDict_GetItemString(dict, n);  /* borrowed */
        if (!mine) continue;
        PyObject *theirs = PyObject_GetAttrString((PyObject *)Py_TYPE(obj), n);
        int same = theirs ? cv_same_as_class(mine, theirs) : -1;
        if (same == 0)
            PyErr_Format(cv_SignatureError, "%s(): argument '%s': the instance's own attribute "
                         "'%s' (%.60R) hides its class's (%.60R), which the compiled code read",
                         fname, label, n, mine, theirs);
        Py_XDECREF(theirs);
        if (same == 1) continue;
        Py_DECREF(dict);
        return -1;
    }
    Py_DECREF(dict);
    return 0;
}

/* Fill the module's `n` class slots from the tuple `given` (binding: the classes its
 * `_cv_classes` names). */
static int cv_fill_classes(PyObject **slots, Py_ssize_t n, PyObject *given) {
    if (!PyTuple_Check(given) || PyTuple_GET_SIZE(given) != n) {
        PyErr_Format(PyExc_TypeError, "_cv_set_classes: expected a tuple of %zd classes", n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        Py_XSETREF(slots[i], Py_NewRef(PyTuple_GET_ITEM(given, i)));
    return 0;
}

/* Argument `label` declared as a list of `length` items: 0, or -1 with SignatureError set
 * where it is no list or tuple of that length. */
static int cv_list_check(const char *fname, const char *label, PyObject *obj,
                         Py_ssize_t length) {
    char got[160];
    if (!PyList_Check(obj) && !PyTuple_Check(obj)) {
        cv_describe(obj, got, sizeof got);
        PyErr_Format(cv_SignatureError, "%s(): argument '%s': expected a list or tuple of "
                     "%zd items, got %s", fname, label, length, got);
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(obj) != length) {
        PyErr_Format(cv_SignatureError, "%s(): argument '%s': expected a list or tuple of "
                     "%zd items, got a %s of %zd", fname, label, length, Py_TYPE(obj)->tp_name,
                     PySequence_Fast_GET_SIZE(obj));
        return -1;
    }
    return 0;
}

#endif
