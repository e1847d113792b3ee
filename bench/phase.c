/* rkl-bench's calls, rows and phases, and the run's pods and containers (bench.h). */
#include <inttypes.h>
#include <time.h>

#include "bench.h"
#include "base/alloc.h"
#include "base/strv.h"
#include "base/banned.h"

/* Helpers. */

double rkb_s(uint64_t ns)
{
        return (double)ns / NSEC_PER_SEC;
}

double rkb_ms(uint64_t ns)
{
        return (double)ns / NSEC_PER_MSEC;
}

const char *rkb_status_name(int s)
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

char **rkb_split_command(const char *s)
{
        _cleanup_free_ char *copy = rkl_xstrdup(s);
        char **v = rkl_xnew0(char *, strlen(s) / 2 + 2), *save = NULL;
        size_t n = 0;

        for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
                v[n++] = rkl_xstrdup(tok);
        return v;
}

static void note_error(rkb_bench *b, rkb_rpc rpc, const rkb_reply *r)
{
        rkb_err_row *e = &b->err[rpc];
        if (e->n++ == 0) {
                e->status = r->status;
                e->details = rkl_xstrdup(r->details ? r->details : "");
                fprintf(stderr, "rkl-bench: %s: %s: %s\n", rkb_rpc_name(rpc),
                        rkb_status_name(r->status), e->details);
        }
}

int rkb_call(rkb_bench *b, rkb_rpc rpc, const rkb_request *req, bool want_resp, rkb_samples *lat,
             rkb_reply *ret)
{
        rkb_reply r;
        int k = rkb_client_call(b->cli, req, want_resp ? rkb_rpc_response(rpc) : NULL,
                                RKB_CALL_TIMEOUT_USEC, &r);
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

static rkb_lat_row *add_lat_row(rkb_bench *b, rkb_rpc rpc, const char *phase, rkb_samples *s)
{
        rkb_lat_row *row;

        if (s->n == 0 || b->n_lat >= RKB_MAX_ROWS)
                return NULL;
        row = &b->lat[b->n_lat++];
        row->rpc = rpc;
        snprintf(row->phase, sizeof(row->phase), "%s", phase);
        row->containers = b->n_containers;
        rkb_samples_summarize(s, &row->s);
        return row;
}

static const rkb_lat_row *find_lat(const rkb_bench *b, rkb_rpc rpc, const char *phase)
{
        for (size_t i = 0; i < b->n_lat; i++)
                if (b->lat[i].rpc == rpc && streq(b->lat[i].phase, phase))
                        return &b->lat[i];
        return NULL;
}

void rkb_set_refs(rkb_bench *b)
{
        for (size_t i = 0; i < b->n_lat; i++) {
                const rkb_lat_row *v = find_lat(b, RKB_VERSION, b->lat[i].phase);
                b->lat[i].ref_p50_usec = v ? v->s.p50_usec : 0;
        }
}

int rkb_read_rss(pid_t pid, long *ret_rss, long *ret_hwm)
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

void rkb_record_rss(rkb_bench *b, const char *phase)
{
        rkb_rss_row *row;
        long rss, hwm;

        if (b->daemon_pid <= 0 || b->n_rss >= ELEMENTSOF(b->rss) ||
            rkb_read_rss(b->daemon_pid, &rss, &hwm) < 0)
                return;
        row = &b->rss[b->n_rss++];
        snprintf(row->phase, sizeof(row->phase), "%s", phase);
        row->containers = b->n_containers;
        row->rss_kib = rss;
        row->hwm_kib = hwm;
}

/* Phases. */

void rkb_phase_begin(rkb_bench *b, const char *fmt, const char *arg)
{
        snprintf(b->phase, sizeof(b->phase), fmt, arg);
        for (size_t i = 0; i < _RKB_RPC_MAX; i++)
                rkb_samples_release(&b->mut[i]);
}

void rkb_phase_end(rkb_bench *b)
{
        for (size_t i = 0; i < _RKB_RPC_MAX; i++) {
                add_lat_row(b, (rkb_rpc)i, b->phase, &b->mut[i]);
                rkb_samples_release(&b->mut[i]);
        }
}

static int mutate(rkb_bench *b, rkb_rpc rpc, rkb_request *req, rkb_reply *ret)
{
        _cleanup_(rkb_request_freep) rkb_request *version = rkb_cri_version();
        int r = rkb_call(b, rpc, req, ret != NULL, &b->mut[rpc], ret);

        rkb_request_free(req);
        (void)rkb_call(b, RKB_VERSION, version, false, &b->mut[RKB_VERSION], NULL);
        return r;
}

/* Pods and containers. */

static int add_pod(rkb_bench *b)
{
        rkb_reply r;
        rkb_pod *p;
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

static int add_container(rkb_bench *b, rkb_pod *p)
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

int rkb_populate(rkb_bench *b, size_t n, size_t per_pod)
{
        while (b->n_containers < n) {
                rkb_pod *last = b->n_pods ? &b->pods[b->n_pods - 1] : NULL;
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
static int count_containers(rkb_bench *b, Runtime__V1__ContainerState state, size_t *ret_all,
                            size_t *ret_in_state)
{
        _cleanup_(rkb_request_freep) rkb_request *req =
            rkb_cri_by_id(&b->cri, RKB_LIST_CONTAINERS, NULL, false);
        rkb_reply r;
        size_t all = 0, in = 0;
        int k;

        k = rkb_call(b, RKB_LIST_CONTAINERS, req, true, NULL, &r);
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

int64_t rkb_wait_settled(rkb_bench *b, uint64_t timeout_usec, unsigned interval_ms)
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
                if (now - t0 > timeout_usec * NSEC_PER_USEC) {
                        fprintf(stderr,
                                "rkl-bench: %zu of %zu containers in state %d after %.0f s\n", in,
                                b->n_containers, (int)want, rkb_s(now - t0));
                        return -ETIMEDOUT;
                }
                rkb_sleep_ms(interval_ms);
        }
}

void rkb_note_settled(rkb_bench *b, const char *phase, int64_t t)
{
        if (t < 0)
                fprintf(stderr, "rkl-bench: %s: measuring anyway, with containers not all %s\n",
                        phase, b->start_containers ? "running" : "created");
        else
                fprintf(stderr, "rkl-bench: %s: %zu containers %s %.1f s after the last call\n",
                        phase, b->n_containers, b->start_containers ? "running" : "created",
                        rkb_s((uint64_t)t));
        if (b->n_settled < ELEMENTSOF(b->settled)) {
                snprintf(b->settled[b->n_settled].phase, sizeof(b->settled[0].phase), "%s", phase);
                b->settled[b->n_settled].containers = b->n_containers;
                b->settled[b->n_settled++].seconds = t < 0 ? -1 : rkb_s((uint64_t)t);
        }
}

/* Stops and removes everything of the run, timed as a phase. */
void rkb_teardown(rkb_bench *b)
{
        rkb_phase_begin(b, "%s", "teardown");
        for (size_t i = 0; i < b->n_pods; i++) {
                rkb_pod *p = &b->pods[i];
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
        rkb_phase_end(b);
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

void rkb_measure(rkb_bench *b, rkb_rpc rpc, rkb_request **reqs, size_t n_reqs, unsigned iterations)
{
        rkb_samples s = {0};

        for (unsigned i = 0; i < iterations && n_reqs > 0; i++)
                if (rkb_call(b, rpc, reqs[i % n_reqs], false, &s, NULL) != GRPC_STATUS_OK &&
                    s.n == 0 && i >= 3)
                        break; /* it fails every time: UNIMPLEMENTED, say */
        add_lat_row(b, rpc, b->phase, &s);
        rkb_samples_release(&s);
}

void rkb_measure_one(rkb_bench *b, rkb_rpc rpc, rkb_request *req, unsigned iterations)
{
        rkb_measure(b, rpc, &req, 1, iterations);
        rkb_request_free(req);
}

void rkb_measure_reads(rkb_bench *b, const char *phase)
{
        size_t n_containers = 0;
        unsigned list_iter = b->iterations;
        rkb_request **pod_reqs, **container_reqs, **podlist_reqs;

        rkb_phase_begin(b, "%s", phase);
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
        rkb_measure_one(b, RKB_VERSION, rkb_cri_version(), b->iterations);
        rkb_measure(b, RKB_POD_STATUS, pod_reqs, b->n_pods, b->iterations);
        rkb_measure(b, RKB_CONTAINER_STATUS, container_reqs, n_containers, b->iterations);
        rkb_measure_one(b, RKB_LIST_PODS, rkb_cri_by_id(&b->cri, RKB_LIST_PODS, NULL, false),
                        list_iter);
        rkb_measure_one(b, RKB_LIST_CONTAINERS,
                        rkb_cri_by_id(&b->cri, RKB_LIST_CONTAINERS, NULL, false), list_iter);
        rkb_measure(b, RKB_LIST_CONTAINERS_POD, podlist_reqs, b->n_pods, b->iterations);
        for (size_t i = 0; i < b->n_pods; i++) {
                rkb_request_free(pod_reqs[i]);
                rkb_request_free(podlist_reqs[i]);
        }
        for (size_t i = 0; i < n_containers; i++)
                rkb_request_free(container_reqs[i]);
        free(pod_reqs);
        free(podlist_reqs);
        free(container_reqs);
        rkb_record_rss(b, phase);
}
