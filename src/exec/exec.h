/* ExecSync's machinery: running a command inside a running container, as its main process
 * runs, and waiting for it.
 *
 * Two halves. The spawn-and-wait side, in the daemon (rkl_exec_run()): makes a cgroup
 * rktlet-exec-<random> under the app's cgroup in every hierarchy, starts the helper
 * (rktlet's hidden `__exec-in`, through /proc/self/exe) with rkl_spawn_run(), captures its
 * output (bounded), and when the command is done, its deadline passed or the caller gave up,
 * kills everything in that cgroup and removes it: nothing the command started outlives it
 * (nor the daemon: the helper, which watches it, does the same when it dies).
 * The helper side (rkl_exec_in_main()): joins those cgroups and the app's namespaces, forks
 * (a PID namespace takes effect for children only), and in the child takes the app's root,
 * working directory, credentials, capabilities and environment, then execs the command.
 *
 * What is copied from the app's process (/proc/PID): its mount, UTS, IPC, network, PID,
 * cgroup and time namespaces, root, cwd, environment, user and groups (real, effective,
 * saved; supplementary), capability sets (bounding, permitted, effective, inheritable,
 * ambient), no_new_privs, umask, resource limits (those above the daemon's own hard limits
 * only with CAP_SYS_RESOURCE) and oom_score_adj. Its seccomp filter cannot be read back
 * without stopping the app under ptrace: the caller says what it is (opts.seccomp), as the
 * app's unit has it, and the helper loads it last (before the app's credentials when
 * there is no no_new_privs, which a filter then needs CAP_SYS_ADMIN to load, as runc does).
 * What is not copied: its LSM label and its securebits. An app in a user namespace of its
 * own is refused: its IDs would have to be mapped. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

/* The hidden subcommand of the rktlet binary that is the helper. */
#define RKL_EXEC_IN_COMMAND "__exec-in"

typedef struct rkl_exec_opts {
        pid_t pid;             /* the app's main process, as this PID namespace sees it */
        char *const *argv;     /* the command; argv[0] is looked up in the app's PATH */
        uint64_t timeout_usec; /* 0: none */
        size_t max_output;     /* bytes kept of stdout and of stderr each; the rest is dropped */
        /* Polled while the command runs: true kills it (the caller went away). */
        bool (*cancelled)(void *userdata);
        void *userdata;
        const char *helper; /* the rktlet binary; NULL: /proc/self/exe */
        /* For a streaming exec: the command's fds 0, 1 and 2 (-1: /dev/null), nothing
         * captured; NULL: ExecSync's /dev/null and bounded captures. */
        const int *stdio;
        /* The command runs on a terminal made in the container, from its own /dev/ptmx (a
         * pty of the daemon's devpts would name a /dev/pts/N the container does not have,
         * and ttyname() would fail there): the helper sends the terminal's master on the
         * unix socket console (SCM_RIGHTS), as runc does on its console socket, and gives
         * the command the slave as its stdin, stdout, stderr and controlling terminal, in a
         * session of its own. stdio is then the helper's own, which the command never
         * sees. */
        bool tty;
        int console;
        /* The app's seccomp filter as systemd's SystemCallFilter= and SystemCallErrorNumber=
         * lines (rkl_exec__filter_parse()); NULL: none. */
        const char *seccomp;
} rkl_exec_opts;

typedef struct rkl_exec_result {
        int exit_code; /* the command's, 128+N when a signal N killed it, 126 or 127 when it
                        * could not be executed (with a message on stderr) */
        char *out, *err;
        size_t out_len, err_len;
        bool out_truncated, err_truncated;
} rkl_exec_result;

void rkl_exec_result_done(rkl_exec_result *r);

/* Runs o->argv in the process o->pid's container and waits for it. A process that systemd
 * forked for a service but that has not exec'd its program yet ("(program)") is waited for
 * (at most 5 s and the timeout). 0 when the command ran, whatever its exit code; -ESRCH when
 * the process is gone, -EAGAIN when it still has not exec'd, -ETIMEDOUT when the deadline
 * passed and -ECANCELED when cancelled (the command and all it started are killed then),
 * -EOPNOTSUPP for a process in a user namespace of its own, other -errno when the command
 * could not be started in it. */
int rkl_exec_run(const rkl_exec_opts *o, rkl_exec_result *ret, rkl_error *reterr);

/* The helper: `rktlet __exec-in --pid PID [--cgroup DIR]... [--seccomp LINES] [--tty] --
 * COMMAND [ARG...]`, with its status pipe on fd 3 (and with --tty the console socket on fd
 * 4). argv[0] is RKL_EXEC_IN_COMMAND. Exits
 * with the command's status (128+N for a signal N), or 125 after saying why on fd 3; returns
 * only when fd 3 is not open (not run by rkl_exec_run()). */
int rkl_exec_in_main(int argc, char *argv[]);
