/* The clocks, and the units time is counted in (CONTRIBUTING.md, 'Time'): an instant of the
 * wall clock (CLOCK_REALTIME) is int64_t nanoseconds, `_ns`, as CRI and the store count it;
 * the monotonic clock and every duration handed to a timer, a poll or a deadline are
 * uint64_t microseconds, `_usec`, as sd-event counts them. A value goes from one to the other
 * with these constants, never with a bare 1000. */
#pragma once

#include <stdint.h>
#include <time.h>

#define USEC_PER_SEC  UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define NSEC_PER_SEC  UINT64_C(1000000000)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_USEC UINT64_C(1000)
#define MSEC_PER_SEC  UINT64_C(1000)
#define USEC_INFINITY UINT64_MAX

uint64_t rkl_now_usec(clockid_t clock);
int64_t rkl_realtime_ns(void);
int64_t rkl_timespec_ns(const struct timespec *ts);
/* The timespec of usec: for pthread_cond_timedwait() and the like. */
struct timespec rkl_timespec_from_usec(uint64_t usec);
/* A poll(2) timeout in ms for the time from now_usec to deadline_usec, rounded up so that
 * the poll does not wake before the deadline: 0 once it has passed. */
int rkl_poll_timeout_ms(uint64_t now_usec, uint64_t deadline_usec);
