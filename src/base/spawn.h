/* The one door for running a program: argv vector, posix_spawn, deadline, bounded capture. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct rkl_spawn_opts {
        char *const *envp;        /* full environment; NULL inherits the daemon's */
        uint64_t timeout_usec;    /* 0 or USEC_INFINITY: none */
        uint64_t kill_grace_usec; /* SIGTERM at the deadline, SIGKILL this much later */
        size_t max_output;        /* bytes kept per stream; the rest is drained and dropped */
        /* The child's fds 0, 1 and 2 (-1: /dev/null); nothing is captured then. NULL: stdin
         * is /dev/null and stdout and stderr are captured. */
        const int *stdio;
        /* With output captured (stdio NULL): the child's stdin instead of /dev/null. */
        const int *stdin_fd;
        const char *cwd; /* NULL: "/" so no caller cwd leaks in */
        /* Fds the child gets as 3, 4, ...; every other one is closed. */
        const int *pass_fds;
        size_t n_pass_fds;
        /* The child leads a process group of its own, which its children inherit. */
        bool new_process_group;
        /* The child's umask, when set_umask (else the daemon's own, 0077). */
        bool set_umask;
        unsigned umask;
        /* For a child whose descendants must not outlive it: ends the whole tree (a cgroup,
         * a process group). Called instead of SIGTERM then SIGKILL when the deadline passes
         * or cancelled() turns true, and as soon as the child exited while something else
         * still holds its output pipes. */
        void (*kill_tree)(pid_t pid, void *userdata);
        /* Polled about every 50 ms while the child runs: true ends it as the deadline does. */
        bool (*cancelled)(void *userdata);
        void *userdata;
} rkl_spawn_opts;

typedef struct rkl_spawn_result {
        int exit_code; /* the exit status, or -1 when killed by a signal */
        int signal;    /* the signal that killed it, or 0 */
        bool timed_out;
        bool cancelled;  /* ended because cancelled() said so */
        char *out, *err; /* NUL-terminated captures */
        size_t out_len, err_len;
        bool out_truncated, err_truncated;
} rkl_spawn_result;

void rkl_spawn_result_done(rkl_spawn_result *r);

/* Runs argv[0] (an absolute or relative path, never searched in PATH) to completion.
 * Returns 0 when the program ran (whatever its exit status: see ret), -errno when it could
 * not be started or waited for. */
int rkl_spawn_run(char *const argv[], const rkl_spawn_opts *o, rkl_spawn_result *ret,
                  rkl_error *reterr);
