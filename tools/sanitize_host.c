/* The Python host of tools/sanitize.sh: the interpreter's own main, linked with
 * -fsanitize=address,undefined so the ASan runtime comes first in the library list
 * without LD_PRELOAD. Tests start children with sys.executable and sometimes a minimal
 * environment; they get this host, and the options below, whatever their environment. */
#include <Python.h>
#include <stdlib.h>

/* CPython keeps memory until exit by design: leak reports would only be noise. */
const char *__asan_default_options(void) {
    return "detect_leaks=0:allocator_may_return_null=1:halt_on_error=1";
}

const char *__ubsan_default_options(void) {
    return "print_stacktrace=1:halt_on_error=1";
}

int main(int argc, char **argv) {
    /* Python objects on the sanitized heap (pymalloc's arenas would hide overflows). */
    setenv("PYTHONMALLOC", "malloc", 0);
    return Py_BytesMain(argc, argv);
}
