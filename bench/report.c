/* rkl-bench's report: the tables printed at the end of a run, and every figure as JSON
 * (bench.h). */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "base/fileio.h"
#include "base/json.h"
#include "base/banned.h"

typedef struct target {
        const char *name;
        double value, limit;
        const char *unit;
        bool known;
} target;

static const char *verdict(const target *t, const char *missed)
{
        return !t->known ? "not measured" : t->value <= t->limit ? "met" : missed;
}

/* The row of rpc at the largest scale (status calls), or with the most calls (mutations). */
static const rkb_lat_row *pick_row(const rkb_bench *b, rkb_rpc rpc, bool by_calls)
{
        const rkb_lat_row *best = NULL;

        for (size_t i = 0; i < b->n_lat; i++) {
                const rkb_lat_row *l = &b->lat[i];
                if (l->rpc != rpc || l->ref_p50_usec <= 0)
                        continue;
                if (!best || (by_calls ? l->s.n > best->s.n : l->containers >= best->containers))
                        best = l;
        }
        return best;
}

static size_t targets(const rkb_bench *b, target *t, size_t max)
{
        size_t n = 0;

        for (rkb_rpc rpc = RKB_POD_STATUS; rpc <= RKB_CONTAINER_STATUS && n < max; rpc++) {
                const rkb_lat_row *l = pick_row(b, rpc, false);
                t[n++] = (target){rpc == RKB_POD_STATUS
                                      ? "PodSandboxStatus p50 / Version p50, largest scale"
                                      : "ContainerStatus p50 / Version p50, largest scale",
                                  l ? l->s.p50_usec / l->ref_p50_usec : 0, 1.5, "x", l != NULL};
        }
        if (n < max) {
                const rkb_lat_row *l = pick_row(b, RKB_LIST_CONTAINERS, false);
                t[n++] = (target){"ListContainers p50 at 1,000 containers",
                                  l ? l->s.p50_usec / USEC_PER_MSEC : 0, 3.0, "ms",
                                  l && l->containers >= 1000};
        }
        for (rkb_rpc rpc = 0; rpc < _RKB_RPC_MAX && n < max; rpc++) {
                const rkb_lat_row *l;
                if (!rkb_rpc_is_mutating(rpc) || rpc == RKB_PULL_IMAGE ||
                    !(l = pick_row(b, rpc, true)))
                        continue;
                t[n++] =
                    (target){rkb_rpc_name(rpc), l->s.p50_usec / l->ref_p50_usec, 2.0, "x", true};
        }
        if (n < max) {
                const rkb_lat_row *l = pick_row(b, RKB_EXEC_SYNC, true);
                if (l)
                        t[n++] = (target){"ExecSync p50 (containerd 1.6: 45 ms)",
                                          l->s.p50_usec / USEC_PER_MSEC, 30, "ms", true};
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

void rkb_report_print(const rkb_bench *b)
{
        target t[32];
        size_t n_t;

        if (b->n_lat > 0)
                printf("\n%-22s %-22s %6s %6s %9s %9s %9s %9s %8s\n", "rpc", "phase", "ctrs", "n",
                       "p50_us", "p99_us", "mean_us", "max_us", "xVersion");
        for (size_t i = 0; i < b->n_lat; i++) {
                const rkb_lat_row *r = &b->lat[i];
                char ratio[16] = "-";
                if (r->ref_p50_usec > 0)
                        snprintf(ratio, sizeof(ratio), "%.2f", r->s.p50_usec / r->ref_p50_usec);
                printf("%-22s %-22s %6zu %6zu %9.1f %9.1f %9.1f %9.1f %8s\n", rkb_rpc_name(r->rpc),
                       r->phase, r->containers, r->s.n, r->s.p50_usec, r->s.p99_usec,
                       r->s.mean_usec, r->s.max_usec, ratio);
        }
        if (b->n_thr > 0) {
                printf("\n%-22s %8s %6s %10s %8s %9s %9s\n", "throughput rpc", "inflight", "ctrs",
                       "calls/s", "errors", "p50_us", "p99_us");
                for (size_t i = 0; i < b->n_thr; i++) {
                        const rkb_thr_row *r = &b->thr[i];
                        double secs = (double)r->res.elapsed_ns / NSEC_PER_SEC;
                        printf("%-22s %8u %6zu %10.0f %8" PRIu64 " %9.1f %9.1f\n",
                               rkb_rpc_name(r->rpc), r->inflight, r->containers,
                               secs > 0 ? (double)(r->res.calls - r->res.errors) / secs : 0,
                               r->res.errors, r->s.p50_usec, r->s.p99_usec);
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
                               t[i].unit, verdict(&t[i], "MISSED"));
        }
        if (b->density)
                rkb_density_print(b->density, stdout);
        for (size_t i = 0; i < _RKB_RPC_MAX; i++)
                if (b->err[i].n > 0)
                        printf("\nerrors: %s: %" PRIu64 " calls failed, first %s: %s",
                               rkb_rpc_name(i), b->err[i].n, rkb_status_name(b->err[i].status),
                               b->err[i].details);
        printf("\n");
}

/* A number as the tables print it: fixed decimals, not json-c's 17 significant digits. */
static json_object *num(double v, int decimals)
{
        char buf[64];
        (void)snprintf(buf, sizeof(buf), "%.*f", decimals, v);
        return json_object_new_double_s(v, buf);
}

static void put(json_object *o, const char *key, json_object *v)
{
        json_object_object_add(o, key, v);
}

static void put_summary(json_object *o, const rkb_summary *s)
{
        put(o, "n", json_object_new_int64((int64_t)s->n));
        put(o, "p50_us", num(s->p50_usec, 2));
        put(o, "p99_us", num(s->p99_usec, 2));
        put(o, "mean_us", num(s->mean_usec, 2));
        put(o, "min_us", num(s->min_usec, 2));
        put(o, "max_us", num(s->max_usec, 2));
}

static json_object *latency_json(const rkb_bench *b)
{
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < b->n_lat; i++) {
                const rkb_lat_row *r = &b->lat[i];
                json_object *o = json_object_new_object();
                put(o, "rpc", json_object_new_string(rkb_rpc_name(r->rpc)));
                put(o, "phase", json_object_new_string(r->phase));
                put(o, "containers", json_object_new_int64((int64_t)r->containers));
                put_summary(o, &r->s);
                put(o, "version_p50_us", num(r->ref_p50_usec, 2));
                put(o, "ratio_to_version_p50",
                    num(r->ref_p50_usec > 0 ? r->s.p50_usec / r->ref_p50_usec : 0, 3));
                json_object_array_add(a, o);
        }
        return a;
}

static json_object *throughput_json(const rkb_bench *b)
{
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < b->n_thr; i++) {
                const rkb_thr_row *r = &b->thr[i];
                double secs = (double)r->res.elapsed_ns / NSEC_PER_SEC;
                json_object *o = json_object_new_object();
                put(o, "rpc", json_object_new_string(rkb_rpc_name(r->rpc)));
                put(o, "inflight", json_object_new_int64(r->inflight));
                put(o, "containers", json_object_new_int64((int64_t)r->containers));
                put(o, "calls", json_object_new_uint64(r->res.calls));
                put(o, "errors", json_object_new_uint64(r->res.errors));
                put(o, "seconds", num(secs, 3));
                put(o, "calls_per_s",
                    num(secs > 0 ? (double)(r->res.calls - r->res.errors) / secs : 0, 1));
                put_summary(o, &r->s);
                json_object_array_add(a, o);
        }
        return a;
}

static json_object *rss_json(const rkb_bench *b)
{
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < b->n_rss; i++) {
                json_object *o = json_object_new_object();
                put(o, "phase", json_object_new_string(b->rss[i].phase));
                put(o, "containers", json_object_new_int64((int64_t)b->rss[i].containers));
                put(o, "vmrss_kib", json_object_new_int64(b->rss[i].rss_kib));
                put(o, "vmhwm_kib", json_object_new_int64(b->rss[i].hwm_kib));
                json_object_array_add(a, o);
        }
        return a;
}

static json_object *settled_json(const rkb_bench *b)
{
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < b->n_settled; i++) {
                json_object *o = json_object_new_object();
                put(o, "phase", json_object_new_string(b->settled[i].phase));
                put(o, "containers", json_object_new_int64((int64_t)b->settled[i].containers));
                put(o, "settled", json_object_new_boolean(b->settled[i].seconds >= 0));
                put(o, "seconds", num(b->settled[i].seconds, 3));
                json_object_array_add(a, o);
        }
        return a;
}

static json_object *converge_json(const rkb_bench *b)
{
        if (!b->conv.done)
                return NULL;
        json_object *o = json_object_new_object();
        put(o, "pods", json_object_new_int64(b->conv.pods));
        put(o, "containers_per_pod", json_object_new_int64(b->conv.per_pod));
        put(o, "max_actions", json_object_new_int64(b->conv.max_actions));
        put(o, "ready_s", num(b->conv.ready_s, 3));
        put(o, "app_add_s", num(b->conv.add_s, 3));
        put(o, "app_start_s", num(b->conv.start_s, 3));
        put(o, "issued_s", num(b->conv.issued_s, 3));
        put(o, "converged_s", num(b->conv.converged_s, 3));
        put(o, "timed_out", json_object_new_boolean(b->conv.timed_out));
        put(o, "rkt_work_s", num(b->conv.work_s, 3));
        put(o, "pod_chain_s", num(b->conv.critical_s, 3));
        put(o, "model_s", num(b->conv.model_s, 3));
        put(o, "ratio", num(b->conv.converged_s / b->conv.model_s, 3));
        put(o, "uuid_s", num(b->conv.uuid_s, 3));
        put(o, "overlap_model_s", num(b->conv.overlap_model_s, 3));
        put(o, "overlap_ratio", num(b->conv.converged_s / b->conv.overlap_model_s, 3));
        return o;
}

static json_object *restart_json(const rkb_bench *b)
{
        if (!b->rst.done)
                return NULL;
        json_object *o = json_object_new_object();
        put(o, "containers", json_object_new_int64((int64_t)b->rst.containers));
        put(o, "containers_running", json_object_new_int64((int64_t)b->rst.running));
        put(o, "answer_ms", num(b->rst.answer_ms, 2));
        put(o, "list_complete_ms", num(b->rst.list_complete_ms, 2));
        put(o, "list_correct_ms", num(b->rst.list_correct_ms, 2));
        put(o, "converged_ms", num(b->rst.converged_ms, 2));
        put(o, "timed_out", json_object_new_boolean(b->rst.timed_out));
        put(o, "rss_before_kib", json_object_new_int64(b->rst.rss_before_kib));
        put(o, "rss_after_kib", json_object_new_int64(b->rst.rss_after_kib));
        return o;
}

static json_object *targets_json(const rkb_bench *b)
{
        target t[32];
        size_t n = targets(b, t, ELEMENTSOF(t));
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < n; i++) {
                json_object *o = json_object_new_object();
                put(o, "name", json_object_new_string(t[i].name));
                put(o, "value", num(t[i].value, 3));
                put(o, "limit", num(t[i].limit, 3));
                put(o, "unit", json_object_new_string(t[i].unit));
                put(o, "verdict", json_object_new_string(verdict(&t[i], "missed")));
                json_object_array_add(a, o);
        }
        return a;
}

static json_object *errors_json(const rkb_bench *b)
{
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < _RKB_RPC_MAX; i++) {
                if (b->err[i].n == 0)
                        continue;
                json_object *o = json_object_new_object();
                put(o, "rpc", json_object_new_string(rkb_rpc_name(i)));
                put(o, "failed_calls", json_object_new_uint64(b->err[i].n));
                put(o, "first_status", json_object_new_string(rkb_status_name(b->err[i].status)));
                put(o, "first_details", json_object_new_string(b->err[i].details));
                json_object_array_add(a, o);
        }
        return a;
}

int rkb_report_json(const rkb_bench *b, const char *path)
{
        _cleanup_(json_object_putp) json_object *root = json_object_new_object();
        char host[256] = "";

        (void)gethostname(host, sizeof(host) - 1);
        put(root, "tool", json_object_new_string("rkl-bench"));
        put(root, "endpoint", json_object_new_string(b->endpoint));
        put(root, "scenarios", json_object_new_string(b->args->scenarios));
        put(root, "host", json_object_new_string(host));
        put(root, "time", json_object_new_int64((int64_t)time(NULL)));
        put(root, "iterations", json_object_new_int64(b->iterations));
        put(root, "containers_per_pod", json_object_new_int64((int64_t)b->per_pod));
        put(root, "containers_started", json_object_new_boolean(b->start_containers));
        put(root, "latency", latency_json(b));
        put(root, "throughput", throughput_json(b));
        put(root, "rss", rss_json(b));
        put(root, "settled", settled_json(b));
        put(root, "converge", converge_json(b));
        put(root, "density", b->density ? rkb_density_json(b->density) : NULL);
        put(root, "restart", restart_json(b));
        put(root, "targets", targets_json(b));
        put(root, "errors", errors_json(b));
        size_t n = 0;
        const char *text = json_object_to_json_string_length(
            root,
            JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
        if (!text)
                return -ENOMEM;
        return rkl_write_file_atomic_at(AT_FDCWD, path, text, n, 0644);
}
