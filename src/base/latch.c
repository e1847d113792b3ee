#include "latch.h"

#include <time.h>

#include "macro.h"
#include "time-util.h"
#include "banned.h"

void rkl_latch_init(rkl_latch *l)
{
        pthread_condattr_t a;
        (void)pthread_mutex_init(&l->lock, NULL);
        (void)pthread_condattr_init(&a);
        /* Deadlines survive wall clock steps. */
        (void)pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
        (void)pthread_cond_init(&l->cond, &a);
        (void)pthread_condattr_destroy(&a);
        l->open = false;
}

void rkl_latch_destroy(rkl_latch *l)
{
        (void)pthread_cond_destroy(&l->cond);
        (void)pthread_mutex_destroy(&l->lock);
}

void rkl_latch_open(rkl_latch *l)
{
        RKL_GUARD(&l->lock);
        l->open = true;
        (void)pthread_cond_broadcast(&l->cond);
}

bool rkl_latch_is_open(rkl_latch *l)
{
        RKL_GUARD(&l->lock);
        return l->open;
}

bool rkl_latch_wait(rkl_latch *l, uint64_t timeout_usec)
{
        struct timespec ts = rkl_timespec_from_usec(rkl_now_usec(CLOCK_MONOTONIC) + timeout_usec);
        RKL_GUARD(&l->lock);
        while (!l->open)
                if (pthread_cond_timedwait(&l->cond, &l->lock, &ts) != 0)
                        break; /* ETIMEDOUT: one last look below */
        return l->open;
}
