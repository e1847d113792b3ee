/* The image cache and image operations over rkt's image store. Thread-safe: API worker
 * threads pull, remove and read concurrently.
 *
 * List, status and resolve read the cache only. The cache is rebuilt from
 * `rkt image list --format=json --full` plus one `rkt image cat-manifest` per image it has
 * not seen yet, at start and after every pull or remove. One image ID everywhere: rkt's full
 * `sha512-<128 hex>` ID.
 *
 * Tags. rkt records one name and version per image (the tag is in the ACI manifest, so two
 * tags of the same content are two images with two IDs in rkt's store). Those of one registry
 * manifest (docker2aci's appc.io/docker/manifesthash) are one image here: the ID of the oldest
 * stands for them all, with all their tags and digests, and removing it removes them all
 * (`rkt image rm` of each). On top of that,
 * each pull records the reference the client pulled (normalised) as a tag of the image it
 * got, persisted in <state dir>/images.json: that is how an image pulled through a mirror
 * (whose manifest names the mirror host) lists the reference the client asked for. A tag
 * names one image: the most recently pulled or imported one. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

typedef struct rkl_images rkl_images;

typedef struct rkl_images_config {
        const char *rkt_path; /* NULL: no rkt; every operation but list/status fails */
        const char *rkt_data_dir;
        const char *state_dir;         /* images.json and private per-pull dirs (pulls/) */
        char *const *mirrors;          /* "HOST=URL" entries (--registry-mirror), in order */
        uint64_t pull_timeout_usec;    /* one fetch; 0: 30 min */
        uint64_t command_timeout_usec; /* list, cat-manifest, rm; 0: 60 s */
} rkl_images_config;

/* Checks one "HOST=URL" mirror entry: HOST a registry host (docker.io for Docker Hub), URL
 * "http://host[:port]", "https://host[:port]" or "host[:port]" (https). */
int rkl_images_mirror_check(const char *spec, rkl_error *reterr);

/* Cleans up the private pull dirs a crash may have left (they may hold credentials) and
 * loads the recorded tags. Does not run rkt: call rkl_images_refresh(). */
int rkl_images_new(const rkl_images_config *cfg, rkl_images **ret, rkl_error *reterr);
rkl_images *rkl_images_free(rkl_images *im);
RKL_DEFINE_CLEANUP(rkl_images *, rkl_images_free)

/* An image as CRI reports it: a copy, owned by the caller. */
typedef struct rkl_image {
        char *id;            /* sha512-<128 hex> */
        char **repo_tags;    /* "docker.io/library/busybox:latest"; may be empty */
        char **repo_digests; /* "docker.io/library/busybox@sha256:..."; may be empty */
        uint64_t size;
        bool has_uid; /* the image's user is numeric */
        int64_t uid;
        char *username;    /* the image's user when not numeric, else NULL */
        char *name;        /* rkt's name for it: manifest name[:version] */
        char **exec;       /* the image's entrypoint + cmd (app.exec) */
        char **entrypoint; /* what args without a command run with (rkt/image.h); may be NULL */
        char *working_dir;
        int64_t import_time_ns;
        bool pinned; /* rkt's own stage1: kubelet's image GC must leave it alone */
} rkl_image;

rkl_image *rkl_image_free(rkl_image *i);
RKL_DEFINE_CLEANUP(rkl_image *, rkl_image_free)
void rkl_image_array_free(rkl_image **l, size_t n);

/* Registry credentials from the client (CRI AuthConfig); all borrowed, any may be NULL. */
typedef struct rkl_image_auth {
        const char *username, *password;
        const char *auth; /* base64 of "username:password" */
        const char *server_address;
        const char *identity_token, *registry_token;
} rkl_image_auth;

/* Rebuilds the cache from rkt's store. */
int rkl_images_refresh(rkl_images *im, rkl_error *reterr);
/* Waits at most timeout_usec for the first refresh to have run (whatever its outcome);
 * returns whether it has. Reads of the cache before then would miss every image. */
bool rkl_images_wait_listed(rkl_images *im, uint64_t timeout_usec);

/* Pulls ref (normalised; through the registry's mirrors first, then the registry itself)
 * and returns the image ID. Credentials go to rkt in a private auth.d (mode 0600) that is
 * removed when the fetch ends. Concurrent pulls of the same normalised reference share one
 * fetch (and its outcome). The cache is refreshed before this returns. Errors: -EINVAL
 * malformed reference; -ENOENT not found; -EACCES unauthorised; -EHOSTUNREACH registry
 * unreachable; -ETIMEDOUT; -EOPNOTSUPP credentials rkt cannot use (tokens); else -EIO. */
int rkl_images_pull(rkl_images *im, const char *ref, const rkl_image_auth *auth, char **ret_id,
                    rkl_error *reterr);

/* Imports the ACI file at path (absolute) into rkt's store and returns its ID (ret_id may
 * be NULL); the cache is refreshed before this returns. The node's stage1 comes in so. */
int rkl_images_import(rkl_images *im, const char *path, char **ret_id, rkl_error *reterr);

/* Whether a container uses image_id; when it does, *ret_user may get a description of
 * those that do ("container <id>", "containers <id>, <id>"), which the caller frees. Called
 * without any lock of im held. */
typedef bool (*rkl_images_in_use_fn)(void *userdata, const char *image_id, char **ret_user);

/* Whether one container uses image_id: one that has run uses the image it ran (ran_id, the
 * ID rkt reported for it); one that has not (ran_id NULL or empty) will run what its
 * reference ref names now, in the cache. False with neither. The rule an
 * rkl_images_in_use_fn applies to each container. */
bool rkl_images_container_uses(rkl_images *im, const char *ran_id, const char *ref,
                               const char *image_id);

/* Removes the image ref names (a tag, a digest or an ID) and with it all its tags. 0 when
 * it is already gone. -ETXTBSY (with the users in the message) while in_use says a container
 * uses it: rkt itself would remove it from under a running pod. in_use may be NULL. */
int rkl_images_remove(rkl_images *im, const char *ref, rkl_images_in_use_fn in_use, void *userdata,
                      rkl_error *reterr);

/* Every image, oldest import first; with filter_ref, only the image it names (none when
 * unknown). -EINVAL for a malformed filter. */
int rkl_images_list(rkl_images *im, const char *filter_ref, rkl_image ***ret, size_t *ret_n,
                    rkl_error *reterr);
/* The image ref names. -ENOENT unknown, -EINVAL malformed. */
int rkl_images_status(rkl_images *im, const char *ref, rkl_image **ret, rkl_error *reterr);
/* The ID of the image a client reference names: a tag ("busybox", "busybox:1.36",
 * "docker://..."), a digest, a full ID or an unambiguous ID prefix (32+ hex). From the
 * cache only: -ENOENT when no image in it matches, -ENOTUNIQ for an ambiguous prefix,
 * -EINVAL for a malformed reference. */
int rkl_images_resolve(rkl_images *im, const char *ref, char **ret_id);
/* rkl_images_resolve(), and on a miss one refresh from rkt's store and another try: for
 * callers that may run rkt (the reconciler), so that an image fetched behind rktlet's back
 * (`rkt fetch` by hand, a stage1) is found. -ENOENT (with a message) when it is not there. */
int rkl_images_resolve_refresh(rkl_images *im, const char *ref, char **ret_id, rkl_error *reterr);

typedef struct rkl_images_fs_usage {
        int64_t timestamp_ns;
        char *path;                       /* <rkt data dir>/cas */
        char *mountpoint;                 /* the mount point of the filesystem holding it */
        uint64_t used_bytes, inodes_used; /* of the store itself */
        uint64_t fs_size_bytes, fs_avail_bytes, fs_inodes, fs_inodes_free; /* statvfs */
} rkl_images_fs_usage;

void rkl_images_fs_usage_done(rkl_images_fs_usage *u);
/* Usage of rkt's image store. Walks it: at most once per 10 s, answers from memory between. */
int rkl_images_fs_info(rkl_images *im, rkl_images_fs_usage *ret, rkl_error *reterr);
