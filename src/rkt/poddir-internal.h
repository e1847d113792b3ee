/* Internals of the pod-directory reader shared between its files: poddir.c (the pod),
 * poddir-apps.c (its apps) and poddir-parse.c (the parsers), and watch.c. Nothing outside
 * src/rkt includes this. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "poddir.h"

struct stat;

/* The longest app name read: leaves room for the "-created" suffix in a file name. */
#define RKL_PODDIR__APP_NAME_MAX 200

/* Moves a value struct out, leaving zeroes behind. */
#define TAKE_STRUCT(s)                                                                             \
        ({                                                                                         \
                typeof(s) _s_ = (s);                                                               \
                (s) = (typeof(s)){0};                                                              \
                _s_;                                                                               \
        })

/* Reads a regular file (never a FIFO, device or symlink: opening a FIFO would block) of at
 * most max bytes relative to dirfd. -ENOENT also for an overlay whiteout, -EBADFD for what is
 * not a regular file. ret_st (may be NULL) gets its stat. */
int rkl_poddir__read_regular_at(int dirfd, const char *path, size_t max, char **ret,
                                size_t *ret_len, struct stat *ret_st);
/* mtime in ns of a regular file; 0 when it is missing or not a regular file. */
int64_t rkl_poddir__mtime_at(int dirfd, const char *path);
/* Trims ASCII whitespace off both ends of [*buf, *buf + *len). */
void rkl_poddir__trim(const char **buf, size_t *len);
/* strcmp() for qsort() over a char* array. */
int rkl_poddir__cmp_str(const void *a, const void *b);

/* The pod's validated stage1TreeStoreID, or NULL (also for watch.c). */
char *rkl_poddir__read_stage1_tree(int pod_dirfd);

/* Fills p->apps: m's apps (moved out of m), then the apps known only from status files,
 * each with its state and exit from the status files; p's state, stage1_tree and
 * manifest_error must be set. fd is the pod directory. */
void rkl_poddir__read_apps(int fd, rkl_poddir_pod *p, rkl_poddir_manifest *m);
