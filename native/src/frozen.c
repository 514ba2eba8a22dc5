/* The Frozen type of frozen.h: a private copy of a C-contiguous buffer, exported
 * read-only (NumPy refuses to make an array over it writable), registered by address while
 * it lives so a GEMM finds it from an operand's pointer alone: the generated code passes
 * nothing new. Forms are made outside the lock (packing runs on the pool) and published
 * under it; the first of two threads that made the same form wins. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "frozen.h"

typedef struct form {
    struct form *next;
    cv_form_key key;
    void *data;
} form;

typedef struct {
    PyObject_HEAD
    Py_buffer view; /* of the private copy; data and nbytes are its buf and len */
    char *data;
    Py_ssize_t nbytes;
    form *forms; /* under `lock` */
} frozen;

/* The live buffers; `lock` guards the list and every buffer's forms. */
static frozen **live;
static Py_ssize_t nlive, cap;
static atomic_long any_live; /* nlive, read without the lock: most processes have none */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Memory for a form: 64-byte aligned; from 4 MiB on 2 MiB aligned and advised into huge
 * pages, as NumPy's allocator advises its large arrays. */
static void *block(size_t bytes) {
    size_t huge = (size_t)2 << 20;
    void *p = NULL;
    if (bytes >= 2 * huge) {
        if (posix_memalign(&p, huge, bytes) != 0)
            return NULL;
        madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE); /* advice: may fail */
        return p;
    }
    return posix_memalign(&p, 64, bytes ? bytes : 64) == 0 ? p : NULL;
}

static void take(void) { pthread_mutex_lock(&lock); }
static void give(void) { pthread_mutex_unlock(&lock); }

static void register_atfork(void) { pthread_atfork(take, give, give); }

static int add_live(frozen *f) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_atfork);
    take();
    if (nlive == cap) {
        Py_ssize_t more = cap ? 2 * cap : 64;
        frozen **grown = realloc(live, (size_t)more * sizeof *live);
        if (!grown) {
            give();
            return -1;
        }
        live = grown, cap = more;
    }
    live[nlive++] = f;
    atomic_store(&any_live, (long)nlive);
    give();
    return 0;
}

static void drop_live(frozen *f) {
    take();
    for (Py_ssize_t i = 0; i < nlive; i++)
        if (live[i] == f) {
            live[i] = live[--nlive];
            break;
        }
    atomic_store(&any_live, (long)nlive);
    give();
}

static int same_key(const cv_form_key *x, const cv_form_key *y) {
    return x->b == y->b && x->rs == y->rs && x->cs == y->cs && x->k == y->k && x->n == y->n &&
           x->nr == y->nr && x->size == y->size;
}

/* The buffer holding [lo, hi), and its form of key if it has one; under the lock. */
static frozen *holder(const char *lo, const char *hi, const cv_form_key *key, void **found) {
    *found = NULL;
    for (Py_ssize_t i = 0; i < nlive; i++) {
        frozen *f = live[i];
        uintptr_t start = (uintptr_t)f->data;
        if ((uintptr_t)lo >= start && (uintptr_t)hi <= start + (uintptr_t)f->nbytes) {
            for (form *x = f->forms; x; x = x->next)
                if (same_key(&x->key, key))
                    *found = x->data;
            return f;
        }
    }
    return NULL;
}

void *cv_frozen_form(const char *lo, const char *hi, const cv_form_key *key, size_t bytes,
                     void (*fill)(void *ctx, void *dst), void *ctx) {
    if (!atomic_load_explicit(&any_live, memory_order_relaxed))
        return NULL;
    void *found;
    take();
    frozen *f = holder(lo, hi, key, &found);
    give();
    if (!f || found)
        return found;
    form *made = malloc(sizeof *made);
    void *data = made ? block(bytes) : NULL;
    if (!data) {
        free(made);
        return NULL;
    }
    fill(ctx, data);
    *made = (form){.key = *key, .data = data};
    take();
    holder(lo, hi, key, &found); /* f is alive: the caller holds it */
    if (!found) {
        made->next = f->forms;
        f->forms = made;
        found = data, made = NULL;
    }
    give();
    if (made) {
        free(made->data);
        free(made);
    }
    return found;
}

/* ---- the Python type -------------------------------------------------------- */

/* Frozen(source): a private NumPy copy of source's bytes (numpy.array copies; NumPy's
 * allocator, which advises large arrays into huge pages: the weights stream as fast as the
 * user's own arrays), held through a buffer view no one else can reach. */
static PyObject *frozen_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *source;
    static char *kwlist[] = {"source", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:Frozen", kwlist, &source))
        return NULL;
    PyObject *numpy = PyImport_ImportModule("numpy");
    PyObject *copy = numpy ? PyObject_CallMethod(numpy, "array", "O", source) : NULL;
    Py_XDECREF(numpy);
    if (!copy)
        return NULL;
    frozen *f = (frozen *)type->tp_alloc(type, 0);
    if (f && PyObject_GetBuffer(copy, &f->view, PyBUF_C_CONTIGUOUS) < 0) {
        Py_DECREF(f);
        f = NULL;
    } else if (f) {
        f->data = f->view.buf, f->nbytes = f->view.len;
        if (add_live(f) < 0) {
            Py_DECREF(f);
            f = NULL;
            PyErr_NoMemory();
        }
    }
    Py_DECREF(copy);
    return (PyObject *)f;
}

static void frozen_dealloc(PyObject *self) {
    frozen *f = (frozen *)self;
    drop_live(f); /* first: no GEMM can find it from here on */
    for (form *x = f->forms, *next; x; x = next) {
        next = x->next;
        free(x->data);
        free(x);
    }
    if (f->view.obj)
        PyBuffer_Release(&f->view);
    Py_TYPE(self)->tp_free(self);
}

static int frozen_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    frozen *f = (frozen *)self;
    return PyBuffer_FillInfo(view, self, f->data, f->nbytes, 1, flags);
}

static PyBufferProcs frozen_buffer = {.bf_getbuffer = frozen_getbuffer};

static PyObject *frozen_forms(PyObject *self, void *closure) {
    (void)closure;
    long n = 0;
    take();
    for (form *x = ((frozen *)self)->forms; x; x = x->next)
        n++;
    give();
    return PyLong_FromLong(n);
}

static PyGetSetDef frozen_getset[] = {
    {"forms", frozen_forms, NULL, "The packed forms of GEMM operands kept in this buffer.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject cv_FrozenType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cuvil_aot.runtime.native.Frozen",
    .tp_basicsize = sizeof(frozen),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A read-only, 64-byte aligned copy of a C-contiguous buffer (cuvil_aot.freeze).",
    .tp_new = frozen_new,
    .tp_dealloc = frozen_dealloc,
    .tp_as_buffer = &frozen_buffer,
    .tp_getset = frozen_getset,
};
