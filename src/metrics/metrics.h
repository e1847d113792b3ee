/* Prometheus metrics. Writers (any thread) record into fixed series with atomics and never
 * take a lock once a series exists; the text exposition is built at scrape time, off the
 * request path. The HTTP endpoint (libmicrohttpd) is off unless an address is given.
 *
 * The registry is process-wide, like the log level (CONTRIBUTING.md, 'Global state'):
 * a counter is write-only for every layer, and threading a handle through store, rkt,
 * reconciler and api for a few increments would cost more than it protects. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

typedef enum rkl_metrics_family {
        RKL_METRICS_CRI,          /* per CRI method: rktlet_cri_request_* */
        RKL_METRICS_RKT,          /* per rkt verb: rktlet_rkt_command_* */
        RKL_METRICS_STORE_COMMIT, /* one series: rktlet_store_commit_* */
        RKL_METRICS_CNI,          /* per CNI plugin and command: rktlet_cni_plugin_* */
        _RKL_METRICS_FAMILY_MAX,
        _RKL_METRICS_FAMILY_INVALID = -EINVAL,
} rkl_metrics_family;

#define RKL_METRICS_SERIES_MAX 128 /* per family; more label values share the "other" series */

typedef struct rkl_metrics_series rkl_metrics_series;

/* The series of family f for label (NULL for a family without a label), made on first use
 * and kept until exit: callers may keep the pointer. Never NULL. */
rkl_metrics_series *rkl_metrics_series_get(rkl_metrics_family f, const char *label);
/* One event that took usec; failed also counts it as a failure. Lock-free. */
void rkl_metrics_observe(rkl_metrics_series *s, uint64_t usec, bool failed);
/* The same, by family and label (a lookup: for callers that run rarely, e.g. rkt). */
void rkl_metrics_record(rkl_metrics_family f, const char *label, uint64_t usec, bool failed);

/* Totals with no label (counters) and values that go up and down (gauges), written with
 * atomics from any thread and rendered at scrape time. */
typedef enum rkl_metrics_counter {
        RKL_METRICS_EVENTS,                /* rktlet_container_events_total */
        RKL_METRICS_EVENT_STREAMS,         /* rktlet_container_event_streams (a gauge) */
        RKL_METRICS_EVENT_STREAMS_DROPPED, /* rktlet_container_event_streams_dropped_total */
        _RKL_METRICS_COUNTER_MAX,
        _RKL_METRICS_COUNTER_INVALID = -EINVAL,
} rkl_metrics_counter;
/* Adds delta (a gauge may go down). Lock-free. */
void rkl_metrics_add(rkl_metrics_counter c, int64_t delta);
/* Its value now (for tests). */
int64_t rkl_metrics_get(rkl_metrics_counter c);

/* Scrape-time values (gauges) that live elsewhere: the collector appends them. */
typedef struct rkl_metrics_buf rkl_metrics_buf;
typedef void (*rkl_metrics_collector)(rkl_metrics_buf *b, void *userdata);
/* Set once at start, cleared (NULL) before userdata goes. */
void rkl_metrics_set_collector(rkl_metrics_collector fn, void *userdata);
/* Appends "# HELP" and "# TYPE name gauge". */
void rkl_metrics_gauge_header(rkl_metrics_buf *b, const char *name, const char *help);
/* Appends one sample; label_name NULL for none. */
void rkl_metrics_gauge_value(rkl_metrics_buf *b, const char *name, const char *label_name,
                             const char *label_value, double v);

/* The whole exposition (text format 0.0.4), malloc'd; *ret_len its length. */
char *rkl_metrics_render(size_t *ret_len);

/* The HTTP endpoint: GET /metrics on address "HOST:PORT" (an IPv4 address, e.g.
 * 127.0.0.1:9101). */
typedef struct rkl_metrics_server rkl_metrics_server;
/* Checks an address without listening (for option parsing). */
int rkl_metrics_address_check(const char *address, rkl_error *reterr);
int rkl_metrics_server_new(const char *address, rkl_metrics_server **ret, rkl_error *reterr);
rkl_metrics_server *rkl_metrics_server_free(rkl_metrics_server *s);

RKL_DEFINE_CLEANUP(rkl_metrics_server *, rkl_metrics_server_free)
