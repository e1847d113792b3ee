/* What the two halves of src/exec share, and the parsers they are built on (tested on their
 * own in tests/exec). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

/* The helper reports a failure before the command runs on this fd, as "<errno> <message>",
 * and exits with RKL_EXEC__SETUP_FAILED; a command that runs closes it (O_CLOEXEC). */
#define RKL_EXEC__STATUS_FD 3
/* With --tty: the console socket, on which the helper sends the master of the terminal it
 * made in the container (SCM_RIGHTS). */
#define RKL_EXEC__CONSOLE_FD   4
#define RKL_EXEC__SETUP_FAILED 125
#define RKL_EXEC__MAX_STATUS   1024

/* A process's credentials, from /proc/PID/status. */
typedef struct rkl_exec_creds {
        uid_t uid[4]; /* real, effective, saved, filesystem */
        gid_t gid[4];
        gid_t *groups; /* supplementary */
        size_t n_groups;
        uint64_t cap_inh, cap_prm, cap_eff, cap_bnd, cap_amb;
        bool no_new_privs;
        int seccomp; /* 0 none, 1 strict, 2 filter */
        bool has_umask;
        mode_t umask;
} rkl_exec_creds;

void rkl_exec__creds_done(rkl_exec_creds *c);
/* Parses the text of /proc/PID/status. -EBADMSG when a field it needs is missing or bad. */
int rkl_exec__creds_parse(const char *status, rkl_exec_creds *ret);
/* A process's resource limits, from /proc/PID/limits (readable where prlimit() on another
 * user's process needs CAP_SYS_RESOURCE). has[i] tells which were listed. -EBADMSG when a
 * listed one is not understood. */
int rkl_exec__limits_parse(const char *text, struct rlimit ret[RLIM_NLIMITS],
                           bool has[RLIM_NLIMITS]);
/* The NUL-separated strings of /proc/PID/environ (n bytes) as a strv; entries without '='
 * and systemd's words to the main process alone (LISTEN_FDS=, NOTIFY_SOCKET=, ...) are
 * dropped. */
char **rkl_exec__environ_parse(const char *buf, size_t n);
/* PATH's value in env, or the default PATH when it has none. */
const char *rkl_exec__path_of(char *const *env);
/* "<errno> <message>" from the helper's status pipe: its -errno and message, or -EBADMSG. */
int rkl_exec__status_parse(const char *text, char *msg, size_t msg_size);

/* A seccomp filter as systemd builds it from SystemCallFilter= and SystemCallErrorNumber=
 * (man systemd.exec), in the subset rktlet writes for an app's unit. */
typedef struct rkl_exec_filter {
        bool active;     /* false: no filter at all */
        bool allow_list; /* names are the calls allowed (and systemd's @default); else the
                          * calls refused */
        int errno_ret;   /* what a refused call returns; 0: it kills the process (SIGSYS) */
        char **names;
} rkl_exec_filter;

void rkl_exec__filter_done(rkl_exec_filter *f);
/* Parses unit lines: "SystemCallFilter=" (clears), "SystemCallFilter=[~]NAME...",
 * "SystemCallErrorNumber=N" (1..RKL_MAX_ERRNO) and empty lines; both modes at once, groups (@...),
 * names that are not syscall names and any other line are -EBADMSG. */
int rkl_exec__filter_parse(const char *text, rkl_exec_filter *ret);
