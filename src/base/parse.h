/* Strict number parsing: whole string, no sign surprises, range-checked. */
#pragma once

#include <stdint.h>

int rkl_safe_atou64(const char *s, uint64_t *ret);
int rkl_safe_atoi64(const char *s, int64_t *ret);
int rkl_safe_atoi(const char *s, int *ret);
int rkl_safe_atou(const char *s, unsigned *ret);
