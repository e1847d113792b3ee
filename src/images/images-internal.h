/* Internals of src/images shared between its files: the body of rkl_images and what one file
 * offers the others. Nothing outside src/images includes this.
 *
 * images.c owns the cache (entries and the tag index, opaque here), pull.c the mirrors and
 * in-flight pulls, tags.c the recorded tags, fs-usage.c the memoised usage. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "images.h"
#include "base/latch.h"

typedef struct rkl_hashmap rkl_hashmap;
typedef struct rkl_rkt rkl_rkt;

/* An image of rkt's store, as the cache holds it (images.c). */
typedef struct rkl_images__entry rkl_images__entry;
/* Which image a tag or digest names (images.c). */
typedef struct rkl_images__index_ent rkl_images__index_ent;
/* A --registry-mirror entry (pull.c). */
typedef struct rkl_images__mirror rkl_images__mirror;

/* A reference a client pulled, and the image it got: a tag (or digest) of that image. */
typedef struct rkl_images__alias {
        char *ref;
        char *id;
        int64_t at_ns;
} rkl_images__alias;

/* A tag or digest whose image was removed: it names nothing from then on, though rkt may
 * keep an older image that claims it too. Claims as old as the removed image's are void. */
typedef struct rkl_images__released {
        char *ref;
        int64_t at_ns; /* the removed image's claim */
        bool used;     /* it voided a claim at the last rebuild of the index */
} rkl_images__released;

struct rkl_images {
        rkl_rkt *rkt;
        char *data_dir, *pulls_dir, *tags_path;
        rkl_images__mirror *mirrors;
        size_t n_mirrors;
        uint64_t pull_timeout_usec, cmd_timeout_usec;

        /* Fetches share rkt's image store, an rm has it alone: rkt-level fetch and rm of
         * one image running at once fail each other. Taken before op_lock, never inside. */
        pthread_rwlock_t store_lock;

        /* Refreshes and removals, one at a time: a refresh's list and its application to
         * the cache must not straddle a removal, or a removed image would come back. */
        pthread_mutex_t op_lock;

        pthread_mutex_t lock;        /* everything below; taken inside op_lock, never around it */
        rkl_images__entry **entries; /* oldest import first */
        size_t n_entries;
        rkl_hashmap *by_id; /* image ID -> entry */
        rkl_images__alias *aliases;
        size_t n_aliases;
        rkl_images__released *released;
        size_t n_released;
        rkl_hashmap *index; /* tag or digest -> index_ent */
        rkl_images__index_ent *index_ents;
        size_t n_index_ents;

        pthread_mutex_t pull_lock;
        rkl_hashmap *pulls; /* normalised reference -> pull job (pull.c) */

        /* Opened by the first refresh, whatever its outcome: until then the cache does
         * not say what rkt's store holds. */
        rkl_latch listed;

        pthread_mutex_t fs_lock;
        rkl_images_fs_usage fs;
        uint64_t fs_at_usec;
};

/* ---- images.c: the cache ---- */

int rkl_images__no_rkt(rkl_error *reterr);
/* Lists rkt's store and makes the cache match it. op_lock held, lock not. */
int rkl_images__refresh_locked(rkl_images *im, rkl_error *reterr);
/* Drops image id, which rkt no longer holds, from the cache with its recorded tags. op_lock
 * held, lock not. */
void rkl_images__forget(rkl_images *im, const char *id);
/* The IDs of the images rkt holds for the one image id that clients see (one per tag pulled
 * of the same registry manifest), id's head first; empty when id is unknown. Lock not held. */
char **rkl_images__members(rkl_images *im, const char *id);
/* The ID clients see for rkt's image id (id itself when unknown). Lock not held. */
char *rkl_images__head_id(rkl_images *im, const char *id);

/* ---- pull.c: mirrors ---- */

/* Parses the --registry-mirror entries into im->mirrors. */
int rkl_images__mirrors_parse(rkl_images *im, char *const *specs, rkl_error *reterr);
void rkl_images__mirrors_free(rkl_images *im);
/* Whether registry is the host of one of the mirrors. */
bool rkl_images__is_mirror_host(const rkl_images *im, const char *registry);

/* ---- tags.c: the recorded tags and <state dir>/images.json (lock held) ---- */

/* Loads the file at creation; what is damaged or malformed in it is left out. */
void rkl_images__tags_load(rkl_images *im);
/* Records ref (normalised) as a tag of image id, pulled at at_ns, and saves the file. */
void rkl_images__tags_record(rkl_images *im, const char *ref, const char *id, int64_t at_ns);
/* Drops the tags of image id; saves the file when that changed it. */
void rkl_images__tags_drop_image(rkl_images *im, const char *id);
/* Drops the tags of images not in im->by_id; saves the file when that changed it. */
void rkl_images__tags_drop_unlisted(rkl_images *im);
/* Frees them all, without touching the file. */
void rkl_images__tags_clear(rkl_images *im);
/* ref, claimed at at_ns by an image that goes: saved, claims as old are void from now on. */
void rkl_images__tags_release(rkl_images *im, const char *ref, int64_t at_ns);
/* Whether a claim of ref at at_ns is void (marks what voided it as used). */
bool rkl_images__tags_released(rkl_images *im, const char *ref, int64_t at_ns);
/* Before a rebuild of the index: nothing used yet. After it: drops what voided nothing (no
 * image is left to take the tag back), and saves the file when that changed it. */
void rkl_images__tags_released_unuse(rkl_images *im);
void rkl_images__tags_released_prune(rkl_images *im);
