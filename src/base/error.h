/* Caller-owned error context: a -errno code plus a message, on the caller's stack. */
#pragma once

#include "macro.h"

/* The largest errno the kernel returns (its MAX_ERRNO): what a seccomp filter may answer. */
#define RKL_MAX_ERRNO 4095

typedef struct rkl_error {
        int code;
        char msg[512];
} rkl_error;

#define RKL_ERROR_INIT                                                                             \
        {                                                                                          \
                0                                                                                  \
        }

/* Sets code and message; returns code. e may be NULL. code must be negative. */
int rkl_error_set(rkl_error *e, int code, const char *fmt, ...) _printf_(3, 4);
/* Prepends "<context>: " to the message; returns e->code (or -EIO if unset). */
int rkl_error_prefix(rkl_error *e, const char *fmt, ...) _printf_(2, 3);
void rkl_error_clear(rkl_error *e);
