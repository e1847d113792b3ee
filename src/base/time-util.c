#include "time-util.h"

#include "banned.h"

uint64_t rkl_now_usec(clockid_t clock)
{
        struct timespec ts;
        (void)clock_gettime(clock, &ts);
        return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / NSEC_PER_USEC;
}

int64_t rkl_timespec_ns(const struct timespec *ts)
{
        return (int64_t)ts->tv_sec * (int64_t)NSEC_PER_SEC + ts->tv_nsec;
}

struct timespec rkl_timespec_from_usec(uint64_t usec)
{
        return (struct timespec){.tv_sec = (time_t)(usec / USEC_PER_SEC),
                                 .tv_nsec = (long)(usec % USEC_PER_SEC * NSEC_PER_USEC)};
}

int rkl_poll_timeout_ms(uint64_t now_usec, uint64_t deadline_usec)
{
        if (deadline_usec <= now_usec)
                return 0;
        uint64_t left = deadline_usec - now_usec;
        uint64_t ms = left / USEC_PER_MSEC + (left % USEC_PER_MSEC != 0);
        return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

int64_t rkl_realtime_ns(void)
{
        struct timespec ts;
        (void)clock_gettime(CLOCK_REALTIME, &ts);
        return rkl_timespec_ns(&ts);
}
