#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/latch.h"

static void test_closed_times_out(void **state)
{
        rkl_latch l;
        rkl_latch_init(&l);
        assert_false(rkl_latch_is_open(&l));
        assert_false(rkl_latch_wait(&l, 0));
        assert_false(rkl_latch_wait(&l, 20000));
        rkl_latch_open(&l);
        rkl_latch_open(&l); /* twice is harmless */
        assert_true(rkl_latch_is_open(&l));
        assert_true(rkl_latch_wait(&l, 0));
        rkl_latch_destroy(&l);
}

typedef struct waiter {
        rkl_latch *l;
        bool got;
} waiter;

static void *wait_main(void *userdata)
{
        waiter *w = userdata;
        w->got = rkl_latch_wait(w->l, UINT64_C(600000000));
        return NULL;
}

/* Every waiter wakes when it opens, not at its own deadline (10 minutes away: a lost
 * wake-up fails the join below instead of passing late). */
static void test_open_wakes_all(void **state)
{
        rkl_latch l;
        pthread_t t[4];
        waiter w[4];
        rkl_latch_init(&l);
        for (int i = 0; i < 4; i++) {
                w[i] = (waiter){.l = &l};
                assert_int_equal(pthread_create(&t[i], NULL, wait_main, &w[i]), 0);
        }
        usleep(10000);
        rkl_latch_open(&l);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 60;
        for (int i = 0; i < 4; i++) {
                assert_int_equal(pthread_timedjoin_np(t[i], NULL, &until), 0);
                assert_true(w[i].got);
        }
        rkl_latch_destroy(&l);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_closed_times_out),
            cmocka_unit_test(test_open_wakes_all),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
