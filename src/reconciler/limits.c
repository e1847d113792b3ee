/* Resource limits (limits.h): a container's in its app's cgroups, a sandbox's on its unit.
 *
 * rkt 1.30's host stage1 writes none of CreateContainer's limits anywhere, and the
 * app's processes start in cgroups rkt and the pod's systemd made (cgroup v1 here: the pod's
 * memory cgroup, the root of cpu/cpuacct). So the limits are written once the app's first
 * process is seen (observing.c: the same moment its own memory, cpu and cpuacct cgroups are
 * made and its processes moved in), within one observation of the process appearing: not
 * before its first instruction. Only the memory cgroup is the app's from its start, lent to the
 * pod's systemd for the start without a limit (app-cgroup.h, rkl_app_cgroup_lend; docs/stats.md,
 * 'Resource limits'), and its limits wait for the loan's end. What is applied is remembered in
 * memory only, so after a restart of the daemon every running container's limits are written again
 * at its first observation, and an UpdateContainerResources (a new version of the record, kicked)
 * is written at the next pass. */
#include "limits.h"

#include <inttypes.h>
#include <stdio.h>

#include "reconciler-internal.h"
#include "app-cgroup.h"
#include "unit.h"
#include "base/alloc.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "rkt/poddir.h"
#include "store/db.h"
#include "base/banned.h"

static char *limits_key(const rkl_container_spec *s)
{
        return rkl_xasprintf("%" PRId64 "/%" PRId64 "/%" PRId64 "/%" PRId64 "/%" PRId64 "/%s",
                             s->cpu_shares, s->cpu_period, s->cpu_quota, s->memory_limit,
                             s->oom_score_adj, s->cpuset_cpus ? s->cpuset_cpus : "");
}

struct rkl_limits {
        rkl_hashmap *containers; /* container ID -> applied*: the resources last applied */
        rkl_hashmap *pods;       /* sandbox ID -> pod_applied*: the pod's own limits, the same */
};

typedef struct applied {
        char id[RKL_ID_LEN + 1];
        char *key;
        char *memory_dir; /* the app's own memory cgroup, for its OOM kills once it exited */
} applied;

static void applied_free(void *v)
{
        applied *a = v;
        if (a) {
                free(a->key);
                free(a->memory_dir);
                free(a);
        }
}

void rkl_limits_forget(rkl_reconciler *r, const char *id)
{
        applied_free(rkl_hashmap_remove(r->limits->containers, id));
}

void rkl_limits_sync(rkl_reconciler *r, const rkl_container_record *c, const rkl_poddir_pod *p)
{
        _cleanup_free_ char *key = limits_key(&c->spec);
        applied *a = rkl_hashmap_get(r->limits->containers, c->id);
        if (a && streq(a->key, key))
                return;
        if (!p || !p->ppid)
                return;
        _cleanup_free_ char *procs = NULL, *memory = NULL;
        if (RKL_OPS(r, app_cgroups, (pid_t)p->ppid, c->app_name, &procs, &memory) < 0)
                return; /* not there yet: the next observation tries again */
        int k = rkl_app_cgroup_memory_adopt(procs, memory);
        if (k >= 0)
                k = rkl_app_cgroup_cpu_adopt(procs, memory);
        if (k < 0)
                rkl_log_warning("container %.12s: cannot give it cgroups of its own: %s", c->id,
                                strerror(-k));
        /* Seen before its `rkt app start` returned: its memory cgroup is still lent to the
         * pod's systemd, which the limit would bind too. The action's end comes with the
         * next observation. */
        if (rkl_app_cgroup_memory_lent(procs, memory))
                return;
        rkl_app_cgroup_limits l = {
            .cpu_period = c->spec.cpu_period,
            .cpu_quota = c->spec.cpu_quota,
            .cpu_shares = c->spec.cpu_shares,
            .memory_limit = c->spec.memory_limit,
            .oom_score_adj = c->spec.oom_score_adj,
            .cpuset_cpus = c->spec.cpuset_cpus,
        };
        rkl_error err = RKL_ERROR_INIT;
        k = rkl_app_cgroup_apply_limits(procs, memory, &l, &err);
        if (k < 0)
                /* Logged once per change of the limits: the next try is at the next change. */
                rkl_log_warning("container %.12s: cannot apply its resources (%s), ignoring", c->id,
                                err.msg);
        else if (l.memory_limit || l.cpu_shares || l.cpu_quota || l.oom_score_adj || l.cpuset_cpus)
                rkl_log_debug("container %.12s: resources %s applied", c->id, key);
        if (!a) {
                a = rkl_xnew0(applied, 1);
                memcpy(a->id, c->id, sizeof(a->id));
                rkl_hashmap_put(r->limits->containers, a->id, a);
        }
        free(a->key);
        a->key = TAKE_PTR(key);
        free(a->memory_dir);
        a->memory_dir = TAKE_PTR(memory);
}

const char *rkl_limits_app_memory_dir(rkl_reconciler *r, const char *id)
{
        applied *a = rkl_hashmap_get(r->limits->containers, id);
        return a ? a->memory_dir : NULL;
}

typedef struct pod_applied {
        char id[RKL_ID_LEN + 1];
        char *key;
} pod_applied;

static void pod_applied_free(void *v)
{
        pod_applied *a = v;
        if (a) {
                free(a->key);
                free(a);
        }
}

rkl_limits *rkl_limits_new(void)
{
        rkl_limits *l = rkl_xnew0(rkl_limits, 1);
        l->containers = rkl_hashmap_new();
        l->pods = rkl_hashmap_new();
        return l;
}

rkl_limits *rkl_limits_free(rkl_limits *l)
{
        if (!l)
                return NULL;
        rkl_hashmap_free_values(l->containers, applied_free);
        rkl_hashmap_free_values(l->pods, pod_applied_free);
        free(l);
        return NULL;
}

/* ---- The pod's own limits ---- */

void rkl_limits_pod_sync(rkl_reconciler *r, const rkl_pod_record *rec)
{
        const rkl_pod_spec *s = &rec->spec;
        if (!s->cpu_shares && !s->cpu_quota && !s->memory_limit)
                return; /* none asked for */
        if (!RKL_OPS(r, unit_connected) || !rec->unit_name)
                return;
        _cleanup_free_ char *key =
            rkl_xasprintf("%" PRId64 "/%" PRId64 "/%" PRId64 "/%" PRId64, s->cpu_shares,
                          s->cpu_period, s->cpu_quota, s->memory_limit);
        const pod_applied *done = rkl_hashmap_get(r->limits->pods, rec->id);
        if (done && streq(done->key, key))
                return;
        rkl_unit_limits l = {
            .cpu_shares = s->cpu_shares > 0 ? (uint64_t)s->cpu_shares : 0,
            .cpu_quota_usec = s->cpu_quota > 0 ? (uint64_t)s->cpu_quota : 0,
            .cpu_period_usec =
                s->cpu_period > 0 ? (uint64_t)s->cpu_period : RKL_DEFAULT_CPU_PERIOD_USEC,
            .memory_bytes = s->memory_limit > 0 ? (uint64_t)s->memory_limit : 0,
        };
        rkl_error err = RKL_ERROR_INIT;
        if (RKL_OPS(r, unit_set_limits, rec->unit_name, &l, &err) < 0) {
                /* Tried again at the next pass. */
                rkl_log_object_warning(POD_OBJECT(rec), "sandbox %.12s: cannot set its limits: %s",
                                       rec->id, err.msg);
                return;
        }
        rkl_log_object_info(POD_OBJECT(rec), "sandbox %.12s: limits set on %s: %s", rec->id,
                            rec->unit_name, key);
        rkl_limits_pod_forget(r, rec->id);
        pod_applied *a = rkl_xnew0(pod_applied, 1);
        memcpy(a->id, rec->id, sizeof(a->id));
        a->key = TAKE_PTR(key);
        rkl_hashmap_put(r->limits->pods, a->id, a);
}

void rkl_limits_pod_forget(rkl_reconciler *r, const char *id)
{
        pod_applied_free(rkl_hashmap_remove(r->limits->pods, id));
}
