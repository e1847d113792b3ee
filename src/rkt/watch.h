/* inotify on rkt's pod directories, turning bursts of events into per-pod "re-read me"
 * notices. No threads, no polling: the owner polls rkl_poddir_watch_fd() (the reconciler's
 * sd-event loop) and calls rkl_poddir_watch_drain() when it is readable.
 *
 * Watched: pods/ itself (state dirs come and go; its parent while pods/ is missing),
 * pods/{embryo,prepare,prepared,run,exited-garbage,garbage}, and for each pod in run/: the pod
 * dir (ppid, net-info.json, pod rewrites), stage1/ (.#rootfs.lck deleted = the pod exited,
 * the only inotify-visible sign of that), overlay/<stage1TreeStoreID>/upper/rkt/ (the
 * supervisor-status symlink) and .../upper/rkt/status/ (app status files). Directories that do
 * not exist yet are watched through their nearest existing ancestor and added when created.
 *
 * Not visible to inotify, left to the owner's periodic rescan: a lock released without any
 * file changing (an aborted prepare, a pod whose nspawn never created .#rootfs.lck). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "base/macro.h"

typedef struct rkl_poddir_watch rkl_poddir_watch;

/* pods_dir is "<rkt data dir>/pods"; it may not exist yet, its parent must. Create the watch
 * before the initial scan of the pod dirs so that nothing falls between the two. Running pods
 * found now are armed at once. */
int rkl_poddir_watch_new(const char *pods_dir, rkl_poddir_watch **ret, rkl_error *reterr);
rkl_poddir_watch *rkl_poddir_watch_free(rkl_poddir_watch *w);

/* The inotify fd (O_NONBLOCK, O_CLOEXEC): poll it for EPOLLIN. Owned by w. */
int rkl_poddir_watch_fd(const rkl_poddir_watch *w);

/* Reads every queued event without blocking and returns the UUIDs touched since the last
 * drain: *ret_uuids is sorted, deduplicated and NULL-terminated (never NULL itself); the
 * return value is their count. *ret_rescan is set when events were lost (IN_Q_OVERFLOW, or
 * more distinct pods than the watcher tracks between two drains): the caller must then
 * re-read every pod; the watcher has re-armed everything it could itself. */
int rkl_poddir_watch_drain(rkl_poddir_watch *w, char ***ret_uuids, bool *ret_rescan,
                           rkl_error *reterr);

/* (Re)arms the watches of one pod in run/: idempotent, cheap when nothing changed. A pod
 * that is not in run/ (any more) gets its watches removed. -EINVAL for a malformed uuid. */
int rkl_poddir_watch_pod(rkl_poddir_watch *w, const char *uuid, rkl_error *reterr);

/* Number of kernel watches held: for tests and debug output. */
size_t rkl_poddir_watch_count(const rkl_poddir_watch *w);

/* Test hook: processes buf as if read from the inotify fd (a sequence of struct
 * inotify_event), so that tests can inject IN_Q_OVERFLOW or stale watch descriptors.
 * -EBADMSG for a malformed buffer. */
int rkl_poddir_watch__feed(rkl_poddir_watch *w, const void *buf, size_t len);

RKL_DEFINE_CLEANUP(rkl_poddir_watch *, rkl_poddir_watch_free)
