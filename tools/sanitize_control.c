/* Positive controls for tools/sanitize.sh: built with the same sanitizer flags and
 * called from the same Python host, each must be reported, or the sanitizer run
 * proves nothing. */
#include <limits.h>
#include <stdlib.h>

/* A heap out-of-bounds write one byte past the end: AddressSanitizer must report a
 * heap-buffer-overflow. */
int cv_control_oob_write(int n) {
    volatile char *p = malloc((size_t)n);
    p[n] = 1;
    int r = p[0];
    free((void *)p);
    return r;
}

/* Signed overflow: UndefinedBehaviorSanitizer must report it. */
int cv_control_signed_overflow(int n) {
    volatile int x = INT_MAX;
    return x + n;
}
