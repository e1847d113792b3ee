#include "stats.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

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
        bool again;                  /* under lock: collect the last targets again */
        uint64_t handed, collected;  /* refresh generations, under lock */
        rkl_stats_snapshot *current; /* under lock; swapped, never changed */
        uint64_t current_usec;       /* under lock: when current was collected (monotonic) */
        rkl_stats_target *last;      /* the collector thread's: the targets it last read */
        size_t n_last;
};

void rkl_stats_dirs_done(rkl_stats_dirs *d)
{
        free(d->cpu);
        free(d->cpu_spec);
        free(d->memory);
        free(d->procs);
        free(d->pids);
        free(d->pids_max);
        free(d->blkio);
        free(d->pressure);
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
        for (size_t i = 0; i < s->n; i++) {
                free(s->entries[i].ifs);
                free(s->entries[i].blkio);
        }
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

/* The device's name as cAdvisor gives it: /dev/ and the DEVNAME of its uevent. */
static void device_name_of(unsigned major, unsigned minor, char device[static 40])
{
        char path[64];
        _cleanup_free_ char *text = NULL;
        snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", major, minor);
        const char *name = NULL;
        if (rkl_read_file_at(AT_FDCWD, path, 1 << 16, &text, NULL) == 0 &&
            (name = strstr(text, "DEVNAME="))) {
                name += strlen("DEVNAME=");
                snprintf(device, 40, "/dev/%.*s", (int)strcspn(name, "\n"), name);
        } else
                snprintf(device, 40, "%u:%u", major, minor);
}

static void device_name(rkl_stats_blkio *b)
{
        device_name_of(b->major, b->minor, b->device);
}

/* The filesystem of dir and its device's counters. */
static bool disk_of(const char *dir, rkl_stats_disk *d)
{
        struct stat st;
        struct statvfs sv;
        _cleanup_free_ char *text = NULL;
        if (stat(dir, &st) < 0 || statvfs(dir, &sv) < 0)
                return false;
        *d = (rkl_stats_disk){.major = major(st.st_dev),
                              .minor = minor(st.st_dev),
                              .capacity_bytes = (uint64_t)sv.f_blocks * sv.f_frsize,
                              .inodes_total = sv.f_files,
                              .inodes_free = sv.f_ffree};
        device_name_of(d->major, d->minor, d->device);
        if (rkl_read_file_at(AT_FDCWD, "/proc/diskstats", 1 << 20, &text, NULL) == 0)
                (void)rkl_stats_parse_diskstats(text, d->major, d->minor, d);
        return true;
}

static void read_cgroups(const rkl_stats_config *cfg, const rkl_stats_dirs *dirs, bool is_pod,
                         rkl_stats_entry *e)
{
        static const char *const psi_files[_RKL_STATS_PSI_MAX] = {
            [RKL_STATS_PSI_CPU] = "cpu.pressure",
            [RKL_STATS_PSI_MEMORY] = "memory.pressure",
            [RKL_STATS_PSI_IO] = "io.pressure",
        };
        _cleanup_close_ int cpu = open_dir(dirs->cpu), spec = open_dir(dirs->cpu_spec),
                            mem = open_dir(dirs->memory), pids = open_dir(dirs->pids),
                            pids_max = open_dir(dirs->pids_max), blkio = open_dir(dirs->blkio),
                            psi = open_dir(dirs->pressure), procs = open_dir(dirs->procs);
        if (cpu >= 0) {
                e->has_cpu = rkl_stats_read_cpu(cpu, cfg->mode, &e->cpu_usage_ns) == 0;
                e->has_cpu_split = rkl_stats_read_cpu_split(cpu, cfg->mode, &e->cpu_user_ns,
                                                            &e->cpu_system_ns) == 0;
        }
        if (spec >= 0)
                e->has_cpu_spec = rkl_stats_read_cpu_spec(spec, cfg->mode, &e->cpu_spec) == 0;
        if (mem >= 0) {
                e->has_memory = rkl_stats_read_memory(mem, cfg->mode, &e->memory) == 0;
                if (!is_pod) {
                        _cleanup_close_ int proc =
                            open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        e->has_procs = proc >= 0 && rkl_stats_read_procs(procs >= 0 ? procs : mem,
                                                                         proc, &e->procs) == 0;
                }
        }
        if (pids >= 0)
                e->has_pids = rkl_stats_read_pids(pids, &e->pids) == 0;
        if (pids_max >= 0)
                e->has_pids_max = rkl_stats_read_pids_max(pids_max, &e->pids_max) == 0;
        if (blkio >= 0 && rkl_stats_read_blkio(blkio, cfg->mode, &e->blkio, &e->n_blkio) == 0) {
                e->has_blkio = true;
                for (size_t i = 0; i < e->n_blkio; i++)
                        device_name(&e->blkio[i]);
        }
        for (int i = 0; psi >= 0 && i < _RKL_STATS_PSI_MAX; i++)
                e->has_psi[i] = rkl_stats_read_psi(psi, psi_files[i], &e->psi[i]) == 0;
}

static void collect_one(const rkl_stats_config *cfg, const rkl_stats_target *t, rkl_stats_entry *e)
{
        rkl_stats_dirs dirs = {0};

        memcpy(e->id, t->id, sizeof(e->id));
        memcpy(e->sandbox_id, t->sandbox_id, sizeof(e->sandbox_id));
        e->is_pod = t->is_pod;
        if (cfg->resolve && cfg->resolve(t->supervisor, t->is_pod ? NULL : t->app, &dirs) >= 0)
                read_cgroups(cfg, &dirs, t->is_pod, e);
        rkl_stats_dirs_done(&dirs);
        if (t->overlay_dir && t->app) {
                e->has_fs = writable_layer(t->overlay_dir, t->app, &e->fs_bytes, &e->fs_inodes);
                e->has_disk = disk_of(t->overlay_dir, &e->disk);
        }
        /* The kernel lists a device in a blkio cgroup once the cgroup issued I/O to it: none
         * listed is no I/O at all, which the device of the app's writable layer says. */
        struct stat st;
        if (e->has_blkio && e->n_blkio == 0 && t->overlay_dir && stat(t->overlay_dir, &st) == 0) {
                e->blkio = rkl_xnew0(rkl_stats_blkio, 1);
                e->blkio[0] =
                    (rkl_stats_blkio){.major = major(st.st_dev), .minor = minor(st.st_dev)};
                device_name(&e->blkio[0]);
                e->n_blkio = 1;
        }
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
                while (!st->quit && !st->has_pending && !st->again)
                        pthread_cond_wait(&st->cond, &st->lock);
                if (st->quit)
                        break;
                if (st->has_pending) {
                        rkl_stats_targets_free(st->last, st->n_last);
                        st->last = st->pending;
                        st->n_last = st->n_pending;
                        st->pending = NULL;
                        st->n_pending = 0;
                        st->has_pending = false;
                }
                st->again = false;
                uint64_t gen = st->handed;
                rkl_stats_snapshot *prev = rkl_stats_snapshot_ref(st->current);
                pthread_mutex_unlock(&st->lock);

                rkl_stats_snapshot *s = rkl_stats_collect(&st->cfg, st->last, st->n_last, prev);
                rkl_stats_snapshot_unref(prev);
                uint64_t at = rkl_now_usec(CLOCK_MONOTONIC);

                pthread_mutex_lock(&st->lock);
                rkl_stats_snapshot *old = st->current;
                st->current = s;
                st->current_usec = at;
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
        rkl_stats_targets_free(st->last, st->n_last);
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

/* Waits, under the lock, until the refresh generation want has been collected or timeout. */
static bool wait_generation(rkl_stats *st, uint64_t want, uint64_t timeout_usec)
{
        struct timespec ts = rkl_timespec_from_usec(rkl_now_usec(CLOCK_MONOTONIC) + timeout_usec);
        while (st->collected < want)
                if (pthread_cond_timedwait(&st->cond, &st->lock, &ts) != 0)
                        break;
        return st->collected >= want;
}

static bool stale_locked(rkl_stats *st, uint64_t max_age_usec)
{
        return st->collected > 0 && rkl_now_usec(CLOCK_MONOTONIC) - st->current_usec > max_age_usec;
}

bool rkl_stats_stale(rkl_stats *st, uint64_t max_age_usec)
{
        pthread_mutex_lock(&st->lock);
        bool stale = stale_locked(st, max_age_usec);
        pthread_mutex_unlock(&st->lock);
        return stale;
}

bool rkl_stats_renew(rkl_stats *st, uint64_t max_age_usec, uint64_t timeout_usec)
{
        pthread_mutex_lock(&st->lock);
        bool ok = true;
        if (stale_locked(st, max_age_usec)) {
                st->again = true;
                st->handed++;
                pthread_cond_broadcast(&st->cond);
                ok = wait_generation(st, st->handed, timeout_usec);
        }
        pthread_mutex_unlock(&st->lock);
        return ok;
}

bool rkl_stats_wait_collected(rkl_stats *st, uint64_t timeout_usec)
{
        pthread_mutex_lock(&st->lock);
        bool ok = wait_generation(st, st->handed, timeout_usec);
        pthread_mutex_unlock(&st->lock);
        return ok;
}
