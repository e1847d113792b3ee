/* rkl-bench: CRI latency, throughput, convergence and restart figures for any CRI endpoint.
 *
 * Every latency is reported beside the Version round trip measured in the same phase of the
 * same run: on a shared 2-core machine absolute times are noise, ratios are not. */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <grpc/grpc.h>

#include "api.pb-c.h"
#include "client.h"
#include "cri.h"
#include "density.h"
#include "stats.h"
#include "base/alloc.h"
#include "base/fileio.h"
#include "base/parse.h"
#include "stats/stats.h"
#include "base/strv.h"
#include "base/banned.h"

extern char **environ;

#define MAX_ROWS     512
#define CALL_TIMEOUT (120 * UINT64_C(1000000))

typedef struct lat_row {
        rkb_rpc rpc;
        char phase[32];
        size_t containers; /* of this run, when the phase was measured */
        rkb_summary s;
        double ref_p50_us; /* Version p50 of the same phase; 0 if none */
} lat_row;

typedef struct thr_row {
        rkb_rpc rpc;
        unsigned inflight;
        size_t containers;
        rkb_pipeline_result res;
        rkb_summary s;
} thr_row;

typedef struct rss_row {
        char phase[32];
        size_t containers;
        long rss_kib, hwm_kib;
} rss_row;

typedef struct err_row {
        uint64_t n;
        int status;
        char *details;
} err_row;

typedef struct pod {
        char *id, *name, *uid;
        char **containers;
        size_t n_containers;
} pod;

typedef struct bench {
        rkb_client *cli;
        rkb_cri_opts cri;
        char *endpoint;
        pid_t daemon_pid;
        unsigned iterations;
        size_t per_pod;
        bool start_containers;
        uint64_t settle_usec;

        /* the run's pods and containers */
        pod *pods;
        size_t n_pods, n_containers;
        unsigned seq;

        /* the phase being measured: mutation samples and their interleaved Version reference */
        char phase[32];
        rkb_samples mut[_RKB_RPC_MAX];

        lat_row lat[MAX_ROWS];
        size_t n_lat;
        thr_row thr[64];
        size_t n_thr;
        rss_row rss[32];
        size_t n_rss;
        err_row err[_RKB_RPC_MAX];
        struct {
                char phase[32];
                size_t containers;
                double seconds; /* < 0: not settled within --settle */
        } settled[16];
        size_t n_settled;

        struct {
                bool done;
                unsigned pods, per_pod, max_actions;
                double ready_s, add_s, start_s;
                double issued_s, converged_s, model_s, work_s, critical_s;
                double uuid_s, overlap_model_s; /* readiness off the action slots */
                bool timed_out;
        } conv;
        rkb_density *density;
        struct {
                bool done;
                size_t containers, running; /* running: before the kill */
                double answer_ms, list_complete_ms, list_correct_ms, converged_ms;
                bool timed_out;
                long rss_before_kib, rss_after_kib;
        } rst;
} bench;

/* Options. */
static const char *arg_endpoint;
static const char *arg_json;
static const char *arg_scenarios = "latency";
static const char *arg_scales = "10,100,1000";
static const char *arg_restart_cmd;
static const char *arg_command = "/bin/sleep 100000";
static const char *arg_image = "docker.io/library/busybox:latest";
static const char *arg_log_dir = "/tmp/rkl-bench/logs";
static const char *arg_inflight = "1,8,32";
static const char *arg_exec_command = "true";
static unsigned arg_exec_iterations = 200;
static unsigned arg_exec_inflight = 8;
static unsigned arg_iterations = 1000;
static unsigned arg_per_pod = 10;
static unsigned arg_pods = 50;
static unsigned arg_containers_per_pod = 2;
static unsigned arg_max_actions = 4;
static unsigned arg_restart_containers = 1000;
static unsigned arg_thr_containers = 100;
static unsigned arg_workers;                /* density: 0 = one per pod */
static unsigned arg_read_interval_ms = 100; /* density: the reader's pace while starting */
static double arg_idle_s;                   /* density: CPU while idle, seconds */
static double arg_call_timeout_s = 600;     /* density: a call's deadline */
static const char *arg_on_running;          /* density: sh -c this while every pod runs */
static double arg_duration = 2.0;
static double arg_settle = 300.0;
static double arg_ready_s = 1.33, arg_add_s = 0.12, arg_start_s = 0.12, arg_uuid_s = 0.08;
static long arg_daemon_pid;
static bool arg_pull;
static bool arg_no_start;
static bool arg_keep;

/* Helpers. */

static double ms(uint64_t ns)
{
        return (double)ns / 1e6;
}

static void sleep_ms(unsigned n)
{
        struct timespec ts = {.tv_sec = n / 1000, .tv_nsec = (long)(n % 1000) * 1000000L};
        nanosleep(&ts, NULL);
}

static const char *status_name(int s)
{
        static const char *const names[] = {
            "OK",
            "CANCELLED",
            "UNKNOWN",
            "INVALID_ARGUMENT",
            "DEADLINE_EXCEEDED",
            "NOT_FOUND",
            "ALREADY_EXISTS",
            "PERMISSION_DENIED",
            "RESOURCE_EXHAUSTED",
            "FAILED_PRECONDITION",
            "ABORTED",
            "OUT_OF_RANGE",
            "UNIMPLEMENTED",
            "INTERNAL",
            "UNAVAILABLE",
            "DATA_LOSS",
            "UNAUTHENTICATED",
        };
        return s >= 0 && (size_t)s < ELEMENTSOF(names) ? names[s] : "?";
}

static void note_error(bench *b, rkb_rpc rpc, const rkb_reply *r)
{
        err_row *e = &b->err[rpc];
        if (e->n++ == 0) {
                e->status = r->status;
                e->details = rkl_xstrdup(r->details ? r->details : "");
                fprintf(stderr, "rkl-bench: %s: %s: %s\n", rkb_rpc_name(rpc),
                        status_name(r->status), e->details);
        }
}

/* One call; an OK call's latency goes to *lat when given. Returns the grpc status, or
 * -errno when it could not be made. */
static int call(bench *b, rkb_rpc rpc, const rkb_request *req, bool want_resp, rkb_samples *lat,
                rkb_reply *ret)
{
        rkb_reply r;
        int k = rkb_client_call(b->cli, req, want_resp ? rkb_rpc_response(rpc) : NULL, CALL_TIMEOUT,
                                &r);
        if (k < 0)
                return k;
        if (r.status != GRPC_STATUS_OK)
                note_error(b, rpc, &r);
        else if (lat)
                rkb_samples_add(lat, r.took_ns);
        k = r.status;
        if (ret)
                *ret = r;
        else
                rkb_reply_release(&r);
        return k;
}

static lat_row *add_lat_row(bench *b, rkb_rpc rpc, const char *phase, rkb_samples *s)
{
        lat_row *row;

        if (s->n == 0 || b->n_lat >= MAX_ROWS)
                return NULL;
        row = &b->lat[b->n_lat++];
        row->rpc = rpc;
        snprintf(row->phase, sizeof(row->phase), "%s", phase);
        row->containers = b->n_containers;
        rkb_samples_summarize(s, &row->s);
        return row;
}

static const lat_row *find_lat(const bench *b, rkb_rpc rpc, const char *phase)
{
        for (size_t i = 0; i < b->n_lat; i++)
                if (b->lat[i].rpc == rpc && streq(b->lat[i].phase, phase))
                        return &b->lat[i];
        return NULL;
}

/* Fills in every row's Version reference from its own phase. */
static void set_refs(bench *b)
{
        for (size_t i = 0; i < b->n_lat; i++) {
                const lat_row *v = find_lat(b, RKB_VERSION, b->lat[i].phase);
                b->lat[i].ref_p50_us = v ? v->s.p50_us : 0;
        }
}

static int read_rss(pid_t pid, long *ret_rss, long *ret_hwm)
{
        char path[64], line[256];
        long rss = -1, hwm = -1;
        _cleanup_fclose_ FILE *f = NULL;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, "VmRSS:", 6) == 0)
                        rss = strtol(line + 6, NULL, 10);
                else if (strncmp(line, "VmHWM:", 6) == 0)
                        hwm = strtol(line + 6, NULL, 10);
        }
        if (rss < 0)
                return -ESRCH; /* a zombie has no VmRSS */
        *ret_rss = rss;
        *ret_hwm = hwm;
        return 0;
}

static void record_rss(bench *b, const char *phase)
{
        rss_row *row;
        long rss, hwm;

        if (b->daemon_pid <= 0 || b->n_rss >= ELEMENTSOF(b->rss) ||
            read_rss(b->daemon_pid, &rss, &hwm) < 0)
                return;
        row = &b->rss[b->n_rss++];
        snprintf(row->phase, sizeof(row->phase), "%s", phase);
        row->containers = b->n_containers;
        row->rss_kib = rss;
        row->hwm_kib = hwm;
}

/* Phases: mutations are timed with one Version call after each, so that the reference ran
 * under the same load (the reconciler busy with rkt). */

static void phase_begin(bench *b, const char *fmt, const char *arg)
{
        snprintf(b->phase, sizeof(b->phase), fmt, arg);
        for (size_t i = 0; i < _RKB_RPC_MAX; i++)
                rkb_samples_release(&b->mut[i]);
}

static void phase_end(bench *b)
{
        for (size_t i = 0; i < _RKB_RPC_MAX; i++) {
                add_lat_row(b, (rkb_rpc)i, b->phase, &b->mut[i]);
                rkb_samples_release(&b->mut[i]);
        }
}

static int mutate(bench *b, rkb_rpc rpc, rkb_request *req, rkb_reply *ret)
{
        _cleanup_(rkb_request_freep) rkb_request *version = rkb_cri_version();
        int r = call(b, rpc, req, ret != NULL, &b->mut[rpc], ret);

        rkb_request_free(req);
        (void)call(b, RKB_VERSION, version, false, &b->mut[RKB_VERSION], NULL);
        return r;
}

/* Pods and containers. */

static int add_pod(bench *b)
{
        rkb_reply r;
        pod *p;
        int k;

        b->pods = rkl_xrealloc(b->pods, (b->n_pods + 1) * sizeof(*b->pods));
        p = &b->pods[b->n_pods];
        memset(p, 0, sizeof(*p));
        p->name = rkl_xasprintf("bench-%s-%u", b->cri.run_id, b->seq++);
        p->uid = rkl_xasprintf("%08x-0000-4000-8000-%012u", (unsigned)getpid(), b->seq);
        k = mutate(b, RKB_RUN_POD, rkb_cri_run_pod(&b->cri, p->name, p->uid), &r);
        if (k != GRPC_STATUS_OK) {
                free(p->name);
                free(p->uid);
                return k < 0 ? k : -EPROTO;
        }
        p->id = rkl_xstrdup(((Runtime__V1__RunPodSandboxResponse *)r.resp)->pod_sandbox_id);
        rkb_reply_release(&r);
        b->n_pods++;
        return 0;
}

static int add_container(bench *b, pod *p)
{
        _cleanup_free_ char *name = rkl_xasprintf("c%zu", p->n_containers);
        rkb_reply r;
        char *id;
        int k;

        k = mutate(b, RKB_CREATE, rkb_cri_create(&b->cri, p->id, p->name, p->uid, name), &r);
        if (k != GRPC_STATUS_OK)
                return k < 0 ? k : -EPROTO;
        id = rkl_xstrdup(((Runtime__V1__CreateContainerResponse *)r.resp)->container_id);
        rkb_reply_release(&r);
        p->containers = rkl_xrealloc(p->containers, (p->n_containers + 1) * sizeof(*p->containers));
        p->containers[p->n_containers++] = id;
        b->n_containers++;
        if (b->start_containers) {
                k = mutate(b, RKB_START, rkb_cri_by_id(&b->cri, RKB_START, id, false), NULL);
                if (k != GRPC_STATUS_OK)
                        return k < 0 ? k : -EPROTO;
        }
        return 0;
}

/* Grows the run to n containers, per_pod to a pod, as kubelet would: pod, then its containers. */
static int populate(bench *b, size_t n, size_t per_pod)
{
        while (b->n_containers < n) {
                pod *last = b->n_pods ? &b->pods[b->n_pods - 1] : NULL;
                int r;

                if (!last || last->n_containers >= per_pod) {
                        r = add_pod(b);
                        if (r < 0)
                                return r;
                        last = &b->pods[b->n_pods - 1];
                }
                r = add_container(b, last);
                if (r < 0)
                        return r;
        }
        return 0;
}

static const char *label(const Runtime__V1__Container *c, const char *key)
{
        for (size_t i = 0; i < c->n_labels; i++)
                if (streq(c->labels[i]->key, key))
                        return c->labels[i]->value;
        return NULL;
}

/* Counts this run's containers in one ListContainers: all of them, and those in state. */
static int count_containers(bench *b, Runtime__V1__ContainerState state, size_t *ret_all,
                            size_t *ret_in_state)
{
        _cleanup_(rkb_request_freep) rkb_request *req =
            rkb_cri_by_id(&b->cri, RKB_LIST_CONTAINERS, NULL, false);
        rkb_reply r;
        size_t all = 0, in = 0;
        int k;

        k = call(b, RKB_LIST_CONTAINERS, req, true, NULL, &r);
        if (k != GRPC_STATUS_OK) {
                if (k >= 0)
                        rkb_reply_release(&r);
                return k < 0 ? k : -EPROTO;
        }
        const Runtime__V1__ListContainersResponse *l = (const void *)r.resp;
        for (size_t i = 0; i < l->n_containers; i++) {
                if (!streq_ptr(label(l->containers[i], RKB_LABEL_RUN), b->cri.run_id))
                        continue;
                all++;
                if (l->containers[i]->state == state)
                        in++;
        }
        rkb_reply_release(&r);
        *ret_all = all;
        *ret_in_state = in;
        return 0;
}

/* Polls ListContainers until every container of the run is RUNNING (CREATED when they are not
 * started). Returns the time it took, or -ETIMEDOUT. */
static int64_t wait_settled(bench *b, uint64_t timeout_usec, unsigned interval_ms)
{
        Runtime__V1__ContainerState want = b->start_containers
                                               ? RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING
                                               : RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED;
        uint64_t t0 = rkb_now_ns();
        size_t all = 0, in = 0;

        for (;;) {
                int r = count_containers(b, want, &all, &in);
                uint64_t now = rkb_now_ns();
                if (r == 0 && all == b->n_containers && in == b->n_containers)
                        return (int64_t)(now - t0);
                if (now - t0 > timeout_usec * 1000) {
                        fprintf(stderr,
                                "rkl-bench: %zu of %zu containers in state %d after %.0f s\n", in,
                                b->n_containers, (int)want, ms(now - t0) / 1000);
                        return -ETIMEDOUT;
                }
                sleep_ms(interval_ms);
        }
}

static void note_settled(bench *b, const char *phase, int64_t t)
{
        if (t < 0)
                fprintf(stderr, "rkl-bench: %s: measuring anyway, with containers not all %s\n",
                        phase, b->start_containers ? "running" : "created");
        else
                fprintf(stderr, "rkl-bench: %s: %zu containers %s %.1f s after the last call\n",
                        phase, b->n_containers, b->start_containers ? "running" : "created",
                        ms((uint64_t)t) / 1000);
        if (b->n_settled < ELEMENTSOF(b->settled)) {
                snprintf(b->settled[b->n_settled].phase, sizeof(b->settled[0].phase), "%s", phase);
                b->settled[b->n_settled].containers = b->n_containers;
                b->settled[b->n_settled++].seconds = t < 0 ? -1 : ms((uint64_t)t) / 1000;
        }
}

static void teardown(bench *b)
{
        phase_begin(b, "%s", "teardown");
        for (size_t i = 0; i < b->n_pods; i++) {
                pod *p = &b->pods[i];
                for (size_t j = 0; j < p->n_containers; j++) {
                        (void)mutate(
                            b, RKB_STOP_CONTAINER,
                            rkb_cri_by_id(&b->cri, RKB_STOP_CONTAINER, p->containers[j], false),
                            NULL);
                        (void)mutate(
                            b, RKB_REMOVE_CONTAINER,
                            rkb_cri_by_id(&b->cri, RKB_REMOVE_CONTAINER, p->containers[j], false),
                            NULL);
                }
                (void)mutate(b, RKB_STOP_POD, rkb_cri_by_id(&b->cri, RKB_STOP_POD, p->id, false),
                             NULL);
                (void)mutate(b, RKB_REMOVE_POD,
                             rkb_cri_by_id(&b->cri, RKB_REMOVE_POD, p->id, false), NULL);
        }
        phase_end(b);
        b->n_containers = 0;
        for (size_t i = 0; i < b->n_pods; i++) {
                for (size_t j = 0; j < b->pods[i].n_containers; j++)
                        free(b->pods[i].containers[j]);
                free(b->pods[i].containers);
                free(b->pods[i].id);
                free(b->pods[i].name);
                free(b->pods[i].uid);
        }
        b->pods = mfree(b->pods);
        b->n_pods = 0;
}

/* Times iterations calls spread over reqs[] round-robin; a row in the current phase. */
static void measure(bench *b, rkb_rpc rpc, rkb_request **reqs, size_t n_reqs, unsigned iterations)
{
        rkb_samples s = {0};

        for (unsigned i = 0; i < iterations && n_reqs > 0; i++)
                if (call(b, rpc, reqs[i % n_reqs], false, &s, NULL) != GRPC_STATUS_OK && s.n == 0 &&
                    i >= 3)
                        break; /* it fails every time: UNIMPLEMENTED, say */
        add_lat_row(b, rpc, b->phase, &s);
        rkb_samples_release(&s);
}

static void measure_one(bench *b, rkb_rpc rpc, rkb_request *req, unsigned iterations)
{
        measure(b, rpc, &req, 1, iterations);
        rkb_request_free(req);
}

/* Reads at the current population: Version first, as this phase's reference. */
static void measure_reads(bench *b, const char *phase)
{
        size_t n_containers = 0;
        unsigned list_iter = b->iterations;
        rkb_request **pod_reqs, **container_reqs, **podlist_reqs;

        phase_begin(b, "%s", phase);
        if (b->n_containers >= 500)
                list_iter = b->iterations / 5 > 20 ? b->iterations / 5 : 20;
        pod_reqs = rkl_xnew0(rkb_request *, b->n_pods + 1);
        podlist_reqs = rkl_xnew0(rkb_request *, b->n_pods + 1);
        container_reqs = rkl_xnew0(rkb_request *, b->n_containers + 1);
        for (size_t i = 0; i < b->n_pods; i++) {
                pod_reqs[i] = rkb_cri_by_id(&b->cri, RKB_POD_STATUS, b->pods[i].id, false);
                podlist_reqs[i] =
                    rkb_cri_by_id(&b->cri, RKB_LIST_CONTAINERS_POD, b->pods[i].id, false);
                for (size_t j = 0; j < b->pods[i].n_containers; j++)
                        container_reqs[n_containers++] = rkb_cri_by_id(
                            &b->cri, RKB_CONTAINER_STATUS, b->pods[i].containers[j], false);
        }
        measure_one(b, RKB_VERSION, rkb_cri_version(), b->iterations);
        measure(b, RKB_POD_STATUS, pod_reqs, b->n_pods, b->iterations);
        measure(b, RKB_CONTAINER_STATUS, container_reqs, n_containers, b->iterations);
        measure_one(b, RKB_LIST_PODS, rkb_cri_by_id(&b->cri, RKB_LIST_PODS, NULL, false),
                    list_iter);
        measure_one(b, RKB_LIST_CONTAINERS,
                    rkb_cri_by_id(&b->cri, RKB_LIST_CONTAINERS, NULL, false), list_iter);
        measure(b, RKB_LIST_CONTAINERS_POD, podlist_reqs, b->n_pods, b->iterations);
        for (size_t i = 0; i < b->n_pods; i++) {
                rkb_request_free(pod_reqs[i]);
                rkb_request_free(podlist_reqs[i]);
        }
        for (size_t i = 0; i < n_containers; i++)
                rkb_request_free(container_reqs[i]);
        free(pod_reqs);
        free(podlist_reqs);
        free(container_reqs);
        record_rss(b, phase);
}

/* Scenarios. */

/* Reads on what the endpoint already has (a live node, say): nothing is created or removed. */
static int scenario_reads(bench *b)
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
        if (call(b, RKB_LIST_PODS, lp, true, NULL, &pods) != GRPC_STATUS_OK) {
                rkb_reply_release(&pods);
                return -EPROTO;
        }
        if (call(b, RKB_LIST_CONTAINERS, lc, true, NULL, &containers) != GRPC_STATUS_OK) {
                rkb_reply_release(&pods);
                rkb_reply_release(&containers);
                return -EPROTO;
        }
        const Runtime__V1__ListPodSandboxResponse *pl = (const void *)pods.resp;
        const Runtime__V1__ListContainersResponse *cl = (const void *)containers.resp;
        b->pods = rkl_xnew0(pod, pl->n_items + 1);
        for (size_t i = 0; i < pl->n_items; i++) {
                pod *p = &b->pods[b->n_pods++];
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
        measure_reads(b, "existing");
        /* Not ours: leave them. */
        arg_keep = true;
        return r;
}

static int scenario_latency(bench *b)
{
        _cleanup_free_ char *scales = rkl_xstrdup(arg_scales);
        char *save = NULL;

        phase_begin(b, "%s", "idle");
        measure_one(b, RKB_VERSION, rkb_cri_version(), b->iterations);
        measure_one(b, RKB_STATUS, rkb_cri_status(), b->iterations);
        record_rss(b, "idle");

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
                phase_begin(b, "populate-%s", tok);
                r = populate(b, n, b->per_pod);
                phase_end(b);
                if (r < 0) {
                        fprintf(stderr, "rkl-bench: cannot populate %s containers: %s\n", tok,
                                strerror(-r));
                        return r;
                }
                /* Reads are served from the daemon's caches whether or not rkt has caught up:
                 * measure them anyway, and say so. */
                t = wait_settled(b, b->settle_usec, 100);
                note_settled(b, tok, t);
                measure_reads(b, tok);
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
                ret->memory = rkl_xstrdup(ret->cpu);
                ret->pids = rkl_xstrdup(ret->cpu);
        } else {
                ret->cpu = rkl_xasprintf("/sys/fs/cgroup/cpuacct/%s", app);
                ret->memory = rkl_xasprintf("/sys/fs/cgroup/memory/%s", app);
        }
        return 0;
}

/* The refresh's cost, measured in this process on n real cgroups made for it (root only):
 * the collector's own work (stats/stats.h) on what a node's kernel serves. The cgroups are
 * empty: the kernel's files cost about the same with processes in them. */
static void stats_refresh_cost(size_t n)
{
        int root = open("/sys/fs/cgroup", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        rkl_stats_cgroup_mode mode =
            root >= 0 ? rkl_stats_cgroup_mode_detect(root) : RKL_STATS_CGROUP_V2;
        static const char *const v1[] = {"memory", "cpuacct"};
        char base[64];
        if (root >= 0)
                close(root);
        snprintf(base, sizeof(base), "rkl-bench-%d", (int)getpid());
        for (size_t i = 0; i < n; i++)
                for (size_t c = 0; c < (mode == RKL_STATS_CGROUP_V1 ? 2 : 1); c++) {
                        _cleanup_free_ char *d =
                            mode == RKL_STATS_CGROUP_V1
                                ? rkl_xasprintf("/sys/fs/cgroup/%s/%s/c%zu", v1[c], base, i)
                                : rkl_xasprintf("/sys/fs/cgroup/%s/c%zu", base, i);
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
        double per =
            ((double)(z.tv_sec - a.tv_sec) * 1e9 + (double)(z.tv_nsec - a.tv_nsec)) / ROUNDS;
        if (n > 0)
                fprintf(stderr,
                        "rkl-bench: stats refresh of %zu containers (cgroup %s): %.0f us CPU, "
                        "%.1f us per container; at a 10 s interval %.4f%% of a core "
                        "(1,000 containers: %.3f%%)\n",
                        n, rkl_stats_cgroup_mode_to_string(mode), per / 1e3, per / 1e3 / (double)n,
                        per / 1e10 * 100, per / (double)n * 1000 / 1e10 * 100);
        rkl_stats_targets_free(t, n);
        for (size_t i = 0; i < n; i++)
                for (size_t c = 0; c < (mode == RKL_STATS_CGROUP_V1 ? 2 : 1); c++) {
                        _cleanup_free_ char *d =
                            mode == RKL_STATS_CGROUP_V1
                                ? rkl_xasprintf("/sys/fs/cgroup/%s/%s/c%zu", v1[c], base, i)
                                : rkl_xasprintf("/sys/fs/cgroup/%s/c%zu", base, i);
                        (void)rmdir(d);
                }
        for (size_t c = 0; c < 2; c++) {
                _cleanup_free_ char *d = mode == RKL_STATS_CGROUP_V1
                                             ? rkl_xasprintf("/sys/fs/cgroup/%s/%s", v1[c], base)
                                             : rkl_xasprintf("/sys/fs/cgroup/%s", base);
                (void)rmdir(d);
        }
}

/* ListContainerStats and ListPodSandboxStats at each scale, served from the daemon's stats
 * cache; then the cost of one refresh (stats_refresh_cost). */
static int scenario_stats(bench *b)
{
        _cleanup_free_ char *scales = rkl_xstrdup(arg_scales);
        char *save = NULL;
        size_t most = 0;

        for (char *tok = strtok_r(scales, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                uint64_t n;
                if (rkl_safe_atou64(tok, &n) < 0 || n == 0)
                        return -EINVAL;
                if (n < b->n_containers)
                        continue;
                phase_begin(b, "stats-populate-%s", tok);
                int r = populate(b, n, b->per_pod);
                phase_end(b);
                if (r < 0)
                        return r;
                note_settled(b, tok, wait_settled(b, b->settle_usec, 100));
                phase_begin(b, "stats-%s", tok);
                measure_one(b, RKB_LIST_CONTAINER_STATS,
                            rkb_cri_by_id(&b->cri, RKB_LIST_CONTAINER_STATS, NULL, false),
                            b->iterations);
                measure_one(b, RKB_LIST_POD_STATS,
                            rkb_cri_by_id(&b->cri, RKB_LIST_POD_STATS, NULL, false), b->iterations);
                most = n;
        }
        stats_refresh_cost(most ? most : 100);
        return 0;
}

static int scenario_throughput(bench *b)
{
        _cleanup_free_ char *inflight = rkl_xstrdup(arg_inflight);
        const rkb_rpc rpcs[] = {RKB_VERSION, RKB_STATUS, RKB_CONTAINER_STATUS, RKB_LIST_CONTAINERS};
        char *save = NULL;
        int r;

        if (b->n_containers < arg_thr_containers) {
                phase_begin(b, "%s", "populate-throughput");
                r = populate(b, arg_thr_containers, b->per_pod);
                phase_end(b);
                if (r < 0)
                        fprintf(stderr, "rkl-bench: throughput without containers: %s\n",
                                strerror(-r));
                else
                        note_settled(b, "throughput", wait_settled(b, b->settle_usec, 100));
        }
        for (char *tok = strtok_r(inflight, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                uint64_t k;

                if (rkl_safe_atou64(tok, &k) < 0 || k == 0 || k > 1024) {
                        fprintf(stderr, "rkl-bench: bad in-flight count '%s'\n", tok);
                        return -EINVAL;
                }
                for (size_t i = 0; i < ELEMENTSOF(rpcs) && b->n_thr < ELEMENTSOF(b->thr); i++) {
                        _cleanup_(rkb_request_freep) rkb_request *req = NULL;
                        thr_row *row;
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
                                                (uint64_t)(arg_duration * 1e6), &s, &row->res);
                        rkb_samples_summarize(&s, &row->s);
                        rkb_samples_release(&s);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* ExecSync of a short command (kubelet's exec probes) in a running container: one at a time,
 * then with several in flight. */
static char **split_command(const char *s);

static int scenario_exec(bench *b)
{
        _cleanup_strv_free_ char **cmd = split_command(arg_exec_command);
        _cleanup_(rkb_request_freep) rkb_request *req = NULL;
        rkb_reply r;
        int k;

        if (b->n_containers == 0 || !b->start_containers) {
                phase_begin(b, "%s", "populate-exec");
                k = populate(b, 1, b->per_pod);
                phase_end(b);
                if (k < 0 || !b->start_containers) {
                        fprintf(stderr, "rkl-bench: exec needs a running container\n");
                        return k < 0 ? k : -EINVAL;
                }
                note_settled(b, "exec", wait_settled(b, b->settle_usec, 20));
        }
        req = rkb_cri_exec_sync(b->pods[0].containers[0], cmd, 10);
        /* The first call says whether the command works there at all. */
        k = call(b, RKB_EXEC_SYNC, req, true, NULL, &r);
        if (k != GRPC_STATUS_OK)
                return k < 0 ? k : -EPROTO;
        const Runtime__V1__ExecSyncResponse *resp = (const void *)r.resp;
        if (resp->exit_code != 0)
                fprintf(stderr, "rkl-bench: exec of '%s' exits %d: %.*s\n", arg_exec_command,
                        resp->exit_code, (int)resp->stderr.len, (const char *)resp->stderr.data);
        rkb_reply_release(&r);

        phase_begin(b, "%s", "exec");
        measure_one(b, RKB_VERSION, rkb_cri_version(), b->iterations);
        measure(b, RKB_EXEC_SYNC, &req, 1, arg_exec_iterations);
        if (arg_exec_inflight > 1 && b->n_thr < ELEMENTSOF(b->thr)) {
                thr_row *row = &b->thr[b->n_thr++];
                rkb_samples s = {0};
                row->rpc = RKB_EXEC_SYNC;
                row->inflight = arg_exec_inflight;
                row->containers = b->n_containers;
                k = rkb_client_pipeline(b->cli, req, arg_exec_inflight,
                                        (uint64_t)(arg_duration * 1e6), &s, &row->res);
                rkb_samples_summarize(&s, &row->s);
                rkb_samples_release(&s);
                if (k < 0)
                        return k;
        }
        record_rss(b, "exec");
        return 0;
}

static int scenario_converge(bench *b)
{
        size_t want = (size_t)arg_pods * arg_containers_per_pod;
        uint64_t t0, t_issued;
        int64_t t;
        int r;

        if (b->n_containers > 0) {
                fprintf(stderr, "rkl-bench: converge needs an empty run; run it on its own\n");
                return -EBUSY;
        }
        b->start_containers = true;
        phase_begin(b, "%s", "converge");
        t0 = rkb_now_ns();
        r = populate(b, want, arg_containers_per_pod);
        t_issued = rkb_now_ns();
        phase_end(b);
        if (r < 0)
                return r;
        /* A tighter poll than the other scenarios: the poll interval bounds the error. */
        t = wait_settled(b, b->settle_usec, 20);
        b->conv.done = true;
        b->conv.timed_out = t < 0;
        b->conv.pods = arg_pods;
        b->conv.per_pod = arg_containers_per_pod;
        b->conv.max_actions = arg_max_actions;
        b->conv.ready_s = arg_ready_s;
        b->conv.add_s = arg_add_s;
        b->conv.start_s = arg_start_s;
        b->conv.issued_s = ms(t_issued - t0) / 1000;
        b->conv.converged_s = t < 0 ? 0 : ms(t_issued - t0 + (uint64_t)t) / 1000;
        /* The rkt work itself: every sandbox's readiness and every app's add and start, spread
         * over the daemon's action slots; never less than one pod's own chain. */
        b->conv.work_s = arg_pods * arg_ready_s + (double)want * (arg_add_s + arg_start_s);
        b->conv.critical_s = arg_ready_s + arg_containers_per_pod * (arg_add_s + arg_start_s);
        b->conv.model_s = b->conv.work_s / arg_max_actions;
        if (b->conv.model_s < b->conv.critical_s)
                b->conv.model_s = b->conv.critical_s;
        /* A tighter bound, for a daemon that waits for readiness without holding a slot (the
         * sandbox gets ready on its own): only the command time until the uuid file and the
         * app commands queue for the K slots. */
        b->conv.uuid_s = arg_uuid_s;
        b->conv.overlap_model_s =
            (arg_pods * arg_uuid_s + (double)want * (arg_add_s + arg_start_s)) / arg_max_actions;
        if (b->conv.overlap_model_s < b->conv.critical_s + arg_uuid_s)
                b->conv.overlap_model_s = b->conv.critical_s + arg_uuid_s;
        record_rss(b, "converge");
        return t < 0 ? (int)t : 0;
}

/* N pods started at once as kubelet's pod workers do (density.h). */
static int scenario_density(bench *b)
{
        rkb_density_opts o = {
            .cri = &b->cri,
            .pods = arg_pods,
            .containers = arg_containers_per_pod,
            .workers = arg_workers ? arg_workers : arg_pods,
            .call_timeout_usec = (uint64_t)(arg_call_timeout_s * 1e6),
            .read_interval_ms = arg_read_interval_ms,
            .read_iterations = b->iterations,
            .idle_s = arg_idle_s,
            .settle_s = arg_settle,
            .daemon_pid = b->daemon_pid,
            .keep = arg_keep,
            .on_running = arg_on_running,
        };
        return rkb_density_run(b->cli, &o, &b->density);
}

/* Runs the restart command; its last line of output, if a number, is the new daemon's PID. */
static int run_restart_cmd(pid_t *ret_pid)
{
        posix_spawn_file_actions_t fa;
        char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)arg_restart_cmd, NULL};
        char buf[256] = "";
        size_t len = 0;
        int pfd[2], status, r;
        pid_t pid;

        if (pipe2(pfd, O_CLOEXEC) < 0)
                return -errno;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
        r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(pfd[1]);
        if (r != 0) {
                close(pfd[0]);
                return -r;
        }
        for (ssize_t n;
             len < sizeof(buf) - 1 && (n = read(pfd[0], buf + len, sizeof(buf) - 1 - len)) != 0;) {
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        break;
                len += (size_t)n;
        }
        close(pfd[0]);
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "rkl-bench: restart command failed\n");
                return -ECHILD;
        }
        buf[len] = 0;
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
                buf[--len] = 0;
        const char *last = strrchr(buf, '\n');
        uint64_t v;
        if (rkl_safe_atou64(last ? last + 1 : buf, &v) == 0 && v > 0)
                *ret_pid = (pid_t)v;
        return 0;
}

/* rktlet's verbose PodSandboxStatus says the observed phase in info's JSON; other runtimes
 * leave it out, and "" stands for it. */
static void pod_phase(const Runtime__V1__PodSandboxStatusResponse *r, char *buf, size_t size)
{
        buf[0] = 0;
        for (size_t i = 0; i < r->n_info; i++) {
                const char *p = strstr(r->info[i]->value, "\"phase\"");
                const char *q;
                if (!p || !(p = strchr(p + 7, ':')) || !(p = strchr(p, '"')) ||
                    !(q = strchr(p + 1, '"')))
                        continue;
                snprintf(buf, size, "%.*s", (int)(q - p - 1), p + 1);
                return;
        }
}

typedef struct snapshot {
        int *container_state; /* per container of the run, in pod order */
        int *pod_state;
        char (*pod_phase)[32];
} snapshot;

static void snapshot_release(snapshot *s)
{
        free(s->container_state);
        free(s->pod_state);
        free(s->pod_phase);
        memset(s, 0, sizeof(*s));
}

typedef struct id_state {
        const char *id;
        int state;
} id_state;

static int cmp_id_state(const void *a, const void *b)
{
        return strcmp(((const id_state *)a)->id, ((const id_state *)b)->id);
}

/* One ListContainers into container_state[] (-1: missing). Returns how many are present. */
static int list_into(bench *b, int *container_state)
{
        _cleanup_(rkb_request_freep) rkb_request *req =
            rkb_cri_by_id(&b->cri, RKB_LIST_CONTAINERS, NULL, false);
        _cleanup_free_ id_state *v = NULL;
        size_t n = 0, k = 0, present = 0;
        rkb_reply r;

        if (call(b, RKB_LIST_CONTAINERS, req, true, NULL, &r) != GRPC_STATUS_OK) {
                rkb_reply_release(&r);
                return -EPROTO;
        }
        const Runtime__V1__ListContainersResponse *l = (const void *)r.resp;
        v = rkl_xnew0(id_state, l->n_containers + 1);
        for (size_t i = 0; i < l->n_containers; i++)
                v[n++] = (id_state){l->containers[i]->id, l->containers[i]->state};
        qsort(v, n, sizeof(*v), cmp_id_state);
        for (size_t i = 0; i < b->n_pods; i++)
                for (size_t j = 0; j < b->pods[i].n_containers; j++, k++) {
                        id_state key = {b->pods[i].containers[j], 0};
                        const id_state *hit = bsearch(&key, v, n, sizeof(*v), cmp_id_state);
                        container_state[k] = hit ? hit->state : -1;
                        present += !!hit;
                }
        rkb_reply_release(&r);
        return (int)present;
}

/* Every pod's state and phase, from verbose PodSandboxStatus. */
static int pods_into(bench *b, int *pod_state, char (*phase)[32])
{
        for (size_t i = 0; i < b->n_pods; i++) {
                _cleanup_(rkb_request_freep) rkb_request *req =
                    rkb_cri_by_id(&b->cri, RKB_POD_STATUS, b->pods[i].id, true);
                rkb_reply r;

                if (call(b, RKB_POD_STATUS, req, true, NULL, &r) != GRPC_STATUS_OK) {
                        rkb_reply_release(&r);
                        return -EPROTO;
                }
                const Runtime__V1__PodSandboxStatusResponse *s = (const void *)r.resp;
                pod_state[i] = s->status ? (int)s->status->state : -1;
                pod_phase(s, phase[i], sizeof(phase[i]));
                rkb_reply_release(&r);
        }
        return 0;
}

static int take_snapshot(bench *b, snapshot *s)
{
        s->container_state = rkl_xnew0(int, b->n_containers + 1);
        s->pod_state = rkl_xnew0(int, b->n_pods + 1);
        s->pod_phase = rkl_xcalloc(b->n_pods + 1, sizeof(*s->pod_phase));
        if (list_into(b, s->container_state) < 0 || pods_into(b, s->pod_state, s->pod_phase) < 0)
                return -EPROTO;
        return 0;
}

/* The list is true: every container as before the kill, or further along (created before,
 * running now: the daemon may finish what it had not done). */
static bool same_or_ahead(const bench *b, const snapshot *before, const snapshot *now)
{
        for (size_t i = 0; i < b->n_containers; i++)
                if (now->container_state[i] != before->container_state[i] &&
                    !(before->container_state[i] ==
                          RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED &&
                      now->container_state[i] == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING &&
                      b->start_containers))
                        return false;
        return true;
}

static bool all_wanted(const bench *b, const snapshot *now)
{
        int want = b->start_containers ? RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING
                                       : RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED;
        for (size_t i = 0; i < b->n_containers; i++)
                if (now->container_state[i] != want)
                        return false;
        return true;
}

/* Restart: the daemon is SIGKILLed and started again. "Correct" is the ListContainers it gave
 * before the kill (same IDs, same states or further along); "converged" is every container
 * running (created with --no-start) and every pod's state and observed phase as before the
 * kill. Times count from the spawn of the restart command. */
static int scenario_restart(bench *b)
{
        _cleanup_(snapshot_release) snapshot before = {0}, now = {0};
        _cleanup_(rkb_request_freep) rkb_request *version = rkb_cri_version();
        pid_t new_pid = 0;
        uint64_t t0, deadline;
        long hwm;
        int r;

        if (b->daemon_pid <= 0 || !arg_restart_cmd) {
                fprintf(stderr, "rkl-bench: restart needs --daemon-pid and --restart-cmd\n");
                return -EINVAL;
        }
        if (b->n_containers < arg_restart_containers) {
                phase_begin(b, "%s", "populate-restart");
                r = populate(b, arg_restart_containers, b->per_pod);
                phase_end(b);
                if (r < 0)
                        return r;
        }
        note_settled(b, "restart", wait_settled(b, b->settle_usec, 100));
        if (take_snapshot(b, &before) < 0)
                return -EPROTO;
        b->rst.containers = b->n_containers;
        b->rst.running = 0;
        for (size_t i = 0; i < b->n_containers; i++)
                b->rst.running +=
                    before.container_state[i] == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
        (void)read_rss(b->daemon_pid, &b->rst.rss_before_kib, &hwm);

        if (kill(b->daemon_pid, SIGKILL) < 0)
                return -errno;
        /* Dead once it is gone or a zombie: its socket, locks and database are released. */
        for (long rss; read_rss(b->daemon_pid, &rss, &hwm) == 0;)
                sleep_ms(1);
        b->cli = rkb_client_free(b->cli);

        t0 = rkb_now_ns();
        r = run_restart_cmd(&new_pid);
        if (r < 0)
                return r;
        b->daemon_pid = new_pid;
        deadline = t0 + b->settle_usec * 1000;
        b->rst.done = true;
        b->rst.timed_out = true;
        now.container_state = rkl_xnew0(int, b->n_containers + 1);
        now.pod_state = rkl_xnew0(int, b->n_pods + 1);
        now.pod_phase = rkl_xcalloc(b->n_pods + 1, sizeof(*now.pod_phase));
        while (rkb_now_ns() < deadline) {
                rkb_reply rep;
                /* A fresh channel per attempt: a channel that saw the socket refuse backs off
                 * on its own schedule, which would be measured instead of the daemon.
                 * Failures while it starts are expected: not errors of the run. */
                b->cli = rkb_client_free(b->cli);
                r = rkb_client_new(b->endpoint, &b->cli);
                if (r < 0)
                        return r;
                if (rkb_client_call(b->cli, version, NULL, 2000000, &rep) == 0 &&
                    rep.status == GRPC_STATUS_OK) {
                        rkb_reply_release(&rep);
                        b->rst.answer_ms = ms(rkb_now_ns() - t0);
                        break;
                }
                if (getenv("RKL_BENCH_DEBUG"))
                        fprintf(stderr, "rkl-bench: %.1f ms: %s %s\n", ms(rkb_now_ns() - t0),
                                status_name(rep.status), rep.details ? rep.details : "");
                rkb_reply_release(&rep);
                sleep_ms(1);
        }
        while (b->rst.answer_ms > 0 && rkb_now_ns() < deadline) {
                int present = list_into(b, now.container_state);
                uint64_t t = rkb_now_ns();

                if (present == (int)b->n_containers && b->rst.list_complete_ms == 0)
                        b->rst.list_complete_ms = ms(t - t0);
                if (present == (int)b->n_containers && same_or_ahead(b, &before, &now)) {
                        b->rst.list_correct_ms = ms(t - t0);
                        break;
                }
                sleep_ms(1);
        }
        while (b->rst.list_correct_ms > 0 && rkb_now_ns() < deadline) {
                if (list_into(b, now.container_state) == (int)b->n_containers &&
                    all_wanted(b, &now) && pods_into(b, now.pod_state, now.pod_phase) == 0 &&
                    memcmp(now.pod_state, before.pod_state, b->n_pods * sizeof(int)) == 0 &&
                    memcmp(now.pod_phase, before.pod_phase, b->n_pods * sizeof(*now.pod_phase)) ==
                        0) {
                        b->rst.converged_ms = ms(rkb_now_ns() - t0);
                        b->rst.timed_out = false;
                        break;
                }
                sleep_ms(20);
        }
        (void)read_rss(b->daemon_pid, &b->rst.rss_after_kib, &hwm);
        record_rss(b, "after-restart");
        return b->rst.timed_out ? -ETIMEDOUT : 0;
}

/* Output. */

typedef struct target {
        const char *name;
        double value, limit;
        const char *unit;
        bool known;
} target;

/* The row of rpc at the largest scale (status calls), or with the most calls (mutations). */
static const lat_row *pick_row(const bench *b, rkb_rpc rpc, bool by_calls)
{
        const lat_row *best = NULL;

        for (size_t i = 0; i < b->n_lat; i++) {
                const lat_row *l = &b->lat[i];
                if (l->rpc != rpc || l->ref_p50_us <= 0)
                        continue;
                if (!best || (by_calls ? l->s.n > best->s.n : l->containers >= best->containers))
                        best = l;
        }
        return best;
}

static size_t targets(const bench *b, target *t, size_t max)
{
        size_t n = 0;

        for (rkb_rpc rpc = RKB_POD_STATUS; rpc <= RKB_CONTAINER_STATUS && n < max; rpc++) {
                const lat_row *l = pick_row(b, rpc, false);
                t[n++] = (target){rpc == RKB_POD_STATUS
                                      ? "PodSandboxStatus p50 / Version p50, largest scale"
                                      : "ContainerStatus p50 / Version p50, largest scale",
                                  l ? l->s.p50_us / l->ref_p50_us : 0, 1.5, "x", l != NULL};
        }
        if (n < max) {
                const lat_row *l = pick_row(b, RKB_LIST_CONTAINERS, false);
                t[n++] =
                    (target){"ListContainers p50 at 1,000 containers", l ? l->s.p50_us / 1000 : 0,
                             3.0, "ms", l && l->containers >= 1000};
        }
        for (rkb_rpc rpc = 0; rpc < _RKB_RPC_MAX && n < max; rpc++) {
                const lat_row *l;
                if (!rkb_rpc_is_mutating(rpc) || rpc == RKB_PULL_IMAGE ||
                    !(l = pick_row(b, rpc, true)))
                        continue;
                t[n++] = (target){rkb_rpc_name(rpc), l->s.p50_us / l->ref_p50_us, 2.0, "x", true};
        }
        if (n < max) {
                const lat_row *l = pick_row(b, RKB_EXEC_SYNC, true);
                if (l)
                        t[n++] = (target){"ExecSync p50 (containerd 1.6: 45 ms)",
                                          l->s.p50_us / 1000, 30, "ms", true};
        }
        if (n < max && b->conv.done)
                t[n++] =
                    (target){"converge / rkt work at the configured parallelism",
                             b->conv.converged_s / b->conv.model_s, 1.2, "x", !b->conv.timed_out};
        if (n < max && b->rst.done)
                t[n++] = (target){"first correct ListContainers after restart",
                                  b->rst.list_correct_ms, 100, "ms", b->rst.list_correct_ms > 0};
        if (n < max) {
                long rss = 0;
                bool known = false;
                for (size_t i = 0; i < b->n_rss; i++)
                        if (b->rss[i].containers >= 1000 && b->rss[i].rss_kib > rss) {
                                rss = b->rss[i].rss_kib;
                                known = true;
                        }
                if (b->rst.done && b->rst.containers >= 1000 && b->rst.rss_before_kib > rss) {
                        rss = b->rst.rss_before_kib;
                        known = true;
                }
                if (known)
                        t[n++] = (target){"daemon RSS at 1,000 containers (largest seen)",
                                          (double)rss / 1024, 32, "MiB", true};
        }
        return n;
}

static void print_table(const bench *b)
{
        target t[32];
        size_t n_t;

        if (b->n_lat > 0)
                printf("\n%-22s %-22s %6s %6s %9s %9s %9s %9s %8s\n", "rpc", "phase", "ctrs", "n",
                       "p50_us", "p99_us", "mean_us", "max_us", "xVersion");
        for (size_t i = 0; i < b->n_lat; i++) {
                const lat_row *r = &b->lat[i];
                char ratio[16] = "-";
                if (r->ref_p50_us > 0)
                        snprintf(ratio, sizeof(ratio), "%.2f", r->s.p50_us / r->ref_p50_us);
                printf("%-22s %-22s %6zu %6zu %9.1f %9.1f %9.1f %9.1f %8s\n", rkb_rpc_name(r->rpc),
                       r->phase, r->containers, r->s.n, r->s.p50_us, r->s.p99_us, r->s.mean_us,
                       r->s.max_us, ratio);
        }
        if (b->n_thr > 0) {
                printf("\n%-22s %8s %6s %10s %8s %9s %9s\n", "throughput rpc", "inflight", "ctrs",
                       "calls/s", "errors", "p50_us", "p99_us");
                for (size_t i = 0; i < b->n_thr; i++) {
                        const thr_row *r = &b->thr[i];
                        double secs = (double)r->res.elapsed_ns / 1e9;
                        printf("%-22s %8u %6zu %10.0f %8" PRIu64 " %9.1f %9.1f\n",
                               rkb_rpc_name(r->rpc), r->inflight, r->containers,
                               secs > 0 ? (double)(r->res.calls - r->res.errors) / secs : 0,
                               r->res.errors, r->s.p50_us, r->s.p99_us);
                }
        }
        if (b->n_rss > 0) {
                printf("\n%-22s %6s %10s %10s\n", "daemon memory", "ctrs", "VmRSS_KiB",
                       "VmHWM_KiB");
                for (size_t i = 0; i < b->n_rss; i++)
                        printf("%-22s %6zu %10ld %10ld\n", b->rss[i].phase, b->rss[i].containers,
                               b->rss[i].rss_kib, b->rss[i].hwm_kib);
        }
        if (b->conv.done)
                printf(
                    "\nconverge: %u pods x %u containers; calls issued in %.2f s; all running at "
                    "%.2f s%s; rkt work %.2f s over %u actions = %.2f s (one pod's chain %.2f s); "
                    "ratio %.2f; with readiness off the slots the bound is %.2f s, ratio %.2f\n",
                    b->conv.pods, b->conv.per_pod, b->conv.issued_s, b->conv.converged_s,
                    b->conv.timed_out ? " (TIMED OUT)" : "", b->conv.work_s, b->conv.max_actions,
                    b->conv.model_s, b->conv.critical_s, b->conv.converged_s / b->conv.model_s,
                    b->conv.overlap_model_s, b->conv.converged_s / b->conv.overlap_model_s);
        if (b->rst.done)
                printf("\nrestart with %zu containers (%zu running): answers at %.1f ms, all "
                       "listed at "
                       "%.1f ms, list as before the kill at %.1f ms, converged at %.1f ms%s; "
                       "RSS %ld -> %ld KiB\n",
                       b->rst.containers, b->rst.running, b->rst.answer_ms, b->rst.list_complete_ms,
                       b->rst.list_correct_ms, b->rst.converged_ms,
                       b->rst.timed_out ? " (TIMED OUT)" : "", b->rst.rss_before_kib,
                       b->rst.rss_after_kib);
        n_t = targets(b, t, ELEMENTSOF(t));
        bool measured = false;
        for (size_t i = 0; i < n_t; i++)
                measured = measured || t[i].known;
        if (measured) {
                printf("\n%-52s %10s %8s %s\n", "target", "value", "limit", "verdict");
                for (size_t i = 0; i < n_t; i++)
                        printf("%-52s %10.2f %8.2f %s %s\n", t[i].name, t[i].value, t[i].limit,
                               t[i].unit,
                               !t[i].known                ? "not measured"
                               : t[i].value <= t[i].limit ? "met"
                                                          : "MISSED");
        }
        if (b->density)
                rkb_density_print(b->density, stdout);
        for (size_t i = 0; i < _RKB_RPC_MAX; i++)
                if (b->err[i].n > 0)
                        printf("\nerrors: %s: %" PRIu64 " calls failed, first %s: %s",
                               rkb_rpc_name(i), b->err[i].n, status_name(b->err[i].status),
                               b->err[i].details);
        printf("\n");
}

static void json_str(FILE *f, const char *s)
{
        fputc('"', f);
        for (; s && *s; s++) {
                unsigned char c = (unsigned char)*s;
                if (c == '"' || c == '\\')
                        fprintf(f, "\\%c", c);
                else if (c < 0x20)
                        fprintf(f, "\\u%04x", c);
                else
                        fputc(c, f);
        }
        fputc('"', f);
}

static void json_summary(FILE *f, const rkb_summary *s)
{
        fprintf(f,
                "\"n\": %zu, \"p50_us\": %.2f, \"p99_us\": %.2f, \"mean_us\": %.2f, "
                "\"min_us\": %.2f, \"max_us\": %.2f",
                s->n, s->p50_us, s->p99_us, s->mean_us, s->min_us, s->max_us);
}

static int write_json(const bench *b, const char *path)
{
        _cleanup_fclose_ FILE *f = fopen(path, "we");
        target t[32];
        size_t n_t = targets(b, t, ELEMENTSOF(t));
        char host[256] = "";

        if (!f)
                return -errno;
        (void)gethostname(host, sizeof(host) - 1);
        fprintf(f, "{\n  \"tool\": \"rkl-bench\",\n  \"endpoint\": ");
        json_str(f, b->endpoint);
        fprintf(f, ",\n  \"scenarios\": ");
        json_str(f, arg_scenarios);
        fprintf(f, ",\n  \"host\": ");
        json_str(f, host);
        fprintf(f,
                ",\n  \"time\": %lld,\n  \"iterations\": %u,\n  \"containers_per_pod\": %zu,\n"
                "  \"containers_started\": %s,\n",
                (long long)time(NULL), b->iterations, b->per_pod,
                b->start_containers ? "true" : "false");
        fprintf(f, "  \"latency\": [");
        for (size_t i = 0; i < b->n_lat; i++) {
                const lat_row *r = &b->lat[i];
                fprintf(f, "%s\n    {\"rpc\": ", i ? "," : "");
                json_str(f, rkb_rpc_name(r->rpc));
                fprintf(f, ", \"phase\": ");
                json_str(f, r->phase);
                fprintf(f, ", \"containers\": %zu, ", r->containers);
                json_summary(f, &r->s);
                fprintf(f, ", \"version_p50_us\": %.2f, \"ratio_to_version_p50\": %.3f}",
                        r->ref_p50_us, r->ref_p50_us > 0 ? r->s.p50_us / r->ref_p50_us : 0);
        }
        fprintf(f, "\n  ],\n  \"throughput\": [");
        for (size_t i = 0; i < b->n_thr; i++) {
                const thr_row *r = &b->thr[i];
                double secs = (double)r->res.elapsed_ns / 1e9;
                fprintf(f, "%s\n    {\"rpc\": ", i ? "," : "");
                json_str(f, rkb_rpc_name(r->rpc));
                fprintf(f,
                        ", \"inflight\": %u, \"containers\": %zu, \"calls\": %" PRIu64
                        ", \"errors\": %" PRIu64 ", \"seconds\": %.3f, \"calls_per_s\": %.1f, ",
                        r->inflight, r->containers, r->res.calls, r->res.errors, secs,
                        secs > 0 ? (double)(r->res.calls - r->res.errors) / secs : 0);
                json_summary(f, &r->s);
                fprintf(f, "}");
        }
        fprintf(f, "\n  ],\n  \"rss\": [");
        for (size_t i = 0; i < b->n_rss; i++) {
                fprintf(f, "%s\n    {\"phase\": ", i ? "," : "");
                json_str(f, b->rss[i].phase);
                fprintf(f, ", \"containers\": %zu, \"vmrss_kib\": %ld, \"vmhwm_kib\": %ld}",
                        b->rss[i].containers, b->rss[i].rss_kib, b->rss[i].hwm_kib);
        }
        fprintf(f, "\n  ],\n  \"settled\": [");
        for (size_t i = 0; i < b->n_settled; i++) {
                fprintf(f, "%s\n    {\"phase\": ", i ? "," : "");
                json_str(f, b->settled[i].phase);
                fprintf(f, ", \"containers\": %zu, \"settled\": %s, \"seconds\": %.3f}",
                        b->settled[i].containers, b->settled[i].seconds >= 0 ? "true" : "false",
                        b->settled[i].seconds);
        }
        fprintf(f, "\n  ],\n  \"converge\": ");
        if (b->conv.done)
                fprintf(f,
                        "{\"pods\": %u, \"containers_per_pod\": %u, \"max_actions\": %u, "
                        "\"ready_s\": %.3f, \"app_add_s\": %.3f, \"app_start_s\": %.3f, "
                        "\"issued_s\": %.3f, \"converged_s\": %.3f, \"timed_out\": %s, "
                        "\"rkt_work_s\": %.3f, \"pod_chain_s\": %.3f, \"model_s\": %.3f, "
                        "\"ratio\": %.3f, \"uuid_s\": %.3f, \"overlap_model_s\": %.3f, "
                        "\"overlap_ratio\": %.3f}",
                        b->conv.pods, b->conv.per_pod, b->conv.max_actions, b->conv.ready_s,
                        b->conv.add_s, b->conv.start_s, b->conv.issued_s, b->conv.converged_s,
                        b->conv.timed_out ? "true" : "false", b->conv.work_s, b->conv.critical_s,
                        b->conv.model_s, b->conv.converged_s / b->conv.model_s, b->conv.uuid_s,
                        b->conv.overlap_model_s, b->conv.converged_s / b->conv.overlap_model_s);
        else
                fprintf(f, "null");
        fprintf(f, ",\n  \"density\": ");
        if (b->density)
                rkb_density_json(b->density, f);
        else
                fprintf(f, "null");
        fprintf(f, ",\n  \"restart\": ");
        if (b->rst.done)
                fprintf(f,
                        "{\"containers\": %zu, \"containers_running\": %zu, \"answer_ms\": %.2f, "
                        "\"list_complete_ms\": %.2f, \"list_correct_ms\": %.2f, "
                        "\"converged_ms\": %.2f, \"timed_out\": %s, \"rss_before_kib\": %ld, "
                        "\"rss_after_kib\": %ld}",
                        b->rst.containers, b->rst.running, b->rst.answer_ms,
                        b->rst.list_complete_ms, b->rst.list_correct_ms, b->rst.converged_ms,
                        b->rst.timed_out ? "true" : "false", b->rst.rss_before_kib,
                        b->rst.rss_after_kib);
        else
                fprintf(f, "null");
        fprintf(f, ",\n  \"targets\": [");
        for (size_t i = 0; i < n_t; i++) {
                fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
                json_str(f, t[i].name);
                fprintf(f, ", \"value\": %.3f, \"limit\": %.3f, \"unit\": ", t[i].value,
                        t[i].limit);
                json_str(f, t[i].unit);
                fprintf(f, ", \"verdict\": ");
                json_str(f, !t[i].known                ? "not measured"
                            : t[i].value <= t[i].limit ? "met"
                                                       : "missed");
                fprintf(f, "}");
        }
        fprintf(f, "\n  ],\n  \"errors\": [");
        bool first = true;
        for (size_t i = 0; i < _RKB_RPC_MAX; i++) {
                if (b->err[i].n == 0)
                        continue;
                fprintf(f, "%s\n    {\"rpc\": ", first ? "" : ",");
                json_str(f, rkb_rpc_name(i));
                fprintf(f, ", \"failed_calls\": %" PRIu64 ", \"first_status\": ", b->err[i].n);
                json_str(f, status_name(b->err[i].status));
                fprintf(f, ", \"first_details\": ");
                json_str(f, b->err[i].details);
                fprintf(f, "}");
                first = false;
        }
        fprintf(f, "\n  ]\n}\n");
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

static void help(void)
{
        printf("Usage: rkl-bench --endpoint unix:///path.sock [OPTIONS]\n\n"
               "CRI latency, throughput, convergence and restart figures, for any CRI endpoint.\n\n"
               "  --scenario LIST          latency,throughput,converge,exec,restart,stats\n"
               "                           (default latency);\n"
               "                           run in this order on one growing set of pods; or\n"
               "                           reads: the read calls on what the endpoint has; or\n"
               "                           density: --pods P x --containers C started at once,\n"
               "                           one worker a pod, as kubelet does (run the daemon\n"
               "                           with --wait)\n"
               "  --json FILE              write every number as JSON\n"
               "  --daemon-pid PID         read the daemon's VmRSS; restart kills it\n"
               "  --iterations N           calls per RPC and phase (default 1000)\n"
               "  --scales LIST            latency: container counts (default 10,100,1000)\n"
               "  --per-pod N              containers per pod (default 10: 1,000 containers in\n"
               "                           100 pods, under kubelet's 110-pod limit and rkt's /24)\n"
               "  --no-start               create containers without starting them\n"
               "  --inflight LIST          throughput: calls in flight (default 1,8,32)\n"
               "  --duration SEC           throughput: seconds per measurement (default 2)\n"
               "  --throughput-containers N  throughput: at least N containers (default 100)\n"
               "  --exec-command CMD       exec: what ExecSync runs, split on spaces (default %s)\n"
               "  --exec-iterations N      exec: calls one at a time (default %u)\n"
               "  --exec-inflight N        exec: then N in flight for --duration (default %u)\n"
               "  --pods P --containers C  converge: P pods x C containers (default 50 x 2)\n"
               "  --max-actions N          converge model: the daemon's --max-actions (default 4)\n"
               "  --ready-s S --add-s S --start-s S\n"
               "                           converge model: rkt's latencies (1.33, 0.12, 0.12)\n"
               "  --uuid-s S               converge: app sandbox until its uuid file (0.08)\n"
               "  --workers W              density: at most W pods starting at once (default:\n"
               "                           one per pod; 1: one after the other)\n"
               "  --read-interval MS       density: a reader lists and asks one pod's status\n"
               "                           every MS while the pods start (default 100; 0: no)\n"
               "  --idle-s S               density: then a relist every second for S seconds,\n"
               "                           the daemon's CPU measured (needs --daemon-pid)\n"
               "  --call-timeout S         density: each call's deadline (default 600)\n"
               "  --on-running CMD         density: sh -c CMD once every pod runs, before the\n"
               "                           teardown (bench/density measures the pods' cost)\n"
               "  --restart-containers N   restart: containers before the kill (default 1000)\n"
               "  --restart-cmd CMD        restart: sh command that starts the daemon again and\n"
               "                           prints its PID\n"
               "  --settle SEC             wait at most this for containers to run (default 300)\n"
               "  --image REF              container image (default %s)\n"
               "  --pull                   PullImage the image first\n"
               "  --command CMD            container command, split on spaces (default %s)\n"
               "  --log-dir DIR            parent of the pods' log directories (default %s)\n"
               "  --keep                   leave the pods and containers behind\n",
               arg_exec_command, arg_exec_iterations, arg_exec_inflight, arg_image, arg_command,
               arg_log_dir);
}

static int parse_u(const char *s, unsigned *ret)
{
        uint64_t v;
        if (rkl_safe_atou64(s, &v) < 0 || v > UINT32_MAX)
                return -EINVAL;
        *ret = (unsigned)v;
        return 0;
}

static int parse_d(const char *s, double *ret)
{
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || *end || v < 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* The options, each with where its value goes: text as given, a count, a number of seconds
 * (or any non-negative number), a flag that sets true, or a PID. */
typedef struct bench_option {
        const char *name;
        const char **text;
        unsigned *count;
        double *seconds;
        bool *flag;
        long *pid;
} bench_option;

static const bench_option bench_options[] = {
    {"endpoint", .text = &arg_endpoint},
    {"scenario", .text = &arg_scenarios},
    {"json", .text = &arg_json},
    {"daemon-pid", .pid = &arg_daemon_pid},
    {"iterations", .count = &arg_iterations},
    {"scales", .text = &arg_scales},
    {"per-pod", .count = &arg_per_pod},
    {"no-start", .flag = &arg_no_start},
    {"inflight", .text = &arg_inflight},
    {"duration", .seconds = &arg_duration},
    {"throughput-containers", .count = &arg_thr_containers},
    {"pods", .count = &arg_pods},
    {"containers", .count = &arg_containers_per_pod},
    {"max-actions", .count = &arg_max_actions},
    {"ready-s", .seconds = &arg_ready_s},
    {"add-s", .seconds = &arg_add_s},
    {"start-s", .seconds = &arg_start_s},
    {"uuid-s", .seconds = &arg_uuid_s},
    {"restart-containers", .count = &arg_restart_containers},
    {"restart-cmd", .text = &arg_restart_cmd},
    {"settle", .seconds = &arg_settle},
    {"image", .text = &arg_image},
    {"pull", .flag = &arg_pull},
    {"command", .text = &arg_command},
    {"log-dir", .text = &arg_log_dir},
    {"keep", .flag = &arg_keep},
    {"exec-command", .text = &arg_exec_command},
    {"exec-iterations", .count = &arg_exec_iterations},
    {"exec-inflight", .count = &arg_exec_inflight},
    {"workers", .count = &arg_workers},
    {"read-interval", .count = &arg_read_interval_ms},
    {"idle-s", .seconds = &arg_idle_s},
    {"call-timeout", .seconds = &arg_call_timeout_s},
    {"on-running", .text = &arg_on_running},
};

static int bench_option_apply(const bench_option *o, const char *value)
{
        unsigned u;
        int r = 0;

        if (o->text)
                *o->text = value;
        else if (o->count)
                r = parse_u(value, o->count);
        else if (o->seconds)
                r = parse_d(value, o->seconds);
        else if (o->flag)
                *o->flag = true;
        else if ((r = parse_u(value, &u)) >= 0)
                *o->pid = u;
        return r;
}

static int parse_args(int argc, char **argv)
{
        enum { FIRST = 0x100 }; /* getopt's values for bench_options[i]: FIRST + i */
        struct option opts[ELEMENTSOF(bench_options) + 2];
        int c;

        for (size_t i = 0; i < ELEMENTSOF(bench_options); i++)
                opts[i] = (struct option){bench_options[i].name,
                                          bench_options[i].flag ? no_argument : required_argument,
                                          NULL, FIRST + (int)i};
        opts[ELEMENTSOF(bench_options)] = (struct option){"help", no_argument, NULL, 'h'};
        opts[ELEMENTSOF(bench_options) + 1] = (struct option){0};

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                if (c == 'h') {
                        help();
                        exit(EXIT_SUCCESS);
                }
                if (c < FIRST || c >= FIRST + (int)ELEMENTSOF(bench_options))
                        return -EINVAL;
                int r = bench_option_apply(&bench_options[c - FIRST], optarg);
                if (r < 0) {
                        fprintf(stderr, "rkl-bench: bad value '%s'\n", optarg);
                        return r;
                }
        }
        if (!arg_endpoint || optind < argc || arg_per_pod == 0 || arg_max_actions == 0 ||
            arg_containers_per_pod == 0 || arg_iterations == 0) {
                fprintf(stderr,
                        "rkl-bench: --endpoint is required (and counts must be > 0); see --help\n");
                return -EINVAL;
        }
        return 0;
}

static char **split_command(const char *s)
{
        _cleanup_free_ char *copy = rkl_xstrdup(s);
        char **v = rkl_xnew0(char *, strlen(s) / 2 + 2), *save = NULL;
        size_t n = 0;

        for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
                v[n++] = rkl_xstrdup(tok);
        return v;
}

static bool has_scenario(const char *name)
{
        size_t n = strlen(name);
        for (const char *p = arg_scenarios; (p = strstr(p, name)); p += n)
                if ((p == arg_scenarios || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
                        return true;
        return false;
}

int main(int argc, char **argv)
{
        static bench b;
        char run_id[32];
        int r, ret = EXIT_SUCCESS;

        if (parse_args(argc, argv) < 0)
                return 2;
        for (const char *p = arg_scenarios; *p;) {
                static const char *const known[] = {"latency", "throughput", "converge", "exec",
                                                    "restart", "stats",      "reads",    "density"};
                size_t n = strcspn(p, ",");
                bool ok = false;
                for (size_t i = 0; i < ELEMENTSOF(known); i++)
                        ok = ok || (strlen(known[i]) == n && strncmp(p, known[i], n) == 0);
                if (!ok) {
                        fprintf(stderr, "rkl-bench: unknown scenario in '%s'\n", arg_scenarios);
                        return 2;
                }
                p += n + (p[n] == ',');
        }
        /* Tells this run's objects apart from anything else on the endpoint. */
        snprintf(run_id, sizeof(run_id), "%x%04x", (unsigned)time(NULL),
                 (unsigned)getpid() & 0xffff);
        b.endpoint = (char *)arg_endpoint;
        b.daemon_pid = (pid_t)arg_daemon_pid;
        b.iterations = arg_iterations;
        b.per_pod = arg_per_pod;
        b.start_containers = !arg_no_start;
        b.settle_usec = (uint64_t)(arg_settle * 1e6);
        b.cri = (rkb_cri_opts){
            .image = arg_image,
            .log_dir = arg_log_dir,
            .namespace_ = "bench",
            .run_id = run_id,
            .command = split_command(arg_command),
            .stop_timeout = 2,
        };

        grpc_init();
        r = rkb_client_new(arg_endpoint, &b.cli);
        if (r < 0) {
                fprintf(stderr, "rkl-bench: bad endpoint '%s'\n", arg_endpoint);
                return 2;
        }
        if (arg_pull) {
                _cleanup_(rkb_request_freep) rkb_request *req = rkb_cri_pull(&b.cri);
                if (call(&b, RKB_PULL_IMAGE, req, false, NULL, NULL) != GRPC_STATUS_OK)
                        ret = EXIT_FAILURE;
        }
        if (ret == EXIT_SUCCESS && has_scenario("reads") && (r = scenario_reads(&b)) < 0)
                ret = EXIT_FAILURE;
        if (ret == EXIT_SUCCESS && has_scenario("density") && (r = scenario_density(&b)) < 0)
                ret = EXIT_FAILURE;
        if (ret == EXIT_SUCCESS && has_scenario("converge") && (r = scenario_converge(&b)) < 0)
                ret = EXIT_FAILURE;
        if (ret == EXIT_SUCCESS && has_scenario("latency") && (r = scenario_latency(&b)) < 0)
                ret = EXIT_FAILURE;
        if (ret == EXIT_SUCCESS && has_scenario("throughput") && (r = scenario_throughput(&b)) < 0)
                ret = EXIT_FAILURE;
        if (ret == EXIT_SUCCESS && has_scenario("exec") && (r = scenario_exec(&b)) < 0)
                ret = EXIT_FAILURE;
        if (ret == EXIT_SUCCESS && has_scenario("restart") && (r = scenario_restart(&b)) < 0)
                ret = EXIT_FAILURE;
        if (ret == EXIT_SUCCESS && has_scenario("stats") && (r = scenario_stats(&b)) < 0)
                ret = EXIT_FAILURE;
        if (!arg_keep && b.cli && b.n_pods > 0)
                teardown(&b);
        set_refs(&b);
        print_table(&b);
        if (arg_json && (r = write_json(&b, arg_json)) < 0) {
                fprintf(stderr, "rkl-bench: cannot write '%s': %s\n", arg_json, strerror(-r));
                ret = EXIT_FAILURE;
        }
        b.density = rkb_density_free(b.density);
        b.cli = rkb_client_free(b.cli);
        for (size_t i = 0; b.cri.command[i]; i++)
                free(b.cri.command[i]);
        free(b.cri.command);
        for (size_t i = 0; i < _RKB_RPC_MAX; i++)
                free(b.err[i].details);
        grpc_shutdown();
        return ret;
}
