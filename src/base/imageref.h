/* Image references as kubelet and crictl send them, parsed and normalised the way
 * containerd reports them. Pure: no I/O, no registry lookups.
 *
 *   busybox                          docker.io/library/busybox:latest
 *   busybox:1.36                     docker.io/library/busybox:1.36
 *   registry.k8s.io/pause:3.9        registry.k8s.io/pause:3.9
 *   host:5000/ns/img@sha256:<hex>    host:5000/ns/img@sha256:<hex>       (no tag)
 *   name:tag@sha256:<hex>            the digest decides; the tag is kept for display
 *   docker://busybox                 rkt's form: the same as busybox
 *   sha512-<hex>                     an rkt image ID or a prefix of one, not a name
 */
#pragma once

#include <stdbool.h>

#include "error.h"

#define RKL_IMAGEREF_MAX      1024 /* a whole reference */
#define RKL_IMAGEREF_NAME_MAX 255  /* registry/repository, as docker's reference package */
#define RKL_IMAGE_ID_PREFIX   "sha512-"
/* rkt 1.30 prints full IDs with 64 hex digits (the sha512 cut to 256 bits) and short ones
 * with 32; the length is rkt's business, so IDs are checked by form, not by length. */
#define RKL_IMAGE_ID_HEX_MIN 32
#define RKL_IMAGE_ID_HEX_MAX 128

typedef struct rkl_imageref {
        char *id;         /* set (and nothing else) for an rkt image ID */
        char *registry;   /* "docker.io", "registry.k8s.io", "host:5000" */
        char *repository; /* "library/busybox" */
        char *tag;        /* "latest"; NULL when only a digest was given */
        char *digest;     /* "sha256:<64 hex>", or NULL */
} rkl_imageref;

void rkl_imageref_done(rkl_imageref *r);

/* Parses and normalises s. -EINVAL (-ENAMETOOLONG when too long) with the reason in
 * reterr for anything that is not a valid reference or image ID. */
int rkl_imageref_parse(const char *s, rkl_imageref *ret, rkl_error *reterr);

/* True for sha512- followed by 32 to 128 lowercase hex digits: rkt's full IDs and their
 * prefixes. Which one names an image is decided by looking it up, not by its length. */
bool rkl_image_id_is_valid(const char *s);

/* "registry/repository". r must not be an ID. */
char *rkl_imageref_name(const rkl_imageref *r);
/* The canonical string: "name:tag", "name@digest", "name:tag@digest", or the ID. */
char *rkl_imageref_to_string(const rkl_imageref *r);
/* "name:tag", or NULL when there is no tag (or r is an ID). */
char *rkl_imageref_tagged(const rkl_imageref *r);
/* "name@digest", or NULL when there is no digest. */
char *rkl_imageref_digested(const rkl_imageref *r);
/* What `rkt image fetch` and `rkt app add` take: "docker://registry/repository:tag", or
 * "...@digest" when a digest was given (the digest decides, as for containerd). registry
 * replaces r's registry when not NULL (a mirror). For an ID: the ID. */
char *rkl_imageref_to_rkt(const rkl_imageref *r, const char *registry);

/* Checks a registry host ("host", "host:port", "1.2.3.4:5000", "[::1]:5000"). */
bool rkl_imageref_registry_is_valid(const char *host);
/* The host as references name it: docker.io for Docker Hub's aliases. Returns a copy. */
char *rkl_imageref_registry_normalize(const char *host);
