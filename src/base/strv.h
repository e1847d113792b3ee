/* NULL-terminated string vectors, owned (char **) or borrowed (char *const *). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

char **rkl_strv_free(char **l);
size_t rkl_strv_length(char *const *l);
/* Appends a copy of s; *l may be NULL. */
void rkl_strv_push(char ***l, const char *s);
/* Appends s itself (takes ownership). */
void rkl_strv_consume(char ***l, char *s);
char **rkl_strv_copy(char *const *l);
/* Whether s is in l (which may be NULL). */
bool rkl_strv_contains(char *const *l, const char *s);
/* The strings of l with sep between them; "" for an empty or NULL l. */
char *rkl_strv_join(char *const *l, const char *sep);
static inline void rkl_strv_freep(char ***l)
{
        *l = rkl_strv_free(*l);
}
#define _cleanup_strv_free_ _cleanup_(rkl_strv_freep)
