/* Caller-owned error context: a -errno code plus a message, on the caller's stack. */
#pragma once

#include "macro.h"

/* The largest errno the kernel returns (its MAX_ERRNO): what a seccomp filter may answer. */
#define RKL_MAX_ERRNO 4095

/* The longest message an error holds, its NUL included. */
#define RKL_ERROR_MSG_MAX 512

typedef struct rkl_error {
        int code;
        char msg[RKL_ERROR_MSG_MAX];
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

/* The shortage a failure's words name, as -ENOSPC (no space left, a quota), -EMFILE (too
 * many open files, the inotify instances an rkt pod's systemd could not get) or -ENOMEM;
 * 0 when they name none. For failures that reach rktlet as text (rkt's, a plugin's). */
int rkl_error_shortage_of(const char *msg);
