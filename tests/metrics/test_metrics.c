/* The text exposition: histogram buckets are cumulative and end in +Inf == _count, labels
 * are escaped, failures are counted, collectors add gauges, and the endpoint serves it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"
#include "base/macro.h"

static void assert_has(const char *text, const char *line)
{
        if (!strstr(text, line))
                fail_msg("missing '%s' in:\n%s", line, text);
}

static void test_histogram(void **state)
{
        (void)state;
        rkl_metrics_series *s = rkl_metrics_series_get(RKL_METRICS_CRI, "Version");
        assert_ptr_equal(s, rkl_metrics_series_get(RKL_METRICS_CRI, "Version"));
        rkl_metrics_observe(s, 50, false);       /* <= 0.0001 */
        rkl_metrics_observe(s, 100, false);      /* <= 0.0001: bounds are inclusive */
        rkl_metrics_observe(s, 3000, true);      /* <= 0.005 */
        rkl_metrics_observe(s, 99000000, false); /* +Inf only */
        rkl_metrics_record(RKL_METRICS_STORE_COMMIT, NULL, 1500, false);

        size_t len;
        char *t = rkl_metrics_render(&len);
        assert_int_equal(strlen(t), len);
        assert_has(t, "# TYPE rktlet_cri_request_duration_seconds histogram\n");
        assert_has(
            t, "rktlet_cri_request_duration_seconds_bucket{method=\"Version\",le=\"0.0001\"} 2\n");
        assert_has(
            t, "rktlet_cri_request_duration_seconds_bucket{method=\"Version\",le=\"0.0025\"} 2\n");
        assert_has(
            t, "rktlet_cri_request_duration_seconds_bucket{method=\"Version\",le=\"0.005\"} 3\n");
        assert_has(t,
                   "rktlet_cri_request_duration_seconds_bucket{method=\"Version\",le=\"60\"} 3\n");
        assert_has(
            t, "rktlet_cri_request_duration_seconds_bucket{method=\"Version\",le=\"+Inf\"} 4\n");
        assert_has(t, "rktlet_cri_request_duration_seconds_count{method=\"Version\"} 4\n");
        assert_has(t, "rktlet_cri_request_duration_seconds_sum{method=\"Version\"} 99.003150\n");
        assert_has(t, "rktlet_cri_request_failures_total{method=\"Version\"} 1\n");
        assert_has(t, "rktlet_store_commit_duration_seconds_bucket{le=\"0.0025\"} 1\n");
        assert_has(t, "rktlet_store_commit_duration_seconds_count 1\n");
        assert_has(t, "rktlet_store_commit_failures_total 0\n");
        assert_has(t, "# TYPE rktlet_rkt_command_failures_total counter\n");
        free(t);
}

static void test_label_escaped(void **state)
{
        (void)state;
        rkl_metrics_record(RKL_METRICS_RKT, "a\"b\\c\nd", 10, true);
        char *t = rkl_metrics_render(NULL);
        assert_has(t, "rktlet_rkt_command_failures_total{verb=\"a\\\"b\\\\c\\nd\"} 1\n");
        free(t);
}

static void test_series_limit(void **state)
{
        (void)state;
        char label[32];
        for (int i = 0; i < RKL_METRICS_SERIES_MAX + 10; i++) {
                snprintf(label, sizeof(label), "verb%d", i);
                assert_non_null(rkl_metrics_series_get(RKL_METRICS_RKT, label));
        }
        assert_ptr_equal(rkl_metrics_series_get(RKL_METRICS_RKT, "verb200"),
                         rkl_metrics_series_get(RKL_METRICS_RKT, "other"));
}

static void collect(rkl_metrics_buf *b, void *userdata)
{
        rkl_metrics_gauge_header(b, "rktlet_pods", "pods by phase");
        rkl_metrics_gauge_value(b, "rktlet_pods", "phase", "running", *(int *)userdata);
        rkl_metrics_gauge_header(b, "rktlet_lag_seconds", "lag");
        rkl_metrics_gauge_value(b, "rktlet_lag_seconds", NULL, NULL, 0.25);
}

static void test_collector(void **state)
{
        (void)state;
        int n = 7;
        rkl_metrics_set_collector(collect, &n);
        char *t = rkl_metrics_render(NULL);
        assert_has(t, "# HELP rktlet_pods pods by phase\n# TYPE rktlet_pods gauge\n");
        assert_has(t, "rktlet_pods{phase=\"running\"} 7\n");
        assert_has(t, "rktlet_lag_seconds 0.25\n");
        free(t);
        rkl_metrics_set_collector(NULL, NULL);
        t = rkl_metrics_render(NULL);
        assert_null(strstr(t, "rktlet_pods"));
        free(t);
}

/* Counters go up, the gauge goes both ways, and each is rendered with its type. */
static void test_counters(void **state)
{
        (void)state;
        rkl_metrics_add(RKL_METRICS_EVENTS, 3);
        rkl_metrics_add(RKL_METRICS_EVENT_STREAMS, 2);
        rkl_metrics_add(RKL_METRICS_EVENT_STREAMS, -1);
        rkl_metrics_add(RKL_METRICS_EVENT_STREAMS_DROPPED, 1);
        assert_int_equal(rkl_metrics_get(RKL_METRICS_EVENT_STREAMS), 1);

        char *t = rkl_metrics_render(NULL);
        assert_has(t, "# TYPE rktlet_container_events_total counter\n"
                      "rktlet_container_events_total 3\n");
        assert_has(t, "# TYPE rktlet_container_event_streams gauge\n"
                      "rktlet_container_event_streams 1\n");
        assert_has(t, "# TYPE rktlet_container_event_streams_dropped_total counter\n"
                      "rktlet_container_event_streams_dropped_total 1\n");
        free(t);
}

static void test_address(void **state)
{
        (void)state;
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_metrics_address_check("127.0.0.1:9101", &err), 0);
        assert_int_equal(rkl_metrics_address_check("127.0.0.1", &err), -EINVAL);
        assert_non_null(strstr(err.msg, "'127.0.0.1'"));
        assert_int_equal(rkl_metrics_address_check("localhost:80", NULL), -EINVAL);
        assert_int_equal(rkl_metrics_address_check("127.0.0.1:0", NULL), -EINVAL);
        assert_int_equal(rkl_metrics_address_check("127.0.0.1:65536", NULL), -EINVAL);
        assert_int_equal(rkl_metrics_address_check(":80", NULL), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_histogram),    cmocka_unit_test(test_label_escaped),
            cmocka_unit_test(test_series_limit), cmocka_unit_test(test_collector),
            cmocka_unit_test(test_address),      cmocka_unit_test(test_counters),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
