/* Frozen buffers (cuvil_aot.freeze): read-only copies of arrays that the runtime owns, so
 * nothing writes them while they live, and the packed forms of GEMM operands kept in them.
 * A weight the user froze is packed at its first product and never again; any other array
 * may be written between two calls, so it is packed at every call. */
#ifndef CUVIL_AOT_FROZEN_H
#define CUVIL_AOT_FROZEN_H

#include <stddef.h>
#include <stdint.h>

/* What decides a packed form's bytes: the operand's place and strides (elements), its
 * k x n extent, the panel width and the element size. */
typedef struct {
    const void *b;
    int64_t rs, cs, k, n;
    int nr, size;
} cv_form_key;

/* The form of `key` kept by the frozen buffer holding the bytes [lo, hi): made by
 * fill(ctx, dst) into `bytes` of 64-byte aligned memory at its first use, freed with the
 * buffer. NULL where no live frozen buffer holds that range or memory ran out: the caller
 * packs as it would anyway. The caller keeps the buffer alive (it holds the array). */
void *cv_frozen_form(const char *lo, const char *hi, const cv_form_key *key, size_t bytes,
                     void (*fill)(void *ctx, void *dst), void *ctx);

#endif
