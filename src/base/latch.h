/* A one-shot gate: closed until someone opens it, then open for good. Threads that need
 * something done once (the first probe of the machine, the first image list) wait on it
 * with a deadline instead of polling. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct rkl_latch {
        pthread_mutex_t lock;
        pthread_cond_t cond; /* CLOCK_MONOTONIC */
        bool open;
} rkl_latch;

void rkl_latch_init(rkl_latch *l);
void rkl_latch_destroy(rkl_latch *l);
/* Opens it and wakes every waiter; opening again does nothing. */
void rkl_latch_open(rkl_latch *l);
bool rkl_latch_is_open(rkl_latch *l);
/* Waits until it is open or timeout_usec has passed; returns whether it is open. */
bool rkl_latch_wait(rkl_latch *l, uint64_t timeout_usec);
