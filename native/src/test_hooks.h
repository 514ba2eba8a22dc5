/* Python-callable test hooks of cuvil_aot.runtime.native (include Python.h first). */
#ifndef CUVIL_AOT_TEST_HOOKS_H
#define CUVIL_AOT_TEST_HOOKS_H

PyObject *cv_py_parallel_check(PyObject *self, PyObject *args);
PyObject *cv_py_bf16_kernel(PyObject *self, PyObject *args);
PyObject *cv_py_gemm(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cv_py_launch_list(PyObject *self, PyObject *args);
PyObject *cv_py_reuse_cold(PyObject *self, PyObject *args);

#endif
