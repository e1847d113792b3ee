#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/workpool.h"

#define JOBS    60
#define WORKERS 3

typedef struct counter {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool counted; /* the test has looked at what is pending */
        int started, running, max_running, done;
} counter;

/* Each job waits, holding its worker, until the test has looked and then until every
 * worker holds one (or no job is left to start): so jobs are pending when the test looks,
 * and the pool's bound is reached, however the machine schedules the threads. */
static void job(void *userdata)
{
        counter *c = userdata;
        pthread_mutex_lock(&c->lock);
        c->started++;
        if (++c->running > c->max_running)
                c->max_running = c->running;
        pthread_cond_broadcast(&c->cond);
        while (!c->counted || (c->running < WORKERS && c->started < JOBS))
                pthread_cond_wait(&c->cond, &c->lock);
        c->running--;
        c->done++;
        pthread_mutex_unlock(&c->lock);
}

static void test_bounded_and_drained(void **state)
{
        counter c = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
        rkl_workpool *p = rkl_workpool_new(WORKERS, "test");
        for (int i = 0; i < JOBS; i++)
                rkl_workpool_submit(p, job, &c);
        assert_true(rkl_workpool_pending(p) > 0);
        pthread_mutex_lock(&c.lock);
        c.counted = true;
        pthread_cond_broadcast(&c.cond);
        pthread_mutex_unlock(&c.lock);
        /* Freeing runs what is queued: nothing submitted is lost. */
        rkl_workpool_free(p);
        assert_int_equal(c.done, JOBS);
        assert_int_equal(c.max_running, WORKERS);
}

typedef struct gate {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool open;
        int done;
} gate;

static void wait_gate(void *userdata)
{
        gate *g = userdata;
        pthread_mutex_lock(&g->lock);
        while (!g->open)
                pthread_cond_wait(&g->cond, &g->lock);
        g->done++;
        pthread_mutex_unlock(&g->lock);
}

/* A bounded submit admits running plus waiting jobs up to its bound, no more. */
static void test_submit_bounded(void **state)
{
        gate g = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
        rkl_workpool *p = rkl_workpool_new(2, "test");
        for (int i = 0; i < 5; i++)
                assert_int_equal(rkl_workpool_submit_bounded(p, 5, wait_gate, &g), 0);
        assert_int_equal(rkl_workpool_submit_bounded(p, 5, wait_gate, &g), -EBUSY);
        assert_int_equal(rkl_workpool_pending(p), 5);
        pthread_mutex_lock(&g.lock);
        g.open = true;
        pthread_cond_broadcast(&g.cond);
        pthread_mutex_unlock(&g.lock);
        rkl_workpool_free(p);
        assert_int_equal(g.done, 5);
}

int main(void)
{
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_bounded_and_drained),
                                           cmocka_unit_test(test_submit_bounded)};
        return cmocka_run_group_tests(tests, NULL, NULL);
}
