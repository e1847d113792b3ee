/* The chunk sizes at the head of an input, for fuzz targets that feed a stream in pieces:
 * byte 0's low 3 bits say how many follow (1 + them), each 2 bytes, little endian, + 1. The
 * other bits of byte 0 are the target's. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define RKL_FUZZ_MAX_CHUNKS 8

/* Fills sizes[0, *ret_n) and returns how many bytes the head takes, or 0 for an input too
 * short to have one. */
static inline size_t rkl_fuzz_chunk_sizes(const uint8_t *data, size_t size,
                                          size_t sizes[RKL_FUZZ_MAX_CHUNKS], size_t *ret_n)
{
        if (size < 1)
                return 0;
        size_t n = 1 + (data[0] & 7);
        if (size < 1 + 2 * n)
                return 0;
        for (size_t i = 0; i < n; i++)
                sizes[i] = (size_t)data[1 + 2 * i] + 256 * (size_t)data[2 + 2 * i] + 1;
        *ret_n = n;
        return 1 + 2 * n;
}
