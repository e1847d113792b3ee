/* rkt's pod directories read directly: the observed state of one pod without running rkt.
 * Everything here is a pure function over a directory fd; nothing blocks, nothing logs (what
 * could not be used is said in the result). Files that are missing, half-written or malformed
 * are reported as unknown, never guessed (docs/rkt.md, 'The pod directory'). */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/model.h"

#define RKL_POD_UUID_LEN 36

/* Bounds for every read: a pod dir is written by root, but may be half-written or broken. */
#define RKL_PODDIR_MANIFEST_MAX (4u * 1024 * 1024)
#define RKL_PODDIR_FILE_MAX     (64u * 1024)
#define RKL_PODDIR_MAX_APPS     1024

/* The state directory below pods/ that a pod was found in. */
typedef enum rkl_poddir_dir {
        RKL_PODDIR_EMBRYO = 0,
        RKL_PODDIR_PREPARE,
        RKL_PODDIR_PREPARED,
        RKL_PODDIR_RUN,
        RKL_PODDIR_EXITED_GARBAGE,
        RKL_PODDIR_GARBAGE,
        _RKL_PODDIR_DIR_MAX,
        _RKL_PODDIR_DIR_INVALID = -EINVAL,
} rkl_poddir_dir;

/* rkt's pod state (pkg/pod/pods.go): the state dir plus whether the pod lock is held. */
typedef enum rkl_pod_state {
        RKL_POD_STATE_EMBRYO = 0,
        RKL_POD_STATE_PREPARING,       /* prepare/, locked */
        RKL_POD_STATE_ABORTED_PREPARE, /* prepare/, unlocked */
        RKL_POD_STATE_PREPARED,
        RKL_POD_STATE_RUNNING,         /* run/, locked */
        RKL_POD_STATE_EXITED,          /* run/, unlocked: the dir stays in run/ on exit */
        RKL_POD_STATE_EXITED_GARBAGE,  /* exited-garbage/, unlocked */
        RKL_POD_STATE_EXITED_DELETING, /* exited-garbage/, locked */
        RKL_POD_STATE_GARBAGE,         /* garbage/, unlocked */
        RKL_POD_STATE_DELETING,        /* garbage/, locked */
        _RKL_POD_STATE_MAX,
        _RKL_POD_STATE_INVALID = -EINVAL,
} rkl_pod_state;

typedef enum rkl_pod_app_state {
        RKL_POD_APP_UNKNOWN = 0, /* no <app>-created */
        RKL_POD_APP_CREATED,
        RKL_POD_APP_RUNNING,
        RKL_POD_APP_EXITED,
        _RKL_POD_APP_MAX,
        _RKL_POD_APP_INVALID = -EINVAL,
} rkl_pod_app_state;

/* One app. Times are ns since the epoch, 0 when unknown. */
typedef struct rkl_poddir_app {
        char *name;       /* a valid ACName */
        char *image_id;   /* NULL when not in the manifest */
        bool in_manifest; /* false: only its status files exist (e.g. after `app rm`) */
        rkl_pod_app_state state;
        int64_t created_ns;  /* mtime of <app>-created */
        int64_t started_ns;  /* mtime of <app>-started */
        int64_t finished_ns; /* mtime of <app>, or the pod's GC-mark time */
        /* The raw value rkt wrote: a bare signal number when killed (15, 9), not 128+N.
         * exit_known is false for an exited app whose status file is empty, "\n" only,
         * unreadable or garbage, and for apps forced to exited because the pod is gone. */
        bool exit_known;
        int exit_code;
        rkl_kvs annotations; /* RuntimeApp annotations */
        rkl_kvs user_annotations, user_labels;
} rkl_poddir_app;

void rkl_poddir_app_done(rkl_poddir_app *a);

/* The parts of an appc PodManifest that rktlet needs. Apps carry only manifest fields. */
typedef struct rkl_poddir_manifest {
        rkl_kvs annotations;
        rkl_kvs user_annotations, user_labels;
        rkl_poddir_app *apps;
        size_t n_apps;
} rkl_poddir_manifest;

void rkl_poddir_manifest_done(rkl_poddir_manifest *m);

typedef struct rkl_poddir_pod {
        char uuid[RKL_POD_UUID_LEN + 1];
        rkl_poddir_dir dir;
        rkl_pod_state state;
        bool locked;           /* someone held the pod lock when probed */
        bool rootfs_lock;      /* stage1/.#rootfs.lck exists: nspawn has not exited */
        bool supervisor_ready; /* rkt/supervisor-status is a symlink to "ready" */
        uint32_t ppid;         /* from ppid (or pid); 0 when unknown */
        int64_t created_ns;    /* mtime of pod-created, else of pod; 0 when unknown */
        int64_t started_ns;    /* mtime of ppid (or pid); 0 when not started */
        int64_t gc_marked_ns;  /* ctime of the dir in exited-garbage/ or garbage/; else 0 */
        /* Pod IPv4 from net-info.json; NULL when there is none (host network, not yet set up,
         * unreadable). net_name is the network it came from ("" if that entry has no netName). */
        char *ip;
        char *net_name;
        char *netns;        /* the path of its network namespace, from the file netns; NULL: none */
        char *subcgroup;    /* NULL when unknown */
        char *stage1_tree;  /* stage1TreeStoreID; NULL when unknown */
        int manifest_error; /* 0, or why the manifest could not be used (-ENOENT, -EBADMSG..) */
        /* What was there but could not be used, and why, for a person: the manifest's or
         * net-info.json's error ("net-info.json: not an array"), several joined with "; ";
         * NULL when all was usable. A pod being written can read so for a moment. */
        char *warning;
        rkl_kvs annotations;
        rkl_kvs user_annotations, user_labels;
        /* Manifest apps in manifest order, then apps that have only status files. */
        rkl_poddir_app *apps;
        size_t n_apps;
} rkl_poddir_pod;

void rkl_poddir_pod_done(rkl_poddir_pod *p);
const rkl_poddir_app *rkl_poddir_pod_find_app(const rkl_poddir_pod *p, const char *name);

/* Reads pods/<state dir>/<uuid>. pods_dirfd is "<rkt data dir>/pods". -ENOENT when the pod
 * is in no state dir (or vanished while being read), -EINVAL for a malformed uuid. A pod
 * renamed between state dirs while being read is found in its newer place. */
int rkl_poddir_read(int pods_dirfd, const char *uuid, rkl_poddir_pod *ret, rkl_error *reterr);

/* All pod UUIDs across the state dirs, sorted and deduplicated; ret is NULL-terminated. */
int rkl_poddir_list(int pods_dirfd, char ***ret_uuids, rkl_error *reterr);

/* Pure parsers over untrusted bytes (the fuzz targets). buf need not be NUL-terminated. */
/* The pod manifest "pod". -EBADMSG when it is not a valid manifest. */
int rkl_poddir_parse_manifest(const char *buf, size_t len, rkl_poddir_manifest *ret,
                              rkl_error *reterr);
/* net-info.json: prefers the network "rkt.kubernetes.io", then "default", then the first;
 * only IPv4 counts. Returns 0 with *ret_ip NULL when no network has an IPv4 address. */
int rkl_poddir_parse_netinfo(const char *buf, size_t len, char **ret_ip, char **ret_net_name,
                             rkl_error *reterr);
/* An app status file: decimal exit status and "\n". -ENODATA when empty or whitespace only
 * (rkt wrote nothing: the pod stopped first), -EBADMSG for garbage, -ERANGE beyond 255. */
int rkl_poddir_parse_exit(const char *buf, size_t len, int *ret_code);
/* rkt 1.30 cannot load a pod whose net-info.json is empty: its rm and gc fail for ever with
 * "cannot get pod: EOF". Stage1 writes the file by creating it, then encoding into it, and a
 * pod stopped in between keeps it empty. rkt's gc takes a missing file for a network setup
 * that never finished (it destroys the pod's network namespace, and no CNI DEL runs: an IP
 * the setup reserved stays reserved, as after any setup rkt did not finish); an empty one
 * means the same. So, for a pod that exited (p as rkl_poddir_read() read it), this removes
 * that file when it is empty: 1 when it did, 0 when there was none to remove, -errno. */
int rkl_poddir_drop_empty_netinfo(int pods_dirfd, const rkl_poddir_pod *p);

/* The pod's own systemd: the first child of its nspawn, whose PID is ppid. -ESRCH when the
 * nspawn is gone or has no child (yet, or any more). */
int rkl_poddir_pod_init(uint32_t nspawn_pid, pid_t *ret_pid, rkl_error *reterr);

/* ppid/pid: a positive decimal pid and optional trailing whitespace. */
int rkl_poddir_parse_pid(const char *buf, size_t len, uint32_t *ret_pid);

/* "01234567-89ab-cdef-0123-456789abcdef", lowercase, as rkt writes them. */
bool rkl_pod_uuid_is_valid(const char *s);
/* An app name safe as a file name under rkt/status/: appc's ACName is
 * ^[a-z0-9]+(-[a-z0-9]+)*$ ; reading accepts the separators [-._~] too (never '/', so
 * never "..") and at most 200 bytes, leaving room for the "-created" suffix. */
bool rkl_pod_app_name_is_valid(const char *s);

const char *rkl_poddir_dir_to_string(rkl_poddir_dir d); /* "run", "exited-garbage" */
rkl_poddir_dir rkl_poddir_dir_from_string(const char *s);
const char *rkl_pod_state_to_string(rkl_pod_state s); /* rkt's strings: "aborted prepare" */
const char *rkl_pod_app_state_to_string(rkl_pod_app_state s);
/* rkt's AfterRun(): the pod will not run (again); apps not exited are exited. */
bool rkl_pod_state_is_after_run(rkl_pod_state s);
