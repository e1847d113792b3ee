/* backoff.h: the retry delays and the failures of steps without a record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "reconciler/backoff.h"
#include "base/time-util.h"

#define MS ((int64_t)NSEC_PER_MSEC)
#define S  ((int64_t)NSEC_PER_SEC)

static void test_delays(void **state)
{
        /* 500 ms before any failure is counted, doubling with each, at most 60 s: a step's first
         * failure waits 1 s (docs/architecture.md, 'The reconcile loop'). */
        assert_int_equal(rkl_backoff_ns(0), 500 * MS);
        assert_int_equal(rkl_backoff_ns(1), 1 * S);
        assert_int_equal(rkl_backoff_ns(2), 2 * S);
        assert_int_equal(rkl_backoff_ns(6), 32 * S);
        assert_int_equal(rkl_backoff_ns(7), 60 * S);
        assert_int_equal(rkl_backoff_ns(1000), 60 * S);
}

static void test_failures(void **state)
{
        rkl_backoff *b = rkl_backoff_new();
        int64_t next = 0;

        assert_false(rkl_backoff_waits(b, "k", 0, &next));
        assert_int_equal(rkl_backoff_attempts(b, "k"), 0);

        const rkl_backoff_entry *t = rkl_backoff_failed(b, "k", 10 * S);
        assert_string_equal(t->key, "k");
        assert_int_equal(t->attempts, 1);
        assert_int_equal(t->next_ns, 11 * S);
        assert_true(rkl_backoff_waits(b, "k", 10 * S, &next));
        assert_int_equal(next, 11 * S);
        assert_false(rkl_backoff_waits(b, "k", 11 * S, &next)); /* its time has come */
        assert_false(rkl_backoff_waits(b, "other", 10 * S, &next));

        t = rkl_backoff_failed(b, "k", 11 * S);
        assert_int_equal(t->attempts, 2);
        assert_int_equal(t->next_ns, 13 * S);
        assert_int_equal(rkl_backoff_attempts(b, "k"), 2);

        rkl_backoff_forget(b, "k");
        assert_int_equal(rkl_backoff_attempts(b, "k"), 0);
        assert_false(rkl_backoff_waits(b, "k", 11 * S, &next));
        rkl_backoff_forget(b, "k"); /* forgetting twice is fine */

        /* Stale: not tried again long after its time. */
        (void)rkl_backoff_failed(b, "old", 0);          /* next at 1 s */
        (void)rkl_backoff_failed(b, "recent", 100 * S); /* next at 101 s */
        rkl_backoff_drop_stale(b, 102 * S, 50 * S);
        assert_int_equal(rkl_backoff_attempts(b, "old"), 0);
        assert_int_equal(rkl_backoff_attempts(b, "recent"), 1);
        assert_null(rkl_backoff_free(b));
        assert_null(rkl_backoff_free(NULL));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_delays),
            cmocka_unit_test(test_failures),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
