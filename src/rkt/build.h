/* The build record of an rkt binary: what it was built from, and with which of rktlet's
 * patches. rktlet relies on the fixes of packaging/rkt/ (each patch says what breaks without
 * it), and an rkt built anywhere else starts and runs pods without them, then loses log
 * lines, mislabels stderr or breaks volumes. So scripts/build-rkt writes this record beside
 * the rkt it builds, and the daemon's probe and `rktlet check` compare it with the patches
 * this rktlet was built with (rkl_rkt_patches_wanted).
 *
 * The record is the file "<rkt>.patches" beside the binary, symlinks resolved first (rkt
 * finds its stage1 the same way, beside its real path). One item a line, '#' starts a
 * comment line:
 *
 *   rkt VERSION SHA256             the version `rkt version` says; the binary's sha256
 *   stage1 NAME ID PATH            the stage1 built with it: its image name with version
 *                                  ("coreos.com/rkt/stage1-host:1.30.0"), rkt's image ID
 *                                  ("sha512-" and 64 hex) and the file rkt imports it from;
 *                                  optional (a simulator has none)
 *   patch SHA256 NAME              a patch applied, by its file name; one line each
 *
 * Library code: errors come back as -errno with a message for a person, nothing is logged. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "base/error.h"

#define RKL_RKT_BUILD_SUFFIX ".patches"
#define RKL_RKT_BUILD_MAX    (64u << 10)

/* A patch, by its file name in packaging/rkt/ and the sha256 of its content (hex). */
typedef struct rkl_rkt_patch {
        const char *name, *sha256;
} rkl_rkt_patch;

/* The patches this rktlet was built with: those of packaging/rkt/, in name order (made by
 * the build from the files themselves). */
extern const rkl_rkt_patch rkl_rkt_patches_wanted[];
extern const size_t rkl_rkt_n_patches_wanted;

typedef struct rkl_rkt_build {
        char *version, *sha256;
        char *stage1_name, *stage1_id, *stage1_path; /* all NULL without a stage1 line */
        char **patch_names, **patch_sums;            /* the same length, in the record's order */
} rkl_rkt_build;

void rkl_rkt_build_done(rkl_rkt_build *b);
/* -EBADMSG, naming the line, when text is not a record. */
int rkl_rkt_build_parse(const char *text, size_t len, rkl_rkt_build *ret, rkl_error *reterr);
/* Where rkt_path's record is: "<real path of rkt_path>.patches" (rkt_path's own name when it
 * cannot be resolved). */
char *rkl_rkt_build_path(const char *rkt_path);

/* Whether b lists every patch of want with the same content: 0, or -ENOPKG with the ones
 * missing and those of another content named in reterr. */
int rkl_rkt_build_check_patches(const rkl_rkt_build *b, const rkl_rkt_patch *want, size_t n,
                                rkl_error *reterr);

/* What a probe keeps between calls so that the binary's sha256 is computed again only when
 * the file changed (another inode, size or mtime). Zero it before the first call. */
typedef struct rkl_rkt_build_memo {
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime;
        char sha256[65];
} rkl_rkt_build_memo;

/* The whole check of the rkt at rkt_path, which said it is version: its record exists,
 * describes this very binary (its sha256) and version, and lists every patch of want. 0 with
 * the record in ret (may be NULL). Otherwise, with a message saying what is wrong and what
 * to do: -ENOENT no record beside it (an rkt not built by scripts/build-rkt), -EBADMSG a
 * record that cannot be read, -ESTALE a record of another binary or version, -ENOPKG patches
 * missing or different. memo may be NULL. */
int rkl_rkt_build_verify(const char *rkt_path, const char *version, const rkl_rkt_patch *want,
                         size_t n_want, rkl_rkt_build_memo *memo, rkl_rkt_build *ret,
                         rkl_error *reterr);

/* Whether the image (name, id) of rkt's store, if it is b's stage1 by name, is the one built
 * with b's patches: rkt runs the stage1 it has under that name rather than the file, so an
 * older one imported before (an earlier build, another rkt) would go on being used. 0 when
 * it is, or is another image, or b names no stage1; -ENOPKG saying what to remove
 * otherwise. */
int rkl_rkt_build_check_stage1(const rkl_rkt_build *b, const char *name, const char *id,
                               rkl_error *reterr);

/* "8 patches (app-rm-shared-image, iottymux-partial, ...)": for messages; caller frees. */
char *rkl_rkt_build_summary(const rkl_rkt_build *b);
