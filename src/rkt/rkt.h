/* The rkt driver: the only code that runs rkt. Every command goes through rkl_rkt_exec(); the
 * pod and app verbs rktlet runs are in action.h, the image commands in image.h. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "base/spawn.h"

typedef struct rkl_rkt rkl_rkt;

typedef struct rkl_rkt_config {
        const char *rkt_path; /* absolute path of the rkt binary */
        const char *data_dir; /* rkt's --dir */
} rkl_rkt_config;

int rkl_rkt_new(const rkl_rkt_config *cfg, rkl_rkt **ret, rkl_error *reterr);
rkl_rkt *rkl_rkt_free(rkl_rkt *d);

/* Runs `rkt <global flags> <args...>` with the experiment variables set. Returns 0 when rkt
 * ran and exited 0; when it exited non-zero, the code its stderr reads as (-ENOENT no such pod
 * or app, -EALREADY already stopped, -EAGAIN not ready yet, else -EIO) with rkt's own error
 * line in reterr; -ETIMEDOUT when it overran the deadline and was killed; -EIO when a signal
 * killed it; when it could not be started, the spawn's -errno (-EIO when reterr is NULL).
 * ret (may be NULL) gets the captured output either way when rkt ran.
 * The verbs of action.h are the interface; this stays public only until the reconciler
 * runs them instead of building command lines (as rkl_rkt_argv() and rkl_rkt_unit_env()). */
int rkl_rkt_exec(rkl_rkt *d, char *const args[], uint64_t timeout_usec, rkl_spawn_result *ret,
                 rkl_error *reterr);

/* rkt's own words for a failure, for a person: the last lines of text (its stderr, or a
 * sandbox's output) that say something, whole lines where they fit in n - 1 bytes, joined
 * with "; ", terminal escapes and control characters removed. The error often sits a line
 * above the summary ("add: error adding app to pod: exit status 254" says nothing by
 * itself), and its per-pod warning about a missing "rkt" group says nothing at all. */
void rkl_rkt_output_tail(const char *text, char *buf, size_t n);

/* The whole argv for `rkt <global flags> <args...>`; extra_insecure (e.g. "all-run" for a
 * privileged pod) joins --insecure-options. */
char **rkl_rkt_argv(rkl_rkt *d, char *const args[], const char *extra_insecure);
/* The environment a systemd unit running rkt needs (the experiment gates, RKT_*, PATH). */
char **rkl_rkt_unit_env(rkl_rkt *d);

typedef struct rkl_rkt_version {
        char *version;  /* "1.30.0" */
        char *text;     /* the whole output, trimmed */
        bool simulator; /* a test double said so */
} rkl_rkt_version;

void rkl_rkt_version_done(rkl_rkt_version *v);
/* `rkt version`, parsed. */
int rkl_rkt_version_get(rkl_rkt *d, rkl_rkt_version *ret, rkl_error *reterr);
/* Parses `rkt version` output; -EBADMSG when it has no "rkt Version:" line. */
int rkl_rkt_version_parse(const char *text, rkl_rkt_version *ret);

RKL_DEFINE_CLEANUP(rkl_rkt *, rkl_rkt_free)
