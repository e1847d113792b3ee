/* The status cache: what List and Status calls read, so that the read path never touches
 * SQLite or rkt. It is the only mutable structure shared between threads. Only the
 * store's writes (store.h) put objects in; everyone reads.
 *
 * Entries are immutable, refcounted views of store records: a writer builds a new view
 * and swaps it in; readers take references under a short lock and read without it. Each
 * view carries its record's store version, and a put never replaces a newer view with an
 * older one, so writers racing from different threads cannot make the cache go back in
 * time. Deletions leave a versioned tombstone for the same reason. */
#pragma once

#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/macro.h"
#include "store/db.h"

/* What the last probe of the machine found. */
typedef struct rkl_health {
        bool rkt_ok;
        char *rkt_version; /* "1.30.0" */
        char *rkt_detail;  /* the first lines of `rkt version`, or why rkt is unusable */
        /* rkt and its stage1 carry the fixes rktlet relies on (rkt/build.h): the patch set,
         * or what is missing and what to do. */
        bool rkt_patched;
        char *rkt_patches;
        bool systemd_ok;
        char *systemd_version;
        char *systemd_detail; /* why the bus is unusable */
        /* Pod networking: ready, or why not (a reason in CRI's words and a message). */
        bool net_ok;
        char *net_reason, *net_detail;
        char *net_config;  /* the configuration in use: its file and network name */
        int64_t probed_ns; /* realtime ns; 0: never probed */
} rkl_health;

void rkl_health_done(rkl_health *h);
void rkl_health_copy(rkl_health *dst, const rkl_health *src);

/* What a sandbox and a container report: desired and observed state summed up in one word.
 * (The API maps them onto CRI's PodSandboxState and ContainerState at its edge.) */
typedef enum rkl_pod_readiness {
        RKL_POD_READY = 0,
        RKL_POD_NOT_READY = 1,
} rkl_pod_readiness;

typedef enum rkl_container_state {
        RKL_CONTAINER_CREATED = 0,
        RKL_CONTAINER_RUNNING = 1,
        RKL_CONTAINER_EXITED = 2,
        RKL_CONTAINER_UNKNOWN = 3,
} rkl_container_state;

/* Bytes a reader derives from a view, made at most once by whoever needs them first. The
 * cache neither makes nor reads them; the API keeps each view's encoding here, so that a
 * relist of unchanged objects only copies. */
typedef struct rkl_blob {
        size_t len;
        unsigned char data[];
} rkl_blob;

typedef struct rkl_pod_view {
        int refs;            /* atomic */
        rkl_pod_record *rec; /* owned, never modified once published */
        rkl_pod_readiness state;
        _Atomic(rkl_blob *) memo;
} rkl_pod_view;

typedef struct rkl_container_view {
        int refs;
        rkl_container_record *rec;
        rkl_container_state state;
        char *log_path; /* the sandbox's log_directory joined with the container's log_path */
        _Atomic(rkl_blob *) memo;
} rkl_container_view;

/* The blob in slot, or candidate installed there; the loser of a race is freed. */
const rkl_blob *rkl_blob_publish(_Atomic(rkl_blob *) *slot, rkl_blob *candidate);

/* Wrap a record (taken over) in a view with one reference. log_directory is the sandbox's
 * (for the container's full log path), may be NULL. */
rkl_pod_view *rkl_pod_view_new(rkl_pod_record *rec);
rkl_container_view *rkl_container_view_new(rkl_container_record *rec, const char *log_directory);
rkl_pod_view *rkl_pod_view_ref(rkl_pod_view *v);
rkl_pod_view *rkl_pod_view_unref(rkl_pod_view *v);
rkl_container_view *rkl_container_view_ref(rkl_container_view *v);
rkl_container_view *rkl_container_view_unref(rkl_container_view *v);
RKL_DEFINE_CLEANUP(rkl_pod_view *, rkl_pod_view_unref)
RKL_DEFINE_CLEANUP(rkl_container_view *, rkl_container_view_unref)
void rkl_pod_views_unref(rkl_pod_view **v, size_t n); /* and frees the array */
void rkl_container_views_unref(rkl_container_view **v, size_t n);

rkl_pod_readiness rkl_pod_readiness_of(const rkl_pod_record *rec);
rkl_container_state rkl_container_state_of(const rkl_container_record *rec);

typedef struct rkl_cache rkl_cache;

rkl_cache *rkl_cache_new(void);
rkl_cache *rkl_cache_free(rkl_cache *c);
RKL_DEFINE_CLEANUP(rkl_cache *, rkl_cache_free)

/* The container events of the changes published to this cache (events.h): made with it,
 * freed with it. */
typedef struct rkl_events rkl_events;
rkl_events *rkl_cache_events(rkl_cache *c);

void rkl_cache_set_health(rkl_cache *c, const rkl_health *h); /* copies in */
void rkl_cache_get_health(rkl_cache *c, rkl_health *ret);     /* copies out */
/* Whether the machine has been probed once since the start (health is then real). */
bool rkl_cache_health_known(rkl_cache *c);
/* Waits for that first probe at most timeout_usec; returns rkl_cache_health_known(). */
bool rkl_cache_wait_health(rkl_cache *c, uint64_t timeout_usec);

/* Every put, removal and failure change counts one change. rkl_cache_wait_change waits
 * until the count is no longer seen (a count read before looking at the cache, so that no
 * change between the look and the wait is missed) or timeout_usec has passed, and returns
 * the count then: a --wait reply wakes at the change it waits for, not at a poll. */
uint64_t rkl_cache_changes(rkl_cache *c);
uint64_t rkl_cache_wait_change(rkl_cache *c, uint64_t seen, uint64_t timeout_usec);

/* Takes over the caller's reference. Returns false (and drops v) when the cache already
 * holds a newer version of the object, or a newer tombstone. */
bool rkl_cache_pod_put(rkl_cache *c, rkl_pod_view *v);
bool rkl_cache_container_put(rkl_cache *c, rkl_container_view *v);
/* Removes the object, leaving a tombstone at version: older puts are ignored from now. */
void rkl_cache_pod_remove(rkl_cache *c, const char *id, uint64_t version);
void rkl_cache_container_remove(rkl_cache *c, const char *id, uint64_t version);

/* Sandboxes withdrawn after their RunPodSandbox failed (store/db.h, rkl_pod_failure): the
 * waiting call's answer, and the reconciler's work until they are undone. put copies in
 * (replacing one of the same sandbox); undone marks one done at now_ns, kept that way for a
 * while longer than any call waits (then dropped), so that a call finds its answer however
 * fast the undo was; get copies out, false when there is none; ids: those not undone yet,
 * NULL when none. */
void rkl_cache_failure_put(rkl_cache *c, const rkl_pod_failure *f);
void rkl_cache_failure_undone(rkl_cache *c, const char *id, int64_t now_ns);
bool rkl_cache_failure_get(rkl_cache *c, const char *id, int *ret_code, char **ret_message,
                           bool *ret_undone);
char **rkl_cache_failure_ids(rkl_cache *c, int64_t now_ns);

/* Objects whose committed change could not be published (reading it back failed): the
 * store marks them and publishes them again later (rkl_store_republish()). take
 * moves the marked IDs out into strvs (NULL when none). */
void rkl_cache_mark_stale(rkl_cache *c, bool pod, const char *id);
void rkl_cache_take_stale(rkl_cache *c, char ***ret_pods, char ***ret_containers);

/* A new reference, or NULL. */
rkl_pod_view *rkl_cache_pod_get(rkl_cache *c, const char *id);
rkl_container_view *rkl_cache_container_get(rkl_cache *c, const char *id);
/* By full ID or unique prefix: -ENOENT none, -ENOTUNIQ several. */
int rkl_cache_pod_resolve(rkl_cache *c, const char *prefix, rkl_pod_view **ret);
int rkl_cache_container_resolve(rkl_cache *c, const char *prefix, rkl_container_view **ret);

typedef struct rkl_view_filter {
        const char *id;         /* full ID or unique prefix */
        const char *sandbox_id; /* containers: full ID or unique prefix */
        bool by_state;
        int state;                     /* rkl_pod_readiness or rkl_container_state */
        const rkl_kvs *label_selector; /* every pair must be among the labels */
} rkl_view_filter;

/* Matching views (new references), oldest first. */
int rkl_cache_pod_list(rkl_cache *c, const rkl_view_filter *f, rkl_pod_view ***ret, size_t *ret_n);
int rkl_cache_container_list(rkl_cache *c, const rkl_view_filter *f, rkl_container_view ***ret,
                             size_t *ret_n);
