/* OOM kills as the kernel logs them (/dev/kmsg), for when the killed app's memory cgroup is
 * gone before its counter could be read: on cgroup2 an app's memory cgroup is its systemd
 * unit's, which the pod's systemd removes once the app's main process is gone, and the
 * reconciler may look only after that. cAdvisor tells OOM kills the same way.
 *
 * The kernel writes one record per kill, e.g.
 *   6,50627,22443230883,-;oom-kill:constraint=CONSTRAINT_MEMCG,...,oom_memcg=/a/b,
 *   task_memcg=/a/b/c.service,task=sh,pid=32267,uid=0
 * whose task_memcg is the cgroup path from the root of the hierarchy, not from the reader's
 * cgroup namespace: the path the daemon knows is matched as a suffix. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct rkl_oom_log rkl_oom_log;

/* Opens path (NULL: /dev/kmsg) for reading from its oldest record, so that a kill logged
 * while the daemon was down is found too. -errno when it cannot be opened. */
int rkl_oom_log_open(const char *path, rkl_oom_log **ret);
rkl_oom_log *rkl_oom_log_free(rkl_oom_log *l);

/* Reads what was logged since the last call, without blocking, and remembers the cgroups of
 * the last RKL_OOM_LOG_KEEP kills. */
#define RKL_OOM_LOG_KEEP 512
void rkl_oom_log_refresh(rkl_oom_log *l);

/* Whether a kill was seen in the memory cgroup whose path ends with suffix (which starts
 * with '/'; matched at a '/' boundary). Call rkl_oom_log_refresh() first. */
bool rkl_oom_log_has(const rkl_oom_log *l, const char *suffix);

/* The task_memcg of one kmsg record (the "prefix;message" line), pointed into rec: 1 when
 * the record is an OOM kill that names its cgroup, 0 when it is another record, -EBADMSG
 * when it looks like a kill record but is cut short. */
int rkl_oom_parse_record(const char *rec, size_t len, const char **ret_memcg,
                         size_t *ret_memcg_len);
