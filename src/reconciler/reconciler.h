/* The reconciler thread: owns sd-event and the systemd bus, probes the machine, and (as the
 * project grows) drives rkt and systemd toward the desired state in the store. */
#pragma once

#include <stdint.h>

#include "base/error.h"

typedef struct rkl_cache rkl_cache;
typedef struct rkl_reconciler rkl_reconciler;

typedef struct rkl_store_options rkl_store_options;

typedef struct rkl_reconciler_config {
        const char *db_path; /* the thread opens its own connection */
        const rkl_store_options *store_opts;
        const char *rkt_path; /* NULL: no rkt was found */
        const char *rkt_data_dir;
        const char *systemd_bus; /* NULL: the system bus */
        uint64_t probe_interval_usec;
} rkl_reconciler_config;

int rkl_reconciler_new(const rkl_reconciler_config *cfg, rkl_cache *cache, rkl_reconciler **ret,
                       rkl_error *reterr);
/* Starts the thread; returns once the first probe is in the cache, so that the first
 * Status answer is already true. */
int rkl_reconciler_start(rkl_reconciler *r, rkl_error *reterr);
/* Wakes the thread; callable from any thread. */
void rkl_reconciler_kick(rkl_reconciler *r);
/* Stops and joins the thread. */
void rkl_reconciler_stop(rkl_reconciler *r);
rkl_reconciler *rkl_reconciler_free(rkl_reconciler *r);

RKL_DEFINE_CLEANUP(rkl_reconciler *, rkl_reconciler_free)
