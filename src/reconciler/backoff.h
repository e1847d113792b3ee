/* Retries and their backoff: how long a failed step waits before it is tried again, and the
 * failures of steps that have no record to keep them in (a leftover's rm, a forgotten
 * sandbox's network DEL). Reconciler thread only. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/model.h"

/* The wait after the given number of failures: 500 ms, doubling, at most 60 s. */
int64_t rkl_backoff_ns(uint32_t attempts);

/* The failures of steps keyed by an object's ID or a pod's uuid. */
typedef struct rkl_backoff rkl_backoff;

typedef struct rkl_backoff_entry {
        char key[RKL_ID_LEN + 1];
        uint32_t attempts;
        int64_t next_ns; /* tried again from then on (after the backoff) */
} rkl_backoff_entry;

rkl_backoff *rkl_backoff_new(void);
rkl_backoff *rkl_backoff_free(rkl_backoff *b);
/* Counts a failure of key's step at now and puts its next try off by the backoff; returns
 * the entry (the caller wakes a pass at its next_ns). */
const rkl_backoff_entry *rkl_backoff_failed(rkl_backoff *b, const char *key, int64_t now);
/* Whether key's step waits for its next try at now; *ret_next_ns: when (set only then). */
bool rkl_backoff_waits(const rkl_backoff *b, const char *key, int64_t now, int64_t *ret_next_ns);
/* The failures counted for key (0: none). */
uint32_t rkl_backoff_attempts(const rkl_backoff *b, const char *key);
/* A success: key's failures are forgotten. */
void rkl_backoff_forget(rkl_backoff *b, const char *key);
/* Forgets the entries whose next try is more than older_ns before now (not tried again long
 * after their time: their object has gone). */
void rkl_backoff_drop_stale(rkl_backoff *b, int64_t now, int64_t older_ns);
