/* Latency samples and their summary. */
#include <time.h>

#include "stats.h"
#include "base/alloc.h"
#include "base/time-util.h"
#include "base/banned.h"

void rkb_samples_add(rkb_samples *s, uint64_t ns)
{
        if (s->n == s->cap) {
                s->cap = s->cap ? s->cap * 2 : 256;
                s->v = rkl_xrealloc(s->v, s->cap * sizeof(*s->v));
        }
        s->v[s->n++] = ns;
}

void rkb_samples_release(rkb_samples *s)
{
        s->v = mfree(s->v);
        s->n = s->cap = 0;
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest sample with at least q of all samples at or below it. */
static double rank(const rkb_samples *s, double q)
{
        size_t i = (size_t)(q * (double)s->n + 0.999999);
        if (i < 1)
                i = 1;
        if (i > s->n)
                i = s->n;
        return (double)s->v[i - 1] / NSEC_PER_USEC;
}

void rkb_samples_summarize(rkb_samples *s, rkb_summary *ret)
{
        rkb_summary r = {.n = s->n};
        if (s->n > 0) {
                double sum = 0;
                qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
                for (size_t i = 0; i < s->n; i++)
                        sum += (double)s->v[i];
                r.mean_usec = sum / (double)s->n / NSEC_PER_USEC;
                r.p50_usec = rank(s, 0.50);
                r.p90_usec = rank(s, 0.90);
                r.p99_usec = rank(s, 0.99);
                r.min_usec = (double)s->v[0] / NSEC_PER_USEC;
                r.max_usec = (double)s->v[s->n - 1] / NSEC_PER_USEC;
        }
        *ret = r;
}

uint64_t rkb_now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

void rkb_sleep_ms(unsigned n)
{
        struct timespec ts = {.tv_sec = n / MSEC_PER_SEC,
                              .tv_nsec = (long)(n % MSEC_PER_SEC * NSEC_PER_MSEC)};
        nanosleep(&ts, NULL);
}
