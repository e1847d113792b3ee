#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/workpool.h"

typedef struct counter {
        pthread_mutex_t lock;
        int running, max_running, done;
} counter;

static void job(void *userdata)
{
        counter *c = userdata;
        pthread_mutex_lock(&c->lock);
        if (++c->running > c->max_running)
                c->max_running = c->running;
        pthread_mutex_unlock(&c->lock);
        usleep(2000);
        pthread_mutex_lock(&c->lock);
        c->running--;
        c->done++;
        pthread_mutex_unlock(&c->lock);
}

static void test_bounded_and_drained(void **state)
{
        counter c = {.lock = PTHREAD_MUTEX_INITIALIZER};
        rkl_workpool *p = rkl_workpool_new(3, "test");
        for (int i = 0; i < 60; i++)
                rkl_workpool_submit(p, job, &c);
        assert_true(rkl_workpool_pending(p) > 0);
        /* Freeing runs what is queued: nothing submitted is lost. */
        rkl_workpool_free(p);
        assert_int_equal(c.done, 60);
        assert_true(c.max_running <= 3);
        assert_true(c.max_running >= 2);
}

int main(void)
{
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_bounded_and_drained)};
        return cmocka_run_group_tests(tests, NULL, NULL);
}
