/* Logging to stderr with "<N>" syslog priority prefixes, which journald keeps. A line that
 * does not go to the journal carries the monotonic clock after its prefix, as
 * `journalctl -o short-monotonic` shows the journal's: "<6>[  812.046113] message". */
#pragma once

#include <syslog.h>

#include "macro.h"

/* The one mutable global besides arg_*: set once at start. */
extern int rkl_log_max_level;

int rkl_log_level_from_string(const char *s); /* -EINVAL when unknown */

/* Returns -abs(error) (or 0) and keeps errno = abs(error) so that %m works. */
int rkl_log_internal(int level, int error, const char *file, int line, const char *fmt, ...)
    _printf_(5, 6);

#define rkl_log_full_errno(level, error, ...)                                                      \
        ({                                                                                         \
                int _l_ = (level), _e_ = (error);                                                  \
                _l_ <= rkl_log_max_level                                                           \
                    ? rkl_log_internal(_l_, _e_, __FILE__, __LINE__, __VA_ARGS__)                  \
                    : -abs(_e_);                                                                   \
        })

/* The pod or container a line is about. Under journald (stderr is its stream: $JOURNAL_STREAM)
 * such lines go to the journal natively with these as fields, POD_ID= (the sandbox ID),
 * CONTAINER_ID=, POD_NAME=, POD_NAMESPACE= (and TIMELINE=), so that `journalctl POD_ID=...` finds
 * every line about a pod; elsewhere they are written to stderr exactly like any other line. Any
 * member may be NULL. */
typedef struct rkl_log_object {
        const char *pod_id, *container_id, *pod_name, *pod_namespace;
        const char *timeline; /* TIMELINE=: a start's steps (JSON), on the line that ends it */
} rkl_log_object;

int rkl_log_object_internal(int level, int error, const rkl_log_object *o, const char *file,
                            int line, const char *fmt, ...) _printf_(6, 7);

#define rkl_log_object_full(level, o, ...)                                                         \
        ({                                                                                         \
                int _l_ = (level);                                                                 \
                _l_ <= rkl_log_max_level                                                           \
                    ? rkl_log_object_internal(_l_, 0, (o), __FILE__, __LINE__, __VA_ARGS__)        \
                    : 0;                                                                           \
        })
#define rkl_log_object_info(o, ...)    rkl_log_object_full(LOG_INFO, o, __VA_ARGS__)
#define rkl_log_object_warning(o, ...) rkl_log_object_full(LOG_WARNING, o, __VA_ARGS__)

#define rkl_log_debug(...)   rkl_log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define rkl_log_info(...)    rkl_log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define rkl_log_notice(...)  rkl_log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define rkl_log_warning(...) rkl_log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define rkl_log_error(...)   rkl_log_full_errno(LOG_ERR, 0, __VA_ARGS__)

#define rkl_log_debug_errno(e, ...)   rkl_log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define rkl_log_info_errno(e, ...)    rkl_log_full_errno(LOG_INFO, e, __VA_ARGS__)
#define rkl_log_warning_errno(e, ...) rkl_log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define rkl_log_error_errno(e, ...)   rkl_log_full_errno(LOG_ERR, e, __VA_ARGS__)
