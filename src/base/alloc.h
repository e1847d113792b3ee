/* Allocation that aborts on OOM: error paths stay about real failures (CONTRIBUTING.md,
 * 'Allocation'). */
#pragma once

#include <stddef.h>

#include "macro.h"

void *rkl_xmalloc(size_t n);
void *rkl_xcalloc(size_t n, size_t size);
void *rkl_xrealloc(void *p, size_t n);
char *rkl_xstrdup(const char *s); /* NULL in, NULL out */
char *rkl_xstrndup(const char *s, size_t n);
char *rkl_xasprintf(const char *fmt, ...) _printf_(1, 2);
_noreturn_ void rkl_oom(void);

#define rkl_xnew0(type, n) ((type *)rkl_xcalloc((n), sizeof(type)))
#define rkl_xnew(type, n)  ((type *)rkl_xmalloc((n) * sizeof(type)))
