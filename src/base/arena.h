/* A bump allocator for the life of one call: many small allocations, one free. */
#pragma once

#include <stddef.h>

#include "macro.h"

typedef struct rkl_arena rkl_arena;

rkl_arena *rkl_arena_new(void);
rkl_arena *rkl_arena_free(rkl_arena *a);
void *rkl_arena_alloc(rkl_arena *a, size_t n); /* zeroed, max-aligned; aborts on OOM */
char *rkl_arena_strdup(rkl_arena *a, const char *s);
char *rkl_arena_strndup(rkl_arena *a, const char *s, size_t n);
char *rkl_arena_printf(rkl_arena *a, const char *fmt, ...) _printf_(2, 3);
size_t rkl_arena_bytes(const rkl_arena *a); /* bytes obtained from malloc, for tests */

RKL_DEFINE_CLEANUP(rkl_arena *, rkl_arena_free)
#define rkl_arena_newa(T, a, n) ((T *)rkl_arena_alloc((a), sizeof(T) * (n)))
