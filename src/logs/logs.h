/* Container logs in kubelet's format (CRI), from what rkt writes.
 *
 * rkt's iottymux writes each app's output, with a time and stream per line, into a private
 * file of the sandbox (<state>/pods/<id>/logs/<app>.log) from inside the pod: that writer
 * needs no rktlet. This module follows those files on a thread of its own and re-emits every
 * record into the container's log_directory/log_path in CRI format (record.h). It keeps its
 * progress next to each source, committed after each write, so that a restart of the daemon
 * (or a kill -9) neither loses nor doubles a line; what an app printed while the daemon was
 * down is written once it is back. Consumed parts of a source are punched out, so the
 * private copy does not grow without bound. Why the follower lives here: docs/logs.md. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/macro.h"

typedef struct rkl_logs rkl_logs;

/* One container to follow. */
typedef struct rkl_logs_target {
        const char *container_id;
        const char *source;        /* rkt's file for the app */
        const char *progress;      /* the follower's progress file, next to source */
        const char *log_directory; /* the sandbox's, absolute; NULL or "": no log is kept */
        const char *log_path;      /* the container's, relative to log_directory */
        bool exited;               /* the app has exited: drain, finish and stop */
} rkl_logs_target;

/* Where rkt writes a container's output (the sandbox's log dir, given to rkt as the
 * kubernetes-log-dir, then "<app>.log") and where its follower keeps its progress. */
char *rkl_logs_source_path(const char *state_dir, const char *sandbox_id, const char *app);
char *rkl_logs_progress_path(const char *state_dir, const char *sandbox_id, const char *app);

/* Starts the follower thread. forbidden: the daemon's own directories (its state, rkt's
 * data), where no log may go (NULL-terminated; copied). */
int rkl_logs_new(char *const *forbidden, rkl_logs **ret, rkl_error *reterr);
/* Stops it; what it has not copied yet is copied after the next start. */
rkl_logs *rkl_logs_free(rkl_logs *l);
RKL_DEFINE_CLEANUP(rkl_logs *, rkl_logs_free)

/* The containers to follow from now on (copied): new ones are followed, exited ones
 * finished, those no longer named forgotten. Returns at once. */
void rkl_logs_sync(rkl_logs *l, const rkl_logs_target *targets, size_t n);

/* The app has exited and rkt's writer (iottymux) is gone: copies what is left, the last
 * record too, and finishes the log, on the follower thread. Returns at once; the reconciler
 * holds a container's EXITED until rkl_logs_finished() (docs/logs.md), as containerd does
 * until its output copy ends, so that a client reading the log on the exit reads it all. */
void rkl_logs_finish(rkl_logs *l, const rkl_logs_target *t);
/* Whether the container's log is finished: everything rkt wrote is in the CRI file. */
bool rkl_logs_finished(rkl_logs *l, const char *container_id);

/* rkt's writer of the container's output (iottymux) is gone while the app runs (killed: rkt
 * does not start it again), so what the app prints from now on reaches no log. Says so in
 * the daemon's log, once per container until it is no longer followed; true when it did.
 * Any thread. */
bool rkl_logs_writer_gone(rkl_logs *l, const char *container_id);

/* ReopenContainerLog: copies what the source holds into the current file, then opens
 * log_path anew (kubelet has renamed the old one), so that every line is in one of the two.
 * Waits for the follower thread; a container not followed yet is followed from then on.
 * -ESRCH when its log is finished (the container has exited). */
int rkl_logs_reopen(rkl_logs *l, const rkl_logs_target *t, rkl_error *reterr);

/* Which file a log is: rktlet writes only into files it made, and records which they are
 * (docs/logs.md). dev 0 is a record without a device (kept by an older rktlet): the inode
 * alone then. */
typedef struct rkl_logs_file_id {
        uint64_t dev, ino;
} rkl_logs_file_id;

typedef struct rkl_logs_file {
        int fd; /* the caller's */
        rkl_logs_file_id id;
        uint64_t size;
        bool created; /* made by this open */
} rkl_logs_file;

/* Called once a log file was made, before it is handed over: rktlet's record that it made
 * it. When it fails, the file is removed again and the open fails with its error. */
typedef int (*rkl_logs_record_fn)(void *userdata, const rkl_logs_file *f, rkl_error *reterr);

/* Opens log_directory/log_path for appending. The directory is judged again as it resolves
 * now (rkl_logs_directory_check(), and the file's whole path as rkl_logs_path_check() does);
 * then the file is reached from / through the resolved directory without following any
 * symlink, its missing directories made 0755, so that a symlink swapped in after the checks
 * leads nowhere: -EXDEV. A file that is there is opened only when it is a regular file and
 * ours names it (-EEXIST otherwise: nothing is written into a file rktlet did not make); one
 * that is not is made (0640, root's) and recorded with record. */
int rkl_logs_file_open(const char *log_directory, const char *log_path, char *const *forbidden,
                       const rkl_logs_file_id *ours, rkl_logs_record_fn record, void *userdata,
                       rkl_logs_file *ret, rkl_error *reterr);

/* StartContainer's: makes t's log file, empty, unless the one rktlet made for t is there
 * already, and records it in t's progress file, so that the follower (after a restart too)
 * appends to it. -EEXIST for a file rktlet did not make for t, -EXDEV for a path that leads
 * where no log may go. */
int rkl_logs_file_make(const rkl_logs_target *t, char *const *forbidden, rkl_error *reterr);

/* Checks a sandbox's log_directory: absolute, no "." or "..", not "/", and neither the
 * daemon's own directories (forbidden, a NULL-terminated list) nor a system directory (/etc,
 * /usr, /proc, ...), nor below one, as given and once symlinks are resolved. "" is fine (no
 * logs). -EINVAL with the reason. */
int rkl_logs_directory_check(const char *log_directory, char *const *forbidden, rkl_error *reterr);
/* Checks a container's log_path: relative, no "." or ".." component; the file's whole path,
 * its directory resolved, neither in the daemon's own directories nor in a system one; what
 * exists of it plain directories beneath log_directory (no symlink). -EINVAL with the
 * reason. */
int rkl_logs_path_check(const char *log_directory, const char *log_path, char *const *forbidden,
                        rkl_error *reterr);
