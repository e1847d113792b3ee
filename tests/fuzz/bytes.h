/* What the codec fuzz targets share: a check that aborts (the fuzzer's crash), and a growing
 * byte buffer for the canonical form of what a decoder returned. */
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

#define CHECK(x)                                                                                   \
        do {                                                                                       \
                if (!(x)) {                                                                        \
                        fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #x);                    \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)

typedef struct bytes {
        uint8_t *p;
        size_t len, cap;
} bytes;

static inline void put(bytes *b, const void *p, size_t n)
{
        if (b->len + n > b->cap) {
                b->cap = (b->len + n) * 2;
                b->p = rkl_xrealloc(b->p, b->cap);
        }
        if (n && p) /* no p: room only */
                memcpy(b->p + b->len, p, n);
        b->len += n;
}

static inline void put_u64(bytes *b, uint64_t v)
{
        put(b, &v, sizeof(v));
}
