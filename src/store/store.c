#include "store.h"

#include "events.h"

#include "base/alloc.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/banned.h"

struct rkl_store {
        rkl_db *db;
        rkl_cache *cache;
};

rkl_store *rkl_store_new(rkl_db *db, rkl_cache *cache)
{
        rkl_store *st = rkl_xnew0(rkl_store, 1);
        st->db = db;
        st->cache = cache;
        return st;
}

rkl_store *rkl_store_free(rkl_store *st)
{
        if (!st)
                return NULL;
        rkl_db_close(st->db);
        free(st);
        return NULL;
}

rkl_db *rkl_store_db(rkl_store *st)
{
        return st->db;
}

/* ---- Publishing what was committed ---- */

/* The events of one change (types, n) about object id, each with the sandbox and all its
 * containers as the cache holds them now: pod is the sandbox's view (NULL: the cache's).
 * Publish lock held, so that nothing changes the cache meanwhile. */
static void emit(rkl_store *st, const rkl_event_type *types, size_t n, bool about_pod,
                 const char *id, const char *sandbox_id, rkl_pod_view *pod)
{
        rkl_view_filter f = {.sandbox_id = sandbox_id};

        for (size_t i = 0; i < n; i++) {
                rkl_container_view **containers;
                size_t n_containers;
                rkl_cache_container_list(st->cache, &f, &containers, &n_containers);
                rkl_pod_view *p =
                    pod ? rkl_pod_view_ref(pod) : rkl_cache_pod_get(st->cache, sandbox_id);
                rkl_events_emit(
                    rkl_cache_events(st->cache),
                    rkl_event_new(types[i], about_pod, id, p, containers, n_containers));
        }
}

/* Swaps the view in, and emits the events of the change unless quiet (the load at start,
 * which changes nothing). */
static void put_pod(rkl_store *st, rkl_pod_record *rec, bool quiet)
{
        rkl_events *events = rkl_cache_events(st->cache);
        rkl_pod_view *v = rkl_pod_view_new(rec);

        if (quiet) {
                rkl_cache_pod_put(st->cache, v);
                return;
        }
        rkl_events_publish_lock(events);
        rkl_pod_view *before = rkl_cache_pod_get(st->cache, v->rec->id);
        if (rkl_cache_pod_put(st->cache, rkl_pod_view_ref(v))) {
                rkl_event_type t[RKL_EVENT_DERIVE_MAX];
                size_t n = rkl_event_derive_pod(before ? before->rec : NULL, v->rec, t);
                emit(st, t, n, true, v->rec->id, v->rec->id, v);
        }
        rkl_events_publish_unlock(events);
        rkl_pod_view_unref(before);
        rkl_pod_view_unref(v);
}

/* A container's view carries its full log path, which needs its sandbox's log directory. */
static void put_container(rkl_store *st, rkl_container_record *rec, bool quiet)
{
        rkl_events *events = rkl_cache_events(st->cache);
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *pod =
            rkl_cache_pod_get(st->cache, rec->sandbox_id);
        rkl_container_view *v =
            rkl_container_view_new(rec, pod ? pod->rec->spec.log_directory : NULL);

        if (quiet) {
                rkl_cache_container_put(st->cache, v);
                return;
        }
        rkl_events_publish_lock(events);
        rkl_container_view *before = rkl_cache_container_get(st->cache, v->rec->id);
        if (rkl_cache_container_put(st->cache, rkl_container_view_ref(v))) {
                rkl_event_type t[RKL_EVENT_DERIVE_MAX];
                size_t n = rkl_event_derive_container(before ? before->rec : NULL, v->rec, t);
                emit(st, t, n, false, v->rec->id, v->rec->sandbox_id, NULL);
        }
        rkl_events_publish_unlock(events);
        rkl_container_view_unref(before);
        rkl_container_view_unref(v);
}

/* Newer than the delete: the generation read after it committed. IDs are never reused, so
 * when it cannot be read, a tombstone newer than everything loses nothing. */
static uint64_t tombstone_version(rkl_store *st)
{
        uint64_t gen;
        return rkl_db_generation(st->db, &gen, NULL) < 0 ? UINT64_MAX : gen;
}

static void forget_pod(rkl_store *st, const char *id)
{
        static const rkl_event_type deleted[] = {RKL_EVENT_DELETED};
        rkl_events *events = rkl_cache_events(st->cache);
        uint64_t version = tombstone_version(st);
        rkl_view_filter f = {.sandbox_id = id};
        rkl_container_view **containers;
        size_t n;

        rkl_events_publish_lock(events);
        rkl_pod_view *last = rkl_cache_pod_get(st->cache, id);
        /* The sandbox first: a container published after this finds it gone and asks the
         * store again (recheck_sandbox()), so none can outlive it. */
        rkl_cache_pod_remove(st->cache, id, version);
        rkl_cache_container_list(st->cache, &f, &containers, &n);
        /* Its containers' deletions before its own, each with the sandbox as it last was:
         * kubelet forgets a pod at its sandbox's deletion, and ignores events after. */
        for (size_t i = 0; i < n; i++) {
                rkl_cache_container_remove(st->cache, containers[i]->rec->id, version);
                if (last)
                        emit(st, deleted, 1, false, containers[i]->rec->id, id, last);
        }
        if (last)
                emit(st, deleted, 1, true, id, id, last);
        rkl_events_publish_unlock(events);
        rkl_container_views_unref(containers, n);
        rkl_pod_view_unref(last);
}

static void forget_container(rkl_store *st, const char *id)
{
        static const rkl_event_type deleted[] = {RKL_EVENT_DELETED};
        rkl_events *events = rkl_cache_events(st->cache);
        uint64_t version = tombstone_version(st);

        rkl_events_publish_lock(events);
        rkl_container_view *before = rkl_cache_container_get(st->cache, id);
        rkl_cache_container_remove(st->cache, id, version);
        if (before)
                emit(st, deleted, 1, false, id, before->rec->sandbox_id, NULL);
        rkl_events_publish_unlock(events);
        rkl_container_view_unref(before);
}

/* Reads the object back and publishes it. A failure leaves it marked stale: the commit
 * stands, and the cache catches up at the next rkl_store_republish(). */
static int publish_pod(rkl_store *st, const char *id, rkl_error *reterr)
{
        rkl_pod_record *rec = NULL;
        int r = rkl_db_pod_get(st->db, id, &rec, reterr);
        if (r == -ENOENT) {
                forget_pod(st, id); /* removed by another call meanwhile */
                return 0;
        }
        if (r < 0) {
                rkl_cache_mark_stale(st->cache, true, id);
                return r;
        }
        put_pod(st, rec, false);
        return 0;
}

static int publish_container(rkl_store *st, const char *id, rkl_error *reterr)
{
        rkl_container_record *rec = NULL;
        int r = rkl_db_container_get(st->db, id, &rec, reterr);
        if (r == -ENOENT) {
                forget_container(st, id);
                return 0;
        }
        if (r < 0) {
                rkl_cache_mark_stale(st->cache, false, id);
                return r;
        }
        put_container(st, rec, false);
        return 0;
}

/* After a container's put: if its sandbox is being removed, RemovePodSandbox may have
 * listed the sandbox's containers before the put, and could not tombstone this one. Then
 * ask the store again. */
static void recheck_sandbox(rkl_store *st, const char *id, const char *sandbox_id)
{
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *pod = rkl_cache_pod_get(st->cache, sandbox_id);
        if (!pod)
                (void)publish_container(st, id, NULL); /* a failure marks it stale */
}

/* The record a write handed back (taken over), then the sandbox recheck. */
static void publish_container_record(rkl_store *st, rkl_container_record *rec)
{
        char id[RKL_ID_LEN + 1], sandbox_id[RKL_ID_LEN + 1];
        memcpy(id, rec->id, sizeof(id));
        memcpy(sandbox_id, rec->sandbox_id, sizeof(sandbox_id));
        put_container(st, rec, false);
        recheck_sandbox(st, id, sandbox_id);
}

/* The outcome of a write on one object: gone means gone from the cache too; committed
 * means published (or marked stale: the commit stands either way). */
static int after_pod_write(rkl_store *st, const char *id, int r)
{
        if (r == -ENOENT)
                forget_pod(st, id);
        else if (r >= 0)
                (void)publish_pod(st, id, NULL); /* a failure marks it stale */
        return r;
}

static int after_container_write(rkl_store *st, const char *id, int r)
{
        if (r == -ENOENT)
                forget_container(st, id);
        else if (r >= 0 && publish_container(st, id, NULL) >= 0) {
                _cleanup_(rkl_container_view_unrefp) rkl_container_view *v =
                    rkl_cache_container_get(st->cache, id);
                if (v)
                        recheck_sandbox(st, id, v->rec->sandbox_id);
        }
        return r;
}

int rkl_store_load(rkl_store *st, size_t *ret_pods, size_t *ret_containers, rkl_error *reterr)
{
        rkl_pod_record **pods = NULL;
        rkl_container_record **containers = NULL;
        size_t n_pods = 0, n_containers = 0;
        int r;

        r = rkl_db_pod_list(st->db, NULL, &pods, &n_pods, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "cannot load sandboxes");
        r = rkl_db_container_list(st->db, NULL, &containers, &n_containers, reterr);
        if (r < 0) {
                rkl_pod_record_array_free(pods, n_pods);
                return rkl_error_prefix(reterr, "cannot load containers");
        }
        /* Sandboxes first: their containers' log paths are made from them. */
        for (size_t i = 0; i < n_pods; i++)
                put_pod(st, TAKE_PTR(pods[i]), true);
        for (size_t i = 0; i < n_containers; i++)
                put_container(st, TAKE_PTR(containers[i]), true);
        rkl_pod_record_array_free(pods, n_pods);
        rkl_container_record_array_free(containers, n_containers);
        rkl_pod_failure **failures = NULL;
        size_t n_failures = 0;
        r = rkl_db_pod_failure_list(st->db, &failures, &n_failures, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "cannot load failed sandboxes");
        for (size_t i = 0; i < n_failures; i++)
                rkl_cache_failure_put(st->cache, failures[i]);
        rkl_pod_failure_array_free(failures, n_failures);
        if (ret_pods)
                *ret_pods = n_pods;
        if (ret_containers)
                *ret_containers = n_containers;
        return 0;
}

int rkl_store_republish(rkl_store *st, rkl_error *reterr)
{
        _cleanup_strv_free_ char **pods = NULL, **containers = NULL;
        int first = 0;

        rkl_cache_take_stale(st->cache, &pods, &containers);
        RKL_STRV_FOREACH (id, pods) {
                int r = publish_pod(st, *id, first < 0 ? NULL : reterr);
                if (r < 0 && first == 0)
                        first = r;
        }
        RKL_STRV_FOREACH (id, containers) {
                int r = publish_container(st, *id, first < 0 ? NULL : reterr);
                if (r < 0 && first == 0)
                        first = r;
        }
        return first;
}

/* ---- CRI's writes ---- */

int rkl_store_pod_create(rkl_store *st, const char *pod_id, rkl_pod_spec *spec, rkl_error *reterr)
{
        rkl_pod_record *rec = NULL;
        int r = rkl_db_pod_create(st->db, pod_id, spec, &rec, reterr);
        if (r < 0)
                return r;
        put_pod(st, rec, false);
        return 0;
}

int rkl_store_pod_stop(rkl_store *st, const char *pod_id, rkl_error *reterr)
{
        int r = after_pod_write(st, pod_id, rkl_db_pod_stop(st->db, pod_id, reterr));
        if (r < 0)
                return r;

        /* The transaction stopped its containers too. */
        const rkl_container_filter f = {.sandbox_id = pod_id};
        rkl_container_record **recs = NULL;
        size_t n = 0;
        if (rkl_db_container_list(st->db, &f, &recs, &n, NULL) < 0) {
                /* Committed all the same: the ones the cache holds catch up later. */
                rkl_view_filter vf = {.sandbox_id = pod_id};
                rkl_container_view **views;
                rkl_cache_container_list(st->cache, &vf, &views, &n);
                for (size_t i = 0; i < n; i++)
                        rkl_cache_mark_stale(st->cache, false, views[i]->rec->id);
                rkl_container_views_unref(views, n);
                return 0;
        }
        for (size_t i = 0; i < n; i++)
                put_container(st, TAKE_PTR(recs[i]), false);
        rkl_container_record_array_free(recs, n);
        return 0;
}

int rkl_store_pod_delete(rkl_store *st, const char *pod_id, rkl_error *reterr)
{
        int r = rkl_db_pod_delete(st->db, pod_id, reterr);
        if (r >= 0 || r == -ENOENT)
                forget_pod(st, pod_id);
        return r;
}

int rkl_store_pod_withdraw(rkl_store *st, const rkl_pod_failure *f, rkl_error *reterr)
{
        int r = rkl_db_pod_withdraw(st->db, f, reterr);
        if (r >= 0)
                rkl_cache_failure_put(st->cache, f);
        if (r >= 0 || r == -ENOENT)
                forget_pod(st, f->sandbox_id);
        return r;
}

int rkl_store_pod_failure_forget(rkl_store *st, const char *pod_id, rkl_error *reterr)
{
        int r = rkl_db_pod_failure_delete(st->db, pod_id, reterr);
        if (r >= 0)
                rkl_cache_failure_undone(st->cache, pod_id, rkl_realtime_ns());
        return r;
}

int rkl_store_container_create(rkl_store *st, const char *container_id, const char *pod_id,
                               const char *app_name, const char *image_id, rkl_container_spec *spec,
                               rkl_error *reterr)
{
        rkl_container_record *rec = NULL;
        int r = rkl_db_container_create(st->db, container_id, pod_id, app_name, image_id, spec,
                                        &rec, reterr);
        if (r < 0)
                return r;
        publish_container_record(st, rec);
        return 0;
}

int rkl_store_container_start(rkl_store *st, const char *container_id, rkl_error *reterr)
{
        rkl_container_record *rec = NULL;
        int r = rkl_db_container_start(st->db, container_id, &rec, reterr);
        if (r == -ENOENT)
                forget_container(st, container_id);
        if (r <= 0) {
                rkl_container_record_free(rec); /* a repeated start: nothing changed */
                return r;
        }
        publish_container_record(st, rec);
        return r;
}

int rkl_store_container_stop(rkl_store *st, const char *container_id, int64_t deadline_ns,
                             rkl_error *reterr)
{
        rkl_container_record *rec = NULL;
        int r = rkl_db_container_stop(st->db, container_id, deadline_ns, &rec, reterr);
        if (r == -ENOENT)
                forget_container(st, container_id);
        if (r < 0)
                return r;
        publish_container_record(st, rec);
        return r;
}

int rkl_store_container_delete(rkl_store *st, const char *container_id, rkl_error *reterr)
{
        int r = rkl_db_container_delete(st->db, container_id, reterr);
        if (r >= 0 || r == -ENOENT)
                forget_container(st, container_id);
        return r;
}

/* ---- The reconciler's writes ---- */

int rkl_store_pod_set_observed(rkl_store *st, const char *pod_id, const rkl_pod_observed *o,
                               rkl_error *reterr)
{
        return after_pod_write(st, pod_id, rkl_db_pod_set_observed(st->db, pod_id, o, reterr));
}

int rkl_store_pod_set_rkt_uuid(rkl_store *st, const char *pod_id, const char *uuid,
                               rkl_error *reterr)
{
        return after_pod_write(st, pod_id, rkl_db_pod_set_rkt_uuid(st->db, pod_id, uuid, reterr));
}

int rkl_store_pod_set_resources(rkl_store *st, const char *pod_id, const rkl_resources *res,
                                rkl_error *reterr)
{
        return after_pod_write(st, pod_id, rkl_db_pod_set_resources(st->db, pod_id, res, reterr));
}

int rkl_store_pod_set_unit_name(rkl_store *st, const char *pod_id, const char *unit,
                                rkl_error *reterr)
{
        return after_pod_write(st, pod_id, rkl_db_pod_set_unit_name(st->db, pod_id, unit, reterr));
}

int rkl_store_pod_record_error(rkl_store *st, const char *pod_id, const char *error,
                               int64_t next_retry_ns, rkl_error *reterr)
{
        return after_pod_write(
            st, pod_id, rkl_db_pod_record_error(st->db, pod_id, error, next_retry_ns, reterr));
}

int rkl_store_pod_clear_error(rkl_store *st, const char *pod_id, rkl_error *reterr)
{
        return after_pod_write(st, pod_id, rkl_db_pod_clear_error(st->db, pod_id, reterr));
}

int rkl_store_container_set_observed(rkl_store *st, const char *container_id,
                                     const rkl_container_observed *o, rkl_error *reterr)
{
        return after_container_write(
            st, container_id, rkl_db_container_set_observed(st->db, container_id, o, reterr));
}

int rkl_store_container_record_error(rkl_store *st, const char *container_id, const char *error,
                                     int64_t next_retry_ns, rkl_error *reterr)
{
        return after_container_write(
            st, container_id,
            rkl_db_container_record_error(st->db, container_id, error, next_retry_ns, reterr));
}

int rkl_store_container_set_resources(rkl_store *st, const char *container_id,
                                      const rkl_resources *res, rkl_error *reterr)
{
        return after_container_write(
            st, container_id, rkl_db_container_set_resources(st->db, container_id, res, reterr));
}

int rkl_store_container_clear_error(rkl_store *st, const char *container_id, rkl_error *reterr)
{
        return after_container_write(st, container_id,
                                     rkl_db_container_clear_error(st->db, container_id, reterr));
}
