#include "time-util.h"

#include "banned.h"

uint64_t rkl_now_usec(clockid_t clock)
{
        struct timespec ts;
        (void)clock_gettime(clock, &ts);
        return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / NSEC_PER_USEC;
}

int64_t rkl_timespec_nsec(const struct timespec *ts)
{
        return (int64_t)ts->tv_sec * (int64_t)NSEC_PER_SEC + ts->tv_nsec;
}

int64_t rkl_realtime_nsec(void)
{
        struct timespec ts;
        (void)clock_gettime(CLOCK_REALTIME, &ts);
        return rkl_timespec_nsec(&ts);
}
