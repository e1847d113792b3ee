/* `rktlet check`: whether this node can run pods, one line per check, each saying what it
 * found and, when it is not fine, what to do. It reads the daemon's own options, changes
 * nothing on the machine and never connects to the CRI socket (that would start a
 * socket-activated daemon).
 *
 * Each check fills one result from the configuration and from the machine's files under
 * the roots the configuration names (/proc, /sys/fs/cgroup), which tests point at
 * fixtures. A FAIL means pods cannot run, or would run without something rktlet relies
 * on; a WARN is worth fixing but does not stop pods. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct rkl_config rkl_config;

typedef enum rkl_check_level {
        RKL_CHECK_OK,
        RKL_CHECK_WARN,
        RKL_CHECK_FAIL,
} rkl_check_level;

typedef struct rkl_check_result {
        rkl_check_level level;
        const char *name; /* "rkt", "inotify", ...: a static string */
        char *text;       /* what was found; then, when not ok, what to do */
} rkl_check_result;

void rkl_check_result_done(rkl_check_result *r);

typedef struct rkl_check_config {
        const rkl_config *config; /* the daemon's options (base/config.h) */
        const char *proc;         /* "/proc" */
        const char *cgroup;       /* "/sys/fs/cgroup" */
        uint64_t timeout_usec;    /* each command and connection; 0: 10 s */
} rkl_check_config;

/* kubelet's default maxPods: the pods a node is expected to hold. */
#define RKL_CHECK_PODS 110
/* inotify instances each rkt pod holds, at most: its systemd (docs/operators.md). */
#define RKL_CHECK_INOTIFY_PER_POD 3

void rkl_check_rkt(const rkl_check_config *c, rkl_check_result *ret);
void rkl_check_systemd(const rkl_check_config *c, rkl_check_result *ret);
void rkl_check_cgroups(const rkl_check_config *c, rkl_check_result *ret);
void rkl_check_inotify(const rkl_check_config *c, rkl_check_result *ret);
/* The verdict alone: limit is fs.inotify.max_user_instances, in_use root's instances. */
void rkl_check_inotify_verdict(unsigned limit, unsigned in_use, rkl_check_result *ret);
void rkl_check_cni(const rkl_check_config *c, rkl_check_result *ret);
void rkl_check_socket(const rkl_check_config *c, rkl_check_result *ret);
void rkl_check_state(const rkl_check_config *c, rkl_check_result *ret);
/* One mirror, "HOST=URL": a registry answers there (http: GET /v2/; https: a TCP
 * connection, TLS not checked). */
void rkl_check_mirror(const rkl_check_config *c, const char *spec, rkl_check_result *ret);

/* Every check, in the order above (one per mirror, or one saying there is none); the
 * caller frees each result and the array. */
void rkl_check_all(const rkl_check_config *c, rkl_check_result **ret, size_t *ret_n);
/* "FAIL inotify: ...": the line printed for r; caller frees. */
char *rkl_check_format(const rkl_check_result *r);
