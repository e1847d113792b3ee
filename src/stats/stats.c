#include "stats.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/hashmap.h"
#include "base/time-util.h"
#include "base/banned.h"

struct rkl_stats_snapshot {
        atomic_int refs;
        rkl_stats_entry *entries;
        size_t n;
        rkl_hashmap *containers, *pods; /* id -> entry in entries */
};

struct rkl_stats {
        rkl_stats_config cfg;
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool quit;
        rkl_stats_target *pending; /* under lock */
        size_t n_pending;
        bool has_pending;
        uint64_t handed, collected;  /* refresh generations, under lock */
        rkl_stats_snapshot *current; /* under lock; swapped, never changed */
};

void rkl_stats_dirs_done(rkl_stats_dirs *d)
{
        free(d->cpu);
        free(d->memory);
        free(d->pids);
        *d = (rkl_stats_dirs){0};
}

void rkl_stats_targets_free(rkl_stats_target *t, size_t n)
{
        if (!t)
                return;
        for (size_t i = 0; i < n; i++) {
                free(t[i].app);
                free(t[i].overlay_dir);
        }
        free(t);
}

rkl_stats_snapshot *rkl_stats_snapshot_ref(rkl_stats_snapshot *s)
{
        if (s)
                atomic_fetch_add(&s->refs, 1);
        return s;
}

rkl_stats_snapshot *rkl_stats_snapshot_unref(rkl_stats_snapshot *s)
{
        if (!s || atomic_fetch_sub(&s->refs, 1) > 1)
                return NULL;
        for (size_t i = 0; i < s->n; i++)
                free(s->entries[i].ifs);
        free(s->entries);
        rkl_hashmap_free(s->containers);
        rkl_hashmap_free(s->pods);
        free(s);
        return NULL;
}

const rkl_stats_entry *rkl_stats_snapshot_container(const rkl_stats_snapshot *s, const char *id)
{
        return id ? rkl_hashmap_get(s->containers, id) : NULL;
}

const rkl_stats_entry *rkl_stats_snapshot_pod(const rkl_stats_snapshot *s, const char *id)
{
        return id ? rkl_hashmap_get(s->pods, id) : NULL;
}

size_t rkl_stats_snapshot_size(const rkl_stats_snapshot *s)
{
        return s->n;
}

static rkl_stats_snapshot *snapshot_new(size_t n)
{
        rkl_stats_snapshot *s = rkl_xnew0(rkl_stats_snapshot, 1);
        atomic_init(&s->refs, 1);
        s->entries = rkl_xnew0(rkl_stats_entry, n ? n : 1);
        s->containers = rkl_hashmap_new();
        s->pods = rkl_hashmap_new();
        return s;
}

static int open_dir(const char *path)
{
        return path ? open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
}

/* usage_nano_cores from the previous sample of the same object. */
static void rate(rkl_stats_entry *e, const rkl_stats_entry *old)
{
        if (!old || !old->has_cpu || !e->has_cpu || e->timestamp_ns <= old->timestamp_ns ||
            e->cpu_usage_ns < old->cpu_usage_ns)
                return;
        /* ns of CPU per ns of wall time, in billionths of a core. */
        double cores = (double)(e->cpu_usage_ns - old->cpu_usage_ns) /
                       (double)(e->timestamp_ns - old->timestamp_ns);
        e->nano_cores = (uint64_t)(cores * 1e9);
        e->has_nano_cores = true;
}

/* rkt's overlay keeps an app's own changes in <pod>/overlay/<tree>/upper/<app>. */
static bool writable_layer(const char *overlay_dir, const char *app, uint64_t *bytes,
                           uint64_t *inodes)
{
        _cleanup_closedir_ DIR *d = opendir(overlay_dir);
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (de->d_name[0] != '.') {
                        _cleanup_free_ char *upper = rkl_xasprintf("%s/upper/%s", de->d_name, app);
                        if (rkl_stats_fs_usage(dirfd(d), upper, bytes, inodes) == 0)
                                return true;
                }
        return false;
}

static void collect_one(const rkl_stats_config *cfg, const rkl_stats_target *t, rkl_stats_entry *e)
{
        rkl_stats_dirs dirs = {0};

        memcpy(e->id, t->id, sizeof(e->id));
        memcpy(e->sandbox_id, t->sandbox_id, sizeof(e->sandbox_id));
        e->is_pod = t->is_pod;
        if (cfg->resolve && cfg->resolve(t->supervisor, t->is_pod ? NULL : t->app, &dirs) >= 0) {
                int fd = open_dir(dirs.cpu);
                if (fd >= 0) {
                        e->has_cpu = rkl_stats_read_cpu(fd, cfg->mode, &e->cpu_usage_ns) == 0;
                        close(fd);
                }
                fd = open_dir(dirs.memory);
                if (fd >= 0) {
                        e->has_memory = rkl_stats_read_memory(fd, cfg->mode, &e->memory) == 0;
                        close(fd);
                }
                fd = open_dir(dirs.pids);
                if (fd >= 0) {
                        e->has_pids = rkl_stats_read_pids(fd, &e->pids) == 0;
                        close(fd);
                }
        }
        rkl_stats_dirs_done(&dirs);
        if (t->overlay_dir && t->app)
                e->has_fs = writable_layer(t->overlay_dir, t->app, &e->fs_bytes, &e->fs_inodes);
        if (t->is_pod && t->supervisor > 0) {
                char path[64];
                _cleanup_free_ char *text = NULL;
                snprintf(path, sizeof(path), "/proc/%d/net/dev", (int)t->supervisor);
                if (rkl_read_file_at(AT_FDCWD, path, 1 << 20, &text, NULL) == 0 &&
                    rkl_stats_parse_netdev(text, &e->ifs, &e->n_ifs) < 0) {
                        e->ifs = NULL;
                        e->n_ifs = 0;
                }
        }
        e->timestamp_ns = rkl_realtime_ns();
}

rkl_stats_snapshot *rkl_stats_collect(const rkl_stats_config *cfg, const rkl_stats_target *t,
                                      size_t n, const rkl_stats_snapshot *prev)
{
        rkl_stats_snapshot *s = snapshot_new(n);
        /* Containers first: a pod whose own CPU cgroup is not its own (v1 here: the pod unit
         * gets no cpuacct cgroup) adds up its containers'. */
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < n; i++) {
                        if (t[i].is_pod != (pass == 1))
                                continue;
                        rkl_stats_entry *e = &s->entries[s->n++];
                        collect_one(cfg, &t[i], e);
                        if (e->is_pod && !e->has_cpu) {
                                for (size_t j = 0; j + 1 < s->n; j++)
                                        if (!s->entries[j].is_pod && s->entries[j].has_cpu &&
                                            streq(s->entries[j].sandbox_id, e->id)) {
                                                e->has_cpu = true;
                                                e->cpu_usage_ns += s->entries[j].cpu_usage_ns;
                                        }
                        }
                        rate(e, prev ? (e->is_pod ? rkl_stats_snapshot_pod(prev, e->id)
                                                  : rkl_stats_snapshot_container(prev, e->id))
                                     : NULL);
                }
        for (size_t i = 0; i < s->n; i++)
                rkl_hashmap_put(s->entries[i].is_pod ? s->pods : s->containers, s->entries[i].id,
                                &s->entries[i]);
        return s;
}

static void *collector_main(void *userdata)
{
        rkl_stats *st = userdata;

        pthread_mutex_lock(&st->lock);
        for (;;) {
                while (!st->quit && !st->has_pending)
                        pthread_cond_wait(&st->cond, &st->lock);
                if (st->quit)
                        break;
                rkl_stats_target *t = st->pending;
                size_t n = st->n_pending;
                uint64_t gen = st->handed;
                st->pending = NULL;
                st->n_pending = 0;
                st->has_pending = false;
                rkl_stats_snapshot *prev = rkl_stats_snapshot_ref(st->current);
                pthread_mutex_unlock(&st->lock);

                rkl_stats_snapshot *s = rkl_stats_collect(&st->cfg, t, n, prev);
                rkl_stats_targets_free(t, n);
                rkl_stats_snapshot_unref(prev);

                pthread_mutex_lock(&st->lock);
                rkl_stats_snapshot *old = st->current;
                st->current = s;
                st->collected = gen;
                pthread_cond_broadcast(&st->cond);
                pthread_mutex_unlock(&st->lock);
                rkl_stats_snapshot_unref(old);
                pthread_mutex_lock(&st->lock);
        }
        pthread_mutex_unlock(&st->lock);
        return NULL;
}

int rkl_stats_new(const rkl_stats_config *cfg, rkl_stats **ret, rkl_error *reterr)
{
        rkl_stats *st = rkl_xnew0(rkl_stats, 1);
        st->cfg = *cfg;
        pthread_mutex_init(&st->lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&st->cond, &ca);
        pthread_condattr_destroy(&ca);
        st->current = snapshot_new(0);
        int k = pthread_create(&st->thread, NULL, collector_main, st);
        if (k != 0) {
                rkl_stats_snapshot_unref(st->current);
                free(st);
                return rkl_error_set(reterr, -k, "cannot start the stats collector: %s",
                                     strerror(k));
        }
        (void)pthread_setname_np(st->thread, "stats");
        *ret = st;
        return 0;
}

rkl_stats *rkl_stats_free(rkl_stats *st)
{
        if (!st)
                return NULL;
        pthread_mutex_lock(&st->lock);
        st->quit = true;
        pthread_cond_broadcast(&st->cond);
        pthread_mutex_unlock(&st->lock);
        pthread_join(st->thread, NULL);
        rkl_stats_targets_free(st->pending, st->n_pending);
        rkl_stats_snapshot_unref(st->current);
        pthread_cond_destroy(&st->cond);
        pthread_mutex_destroy(&st->lock);
        free(st);
        return NULL;
}

rkl_stats_cgroup_mode rkl_stats_mode(rkl_stats *st)
{
        return st->cfg.mode;
}

void rkl_stats_refresh(rkl_stats *st, rkl_stats_target *t, size_t n)
{
        pthread_mutex_lock(&st->lock);
        rkl_stats_target *old = st->pending;
        size_t n_old = st->n_pending;
        st->pending = t;
        st->n_pending = n;
        st->has_pending = true;
        st->handed++;
        pthread_cond_broadcast(&st->cond);
        pthread_mutex_unlock(&st->lock);
        rkl_stats_targets_free(old, n_old);
}

rkl_stats_snapshot *rkl_stats_get(rkl_stats *st)
{
        pthread_mutex_lock(&st->lock);
        rkl_stats_snapshot *s = rkl_stats_snapshot_ref(st->current);
        pthread_mutex_unlock(&st->lock);
        return s;
}

bool rkl_stats_wait_collected(rkl_stats *st, uint64_t timeout_usec)
{
        struct timespec ts = rkl_timespec_from_usec(rkl_now_usec(CLOCK_MONOTONIC) + timeout_usec);
        pthread_mutex_lock(&st->lock);
        uint64_t want = st->handed;
        while (st->collected < want)
                if (pthread_cond_timedwait(&st->cond, &st->lock, &ts) != 0)
                        break;
        bool ok = st->collected >= want;
        pthread_mutex_unlock(&st->lock);
        return ok;
}
