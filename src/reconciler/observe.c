#include "observe.h"

#include <errno.h>
#include <signal.h>

#include "base/alloc.h"
#include "base/strv.h"
#include "base/banned.h"

/* The exit code of an app whose exit rkt did not record (the pod stopped first), as
 * containerd reports an unknown exit. */
#define EXIT_UNKNOWN 255

void rkl_pod_observed_copy(rkl_pod_observed *dst, const rkl_pod_observed *src)
{
        *dst = *src;
        dst->ip = rkl_xstrdup(src->ip);
        dst->additional_ips = src->additional_ips ? rkl_strv_copy(src->additional_ips) : NULL;
        dst->reason = rkl_xstrdup(src->reason);
        dst->message = rkl_xstrdup(src->message);
}

void rkl_container_observed_copy(rkl_container_observed *dst, const rkl_container_observed *src)
{
        *dst = *src;
        dst->reason = rkl_xstrdup(src->reason);
        dst->message = rkl_xstrdup(src->message);
        dst->image_ref = rkl_xstrdup(src->image_ref);
}

static void set_str(char **p, const char *v)
{
        free(*p);
        *p = rkl_xstrdup(v);
}

bool rkl_observe_pod_removed(const rkl_pod_record *rec, const rkl_poddir_pod *p)
{
        /* Once seen running (FAILED after the first such look: the rule holds at every look). */
        return rec->observed.phase != RKL_POD_PHASE_PENDING && p->dir == RKL_PODDIR_RUN &&
               !rkl_pod_state_is_after_run(p->state) && p->manifest_error == -ENOENT;
}

void rkl_observe_pod(const rkl_pod_record *rec, const rkl_poddir_pod *p, bool net_ready,
                     int64_t now_ns, rkl_pod_observed *ret, bool *ret_dead)
{
        rkl_pod_observed o;
        bool dead = false;

        rkl_pod_observed_copy(&o, &rec->observed);
        if (!p) {
                /* The directory is gone: removed by us (then the record says stopped) or
                 * by someone else while it ran. */
                if (o.phase == RKL_POD_PHASE_RUNNING || o.phase == RKL_POD_PHASE_PENDING) {
                        dead = rec->rkt_uuid != NULL;
                        if (dead && o.phase == RKL_POD_PHASE_RUNNING) {
                                o.phase = RKL_POD_PHASE_FAILED;
                                set_str(&o.reason, "PodGone");
                                set_str(&o.message, "the rkt pod was removed outside rktlet");
                                o.finished_ns = o.finished_ns ? o.finished_ns : now_ns;
                        }
                }
                *ret = o;
                *ret_dead = dead;
                return;
        }

        if (p->ppid)
                o.pid = p->ppid;
        if (p->created_ns)
                o.created_ns = p->created_ns;
        if (p->started_ns)
                o.started_ns = p->started_ns;
        /* rkt frees the IP only at rm; a stopped pod keeps reporting its last IP. */
        if (p->ip)
                set_str(&o.ip, p->ip);

        if (rkl_pod_state_is_after_run(p->state)) {
                dead = true;
                if (!o.finished_ns)
                        o.finished_ns = p->gc_marked_ns ? p->gc_marked_ns : now_ns;
                if (rec->desired == RKL_POD_DESIRED_STOPPED) {
                        if (o.phase != RKL_POD_PHASE_FAILED)
                                o.phase = RKL_POD_PHASE_STOPPED;
                } else if (o.phase == RKL_POD_PHASE_RUNNING) {
                        /* It died on its own: NOTREADY, and kubelet recreates it. */
                        o.phase = RKL_POD_PHASE_FAILED;
                        set_str(&o.reason, "PodExited");
                        set_str(&o.message, "the rkt pod exited");
                }
        } else if (p->state == RKL_POD_STATE_RUNNING && p->supervisor_ready && net_ready &&
                   o.phase == RKL_POD_PHASE_PENDING) {
                o.phase = RKL_POD_PHASE_RUNNING;
                o.reason = mfree(o.reason);
                o.message = mfree(o.message);
        }
        *ret = o;
        *ret_dead = dead;
}

static int32_t exit_code_of(const rkl_container_record *rec, const rkl_pod_record *pod,
                            const rkl_poddir_app *a, bool oom, const char **ret_reason)
{
        *ret_reason = NULL;
        if (oom) {
                *ret_reason = "OOMKilled";
                return 128 + SIGKILL;
        }
        if (!a->exit_known)
                return EXIT_UNKNOWN;
        /* rkt writes systemd's ExecMainStatus: the bare signal number when killed. Those we
         * sent ourselves are known to be signals. */
        bool stopped = rec->desired == RKL_CONTAINER_DESIRED_STOPPED ||
                       (pod && pod->desired == RKL_POD_DESIRED_STOPPED);
        if (stopped && (a->exit_code == SIGTERM || a->exit_code == SIGKILL))
                return 128 + a->exit_code;
        return a->exit_code;
}

/* Whether the app's exit came with its pod's end: the pod exited, or is on its way down (its
 * supervisor no longer ready: a stopped unit stops the apps first), while the sandbox was
 * wanted ready and the container, seen running, wanted running. Given once, it stays. */
static bool ended_with_pod(const rkl_container_record *rec, const rkl_pod_record *pod,
                           const rkl_poddir_pod *p)
{
        if (streq_ptr(rec->observed.reason, RKL_CONTAINER_POD_EXITED))
                return true;
        return pod && pod->desired == RKL_POD_DESIRED_READY &&
               rec->desired == RKL_CONTAINER_DESIRED_RUNNING &&
               rec->observed.phase == RKL_CONTAINER_PHASE_RUNNING &&
               (rkl_pod_state_is_after_run(p->state) || !p->supervisor_ready);
}

void rkl_observe_container(const rkl_container_record *rec, const rkl_pod_record *pod,
                           const rkl_poddir_pod *p, rkl_app_proc proc, pid_t pid, bool oom,
                           int64_t now_ns, rkl_container_observed *ret)
{
        rkl_container_observed o;
        const rkl_poddir_app *a = p ? rkl_poddir_pod_find_app(p, rec->app_name) : NULL;

        rkl_container_observed_copy(&o, &rec->observed);
        if (!p && pod && pod->rkt_uuid && o.phase == RKL_CONTAINER_PHASE_RUNNING) {
                /* Its pod's directory is gone and it was last seen running: nothing will
                 * tell its end. Removed outside rktlet while it ran (its processes go with
                 * the pod's unit, which the reconciler stops), or removed by rktlet after a
                 * stop before its exit was written (a bound the hold keeps rare). */
                bool outside = pod->desired == RKL_POD_DESIRED_READY &&
                               rec->desired == RKL_CONTAINER_DESIRED_RUNNING;
                o.phase = RKL_CONTAINER_PHASE_EXITED;
                o.pid = 0;
                o.finished_ns = now_ns;
                o.has_exit_code = true;
                o.exit_code = EXIT_UNKNOWN;
                set_str(&o.reason, RKL_CONTAINER_POD_EXITED);
                set_str(&o.message, outside ? "the rkt pod was removed outside rktlet"
                                            : "exit status unknown: the rkt pod was removed "
                                              "before its exit was recorded");
                *ret = o;
                return;
        }
        if (!a || a->state == RKL_POD_APP_UNKNOWN || rkl_container_never_ran(&o)) {
                /* Not added yet, its pod is gone, or it never ran and never will (whatever
                 * rkt left of it): what we saw last still holds. */
                *ret = o;
                return;
        }
        if (a->image_id)
                set_str(&o.image_ref, a->image_id);
        if (a->created_ns)
                o.created_ns = a->created_ns;
        switch (a->state) {
        case RKL_POD_APP_CREATED:
                o.phase = RKL_CONTAINER_PHASE_CREATED;
                break;
        case RKL_POD_APP_RUNNING:
                if (proc == RKL_APP_PROC_NONE && o.phase != RKL_CONTAINER_PHASE_RUNNING)
                        break; /* started, but no process yet: still created */
                o.phase = RKL_CONTAINER_PHASE_RUNNING;
                o.pid = proc == RKL_APP_PROC_SEEN ? pid : o.pid;
                o.started_ns = a->started_ns;
                o.finished_ns = 0;
                o.has_exit_code = false;
                o.exit_code = 0;
                o.reason = mfree(o.reason);
                o.message = mfree(o.message);
                break;
        case RKL_POD_APP_EXITED: {
                const char *reason;
                o.phase = RKL_CONTAINER_PHASE_EXITED;
                o.pid = 0;
                if (a->started_ns)
                        o.started_ns = a->started_ns;
                o.finished_ns = a->finished_ns;
                o.has_exit_code = true;
                o.exit_code = exit_code_of(rec, pod, a, oom, &reason);
                if (!reason && ended_with_pod(rec, pod, p))
                        reason = RKL_CONTAINER_POD_EXITED;
                set_str(&o.reason, reason);
                if (!a->exit_known && !oom)
                        set_str(&o.message, "exit status unknown: the pod stopped before rkt "
                                            "recorded the app's exit");
                else
                        o.message = mfree(o.message);
                break;
        }
        default:
                break;
        }
        *ret = o;
}

static bool strv_equal(char *const *a, char *const *b)
{
        size_t n = rkl_strv_length(a);
        if (n != rkl_strv_length(b))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!streq(a[i], b[i]))
                        return false;
        return true;
}

bool rkl_pod_observed_equal(const rkl_pod_observed *a, const rkl_pod_observed *b)
{
        return a->phase == b->phase && a->pid == b->pid && streq_ptr(a->ip, b->ip) &&
               strv_equal(a->additional_ips, b->additional_ips) && a->created_ns == b->created_ns &&
               a->started_ns == b->started_ns && a->finished_ns == b->finished_ns &&
               streq_ptr(a->reason, b->reason) && streq_ptr(a->message, b->message);
}

bool rkl_container_observed_equal(const rkl_container_observed *a, const rkl_container_observed *b)
{
        return a->phase == b->phase && a->pid == b->pid && a->has_exit_code == b->has_exit_code &&
               a->exit_code == b->exit_code && a->created_ns == b->created_ns &&
               a->started_ns == b->started_ns && a->finished_ns == b->finished_ns &&
               streq_ptr(a->reason, b->reason) && streq_ptr(a->message, b->message) &&
               streq_ptr(a->image_ref, b->image_ref);
}
