/* rkt's image commands: `image fetch`, `image list --format=json`, `image cat-manifest`,
 * `image rm`. The parsers are pure (and fuzzed); the runners go through rkl_rkt_exec(). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "base/model.h"

typedef struct rkl_rkt rkl_rkt;

#define RKL_RKT_IMAGE_LIST_MAX     (8u << 20)
#define RKL_RKT_IMAGE_MANIFEST_MAX (1u << 20)
#define RKL_RKT_MAX_IMAGES         16384

/* One entry of `rkt image list --format=json --full`. */
typedef struct rkl_rkt_image {
        char *id;   /* sha512-<128 hex> */
        char *name; /* as rkt lists it: "registry-1.docker.io/library/busybox:latest" */
        int64_t import_time_ns, last_used_ns;
        uint64_t size;
} rkl_rkt_image;

void rkl_rkt_image_done(rkl_rkt_image *i);
void rkl_rkt_images_free(rkl_rkt_image *l, size_t n);
/* "null" (rkt's empty store) is an empty list. -EBADMSG for anything else unexpected. */
int rkl_rkt_image_list_parse(const char *buf, size_t len, rkl_rkt_image **ret, size_t *ret_n,
                             rkl_error *reterr);

/* The parts of an appc image manifest (`rkt image cat-manifest ID`) rktlet uses. */
typedef struct rkl_rkt_image_manifest {
        char *name;          /* "registry-1.docker.io/library/busybox" */
        rkl_kvs labels;      /* version, os, arch */
        rkl_kvs annotations; /* appc.io/docker/{originalname,registryurl,repository,tag,...} */
        char *user, *group;  /* app.user, app.group; NULL without an app section */
        char **exec;         /* app.exec */
        char *working_dir;   /* app.workingDirectory */
        rkl_kvs environment; /* app.environment */
        /* The image's own entrypoint, what a container given args but no command runs them
         * with (Kubernetes' rule): a Docker image's ENTRYPOINT, which docker2aci keeps in the
         * annotation appc.io/docker/entrypoint (NULL: it has none, and the args are the
         * whole command); an appc image's exec[0], as rkt itself treats args. */
        char **entrypoint;
} rkl_rkt_image_manifest;

void rkl_rkt_image_manifest_done(rkl_rkt_image_manifest *m);
int rkl_rkt_image_manifest_parse(const char *buf, size_t len, rkl_rkt_image_manifest *ret,
                                 rkl_error *reterr);

/* The image ID that `rkt image fetch --full` printed: its last non-empty stdout line, a full
 * sha512- ID. -EBADMSG otherwise. */
int rkl_rkt_image_fetch_parse(const char *out, char **ret_id);

/* rkt's fetch and rm errors classified: -ENOENT (no such image), -EACCES (credentials
 * refused or missing), -EHOSTUNREACH (registry unreachable), else -EIO. */
int rkl_rkt_image_classify_error(const char *stderr_text);

typedef struct rkl_rkt_fetch_opts {
        const char *pull_policy; /* "new", "update", "never"; NULL: rkt's default */
        const char *user_config; /* --user-config=DIR holding auth.d/; NULL: none */
        bool insecure_http;      /* plain-HTTP registry (a loopback mirror) */
        uint64_t timeout_usec;
} rkl_rkt_fetch_opts;

/* The arguments after the global flags for `rkt image fetch`. */
char **rkl_rkt_image_fetch_args(const char *ref, const char *pull_policy);

int rkl_rkt_image_fetch(rkl_rkt *d, const char *ref, const rkl_rkt_fetch_opts *o, char **ret_id,
                        rkl_error *reterr);
int rkl_rkt_image_list(rkl_rkt *d, uint64_t timeout_usec, rkl_rkt_image **ret, size_t *ret_n,
                       rkl_error *reterr);
int rkl_rkt_image_cat_manifest(rkl_rkt *d, const char *id, uint64_t timeout_usec,
                               rkl_rkt_image_manifest *ret, rkl_error *reterr);
/* -ENOENT when rkt has no such image. */
int rkl_rkt_image_rm(rkl_rkt *d, const char *id, uint64_t timeout_usec, rkl_error *reterr);
