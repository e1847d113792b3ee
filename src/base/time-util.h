/* Monotonic and wall clocks in usec/nsec. */
#pragma once

#include <stdint.h>
#include <time.h>

#define USEC_PER_SEC  UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define NSEC_PER_SEC  UINT64_C(1000000000)
#define NSEC_PER_USEC UINT64_C(1000)
#define USEC_INFINITY UINT64_MAX

uint64_t rkl_now_usec(clockid_t clock);
int64_t rkl_realtime_nsec(void);
int64_t rkl_timespec_nsec(const struct timespec *ts);
