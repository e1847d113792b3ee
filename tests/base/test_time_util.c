/* The clocks' units and the conversions between them (CONTRIBUTING.md, 'Time'). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>

#include "base/time-util.h"
#include "base/macro.h"

static void test_timespec(void **state)
{
        (void)state;
        struct timespec ts = rkl_timespec_from_usec(3 * USEC_PER_SEC + 250);
        assert_int_equal(ts.tv_sec, 3);
        assert_int_equal(ts.tv_nsec, 250 * NSEC_PER_USEC);
        assert_int_equal(rkl_timespec_ns(&ts), 3 * (int64_t)NSEC_PER_SEC + 250 * NSEC_PER_USEC);
        ts = rkl_timespec_from_usec(0);
        assert_int_equal(ts.tv_sec, 0);
        assert_int_equal(ts.tv_nsec, 0);
}

/* A poll's timeout never wakes it before the deadline: rounded up to the millisecond. */
static void test_poll_timeout(void **state)
{
        (void)state;
        uint64_t now = 1000 * USEC_PER_SEC;
        assert_int_equal(rkl_poll_timeout_ms(now, now), 0);
        assert_int_equal(rkl_poll_timeout_ms(now, now - 1), 0);
        assert_int_equal(rkl_poll_timeout_ms(now, now + 1), 1);
        assert_int_equal(rkl_poll_timeout_ms(now, now + USEC_PER_MSEC), 1);
        assert_int_equal(rkl_poll_timeout_ms(now, now + USEC_PER_MSEC + 1), 2);
        assert_int_equal(rkl_poll_timeout_ms(now, now + 5 * USEC_PER_SEC), 5000);
        assert_int_equal(rkl_poll_timeout_ms(0, USEC_INFINITY - 1), INT_MAX);
}

/* The clocks count in their units: the monotonic one never goes back, and the wall clock's
 * nanoseconds and the monotonic clock's microseconds are the ones clock_gettime() gives. */
static void test_clocks(void **state)
{
        (void)state;
        uint64_t a = rkl_now_usec(CLOCK_MONOTONIC), b = rkl_now_usec(CLOCK_MONOTONIC);
        assert_true(b >= a);
        struct timespec ts;
        assert_int_equal(clock_gettime(CLOCK_REALTIME, &ts), 0);
        int64_t before = rkl_timespec_ns(&ts), now = rkl_realtime_ns();
        assert_true(now >= before);
        assert_true(now / (int64_t)NSEC_PER_SEC - ts.tv_sec <= 1 + 60); /* seconds, not usec */
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_timespec),
            cmocka_unit_test(test_poll_timeout),
            cmocka_unit_test(test_clocks),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
