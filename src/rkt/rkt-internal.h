/* Internals of src/rkt shared between its files: running one rkt command with options only
 * the driver's own verbs need, and the reading of rkt's error text. Nothing outside src/rkt
 * (and its tests) includes this. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "base/spawn.h"

typedef struct rkl_rkt rkl_rkt;

/* How to run one command. */
typedef struct rkl_rkt__exec_opts {
        const char *what;           /* the command in messages ("app start"); NULL: args[0] */
        const char *user_config;    /* --user-config=DIR: rkt reads DIR/auth.d/ there */
        const char *extra_insecure; /* joins --insecure-options, e.g. "http" */
        /* rkt could not be started at all (no binary, no memory): -EIO rather than the
         * spawn's -errno, so that -ENOENT only ever means rkt's own "no such pod or app". */
        bool not_run_is_eio;
} rkl_rkt__exec_opts;

/* rkl_rkt_exec() with options; o may be NULL. */
int rkl_rkt__exec(rkl_rkt *d, char *const args[], const rkl_rkt__exec_opts *o,
                  uint64_t timeout_usec, rkl_spawn_result *ret, rkl_error *reterr);

/* rkt's error text classified: -ENOENT (no such pod or app), -EALREADY (already stopped),
 * -EAGAIN (not ready yet, not running, pod lock busy: retry), else -EIO. */
/* The rkt data directory (--dir). */
const char *rkl_rkt__data_dir(const rkl_rkt *d);

int rkl_rkt__classify_error(const char *stderr_text);
