/* The density scenario (density.h). */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grpc/grpc.h>

#include "api.pb-c.h"
#include "density.h"
#include "stats.h"
#include "base/alloc.h"
#include "base/json.h"
#include "base/model.h"
#include "base/time-util.h"
#include "base/banned.h"

enum { CALL_RUN, CALL_CREATE, CALL_START, CALL_POD, CALL_STOP_POD, CALL_REMOVE_POD, _CALL_MAX };
static const char *const call_names[_CALL_MAX] = {
    [CALL_RUN] = "RunPodSandbox",       [CALL_CREATE] = "CreateContainer",
    [CALL_START] = "StartContainer",    [CALL_POD] = "pod start (Run to last Start)",
    [CALL_STOP_POD] = "StopPodSandbox", [CALL_REMOVE_POD] = "RemovePodSandbox",
};

enum { READ_LIST_PODS, READ_LIST_CONTAINERS, READ_POD_STATUS, READ_CONTAINER_STATUS, _READ_MAX };
static const rkb_rpc read_rpcs[_READ_MAX] = {RKB_LIST_PODS, RKB_LIST_CONTAINERS, RKB_POD_STATUS,
                                             RKB_CONTAINER_STATUS};

typedef struct dpod {
        char *id, *name, *uid;
        char **containers;
        uint64_t run_ns, *create_ns, *start_ns, pod_ns, stop_ns, remove_ns; /* 0: failed */
        int status; /* the first failed call's grpc status, or -errno; 0: none failed */
        char *error;
} dpod;

/* A step's samples: when it came (after the object was accepted) and how long it took after
 * the latest step before it. */
typedef struct step_samples {
        rkb_samples at, took;
} step_samples;

struct rkb_density {
        rkb_density_opts o;
        rkb_client *cli;
        dpod *pods;
        atomic_uint next;
        pthread_barrier_t barrier;
        uint64_t t0;
        atomic_bool batch_done;
        bool teardown;

        rkb_samples calls[_CALL_MAX];
        step_samples pod_steps[_RKL_POD_STEP_MAX], container_steps[_RKL_CONTAINER_STEP_MAX];
        rkb_samples during[_READ_MAX], after[_READ_MAX];
        unsigned failed_pods, read_errors;
        int first_status;
        char *first_error;
        double all_running_s; /* < 0: not within settle_s */
        double batch_s;       /* until the last worker's last call returned */
        long rss_kib, hwm_kib;
        double idle_cpu_pct, idle_wall_s;
        unsigned idle_relists;
};

/* One call; its reply in *ret when want_resp (release it). Returns the grpc status or -errno,
 * with the first failure kept in p. */
static int call(rkb_density *d, rkb_client *c, rkb_rpc rpc, rkb_request *req, bool want_resp,
                dpod *p, uint64_t *ret_ns, rkb_reply *ret)
{
        rkb_reply r;
        int k = rkb_client_call(c, req, want_resp ? rkb_rpc_response(rpc) : NULL,
                                d->o.call_timeout_usec, &r);
        rkb_request_free(req);
        if (k < 0) {
                if (p && !p->status) {
                        p->status = k;
                        p->error = rkl_xasprintf("%s: cannot call", rkb_rpc_name(rpc));
                }
                return k;
        }
        if (r.status != GRPC_STATUS_OK && p && !p->status) {
                p->status = r.status;
                p->error = rkl_xasprintf("%s: %s", rkb_rpc_name(rpc), r.details ? r.details : "");
        }
        if (r.status == GRPC_STATUS_OK && ret_ns)
                *ret_ns = r.took_ns;
        k = r.status;
        if (ret && k == GRPC_STATUS_OK)
                *ret = r;
        else
                rkb_reply_release(&r);
        return k;
}

/* What a kubelet pod worker does for a new pod. */
static void start_pod(rkb_density *d, rkb_client *c, dpod *p)
{
        rkb_reply r;
        uint64_t t0 = rkb_now_ns();
        if (call(d, c, RKB_RUN_POD, rkb_cri_run_pod(d->o.cri, p->name, p->uid), true, p, &p->run_ns,
                 &r) != GRPC_STATUS_OK)
                return;
        p->id = rkl_xstrdup(((Runtime__V1__RunPodSandboxResponse *)r.resp)->pod_sandbox_id);
        rkb_reply_release(&r);
        for (unsigned j = 0; j < d->o.containers; j++) {
                char name[16];
                (void)snprintf(name, sizeof(name), "c%u", j);
                if (call(d, c, RKB_CREATE, rkb_cri_create(d->o.cri, p->id, p->name, p->uid, name),
                         true, p, &p->create_ns[j], &r) != GRPC_STATUS_OK)
                        return;
                p->containers[j] =
                    rkl_xstrdup(((Runtime__V1__CreateContainerResponse *)r.resp)->container_id);
                rkb_reply_release(&r);
                if (call(d, c, RKB_START,
                         rkb_cri_by_id(d->o.cri, RKB_START, p->containers[j], false), false, p,
                         &p->start_ns[j], NULL) != GRPC_STATUS_OK)
                        return;
        }
        p->pod_ns = rkb_now_ns() - t0;
}

/* What kubelet does for a pod deleted: StopPodSandbox stops its containers with it. */
static void remove_pod(rkb_density *d, rkb_client *c, dpod *p)
{
        if (!p->id)
                return;
        (void)call(d, c, RKB_STOP_POD, rkb_cri_by_id(d->o.cri, RKB_STOP_POD, p->id, false), false,
                   NULL, &p->stop_ns, NULL);
        (void)call(d, c, RKB_REMOVE_POD, rkb_cri_by_id(d->o.cri, RKB_REMOVE_POD, p->id, false),
                   false, NULL, &p->remove_ns, NULL);
}

static void *worker_main(void *userdata)
{
        rkb_density *d = userdata;
        rkb_client *c = rkb_client_new_sharing(d->cli);
        pthread_barrier_wait(&d->barrier);
        for (unsigned i; (i = atomic_fetch_add(&d->next, 1)) < d->o.pods;) {
                if (d->teardown)
                        remove_pod(d, c, &d->pods[i]);
                else
                        start_pod(d, c, &d->pods[i]);
        }
        rkb_client_free(c);
        return NULL;
}

/* kubelet's relist, faster: both lists, then one pod's status from the list. */
static void *reader_main(void *userdata)
{
        rkb_density *d = userdata;
        rkb_client *c = rkb_client_new_sharing(d->cli);
        unsigned k = 0;
        pthread_barrier_wait(&d->barrier);
        while (!atomic_load(&d->batch_done)) {
                rkb_reply r;
                uint64_t ns = 0;
                if (call(d, c, RKB_LIST_PODS, rkb_cri_by_id(d->o.cri, RKB_LIST_PODS, NULL, false),
                         true, NULL, &ns, &r) == GRPC_STATUS_OK) {
                        rkb_samples_add(&d->during[READ_LIST_PODS], ns);
                        const Runtime__V1__ListPodSandboxResponse *l = (const void *)r.resp;
                        _cleanup_free_ char *id =
                            l->n_items ? rkl_xstrdup(l->items[k++ % l->n_items]->id) : NULL;
                        rkb_reply_release(&r);
                        if (id && call(d, c, RKB_POD_STATUS,
                                       rkb_cri_by_id(d->o.cri, RKB_POD_STATUS, id, false), false,
                                       NULL, &ns, NULL) == GRPC_STATUS_OK)
                                rkb_samples_add(&d->during[READ_POD_STATUS], ns);
                } else
                        d->read_errors++;
                if (call(d, c, RKB_LIST_CONTAINERS,
                         rkb_cri_by_id(d->o.cri, RKB_LIST_CONTAINERS, NULL, false), false, NULL,
                         &ns, NULL) == GRPC_STATUS_OK)
                        rkb_samples_add(&d->during[READ_LIST_CONTAINERS], ns);
                else
                        d->read_errors++;
                rkb_sleep_ms(d->o.read_interval_ms);
        }
        rkb_client_free(c);
        return NULL;
}

/* Runs the workers (and, while starting, the reader) over every pod; returns once they are
 * done. */
static void run_workers(rkb_density *d, bool reader)
{
        unsigned n = d->o.workers < d->o.pods ? d->o.workers : d->o.pods;
        pthread_t *t = rkl_xnew0(pthread_t, n + 1);
        pthread_t rt;

        atomic_store(&d->next, 0);
        atomic_store(&d->batch_done, false);
        pthread_barrier_init(&d->barrier, NULL, n + 1 + (reader ? 1 : 0));
        for (unsigned i = 0; i < n; i++)
                if (pthread_create(&t[i], NULL, worker_main, d) != 0)
                        abort(); /* a benchmark that cannot start its threads has no figure */
        if (reader && pthread_create(&rt, NULL, reader_main, d) != 0)
                abort();
        if (!d->teardown)
                d->t0 = rkb_now_ns();
        pthread_barrier_wait(&d->barrier);
        for (unsigned i = 0; i < n; i++)
                pthread_join(t[i], NULL);
        if (!d->teardown)
                d->batch_s = (double)(rkb_now_ns() - d->t0) / NSEC_PER_SEC;
        atomic_store(&d->batch_done, true);
        if (reader)
                pthread_join(rt, NULL);
        pthread_barrier_destroy(&d->barrier);
        free(t);
}

/* Whether every container of the run is RUNNING, by one ListContainers. */
static bool all_running(rkb_density *d)
{
        rkb_reply r;
        size_t want = (size_t)d->o.pods * d->o.containers, n = 0;
        if (call(d, d->cli, RKB_LIST_CONTAINERS,
                 rkb_cri_by_id(d->o.cri, RKB_LIST_CONTAINERS, NULL, false), true, NULL, NULL,
                 &r) != GRPC_STATUS_OK)
                return false;
        const Runtime__V1__ListContainersResponse *l = (const void *)r.resp;
        for (size_t i = 0; i < l->n_containers; i++) {
                const Runtime__V1__Container *c = l->containers[i];
                bool ours = false;
                for (size_t k = 0; k < c->n_labels; k++)
                        ours = ours || (streq(c->labels[k]->key, RKB_LABEL_RUN) &&
                                        streq(c->labels[k]->value, d->o.cri->run_id));
                n += ours && c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
        }
        rkb_reply_release(&r);
        return n == want;
}

/* The steps of one object's timeline (info's timelineUs) into the samples, in the order of
 * names: when each came, and how long after the latest step before it (the network's steps
 * and stage1's overlap: "before" is by time, not by the list). */
static void add_steps(step_samples *s, size_t n, const char *(*name)(int), const char *info)
{
        _cleanup_(json_object_putp) json_object *o = json_tokener_parse(info);
        json_object *t;
        int64_t at[RKL_TIMELINE_STEPS] = {0};
        if (!o || !json_object_object_get_ex(o, "timelineUs", &t) || !t)
                return;
        for (size_t i = 0; i < n; i++) {
                json_object *v;
                if (json_object_object_get_ex(t, name((int)i), &v) && v)
                        at[i] = json_object_get_int64(v);
        }
        for (size_t i = 0; i < n; i++) {
                if (at[i] <= 0)
                        continue;
                int64_t before = 0;
                for (size_t j = 0; j < i; j++)
                        if (at[j] > before && at[j] <= at[i])
                                before = at[j];
                rkb_samples_add(&s[i].at, (uint64_t)at[i] * NSEC_PER_USEC);
                rkb_samples_add(&s[i].took, (uint64_t)(at[i] - before) * NSEC_PER_USEC);
        }
}

static const char *pod_step_name(int i)
{
        return rkl_pod_step_to_string((rkl_pod_step)i);
}

static const char *container_step_name(int i)
{
        return rkl_container_step_to_string((rkl_container_step)i);
}

static void collect_timelines(rkb_density *d)
{
        for (unsigned i = 0; i < d->o.pods; i++) {
                dpod *p = &d->pods[i];
                rkb_reply r;
                if (!p->id || call(d, d->cli, RKB_POD_STATUS,
                                   rkb_cri_by_id(d->o.cri, RKB_POD_STATUS, p->id, true), true, NULL,
                                   NULL, &r) != GRPC_STATUS_OK)
                        continue;
                const Runtime__V1__PodSandboxStatusResponse *s = (const void *)r.resp;
                for (size_t k = 0; k < s->n_info; k++)
                        if (streq(s->info[k]->key, "info"))
                                add_steps(d->pod_steps, _RKL_POD_STEP_MAX, pod_step_name,
                                          s->info[k]->value);
                rkb_reply_release(&r);
                for (unsigned j = 0; j < d->o.containers; j++) {
                        if (!p->containers[j] || call(d, d->cli, RKB_CONTAINER_STATUS,
                                                      rkb_cri_by_id(d->o.cri, RKB_CONTAINER_STATUS,
                                                                    p->containers[j], true),
                                                      true, NULL, NULL, &r) != GRPC_STATUS_OK)
                                continue;
                        const Runtime__V1__ContainerStatusResponse *cs = (const void *)r.resp;
                        for (size_t k = 0; k < cs->n_info; k++)
                                if (streq(cs->info[k]->key, "info"))
                                        add_steps(d->container_steps, _RKL_CONTAINER_STEP_MAX,
                                                  container_step_name, cs->info[k]->value);
                        rkb_reply_release(&r);
                }
        }
}

/* Reads at the full population: each Status call round-robin over the run's objects. */
static void measure_reads(rkb_density *d)
{
        unsigned lists = d->o.read_iterations / 5 > 20 ? d->o.read_iterations / 5 : 20;
        for (unsigned i = 0; i < lists; i++) {
                uint64_t ns;
                if (call(d, d->cli, RKB_LIST_PODS,
                         rkb_cri_by_id(d->o.cri, RKB_LIST_PODS, NULL, false), false, NULL, &ns,
                         NULL) == GRPC_STATUS_OK)
                        rkb_samples_add(&d->after[READ_LIST_PODS], ns);
                if (call(d, d->cli, RKB_LIST_CONTAINERS,
                         rkb_cri_by_id(d->o.cri, RKB_LIST_CONTAINERS, NULL, false), false, NULL,
                         &ns, NULL) == GRPC_STATUS_OK)
                        rkb_samples_add(&d->after[READ_LIST_CONTAINERS], ns);
        }
        for (unsigned i = 0; i < d->o.read_iterations; i++) {
                const dpod *p = &d->pods[i % d->o.pods];
                uint64_t ns;
                if (p->id && call(d, d->cli, RKB_POD_STATUS,
                                  rkb_cri_by_id(d->o.cri, RKB_POD_STATUS, p->id, false), false,
                                  NULL, &ns, NULL) == GRPC_STATUS_OK)
                        rkb_samples_add(&d->after[READ_POD_STATUS], ns);
                const char *cid =
                    d->o.containers ? p->containers[(i / d->o.pods) % d->o.containers] : NULL;
                if (cid && call(d, d->cli, RKB_CONTAINER_STATUS,
                                rkb_cri_by_id(d->o.cri, RKB_CONTAINER_STATUS, cid, false), false,
                                NULL, &ns, NULL) == GRPC_STATUS_OK)
                        rkb_samples_add(&d->after[READ_CONTAINER_STATUS], ns);
        }
}

static void read_rss(rkb_density *d)
{
        char path[64], line[256];
        (void)snprintf(path, sizeof(path), "/proc/%d/status", (int)d->o.daemon_pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f)) {
                if (strncmp(line, "VmRSS:", 6) == 0)
                        d->rss_kib = strtol(line + 6, NULL, 10);
                else if (strncmp(line, "VmHWM:", 6) == 0)
                        d->hwm_kib = strtol(line + 6, NULL, 10);
        }
}

/* The daemon's CPU time so far, in ns: every thread's, from schedstat (not the 10 ms ticks
 * of stat). Threads that ended are not counted: the daemon's threads live as long as it. */
static uint64_t daemon_cpu_ns(pid_t pid)
{
        char path[64];
        (void)snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        _cleanup_closedir_ DIR *dir = opendir(path);
        uint64_t sum = 0;
        for (struct dirent *de; dir && (de = readdir(dir));) {
                if (de->d_name[0] == '.')
                        continue;
                char p[320];
                unsigned long long on_cpu;
                (void)snprintf(p, sizeof(p), "/proc/%d/task/%s/schedstat", (int)pid, de->d_name);
                _cleanup_fclose_ FILE *f = fopen(p, "re");
                if (f && fscanf(f, "%llu", &on_cpu) == 1)
                        sum += on_cpu;
        }
        return sum;
}

/* kubelet's relist every second (both lists), the daemon's CPU meanwhile. */
static void measure_idle(rkb_density *d)
{
        uint64_t cpu0 = daemon_cpu_ns(d->o.daemon_pid), t0 = rkb_now_ns();
        uint64_t end = t0 + (uint64_t)(d->o.idle_s * NSEC_PER_SEC);
        for (uint64_t next = t0; rkb_now_ns() < end; next += NSEC_PER_SEC) {
                (void)call(d, d->cli, RKB_LIST_PODS,
                           rkb_cri_by_id(d->o.cri, RKB_LIST_PODS, NULL, false), false, NULL, NULL,
                           NULL);
                (void)call(d, d->cli, RKB_LIST_CONTAINERS,
                           rkb_cri_by_id(d->o.cri, RKB_LIST_CONTAINERS, NULL, false), false, NULL,
                           NULL, NULL);
                d->idle_relists++;
                uint64_t n = rkb_now_ns();
                if (next + NSEC_PER_SEC > n)
                        rkb_sleep_ms((unsigned)((next + NSEC_PER_SEC - n) / NSEC_PER_MSEC));
        }
        uint64_t cpu1 = daemon_cpu_ns(d->o.daemon_pid), t1 = rkb_now_ns();
        d->idle_wall_s = (double)(t1 - t0) / NSEC_PER_SEC;
        d->idle_cpu_pct = (double)(cpu1 - cpu0) / (double)(t1 - t0) * 100;
}

extern char **environ;

/* The --on-running command (measures of the node while every pod runs), waited for. */
static void run_on_running(const char *cmd)
{
        char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)cmd, NULL};
        pid_t pid;
        int status;
        if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0 ||
            waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fprintf(stderr, "rkl-bench: --on-running command failed\n");
}

int rkb_density_run(rkb_client *c, const rkb_density_opts *o, rkb_density **ret)
{
        rkb_density *d = rkl_xnew0(rkb_density, 1);
        int r = 0;

        *ret = d;
        d->o = *o;
        d->cli = c;
        d->all_running_s = -1;
        if (o->pods == 0 || o->workers == 0)
                return -EINVAL;
        d->pods = rkl_xnew0(dpod, o->pods);
        for (unsigned i = 0; i < o->pods; i++) {
                dpod *p = &d->pods[i];
                p->name = rkl_xasprintf("density-%s-%u", o->cri->run_id, i);
                p->uid = rkl_xasprintf("%08x-0000-4000-9000-%012u", (unsigned)getpid(), i);
                p->containers = rkl_xnew0(char *, o->containers + 1);
                p->create_ns = rkl_xnew0(uint64_t, o->containers + 1);
                p->start_ns = rkl_xnew0(uint64_t, o->containers + 1);
        }

        run_workers(d, o->read_interval_ms > 0);
        /* With --wait the last StartContainer returned once its container ran; without it,
         * this is where the wait happens. */
        for (uint64_t end = d->t0 + (uint64_t)(o->settle_s * NSEC_PER_SEC);;) {
                if (all_running(d)) {
                        d->all_running_s = (double)(rkb_now_ns() - d->t0) / NSEC_PER_SEC;
                        break;
                }
                if (rkb_now_ns() > end)
                        break;
                rkb_sleep_ms(20);
        }
        for (unsigned i = 0; i < o->pods; i++) {
                const dpod *p = &d->pods[i];
                if (p->run_ns)
                        rkb_samples_add(&d->calls[CALL_RUN], p->run_ns);
                for (unsigned j = 0; j < o->containers; j++) {
                        if (p->create_ns[j])
                                rkb_samples_add(&d->calls[CALL_CREATE], p->create_ns[j]);
                        if (p->start_ns[j])
                                rkb_samples_add(&d->calls[CALL_START], p->start_ns[j]);
                }
                if (p->pod_ns)
                        rkb_samples_add(&d->calls[CALL_POD], p->pod_ns);
                if (p->status) {
                        if (d->failed_pods++ == 0) {
                                d->first_status = p->status;
                                d->first_error = rkl_xstrdup(p->error);
                        }
                }
        }
        collect_timelines(d);
        measure_reads(d);
        if (o->daemon_pid > 0)
                read_rss(d);
        if (o->on_running)
                run_on_running(o->on_running);
        if (o->daemon_pid > 0 && o->idle_s > 0)
                measure_idle(d);
        if (!o->keep) {
                d->teardown = true;
                run_workers(d, false);
                for (unsigned i = 0; i < o->pods; i++) {
                        if (d->pods[i].stop_ns)
                                rkb_samples_add(&d->calls[CALL_STOP_POD], d->pods[i].stop_ns);
                        if (d->pods[i].remove_ns)
                                rkb_samples_add(&d->calls[CALL_REMOVE_POD], d->pods[i].remove_ns);
                }
        }
        if (d->failed_pods > 0 || d->all_running_s < 0)
                r = -EPROTO;
        return r;
}

static void summary_ms(rkb_samples *s, rkb_summary *ret)
{
        rkb_samples_summarize(s, ret);
}

void rkb_density_print(const rkb_density *cd, FILE *f)
{
        rkb_density *d = (rkb_density *)cd; /* summarizing sorts the samples: no change seen */
        rkb_summary s, t;

        fprintf(f,
                "\ndensity: %u pods x %u containers, %u workers: calls done in %.2f s, all "
                "running %s%.2f s after the first call%s\n",
                d->o.pods, d->o.containers, d->o.workers, d->batch_s,
                d->all_running_s < 0 ? "NOT within " : "",
                d->all_running_s < 0 ? d->o.settle_s : d->all_running_s,
                d->failed_pods ? " (some pods failed)" : "");
        fprintf(f, "%-36s %5s %9s %9s %9s %9s\n", "client call", "n", "p50_ms", "p90_ms", "p99_ms",
                "max_ms");
        for (size_t i = 0; i < _CALL_MAX; i++) {
                summary_ms(&d->calls[i], &s);
                if (s.n)
                        fprintf(f, "%-36s %5zu %9.1f %9.1f %9.1f %9.1f\n", call_names[i], s.n,
                                s.p50_usec / USEC_PER_MSEC, s.p90_usec / USEC_PER_MSEC,
                                s.p99_usec / USEC_PER_MSEC, s.max_usec / USEC_PER_MSEC);
        }
        fprintf(f, "%-36s %5s %9s %9s %9s %9s %9s %9s\n", "daemon step (after accepted; took)", "n",
                "at_p50", "at_p90", "at_p99", "took_p50", "took_p90", "took_p99");
        for (int kind = 0; kind < 2; kind++) {
                size_t n = kind ? _RKL_CONTAINER_STEP_MAX : _RKL_POD_STEP_MAX;
                step_samples *ss = kind ? d->container_steps : d->pod_steps;
                for (size_t i = 0; i < n; i++) {
                        char name[64];
                        summary_ms(&ss[i].at, &s);
                        summary_ms(&ss[i].took, &t);
                        if (!s.n)
                                continue;
                        (void)snprintf(name, sizeof(name), "%s %s", kind ? "container" : "sandbox",
                                       kind ? container_step_name((int)i) : pod_step_name((int)i));
                        fprintf(f, "%-36s %5zu %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n", name, s.n,
                                s.p50_usec / USEC_PER_MSEC, s.p90_usec / USEC_PER_MSEC,
                                s.p99_usec / USEC_PER_MSEC, t.p50_usec / USEC_PER_MSEC,
                                t.p90_usec / USEC_PER_MSEC, t.p99_usec / USEC_PER_MSEC);
                }
        }
        fprintf(f, "%-36s %5s %9s %9s %9s %9s\n", "reads", "n", "p50_ms", "p90_ms", "p99_ms",
                "max_ms");
        for (int when = 0; when < 2; when++)
                for (size_t i = 0; i < _READ_MAX; i++) {
                        char name[64];
                        summary_ms(when ? &d->after[i] : &d->during[i], &s);
                        if (!s.n)
                                continue;
                        (void)snprintf(name, sizeof(name), "%s, %s", rkb_rpc_name(read_rpcs[i]),
                                       when ? "after" : "while starting");
                        fprintf(f, "%-36s %5zu %9.3f %9.3f %9.3f %9.3f\n", name, s.n,
                                s.p50_usec / USEC_PER_MSEC, s.p90_usec / USEC_PER_MSEC,
                                s.p99_usec / USEC_PER_MSEC, s.max_usec / USEC_PER_MSEC);
                }
        if (d->rss_kib)
                fprintf(f, "daemon VmRSS %ld KiB (VmHWM %ld KiB) with every pod running\n",
                        d->rss_kib, d->hwm_kib);
        if (d->idle_wall_s > 0)
                fprintf(f,
                        "daemon CPU while idle, a relist every second: %.2f %% of a core (%.0f s, "
                        "%u relists)\n",
                        d->idle_cpu_pct, d->idle_wall_s, d->idle_relists);
        if (d->failed_pods)
                fprintf(f, "failed pods: %u, first: %s\n", d->failed_pods, d->first_error);
}

/* A number with fixed decimals, as the tables print it. */
static json_object *num(double v, int decimals)
{
        char buf[64];
        (void)snprintf(buf, sizeof(buf), "%.*f", decimals, v);
        return json_object_new_double_s(v, buf);
}

/* The summary's keys (ms) into o. */
static json_object *summary_json(json_object *o, rkb_samples *smp)
{
        rkb_summary s;
        rkb_samples_summarize(smp, &s);
        json_object_object_add(o, "n", json_object_new_int64((int64_t)s.n));
        json_object_object_add(o, "p50_ms", num(s.p50_usec / USEC_PER_MSEC, 3));
        json_object_object_add(o, "p90_ms", num(s.p90_usec / USEC_PER_MSEC, 3));
        json_object_object_add(o, "p99_ms", num(s.p99_usec / USEC_PER_MSEC, 3));
        json_object_object_add(o, "max_ms", num(s.max_usec / USEC_PER_MSEC, 3));
        json_object_object_add(o, "mean_ms", num(s.mean_usec / USEC_PER_MSEC, 3));
        return o;
}

json_object *rkb_density_json(const rkb_density *cd)
{
        rkb_density *d = (rkb_density *)cd; /* summarizing sorts the samples */
        json_object *o = json_object_new_object(), *calls = json_object_new_array();
        json_object *steps = json_object_new_array(), *reads = json_object_new_array();

        json_object_object_add(o, "pods", json_object_new_int64(d->o.pods));
        json_object_object_add(o, "containers_per_pod", json_object_new_int64(d->o.containers));
        json_object_object_add(o, "workers", json_object_new_int64(d->o.workers));
        json_object_object_add(o, "batch_s", num(d->batch_s, 3));
        json_object_object_add(o, "all_running_s", num(d->all_running_s, 3));
        json_object_object_add(o, "all_running", json_object_new_boolean(d->all_running_s >= 0));
        json_object_object_add(o, "failed_pods", json_object_new_int64(d->failed_pods));
        json_object_object_add(o, "vmrss_kib", json_object_new_int64(d->rss_kib));
        json_object_object_add(o, "vmhwm_kib", json_object_new_int64(d->hwm_kib));
        json_object_object_add(o, "idle_cpu_pct", num(d->idle_cpu_pct, 3));
        json_object_object_add(o, "idle_s", num(d->idle_wall_s, 1));
        for (size_t i = 0; i < _CALL_MAX; i++) {
                json_object *c = json_object_new_object();
                json_object_object_add(c, "call", json_object_new_string(call_names[i]));
                json_object_array_add(calls, summary_json(c, &d->calls[i]));
        }
        json_object_object_add(o, "calls", calls);
        for (int kind = 0; kind < 2; kind++) {
                size_t n = kind ? _RKL_CONTAINER_STEP_MAX : _RKL_POD_STEP_MAX;
                step_samples *ss = kind ? d->container_steps : d->pod_steps;
                for (size_t i = 0; i < n; i++) {
                        json_object *st = json_object_new_object();
                        json_object_object_add(
                            st, "object", json_object_new_string(kind ? "container" : "sandbox"));
                        json_object_object_add(
                            st, "step",
                            json_object_new_string(kind ? container_step_name((int)i)
                                                        : pod_step_name((int)i)));
                        json_object_object_add(st, "at",
                                               summary_json(json_object_new_object(), &ss[i].at));
                        json_object_object_add(st, "took",
                                               summary_json(json_object_new_object(), &ss[i].took));
                        json_object_array_add(steps, st);
                }
        }
        json_object_object_add(o, "steps", steps);
        for (int when = 0; when < 2; when++)
                for (size_t i = 0; i < _READ_MAX; i++) {
                        json_object *r = json_object_new_object();
                        json_object_object_add(r, "rpc",
                                               json_object_new_string(rkb_rpc_name(read_rpcs[i])));
                        json_object_object_add(r, "when",
                                               json_object_new_string(when ? "after" : "starting"));
                        json_object_array_add(reads,
                                              summary_json(r, when ? &d->after[i] : &d->during[i]));
                }
        json_object_object_add(o, "reads", reads);
        json_object_object_add(o, "first_error",
                               d->first_error ? json_object_new_string(d->first_error) : NULL);
        return o;
}

rkb_density *rkb_density_free(rkb_density *d)
{
        if (!d)
                return NULL;
        for (unsigned i = 0; d->pods && i < d->o.pods; i++) {
                dpod *p = &d->pods[i];
                free(p->id);
                free(p->name);
                free(p->uid);
                for (unsigned j = 0; j < d->o.containers; j++)
                        free(p->containers[j]);
                free(p->containers);
                free(p->create_ns);
                free(p->start_ns);
                free(p->error);
        }
        free(d->pods);
        for (size_t i = 0; i < _CALL_MAX; i++)
                rkb_samples_release(&d->calls[i]);
        for (size_t i = 0; i < _RKL_POD_STEP_MAX; i++) {
                rkb_samples_release(&d->pod_steps[i].at);
                rkb_samples_release(&d->pod_steps[i].took);
        }
        for (size_t i = 0; i < _RKL_CONTAINER_STEP_MAX; i++) {
                rkb_samples_release(&d->container_steps[i].at);
                rkb_samples_release(&d->container_steps[i].took);
        }
        for (size_t i = 0; i < _READ_MAX; i++) {
                rkb_samples_release(&d->during[i]);
                rkb_samples_release(&d->after[i]);
        }
        free(d->first_error);
        return mfree(d);
}
