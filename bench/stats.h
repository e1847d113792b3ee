/* Latency samples and their summary: nearest-rank percentiles over every sample kept. */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef struct rkb_samples {
        uint64_t *v; /* nanoseconds */
        size_t n, cap;
} rkb_samples;

typedef struct rkb_summary {
        size_t n;
        double mean_usec, p50_usec, p90_usec, p99_usec, max_usec, min_usec;
} rkb_summary;

void rkb_samples_add(rkb_samples *s, uint64_t ns);
void rkb_samples_release(rkb_samples *s);
/* Sorts s in place. An empty s gives n = 0 and zeros. */
void rkb_samples_summarize(rkb_samples *s, rkb_summary *ret);

/* CLOCK_MONOTONIC in ns, and a sleep of n ms. */
uint64_t rkb_now_ns(void);
void rkb_sleep_ms(unsigned n);
