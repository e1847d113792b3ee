#include "cache.h"

#include <stdatomic.h>

#include "events.h"

#include "base/alloc.h"
#include "base/hashmap.h"
#include "base/latch.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/banned.h"

/* A tombstone outlives any put that could have raced with its deletion by far. */
#define TOMBSTONE_TTL_NS (60 * (int64_t)NSEC_PER_SEC)

typedef struct entry {
        char id[RKL_ID_LEN + 1]; /* the map's key */
        uint64_t version;
        void *view;         /* rkl_pod_view or rkl_container_view; NULL for a tombstone */
        int64_t deleted_ns; /* tombstones: when */
        /* Containers: the sandbox whose by_pod list holds this entry ("" until a view of
         * it was put: a tombstone of an unknown ID is in no list). */
        char sandbox_id[RKL_ID_LEN + 1];
} entry;

/* The container entries of one sandbox: "containers of this pod" is what the reconciler's
 * pass asks for every pod, and kubelet's GetPodStatus for one. */
typedef struct pod_containers {
        char id[RKL_ID_LEN + 1]; /* the by_pod key */
        entry **items;
        size_t n, cap;
} pod_containers;

/* How long an undone failure stays: longer than any call waits (api/wait.h). */
#define FAILURE_KEEP_NS (600 * (int64_t)NSEC_PER_SEC)

struct rkl_cache {
        pthread_rwlock_t lock;
        rkl_hashmap *pods, *containers; /* id -> entry */
        rkl_hashmap *by_pod;            /* sandbox id -> pod_containers, over containers' entries */
        int64_t swept_ns;               /* the last sweep of expired tombstones */
        pthread_mutex_t health_lock;
        rkl_health health;
        rkl_latch probed; /* opened by the first rkl_cache_set_health() */
        pthread_mutex_t stale_lock;
        char **stale_pods, **stale_containers; /* rkl_cache_mark_stale() */
        pthread_mutex_t failures_lock;
        rkl_hashmap *failures; /* sandbox id -> rkl_pod_failure (copies) */
        rkl_events *events;
        pthread_mutex_t change_lock;
        pthread_cond_t changed; /* CLOCK_MONOTONIC */
        uint64_t changes;       /* under change_lock */
};

/* After a change is in: wakes whoever waits for one. */
static void count_change(rkl_cache *c)
{
        RKL_GUARD(&c->change_lock);
        c->changes++;
        (void)pthread_cond_broadcast(&c->changed);
}

uint64_t rkl_cache_changes(rkl_cache *c)
{
        RKL_GUARD(&c->change_lock);
        return c->changes;
}

uint64_t rkl_cache_wait_change(rkl_cache *c, uint64_t seen, uint64_t timeout_usec)
{
        struct timespec ts = rkl_timespec_from_usec(rkl_now_usec(CLOCK_MONOTONIC) + timeout_usec);
        RKL_GUARD(&c->change_lock);
        while (c->changes == seen)
                if (pthread_cond_timedwait(&c->changed, &c->change_lock, &ts) != 0)
                        break;
        return c->changes;
}

static void failure_free(void *f)
{
        rkl_pod_failure_free(f);
}

void rkl_health_done(rkl_health *h)
{
        free(h->rkt_version);
        free(h->rkt_detail);
        free(h->rkt_patches);
        free(h->systemd_version);
        free(h->systemd_detail);
        free(h->net_reason);
        free(h->net_detail);
        free(h->net_config);
        *h = (rkl_health){0};
}

void rkl_health_copy(rkl_health *dst, const rkl_health *src)
{
        *dst = *src;
        dst->rkt_version = rkl_xstrdup(src->rkt_version);
        dst->rkt_detail = rkl_xstrdup(src->rkt_detail);
        dst->rkt_patches = rkl_xstrdup(src->rkt_patches);
        dst->systemd_version = rkl_xstrdup(src->systemd_version);
        dst->systemd_detail = rkl_xstrdup(src->systemd_detail);
        dst->net_reason = rkl_xstrdup(src->net_reason);
        dst->net_detail = rkl_xstrdup(src->net_detail);
        dst->net_config = rkl_xstrdup(src->net_config);
}

rkl_pod_readiness rkl_pod_readiness_of(const rkl_pod_record *rec)
{
        /* Ready from acceptance until stopped, or until creation failed for good or the
         * pod died (docs/design.md, 'The async contract'). */
        if (rec->desired == RKL_POD_DESIRED_READY &&
            (rec->observed.phase == RKL_POD_PHASE_PENDING ||
             rec->observed.phase == RKL_POD_PHASE_RUNNING))
                return RKL_POD_READY;
        return RKL_POD_NOT_READY;
}

rkl_container_state rkl_container_state_of(const rkl_container_record *rec)
{
        /* Never running before rkt has really started the process. */
        switch (rec->observed.phase) {
        case RKL_CONTAINER_PHASE_CREATED:
                return RKL_CONTAINER_CREATED;
        case RKL_CONTAINER_PHASE_RUNNING:
                return RKL_CONTAINER_RUNNING;
        case RKL_CONTAINER_PHASE_EXITED:
                return RKL_CONTAINER_EXITED;
        default:
                return RKL_CONTAINER_UNKNOWN;
        }
}

rkl_pod_view *rkl_pod_view_new(rkl_pod_record *rec)
{
        rkl_pod_view *v = rkl_xnew0(rkl_pod_view, 1);
        v->refs = 1;
        v->rec = rec;
        v->state = rkl_pod_readiness_of(rec);
        return v;
}

rkl_container_view *rkl_container_view_new(rkl_container_record *rec, const char *log_directory)
{
        rkl_container_view *v = rkl_xnew0(rkl_container_view, 1);
        v->refs = 1;
        v->rec = rec;
        v->state = rkl_container_state_of(rec);
        /* kubelet and critest open this path directly: it must be the full host path. */
        if (!isempty(rec->spec.log_path))
                v->log_path = isempty(log_directory)
                                  ? rkl_xstrdup(rec->spec.log_path)
                                  : rkl_xasprintf("%s/%s", log_directory, rec->spec.log_path);
        return v;
}

rkl_pod_view *rkl_pod_view_ref(rkl_pod_view *v)
{
        __atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
        return v;
}

rkl_container_view *rkl_container_view_ref(rkl_container_view *v)
{
        __atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
        return v;
}

rkl_pod_view *rkl_pod_view_unref(rkl_pod_view *v)
{
        if (v && __atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) == 0) {
                rkl_pod_record_free(v->rec);
                free(atomic_load(&v->memo));
                free(v);
        }
        return NULL;
}

rkl_container_view *rkl_container_view_unref(rkl_container_view *v)
{
        if (v && __atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) == 0) {
                rkl_container_record_free(v->rec);
                free(v->log_path);
                free(atomic_load(&v->memo));
                free(v);
        }
        return NULL;
}

const rkl_blob *rkl_blob_publish(_Atomic(rkl_blob *) *slot, rkl_blob *candidate)
{
        rkl_blob *expected = NULL;
        if (atomic_compare_exchange_strong(slot, &expected, candidate))
                return candidate;
        free(candidate);
        return expected;
}

void rkl_pod_views_unref(rkl_pod_view **v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                rkl_pod_view_unref(v[i]);
        free(v);
}

void rkl_container_views_unref(rkl_container_view **v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                rkl_container_view_unref(v[i]);
        free(v);
}

rkl_cache *rkl_cache_new(void)
{
        rkl_cache *c = rkl_xnew0(rkl_cache, 1);
        pthread_rwlock_init(&c->lock, NULL);
        pthread_mutex_init(&c->health_lock, NULL);
        pthread_mutex_init(&c->stale_lock, NULL);
        pthread_mutex_init(&c->failures_lock, NULL);
        pthread_mutex_init(&c->change_lock, NULL);
        pthread_condattr_t a;
        (void)pthread_condattr_init(&a);
        (void)pthread_condattr_setclock(&a, CLOCK_MONOTONIC); /* deadlines survive clock steps */
        (void)pthread_cond_init(&c->changed, &a);
        (void)pthread_condattr_destroy(&a);
        c->failures = rkl_hashmap_new();
        rkl_latch_init(&c->probed);
        c->pods = rkl_hashmap_new();
        c->containers = rkl_hashmap_new();
        c->by_pod = rkl_hashmap_new();
        c->events = rkl_events_new(NULL);
        return c;
}

static void entries_free(rkl_hashmap *m, bool pods)
{
        size_t i = 0;
        void *v;
        while (rkl_hashmap_iterate(m, &i, NULL, &v)) {
                entry *e = v;
                if (pods)
                        rkl_pod_view_unref(e->view);
                else
                        rkl_container_view_unref(e->view);
                free(e);
        }
        rkl_hashmap_free(m);
}

rkl_cache *rkl_cache_free(rkl_cache *c)
{
        if (!c)
                return NULL;
        c->events = rkl_events_free(c->events);
        entries_free(c->pods, true);
        entries_free(c->containers, false);
        size_t i = 0;
        void *pc;
        while (rkl_hashmap_iterate(c->by_pod, &i, NULL, &pc)) {
                free(((pod_containers *)pc)->items);
                free(pc);
        }
        rkl_hashmap_free(c->by_pod);
        rkl_health_done(&c->health);
        pthread_rwlock_destroy(&c->lock);
        pthread_mutex_destroy(&c->health_lock);
        pthread_mutex_destroy(&c->stale_lock);
        rkl_strv_free(c->stale_pods);
        rkl_strv_free(c->stale_containers);
        rkl_hashmap_free_values(c->failures, failure_free);
        pthread_mutex_destroy(&c->failures_lock);
        (void)pthread_cond_destroy(&c->changed);
        pthread_mutex_destroy(&c->change_lock);
        rkl_latch_destroy(&c->probed);
        free(c);
        return NULL;
}

rkl_events *rkl_cache_events(rkl_cache *c)
{
        return c->events;
}

void rkl_cache_failure_put(rkl_cache *c, const rkl_pod_failure *f)
{
        rkl_pod_failure *copy = rkl_xnew0(rkl_pod_failure, 1);
        memcpy(copy->sandbox_id, f->sandbox_id, sizeof(copy->sandbox_id));
        copy->code = f->code;
        copy->message = rkl_xstrdup(f->message);
        copy->sandbox = rkl_xstrdup(f->sandbox);
        copy->failed_ns = f->failed_ns;
        copy->undone_ns = f->undone_ns;
        {
                RKL_GUARD(&c->failures_lock);
                rkl_pod_failure_free(rkl_hashmap_put(c->failures, copy->sandbox_id, copy));
        }
        count_change(c);
}

void rkl_cache_failure_undone(rkl_cache *c, const char *id, int64_t now_ns)
{
        {
                RKL_GUARD(&c->failures_lock);
                rkl_pod_failure *f = rkl_hashmap_get(c->failures, id);
                if (f)
                        f->undone_ns = now_ns;
        }
        count_change(c);
}

bool rkl_cache_failure_get(rkl_cache *c, const char *id, int *ret_code, char **ret_message,
                           bool *ret_undone)
{
        RKL_GUARD(&c->failures_lock);
        const rkl_pod_failure *f = rkl_hashmap_get(c->failures, id);
        if (!f)
                return false;
        *ret_code = f->code;
        *ret_message = rkl_xstrdup(f->message);
        *ret_undone = f->undone_ns != 0;
        return true;
}

static bool failure_expired(const void *v, void *userdata)
{
        const rkl_pod_failure *f = v;
        return f->undone_ns && *(const int64_t *)userdata - f->undone_ns > FAILURE_KEEP_NS;
}

char **rkl_cache_failure_ids(rkl_cache *c, int64_t now_ns)
{
        RKL_GUARD(&c->failures_lock);
        rkl_hashmap_remove_if(c->failures, failure_expired, &now_ns, failure_free);
        char **ids = NULL;
        size_t i = 0;
        const char *id;
        void *v;
        while (rkl_hashmap_iterate(c->failures, &i, &id, &v))
                if (!((const rkl_pod_failure *)v)->undone_ns)
                        rkl_strv_push(&ids, id);
        return ids;
}

void rkl_cache_set_health(rkl_cache *c, const rkl_health *h)
{
        rkl_health copy;
        rkl_health_copy(&copy, h);
        {
                RKL_GUARD(&c->health_lock);
                rkl_health old = c->health;
                c->health = copy;
                copy = old;
        }
        rkl_health_done(&copy); /* the old one, outside the lock */
        rkl_latch_open(&c->probed);
}

bool rkl_cache_health_known(rkl_cache *c)
{
        return rkl_latch_is_open(&c->probed);
}

bool rkl_cache_wait_health(rkl_cache *c, uint64_t timeout_usec)
{
        return rkl_latch_wait(&c->probed, timeout_usec);
}

void rkl_cache_get_health(rkl_cache *c, rkl_health *ret)
{
        RKL_GUARD(&c->health_lock);
        rkl_health_copy(ret, &c->health);
}

/* Lock held for writing. */
static void by_pod_add(rkl_cache *c, entry *e, const char *sandbox_id)
{
        pod_containers *pc = rkl_hashmap_get(c->by_pod, sandbox_id);
        if (!pc) {
                pc = rkl_xnew0(pod_containers, 1);
                memcpy(pc->id, sandbox_id, sizeof(pc->id));
                rkl_hashmap_put(c->by_pod, pc->id, pc);
        }
        if (pc->n == pc->cap) {
                pc->cap = pc->cap ? pc->cap * 2 : 4;
                pc->items = rkl_xrealloc(pc->items, pc->cap * sizeof(*pc->items));
        }
        pc->items[pc->n++] = e;
        memcpy(e->sandbox_id, sandbox_id, sizeof(e->sandbox_id));
}

/* Lock held for writing; e is about to be freed. */
static void by_pod_del(rkl_cache *c, entry *e)
{
        pod_containers *pc = *e->sandbox_id ? rkl_hashmap_get(c->by_pod, e->sandbox_id) : NULL;
        for (size_t i = 0; pc && i < pc->n; i++)
                if (pc->items[i] == e) {
                        pc->items[i] = pc->items[--pc->n];
                        break;
                }
        if (pc && pc->n == 0) {
                rkl_hashmap_remove(c->by_pod, pc->id);
                free(pc->items);
                free(pc);
        }
}

/* Swaps view in under the write lock; returns the view displaced (to unref outside the
 * lock), or view itself when it lost to a newer version. sandbox_id: a container's, which
 * files its entry under its sandbox; NULL for a sandbox. */
static void *put(rkl_cache *c, rkl_hashmap *m, const char *id, uint64_t version, void *view,
                 const char *sandbox_id)
{
        void *displaced;
        pthread_rwlock_wrlock(&c->lock);
        entry *e = rkl_hashmap_get(m, id);
        if (e && e->version > version) {
                displaced = view;
        } else {
                if (!e) {
                        e = rkl_xnew0(entry, 1);
                        memcpy(e->id, id, sizeof(e->id));
                        rkl_hashmap_put(m, e->id, e);
                }
                displaced = e->view;
                e->view = view;
                e->version = version;
                e->deleted_ns = 0;
                if (sandbox_id && !*e->sandbox_id)
                        by_pod_add(c, e, sandbox_id);
        }
        pthread_rwlock_unlock(&c->lock);
        if (displaced != view)
                count_change(c);
        return displaced;
}

bool rkl_cache_pod_put(rkl_cache *c, rkl_pod_view *v)
{
        void *d = put(c, c->pods, v->rec->id, v->rec->book.version, v, NULL);
        rkl_pod_view_unref(d);
        return d != v;
}

bool rkl_cache_container_put(rkl_cache *c, rkl_container_view *v)
{
        void *d = put(c, c->containers, v->rec->id, v->rec->book.version, v, v->rec->sandbox_id);
        rkl_container_view_unref(d);
        return d != v;
}

/* Lock held for writing. */
static void sweep(rkl_cache *c, rkl_hashmap *m, int64_t now)
{
        size_t i = 0;
        void *v;
        while (rkl_hashmap_iterate(m, &i, NULL, &v)) {
                entry *t = v;
                if (!t->view && t->deleted_ns + TOMBSTONE_TTL_NS < now) {
                        rkl_hashmap_remove(m, t->id);
                        by_pod_del(c, t);
                        free(t);
                        i = 0; /* removal shifts entries: start over */
                }
        }
}

/* Leaves a tombstone and drops tombstones older than their TTL; returns views to unref. */
static void *tombstone(rkl_cache *c, rkl_hashmap *m, const char *id, uint64_t version)
{
        int64_t now = rkl_realtime_ns();
        void *displaced = NULL;
        pthread_rwlock_wrlock(&c->lock);
        entry *e = rkl_hashmap_get(m, id);
        if (!e) {
                e = rkl_xnew0(entry, 1);
                (void)snprintf(e->id, sizeof(e->id), "%s", id);
                rkl_hashmap_put(m, e->id, e);
        }
        if (e->version <= version) {
                displaced = e->view;
                e->view = NULL;
                e->version = version;
                e->deleted_ns = now;
        }
        /* Expired tombstones go in a sweep of both maps at most every half TTL: a sweep
         * per removal would make a teardown of n objects cost n². */
        if (c->swept_ns + TOMBSTONE_TTL_NS / 2 < now) {
                c->swept_ns = now;
                sweep(c, c->pods, now);
                sweep(c, c->containers, now);
        }
        pthread_rwlock_unlock(&c->lock);
        count_change(c);
        return displaced;
}

void rkl_cache_pod_remove(rkl_cache *c, const char *id, uint64_t version)
{
        rkl_pod_view_unref(tombstone(c, c->pods, id, version));
}

void rkl_cache_container_remove(rkl_cache *c, const char *id, uint64_t version)
{
        rkl_container_view_unref(tombstone(c, c->containers, id, version));
}

/* The next entry of m from *i on that holds a view (no tombstone), or NULL. Lock held. */
static entry *next_live(rkl_hashmap *m, size_t *i)
{
        void *v;
        while (rkl_hashmap_iterate(m, i, NULL, &v))
                if (((entry *)v)->view)
                        return v;
        return NULL;
}

static void *get_locked(rkl_hashmap *m, const char *id)
{
        entry *e = rkl_hashmap_get(m, id);
        return e ? e->view : NULL;
}

rkl_pod_view *rkl_cache_pod_get(rkl_cache *c, const char *id)
{
        pthread_rwlock_rdlock(&c->lock);
        rkl_pod_view *v = get_locked(c->pods, id);
        if (v)
                rkl_pod_view_ref(v);
        pthread_rwlock_unlock(&c->lock);
        return v;
}

rkl_container_view *rkl_cache_container_get(rkl_cache *c, const char *id)
{
        pthread_rwlock_rdlock(&c->lock);
        rkl_container_view *v = get_locked(c->containers, id);
        if (v)
                rkl_container_view_ref(v);
        pthread_rwlock_unlock(&c->lock);
        return v;
}

/* The live view whose ID starts with prefix: -ENOENT, -ENOTUNIQ, or 0. Lock held. */
static int resolve_locked(rkl_hashmap *m, const char *prefix, void **ret)
{
        size_t n = strlen(prefix);
        if (n == 0)
                return -ENOENT;
        if (n == RKL_ID_LEN) {
                *ret = get_locked(m, prefix);
                return *ret ? 0 : -ENOENT;
        }
        void *found = NULL;
        size_t i = 0;
        for (entry *e; (e = next_live(m, &i));) {
                if (strncmp(e->id, prefix, n) != 0)
                        continue;
                if (found)
                        return -ENOTUNIQ;
                found = e->view;
        }
        *ret = found;
        return found ? 0 : -ENOENT;
}

int rkl_cache_pod_resolve(rkl_cache *c, const char *prefix, rkl_pod_view **ret)
{
        void *v = NULL;
        pthread_rwlock_rdlock(&c->lock);
        int r = resolve_locked(c->pods, prefix, &v);
        if (r >= 0)
                *ret = rkl_pod_view_ref(v);
        pthread_rwlock_unlock(&c->lock);
        return r;
}

int rkl_cache_container_resolve(rkl_cache *c, const char *prefix, rkl_container_view **ret)
{
        void *v = NULL;
        pthread_rwlock_rdlock(&c->lock);
        int r = resolve_locked(c->containers, prefix, &v);
        if (r >= 0)
                *ret = rkl_container_view_ref(v);
        pthread_rwlock_unlock(&c->lock);
        return r;
}

/* Whether a view in state with labels passes what sandboxes and containers share of f. */
static bool selected(const rkl_view_filter *f, int state, const rkl_kvs *labels)
{
        if (f->by_state && state != f->state)
                return false;
        for (size_t i = 0; f->label_selector && i < f->label_selector->n; i++)
                if (!streq_ptr(rkl_kvs_get(labels, f->label_selector->items[i].key),
                               f->label_selector->items[i].value))
                        return false;
        return true;
}

static int by_accepted(int64_t a_ns, const char *a_id, int64_t b_ns, const char *b_id)
{
        if (a_ns != b_ns)
                return a_ns < b_ns ? -1 : 1;
        return strcmp(a_id, b_id);
}

static int pod_cmp(const void *a, const void *b)
{
        const rkl_pod_record *x = (*(rkl_pod_view *const *)a)->rec;
        const rkl_pod_record *y = (*(rkl_pod_view *const *)b)->rec;
        return by_accepted(x->book.accepted_ns, x->id, y->book.accepted_ns, y->id);
}

static int container_cmp(const void *a, const void *b)
{
        const rkl_container_record *x = (*(rkl_container_view *const *)a)->rec;
        const rkl_container_record *y = (*(rkl_container_view *const *)b)->rec;
        return by_accepted(x->book.accepted_ns, x->id, y->book.accepted_ns, y->id);
}

int rkl_cache_pod_list(rkl_cache *c, const rkl_view_filter *f, rkl_pod_view ***ret, size_t *ret_n)
{
        static const rkl_view_filter all = {0};
        rkl_pod_view **out = NULL;
        size_t n = 0;

        if (!f)
                f = &all;
        pthread_rwlock_rdlock(&c->lock);
        if (!isempty(f->id)) {
                void *v;
                if (resolve_locked(c->pods, f->id, &v) >= 0) {
                        out = rkl_xnew0(rkl_pod_view *, 1);
                        out[n++] = rkl_pod_view_ref(v);
                }
        } else {
                out = rkl_xnew0(rkl_pod_view *, rkl_hashmap_size(c->pods) + 1);
                size_t i = 0;
                for (entry *e; (e = next_live(c->pods, &i));)
                        out[n++] = rkl_pod_view_ref(e->view);
        }
        pthread_rwlock_unlock(&c->lock);

        /* Filtering reads immutable views: no lock needed. */
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                rkl_pod_view *v = out[i];
                if (selected(f, (int)v->state, &v->rec->spec.labels))
                        out[k++] = v;
                else
                        rkl_pod_view_unref(v);
        }
        if (k > 1)
                qsort(out, k, sizeof(*out), pod_cmp);
        *ret = out;
        *ret_n = k;
        return 0;
}

int rkl_cache_container_list(rkl_cache *c, const rkl_view_filter *f, rkl_container_view ***ret,
                             size_t *ret_n)
{
        static const rkl_view_filter all = {0};
        rkl_container_view **out = NULL;
        size_t n = 0;
        char sandbox[RKL_ID_LEN + 1] = "";
        bool no_match = false;

        if (!f)
                f = &all;
        pthread_rwlock_rdlock(&c->lock);
        if (!isempty(f->sandbox_id)) {
                void *p;
                if (resolve_locked(c->pods, f->sandbox_id, &p) >= 0)
                        memcpy(sandbox, ((rkl_pod_view *)p)->rec->id, sizeof(sandbox));
                else if (strlen(f->sandbox_id) == RKL_ID_LEN)
                        /* Containers of a removed sandbox are gone with it. */
                        (void)snprintf(sandbox, sizeof(sandbox), "%s", f->sandbox_id);
                else
                        no_match = true;
        }
        if (no_match) {
                out = rkl_xnew0(rkl_container_view *, 1);
        } else if (*sandbox && isempty(f->id)) {
                pod_containers *pc = rkl_hashmap_get(c->by_pod, sandbox);
                out = rkl_xnew0(rkl_container_view *, (pc ? pc->n : 0) + 1);
                for (size_t i = 0; pc && i < pc->n; i++)
                        if (pc->items[i]->view)
                                out[n++] = rkl_container_view_ref(pc->items[i]->view);
        } else if (!isempty(f->id)) {
                void *v;
                out = rkl_xnew0(rkl_container_view *, 1);
                if (resolve_locked(c->containers, f->id, &v) >= 0)
                        out[n++] = rkl_container_view_ref(v);
        } else {
                out = rkl_xnew0(rkl_container_view *, rkl_hashmap_size(c->containers) + 1);
                size_t i = 0;
                for (entry *e; (e = next_live(c->containers, &i));)
                        out[n++] = rkl_container_view_ref(e->view);
        }
        pthread_rwlock_unlock(&c->lock);

        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                rkl_container_view *v = out[i];
                if (selected(f, (int)v->state, &v->rec->spec.labels) &&
                    (!*sandbox || streq(v->rec->sandbox_id, sandbox)))
                        out[k++] = v;
                else
                        rkl_container_view_unref(v);
        }
        if (k > 1)
                qsort(out, k, sizeof(*out), container_cmp);
        *ret = out;
        *ret_n = k;
        return 0;
}

void rkl_cache_mark_stale(rkl_cache *c, bool pod, const char *id)
{
        pthread_mutex_lock(&c->stale_lock);
        char ***l = pod ? &c->stale_pods : &c->stale_containers;
        if (!rkl_strv_contains(*l, id))
                rkl_strv_push(l, id);
        pthread_mutex_unlock(&c->stale_lock);
}

void rkl_cache_take_stale(rkl_cache *c, char ***ret_pods, char ***ret_containers)
{
        pthread_mutex_lock(&c->stale_lock);
        *ret_pods = TAKE_PTR(c->stale_pods);
        *ret_containers = TAKE_PTR(c->stale_containers);
        pthread_mutex_unlock(&c->stale_lock);
}
