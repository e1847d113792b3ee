/* The status cache: the only mutable structure shared between threads. Writers (the
 * reconciler) copy in, readers (API handlers) copy out; no interior pointer escapes. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/macro.h"

/* What the last probe of the machine found. */
typedef struct rkl_health {
        bool rkt_ok;
        char *rkt_version; /* "1.30.0" */
        char *rkt_detail;  /* the first lines of `rkt version`, or why rkt is unusable */
        bool systemd_ok;
        char *systemd_version;
        char *systemd_detail; /* why the bus is unusable */
        int64_t probed_at;    /* realtime ns; 0: never probed */
} rkl_health;

void rkl_health_done(rkl_health *h);
void rkl_health_copy(rkl_health *dst, const rkl_health *src);

typedef struct rkl_cache rkl_cache;

rkl_cache *rkl_cache_new(void);
rkl_cache *rkl_cache_free(rkl_cache *c);
void rkl_cache_set_health(rkl_cache *c, const rkl_health *h); /* copies in */
void rkl_cache_get_health(rkl_cache *c, rkl_health *ret);     /* copies out */

RKL_DEFINE_CLEANUP(rkl_cache *, rkl_cache_free)
