/* The scenarios that measure a populated endpoint: reads, latency at each scale, stats,
 * throughput, ExecSync, convergence and density (bench.h; the restart is restart.c's). */
#include <fcntl.h>
#include <inttypes.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "base/alloc.h"
#include "base/fileio.h"
#include "base/parse.h"
#include "base/strv.h"
#include "stats/stats.h"
#include "base/banned.h"

/* Reads on what the endpoint already has (a live node, say): nothing is created or removed. */
int rkb_scenario_reads(rkb_bench *b)
{
        _cleanup_(rkb_request_freep) rkb_request *lp =
            rkb_cri_by_id(&b->cri, RKB_LIST_PODS, NULL, false);
        _cleanup_(rkb_request_freep) rkb_request *lc =
            rkb_cri_by_id(&b->cri, RKB_LIST_CONTAINERS, NULL, false);
        rkb_reply pods, containers;
        int r = 0;

        if (b->n_pods > 0) {
                fprintf(stderr, "rkl-bench: reads runs on its own\n");
                return -EBUSY;
        }
        if (rkb_call(b, RKB_LIST_PODS, lp, true, NULL, &pods) != GRPC_STATUS_OK) {
                rkb_reply_release(&pods);
                return -EPROTO;
        }
        if (rkb_call(b, RKB_LIST_CONTAINERS, lc, true, NULL, &containers) != GRPC_STATUS_OK) {
                rkb_reply_release(&pods);
                rkb_reply_release(&containers);
                return -EPROTO;
        }
        const Runtime__V1__ListPodSandboxResponse *pl = (const void *)pods.resp;
        const Runtime__V1__ListContainersResponse *cl = (const void *)containers.resp;
        b->pods = rkl_xnew0(rkb_pod, pl->n_items + 1);
        for (size_t i = 0; i < pl->n_items; i++) {
                rkb_pod *p = &b->pods[b->n_pods++];
                p->id = rkl_xstrdup(pl->items[i]->id);
                p->name = rkl_xstrdup("");
                p->uid = rkl_xstrdup("");
                for (size_t j = 0; j < cl->n_containers; j++) {
                        if (!streq(cl->containers[j]->pod_sandbox_id, p->id))
                                continue;
                        p->containers = rkl_xrealloc(p->containers, (p->n_containers + 1) *
                                                                        sizeof(*p->containers));
                        p->containers[p->n_containers++] = rkl_xstrdup(cl->containers[j]->id);
                        b->n_containers++;
                }
        }
        rkb_reply_release(&pods);
        rkb_reply_release(&containers);
        if (b->n_pods == 0)
                r = -ENOENT;
        rkb_measure_reads(b, "existing");
        /* Not ours: leave them. */
        b->keep = true;
        return r;
}

int rkb_scenario_latency(rkb_bench *b)
{
        _cleanup_free_ char *scales = rkl_xstrdup(b->args->scales);
        char *save = NULL;

        rkb_phase_begin(b, "%s", "idle");
        rkb_measure_one(b, RKB_VERSION, rkb_cri_version(), b->iterations);
        rkb_measure_one(b, RKB_STATUS, rkb_cri_status(), b->iterations);
        rkb_record_rss(b, "idle");

        for (char *tok = strtok_r(scales, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                uint64_t n;
                int64_t t;
                int r;

                if (rkl_safe_atou64(tok, &n) < 0 || n == 0) {
                        fprintf(stderr, "rkl-bench: bad scale '%s'\n", tok);
                        return -EINVAL;
                }
                if (n < b->n_containers)
                        continue;
                rkb_phase_begin(b, "populate-%s", tok);
                r = rkb_populate(b, n, b->per_pod);
                rkb_phase_end(b);
                if (r < 0) {
                        fprintf(stderr, "rkl-bench: cannot populate %s containers: %s\n", tok,
                                strerror(-r));
                        return r;
                }
                /* Reads are served from the daemon's caches whether or not rkt has caught up:
                 * measure them anyway, and say so. */
                t = rkb_wait_settled(b, b->settle_usec, 100);
                rkb_note_settled(b, tok, t);
                rkb_measure_reads(b, tok);
        }
        return 0;
}

/* The bench's cgroups: id is "<base>/c<i>", under each hierarchy. */
static int bench_resolve(pid_t supervisor, const char *app, rkl_stats_dirs *ret)
{
        int root = open("/sys/fs/cgroup", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        bool v2 = root >= 0 && rkl_stats_cgroup_mode_detect(root) == RKL_STATS_CGROUP_V2;
        (void)supervisor;
        if (root >= 0)
                close(root);
        if (v2) {
                ret->cpu = rkl_xasprintf("/sys/fs/cgroup/%s", app);
                ret->cpu_spec = rkl_xstrdup(ret->cpu);
                ret->memory = rkl_xstrdup(ret->cpu);
                ret->pids = rkl_xstrdup(ret->cpu);
                ret->pids_max = rkl_xstrdup(ret->cpu);
                ret->blkio = rkl_xstrdup(ret->cpu);
                ret->pressure = rkl_xstrdup(ret->cpu);
        } else {
                ret->cpu = rkl_xasprintf("/sys/fs/cgroup/cpuacct/%s", app);
                ret->cpu_spec = rkl_xasprintf("/sys/fs/cgroup/cpu/%s", app);
                ret->memory = rkl_xasprintf("/sys/fs/cgroup/memory/%s", app);
                ret->blkio = rkl_xasprintf("/sys/fs/cgroup/blkio/%s", app);
                ret->pressure = rkl_xasprintf("/sys/fs/cgroup/unified/%s", app);
        }
        return 0;
}

/* The directory of test cgroup i (or of their parent, i SIZE_MAX) in hierarchy c: v1's that
 * the collector reads (and the hybrid host's unified/, for pressure), or cgroup2's one. */
static const char *const v1_hierarchies[] = {"memory", "cpuacct", "cpu", "blkio", "unified"};

static char *test_cgroup(rkl_stats_cgroup_mode mode, const char *base, size_t c, size_t i)
{
        const char *const *v1 = v1_hierarchies;
        _cleanup_free_ char *parent = mode == RKL_STATS_CGROUP_V1
                                          ? rkl_xasprintf("/sys/fs/cgroup/%s/%s", v1[c], base)
                                          : rkl_xasprintf("/sys/fs/cgroup/%s", base);
        return i == SIZE_MAX ? TAKE_PTR(parent) : rkl_xasprintf("%s/c%zu", parent, i);
}

/* The refresh's cost, measured in this process on n real cgroups made for it (root only):
 * the collector's own work (stats/stats.h) on what a node's kernel serves. The cgroups are
 * empty: the kernel's files cost about the same with processes in them. */
static void stats_refresh_cost(size_t n)
{
        int root = open("/sys/fs/cgroup", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        rkl_stats_cgroup_mode mode =
            root >= 0 ? rkl_stats_cgroup_mode_detect(root) : RKL_STATS_CGROUP_V2;
        size_t hierarchies = mode == RKL_STATS_CGROUP_V1 ? ELEMENTSOF(v1_hierarchies) : 1;
        char base[64];
        if (root >= 0)
                close(root);
        snprintf(base, sizeof(base), "rkl-bench-%d", (int)getpid());
        for (size_t i = 0; i < n; i++)
                for (size_t c = 0; c < hierarchies; c++) {
                        _cleanup_free_ char *d = test_cgroup(mode, base, c, i);
                        if (rkl_mkdir_p(d, 0755) < 0) {
                                fprintf(stderr, "rkl-bench: stats refresh cost: cannot make "
                                                "cgroups (root?), skipped\n");
                                n = i;
                                goto measure;
                        }
                }
measure:;
        rkl_stats_target *t = rkl_xnew0(rkl_stats_target, n + 1);
        for (size_t i = 0; i < n; i++) {
                snprintf(t[i].id, sizeof(t[i].id), "c%zu", i % 1000000);
                snprintf(t[i].sandbox_id, sizeof(t[i].sandbox_id), "pod");
                t[i].app = rkl_xasprintf("%s/c%zu", base, i);
                t[i].supervisor = getpid();
        }
        rkl_stats_config cfg = {.mode = mode, .resolve = bench_resolve};
        rkl_stats_snapshot *prev = NULL;
        enum { ROUNDS = 50 };
        struct timespec a, z;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
        for (int k = 0; k < ROUNDS; k++) {
                rkl_stats_snapshot *s = rkl_stats_collect(&cfg, t, n, prev);
                rkl_stats_snapshot_unref(prev);
                prev = s;
        }
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &z);
        rkl_stats_snapshot_unref(prev);
        double per = (double)(rkl_timespec_ns(&z) - rkl_timespec_ns(&a)) / ROUNDS;
        double interval = 10.0 * NSEC_PER_SEC; /* the default --stats-interval */
        if (n > 0)
                fprintf(stderr,
                        "rkl-bench: stats refresh of %zu containers (cgroup %s): %.0f us CPU, "
                        "%.1f us per container; at a 10 s interval %.4f%% of a core "
                        "(1,000 containers: %.3f%%)\n",
                        n, rkl_stats_cgroup_mode_to_string(mode), per / NSEC_PER_USEC,
                        per / NSEC_PER_USEC / (double)n, per / interval * 100,
                        per / (double)n * 1000 / interval * 100);
        rkl_stats_targets_free(t, n);
        for (size_t c = 0; c < hierarchies; c++) {
                for (size_t i = 0; i < n; i++) {
                        _cleanup_free_ char *d = test_cgroup(mode, base, c, i);
                        (void)rmdir(d);
                }
                _cleanup_free_ char *d = test_cgroup(mode, base, c, SIZE_MAX);
                (void)rmdir(d);
        }
}

/* ListContainerStats and ListPodSandboxStats at each scale, served from the daemon's stats
 * cache; then the cost of one refresh (stats_refresh_cost). */
int rkb_scenario_stats(rkb_bench *b)
{
        _cleanup_free_ char *scales = rkl_xstrdup(b->args->scales);
        char *save = NULL;
        size_t most = 0;

        for (char *tok = strtok_r(scales, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                uint64_t n;
                if (rkl_safe_atou64(tok, &n) < 0 || n == 0)
                        return -EINVAL;
                if (n < b->n_containers)
                        continue;
                rkb_phase_begin(b, "stats-populate-%s", tok);
                int r = rkb_populate(b, n, b->per_pod);
                rkb_phase_end(b);
                if (r < 0)
                        return r;
                rkb_note_settled(b, tok, rkb_wait_settled(b, b->settle_usec, 100));
                rkb_phase_begin(b, "stats-%s", tok);
                rkb_measure_one(b, RKB_LIST_CONTAINER_STATS,
                                rkb_cri_by_id(&b->cri, RKB_LIST_CONTAINER_STATS, NULL, false),
                                b->iterations);
                rkb_measure_one(b, RKB_LIST_POD_STATS,
                                rkb_cri_by_id(&b->cri, RKB_LIST_POD_STATS, NULL, false),
                                b->iterations);
                most = n;
        }
        stats_refresh_cost(most ? most : 100);
        return 0;
}

int rkb_scenario_throughput(rkb_bench *b)
{
        _cleanup_free_ char *inflight = rkl_xstrdup(b->args->inflight);
        const rkb_rpc rpcs[] = {RKB_VERSION, RKB_STATUS, RKB_CONTAINER_STATUS, RKB_LIST_CONTAINERS};
        char *save = NULL;
        int r;

        if (b->n_containers < b->args->thr_containers) {
                rkb_phase_begin(b, "%s", "populate-throughput");
                r = rkb_populate(b, b->args->thr_containers, b->per_pod);
                rkb_phase_end(b);
                if (r < 0)
                        fprintf(stderr, "rkl-bench: throughput without containers: %s\n",
                                strerror(-r));
                else
                        rkb_note_settled(b, "throughput", rkb_wait_settled(b, b->settle_usec, 100));
        }
        for (char *tok = strtok_r(inflight, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                uint64_t k;

                if (rkl_safe_atou64(tok, &k) < 0 || k == 0 || k > 1024) {
                        fprintf(stderr, "rkl-bench: bad in-flight count '%s'\n", tok);
                        return -EINVAL;
                }
                for (size_t i = 0; i < ELEMENTSOF(rpcs) && b->n_thr < ELEMENTSOF(b->thr); i++) {
                        _cleanup_(rkb_request_freep) rkb_request *req = NULL;
                        rkb_thr_row *row;
                        rkb_samples s = {0};

                        if (rpcs[i] == RKB_CONTAINER_STATUS) {
                                if (b->n_pods == 0)
                                        continue;
                                req = rkb_cri_by_id(&b->cri, RKB_CONTAINER_STATUS,
                                                    b->pods[0].containers[0], false);
                        } else if (rpcs[i] == RKB_LIST_CONTAINERS)
                                req = rkb_cri_by_id(&b->cri, RKB_LIST_CONTAINERS, NULL, false);
                        else
                                req = rpcs[i] == RKB_VERSION ? rkb_cri_version() : rkb_cri_status();
                        row = &b->thr[b->n_thr++];
                        row->rpc = rpcs[i];
                        row->inflight = (unsigned)k;
                        row->containers = b->n_containers;
                        r = rkb_client_pipeline(b->cli, req, (unsigned)k,
                                                (uint64_t)(b->args->duration * USEC_PER_SEC), &s,
                                                &row->res);
                        rkb_samples_summarize(&s, &row->s);
                        rkb_samples_release(&s);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int rkb_scenario_exec(rkb_bench *b)
{
        _cleanup_strv_free_ char **cmd = rkb_split_command(b->args->exec_command);
        _cleanup_(rkb_request_freep) rkb_request *req = NULL;
        rkb_reply r;
        int k;

        if (b->n_containers == 0 || !b->start_containers) {
                rkb_phase_begin(b, "%s", "populate-exec");
                k = rkb_populate(b, 1, b->per_pod);
                rkb_phase_end(b);
                if (k < 0 || !b->start_containers) {
                        fprintf(stderr, "rkl-bench: exec needs a running container\n");
                        return k < 0 ? k : -EINVAL;
                }
                rkb_note_settled(b, "exec", rkb_wait_settled(b, b->settle_usec, 20));
        }
        req = rkb_cri_exec_sync(b->pods[0].containers[0], cmd, 10);
        /* The first call says whether the command works there at all. */
        k = rkb_call(b, RKB_EXEC_SYNC, req, true, NULL, &r);
        if (k != GRPC_STATUS_OK)
                return k < 0 ? k : -EPROTO;
        const Runtime__V1__ExecSyncResponse *resp = (const void *)r.resp;
        if (resp->exit_code != 0)
                fprintf(stderr, "rkl-bench: exec of '%s' exits %d: %.*s\n", b->args->exec_command,
                        resp->exit_code, (int)resp->stderr.len, (const char *)resp->stderr.data);
        rkb_reply_release(&r);

        rkb_phase_begin(b, "%s", "exec");
        rkb_measure_one(b, RKB_VERSION, rkb_cri_version(), b->iterations);
        rkb_measure(b, RKB_EXEC_SYNC, &req, 1, b->args->exec_iterations);
        if (b->args->exec_inflight > 1 && b->n_thr < ELEMENTSOF(b->thr)) {
                rkb_thr_row *row = &b->thr[b->n_thr++];
                rkb_samples s = {0};
                row->rpc = RKB_EXEC_SYNC;
                row->inflight = b->args->exec_inflight;
                row->containers = b->n_containers;
                k = rkb_client_pipeline(b->cli, req, b->args->exec_inflight,
                                        (uint64_t)(b->args->duration * USEC_PER_SEC), &s,
                                        &row->res);
                rkb_samples_summarize(&s, &row->s);
                rkb_samples_release(&s);
                if (k < 0)
                        return k;
        }
        rkb_record_rss(b, "exec");
        return 0;
}

int rkb_scenario_converge(rkb_bench *b)
{
        size_t want = (size_t)b->args->pods * b->args->containers_per_pod;
        uint64_t t0, t_issued;
        int64_t t;
        int r;

        if (b->n_containers > 0) {
                fprintf(stderr, "rkl-bench: converge needs an empty run; run it on its own\n");
                return -EBUSY;
        }
        b->start_containers = true;
        rkb_phase_begin(b, "%s", "converge");
        t0 = rkb_now_ns();
        r = rkb_populate(b, want, b->args->containers_per_pod);
        t_issued = rkb_now_ns();
        rkb_phase_end(b);
        if (r < 0)
                return r;
        /* A tighter poll than the other scenarios: the poll interval bounds the error. */
        t = rkb_wait_settled(b, b->settle_usec, 20);
        b->conv.done = true;
        b->conv.timed_out = t < 0;
        b->conv.pods = b->args->pods;
        b->conv.per_pod = b->args->containers_per_pod;
        b->conv.max_actions = b->args->max_actions;
        b->conv.ready_s = b->args->ready_s;
        b->conv.add_s = b->args->add_s;
        b->conv.start_s = b->args->start_s;
        b->conv.issued_s = rkb_s(t_issued - t0);
        b->conv.converged_s = t < 0 ? 0 : rkb_s(t_issued - t0 + (uint64_t)t);
        /* The rkt work itself: every sandbox's readiness and every app's add and start, spread
         * over the daemon's action slots; never less than one pod's own chain. */
        b->conv.work_s =
            b->args->pods * b->args->ready_s + (double)want * (b->args->add_s + b->args->start_s);
        b->conv.critical_s =
            b->args->ready_s + b->args->containers_per_pod * (b->args->add_s + b->args->start_s);
        b->conv.model_s = b->conv.work_s / b->args->max_actions;
        if (b->conv.model_s < b->conv.critical_s)
                b->conv.model_s = b->conv.critical_s;
        /* A tighter bound, for a daemon that waits for readiness without holding a slot (the
         * sandbox gets ready on its own): only the command time until the uuid file and the
         * app commands queue for the K slots. */
        b->conv.uuid_s = b->args->uuid_s;
        b->conv.overlap_model_s =
            (b->args->pods * b->args->uuid_s + (double)want * (b->args->add_s + b->args->start_s)) /
            b->args->max_actions;
        if (b->conv.overlap_model_s < b->conv.critical_s + b->args->uuid_s)
                b->conv.overlap_model_s = b->conv.critical_s + b->args->uuid_s;
        rkb_record_rss(b, "converge");
        return t < 0 ? (int)t : 0;
}

/* N pods started at once as kubelet's pod workers do (density.h). */
int rkb_scenario_density(rkb_bench *b)
{
        rkb_density_opts o = {
            .cri = &b->cri,
            .pods = b->args->pods,
            .containers = b->args->containers_per_pod,
            .workers = b->args->workers ? b->args->workers : b->args->pods,
            .call_timeout_usec = (uint64_t)(b->args->call_timeout_s * USEC_PER_SEC),
            .read_interval_ms = b->args->read_interval_ms,
            .read_iterations = b->iterations,
            .idle_s = b->args->idle_s,
            .settle_s = b->args->settle,
            .daemon_pid = b->daemon_pid,
            .keep = b->keep,
            .on_running = b->args->on_running,
        };
        return rkb_density_run(b->cli, &o, &b->density);
}
