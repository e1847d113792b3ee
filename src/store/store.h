/* The store's one door for writes. Each write commits one transaction to SQLite
 * (db.h) and then publishes what it committed to the status cache (cache.h), in that
 * order, whichever thread writes: the API's handlers and the reconciler alike. Publishing
 * is also where container events are made (events.h): each change swapped into the cache
 * emits the events it amounts to, in the order of the swaps. Reads go to the cache
 * directly; the store is read only by whoever needs what the cache does not hold.
 *
 * One rkl_store per thread: it owns that thread's store connection and shares the cache.
 *
 * Errors are the store's (-errno, message in reterr). -ENOENT means the object is gone from
 * the store; it is then gone from the cache too. A commit whose publish fails (reading the
 * record back failed) still returns success, since it committed: the object is marked
 * stale and rkl_store_republish() publishes it later. */
#pragma once

#include "base/error.h"
#include "base/macro.h"
#include "base/model.h"
#include "store/cache.h"
#include "store/db.h"

typedef struct rkl_store rkl_store;

/* Takes over store (closed by rkl_store_free()); borrows cache, which must outlive it. */
rkl_store *rkl_store_new(rkl_db *db, rkl_cache *cache);
rkl_store *rkl_store_free(rkl_store *st);
RKL_DEFINE_CLEANUP(rkl_store *, rkl_store_free)

rkl_db *rkl_store_db(rkl_store *st);

/* Loads every record of the store into the (empty) cache: the start of the daemon. No
 * event: nothing changed. */
int rkl_store_load(rkl_store *st, size_t *ret_pods, size_t *ret_containers, rkl_error *reterr);

/* Publishes again what rkl_cache_mark_stale() holds. -errno of the first failure (those
 * that failed stay marked). */
int rkl_store_republish(rkl_store *st, rkl_error *reterr);

/* CRI's writes. The creates take spec over (it is moved into the record). */
int rkl_store_pod_create(rkl_store *st, const char *pod_id, rkl_pod_spec *spec, rkl_error *reterr);
/* The sandbox and all its containers to stopped. */
int rkl_store_pod_stop(rkl_store *st, const char *pod_id, rkl_error *reterr);
/* With its containers. */
int rkl_store_pod_delete(rkl_store *st, const char *pod_id, rkl_error *reterr);
int rkl_store_container_create(rkl_store *st, const char *container_id, const char *pod_id,
                               const char *app_name, const char *image_id, rkl_container_spec *spec,
                               rkl_error *reterr);
/* 1 when it changed, 0 when it was wanted running already; -EBADFD as the store says. */
int rkl_store_container_start(rkl_store *st, const char *container_id, rkl_error *reterr);
int rkl_store_container_stop(rkl_store *st, const char *container_id, int64_t deadline_ns,
                             rkl_error *reterr);
int rkl_store_container_delete(rkl_store *st, const char *container_id, rkl_error *reterr);
/* UpdateContainerResources: persisted, then published (the reconciler applies them). */
int rkl_store_container_set_resources(rkl_store *st, const char *container_id,
                                      const rkl_resources *res, rkl_error *reterr);

/* The reconciler's writes: what it observed and how its attempts went. record_error
 * returns the new attempt count. */
int rkl_store_pod_set_observed(rkl_store *st, const char *pod_id, const rkl_pod_observed *o,
                               rkl_error *reterr);
int rkl_store_pod_set_rkt_uuid(rkl_store *st, const char *pod_id, const char *uuid,
                               rkl_error *reterr);
int rkl_store_pod_set_resources(rkl_store *st, const char *pod_id, const rkl_resources *res,
                                rkl_error *reterr);
int rkl_store_pod_set_unit_name(rkl_store *st, const char *pod_id, const char *unit,
                                rkl_error *reterr);
int rkl_store_pod_record_error(rkl_store *st, const char *pod_id, const char *error,
                               int64_t next_retry_ns, rkl_error *reterr);
int rkl_store_pod_clear_error(rkl_store *st, const char *pod_id, rkl_error *reterr);
/* A sandbox that failed for good while its RunPodSandbox waited (--wait): its row deleted
 * and its failure recorded in one commit (db.h), then published: gone from the lists, its
 * failure in the cache's (the waiting call answers with it). The reconciler undoes what is
 * left of it, then forgets the failure. -ENOENT: the sandbox was removed meanwhile. */
int rkl_store_pod_withdraw(rkl_store *st, const rkl_pod_failure *f, rkl_error *reterr);
int rkl_store_pod_failure_forget(rkl_store *st, const char *pod_id, rkl_error *reterr);
int rkl_store_container_set_observed(rkl_store *st, const char *container_id,
                                     const rkl_container_observed *o, rkl_error *reterr);
int rkl_store_container_record_error(rkl_store *st, const char *container_id, const char *error,
                                     int64_t next_retry_ns, rkl_error *reterr);
int rkl_store_container_clear_error(rkl_store *st, const char *container_id, rkl_error *reterr);
