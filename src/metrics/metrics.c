#include "metrics.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "base/alloc.h"
#include "base/parse.h"
#include "base/time-util.h"
#include "base/banned.h"

/* Upper bounds in microseconds; the last bucket is +Inf. From a cached Version (~100 us)
 * to a slow rkt command (a minute). */
static const uint64_t bucket_usec[] = {
    100,    250,    500,    1000,    2500,    5000,    10000,    25000,    50000,
    100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 30000000, 60000000,
};
#define N_BUCKETS (ELEMENTSOF(bucket_usec) + 1)

struct rkl_metrics_series {
        char *label; /* NULL: no label */
        atomic_uint_fast64_t failures, sum_usec;
        atomic_uint_fast64_t buckets[N_BUCKETS]; /* not cumulative: summed when rendered */
};

typedef struct family_def {
        const char *name; /* metric name prefix */
        const char *label_name;
        const char *help_duration, *help_failures;
} family_def;

static const family_def families[_RKL_METRICS_FAMILY_MAX] = {
    [RKL_METRICS_CRI] = {"rktlet_cri_request", "method", "CRI calls by method: latency",
                         "CRI calls by method that answered an error status"},
    [RKL_METRICS_RKT] = {"rktlet_rkt_command", "verb", "rkt commands by verb: latency",
                         "rkt commands by verb that failed (exit status, signal, timeout)"},
    [RKL_METRICS_STORE_COMMIT] = {"rktlet_store_commit", NULL,
                                  "SQLite write transactions: latency of the commit",
                                  "SQLite commits that failed"},
    [RKL_METRICS_CNI] = {"rktlet_cni_plugin", "call",
                         "CNI plugin runs by plugin and command: latency",
                         "CNI plugin runs that failed (an error, exit status, timeout)"},
};

typedef struct counter_def {
        const char *name, *type, *help;
} counter_def;

static const counter_def counters[_RKL_METRICS_COUNTER_MAX] = {
    [RKL_METRICS_EVENTS] = {"rktlet_container_events_total", "counter",
                            "container and sandbox events (GetContainerEvents) emitted"},
    [RKL_METRICS_EVENT_STREAMS] = {"rktlet_container_event_streams", "gauge",
                                   "GetContainerEvents streams open"},
    [RKL_METRICS_EVENT_STREAMS_DROPPED] = {"rktlet_container_event_streams_dropped_total",
                                           "counter",
                                           "GetContainerEvents streams ended because their "
                                           "client fell behind"},
};

static atomic_int_fast64_t counter_values[_RKL_METRICS_COUNTER_MAX];

typedef struct family {
        pthread_mutex_t lock; /* adding a series only */
        atomic_size_t n;      /* series[0..n) are complete */
        rkl_metrics_series series[RKL_METRICS_SERIES_MAX];
} family;

static family registry[_RKL_METRICS_FAMILY_MAX] = {
    [0 ... _RKL_METRICS_FAMILY_MAX - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER},
};

static pthread_mutex_t collector_lock = PTHREAD_MUTEX_INITIALIZER;
static rkl_metrics_collector collector_fn;
static void *collector_userdata;

static bool label_eq(const char *a, const char *b)
{
        return (!a && !b) || (a && b && streq(a, b));
}

static rkl_metrics_series *find(family *fam, size_t n, const char *label)
{
        for (size_t i = 0; i < n; i++)
                if (label_eq(fam->series[i].label, label))
                        return &fam->series[i];
        return NULL;
}

rkl_metrics_series *rkl_metrics_series_get(rkl_metrics_family f, const char *label)
{
        assert(f >= 0 && f < _RKL_METRICS_FAMILY_MAX);
        family *fam = &registry[f];
        rkl_metrics_series *s = find(fam, atomic_load(&fam->n), label);
        if (s)
                return s;

        pthread_mutex_lock(&fam->lock);
        size_t n = atomic_load(&fam->n);
        s = find(fam, n, label);
        if (!s) {
                if (n == RKL_METRICS_SERIES_MAX - 1 && label)
                        label = "other"; /* the last slot takes every further label */
                s = n == RKL_METRICS_SERIES_MAX ? &fam->series[n - 1] : find(fam, n, label);
                if (!s) {
                        s = &fam->series[n];
                        s->label = rkl_xstrdup(label);
                        atomic_store(&fam->n, n + 1);
                }
        }
        pthread_mutex_unlock(&fam->lock);
        return s;
}

void rkl_metrics_observe(rkl_metrics_series *s, uint64_t usec, bool failed)
{
        size_t b = 0;
        while (b < ELEMENTSOF(bucket_usec) && usec > bucket_usec[b])
                b++;
        atomic_fetch_add_explicit(&s->buckets[b], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->sum_usec, usec, memory_order_relaxed);
        if (failed)
                atomic_fetch_add_explicit(&s->failures, 1, memory_order_relaxed);
}

void rkl_metrics_record(rkl_metrics_family f, const char *label, uint64_t usec, bool failed)
{
        rkl_metrics_observe(rkl_metrics_series_get(f, label), usec, failed);
}

void rkl_metrics_add(rkl_metrics_counter c, int64_t delta)
{
        assert(c >= 0 && c < _RKL_METRICS_COUNTER_MAX);
        atomic_fetch_add_explicit(&counter_values[c], delta, memory_order_relaxed);
}

int64_t rkl_metrics_get(rkl_metrics_counter c)
{
        assert(c >= 0 && c < _RKL_METRICS_COUNTER_MAX);
        return atomic_load_explicit(&counter_values[c], memory_order_relaxed);
}

void rkl_metrics_set_collector(rkl_metrics_collector fn, void *userdata)
{
        pthread_mutex_lock(&collector_lock);
        collector_fn = fn;
        collector_userdata = userdata;
        pthread_mutex_unlock(&collector_lock);
}

/* ---- Text ---- */

struct rkl_metrics_buf {
        char *p;
        size_t len, cap;
};

_printf_(2, 3) static void buf_printf(rkl_metrics_buf *b, const char *fmt, ...)
{
        for (;;) {
                va_list ap;
                va_start(ap, fmt);
                int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
                va_end(ap);
                assert(n >= 0);
                if ((size_t)n < b->cap - b->len) {
                        b->len += (size_t)n;
                        return;
                }
                b->cap = (b->cap + (size_t)n + 1) * 2;
                b->p = rkl_xrealloc(b->p, b->cap);
        }
}

/* A label value, escaped as the text format wants: \\, \" and \n. */
static void buf_label(rkl_metrics_buf *b, const char *name, const char *value)
{
        buf_printf(b, "%s=\"", name);
        for (const char *c = value; *c; c++) {
                if (*c == '\\' || *c == '"')
                        buf_printf(b, "\\%c", *c);
                else if (*c == '\n')
                        buf_printf(b, "\\n");
                else
                        buf_printf(b, "%c", *c);
        }
        buf_printf(b, "\"");
}

void rkl_metrics_gauge_header(rkl_metrics_buf *b, const char *name, const char *help)
{
        buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

void rkl_metrics_gauge_value(rkl_metrics_buf *b, const char *name, const char *label_name,
                             const char *label_value, double v)
{
        buf_printf(b, "%s", name);
        if (label_name) {
                buf_printf(b, "{");
                buf_label(b, label_name, label_value);
                buf_printf(b, "}");
        }
        buf_printf(b, " %.17g\n", v);
}

static void render_family(rkl_metrics_buf *b, rkl_metrics_family f)
{
        const family_def *d = &families[f];
        family *fam = &registry[f];
        size_t n = atomic_load(&fam->n);

        buf_printf(b, "# HELP %s_duration_seconds %s\n# TYPE %s_duration_seconds histogram\n",
                   d->name, d->help_duration, d->name);
        for (size_t i = 0; i < n; i++) {
                rkl_metrics_series *s = &fam->series[i];
                uint64_t cum = 0;
                /* _count is the sum of the buckets, so that a scrape racing an observe
                 * stays consistent (+Inf == _count). */
                for (size_t k = 0; k < N_BUCKETS; k++) {
                        cum += atomic_load_explicit(&s->buckets[k], memory_order_relaxed);
                        buf_printf(b, "%s_duration_seconds_bucket{", d->name);
                        if (d->label_name) {
                                buf_label(b, d->label_name, s->label);
                                buf_printf(b, ",");
                        }
                        if (k < ELEMENTSOF(bucket_usec))
                                buf_printf(b, "le=\"%g\"} %" PRIu64 "\n",
                                           (double)bucket_usec[k] / USEC_PER_SEC, cum);
                        else
                                buf_printf(b, "le=\"+Inf\"} %" PRIu64 "\n", cum);
                }
                const char *open = d->label_name ? "{" : "", *close = d->label_name ? "}" : "";
                buf_printf(b, "%s_duration_seconds_sum%s", d->name, open);
                if (d->label_name)
                        buf_label(b, d->label_name, s->label);
                buf_printf(b, "%s %.6f\n", close,
                           (double)atomic_load_explicit(&s->sum_usec, memory_order_relaxed) /
                               USEC_PER_SEC);
                buf_printf(b, "%s_duration_seconds_count%s", d->name, open);
                if (d->label_name)
                        buf_label(b, d->label_name, s->label);
                buf_printf(b, "%s %" PRIu64 "\n", close, cum);
        }
        buf_printf(b, "# HELP %s_failures_total %s\n# TYPE %s_failures_total counter\n", d->name,
                   d->help_failures, d->name);
        for (size_t i = 0; i < n; i++) {
                rkl_metrics_series *s = &fam->series[i];
                buf_printf(b, "%s_failures_total", d->name);
                if (d->label_name) {
                        buf_printf(b, "{");
                        buf_label(b, d->label_name, s->label);
                        buf_printf(b, "}");
                }
                buf_printf(b, " %" PRIu64 "\n",
                           (uint64_t)atomic_load_explicit(&s->failures, memory_order_relaxed));
        }
}

char *rkl_metrics_render(size_t *ret_len)
{
        rkl_metrics_buf b = {.cap = 16384};
        b.p = rkl_xrealloc(NULL, b.cap);
        b.p[0] = 0;
        for (int f = 0; f < _RKL_METRICS_FAMILY_MAX; f++)
                render_family(&b, (rkl_metrics_family)f);
        for (int c = 0; c < _RKL_METRICS_COUNTER_MAX; c++)
                buf_printf(&b, "# HELP %s %s\n# TYPE %s %s\n%s %" PRId64 "\n", counters[c].name,
                           counters[c].help, counters[c].name, counters[c].type, counters[c].name,
                           rkl_metrics_get((rkl_metrics_counter)c));
        pthread_mutex_lock(&collector_lock);
        if (collector_fn)
                collector_fn(&b, collector_userdata);
        pthread_mutex_unlock(&collector_lock);
        if (ret_len)
                *ret_len = b.len;
        return b.p;
}

/* ---- HTTP ---- */

struct rkl_metrics_server {
        struct MHD_Daemon *mhd;
};

int rkl_metrics_address_check(const char *address, rkl_error *reterr)
{
        struct sockaddr_in sa;
        if (rkl_ipv4_port_parse(address, false, &sa) < 0)
                return rkl_error_set(reterr, -EINVAL,
                                     "metrics address '%s' is not IPV4:PORT, e.g. 127.0.0.1:9101",
                                     address);
        return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
        (void)cls, (void)version, (void)upload_data, (void)upload_data_size, (void)con_cls;
        struct MHD_Response *resp;
        unsigned status;

        if (!streq(method, "GET") && !streq(method, "HEAD")) {
                static const char msg[] = "only GET\n";
                resp = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg,
                                                       MHD_RESPMEM_PERSISTENT);
                status = MHD_HTTP_METHOD_NOT_ALLOWED;
        } else if (!streq(url, "/metrics")) {
                static const char msg[] = "not found: metrics are at /metrics\n";
                resp = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg,
                                                       MHD_RESPMEM_PERSISTENT);
                status = MHD_HTTP_NOT_FOUND;
        } else {
                size_t len;
                char *text = rkl_metrics_render(&len);
                resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
                (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                              "text/plain; version=0.0.4; charset=utf-8");
                status = MHD_HTTP_OK;
        }
        if (!resp)
                return MHD_NO;
        enum MHD_Result ret = MHD_queue_response(conn, status, resp);
        MHD_destroy_response(resp);
        return ret;
}

int rkl_metrics_server_new(const char *address, rkl_metrics_server **ret, rkl_error *reterr)
{
        struct sockaddr_in sa;
        if (rkl_ipv4_port_parse(address, false, &sa) < 0)
                return rkl_metrics_address_check(address, reterr);

        rkl_metrics_server *s = rkl_xnew0(rkl_metrics_server, 1);
        /* One thread of its own: a scrape never runs on a CRI thread. */
        s->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL,
                                  on_request, NULL, MHD_OPTION_SOCK_ADDR, &sa,
                                  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                                  MHD_OPTION_CONNECTION_LIMIT, (unsigned)16, MHD_OPTION_END);
        if (!s->mhd) {
                int k = errno ? -errno : -EADDRNOTAVAIL;
                free(s);
                return rkl_error_set(reterr, k, "cannot serve metrics on '%s': %s", address,
                                     strerror(-k));
        }
        *ret = s;
        return 0;
}

rkl_metrics_server *rkl_metrics_server_free(rkl_metrics_server *s)
{
        if (!s)
                return NULL;
        MHD_stop_daemon(s->mhd);
        free(s);
        return NULL;
}
