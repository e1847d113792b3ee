/* Bounded whole-file reads and atomic writes, relative to a directory fd. */
#pragma once

#include <fcntl.h> /* AT_FDCWD */
#include <stddef.h>
#include <sys/types.h>

/* Reads at most max bytes (-EFBIG if larger); NUL-terminates. dirfd may be AT_FDCWD. */
int rkl_read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_size);
/* Writes via a temporary file plus rename, so readers see the old or the new content. */
int rkl_write_file_atomic_at(int dirfd, const char *path, const void *buf, size_t n, mode_t mode);
/* mkdir -p, with mode for created directories. */
int rkl_mkdir_p(const char *path, mode_t mode);
/* rm -rf below dirfd/path; does not cross mount points. */
int rkl_rm_rf_at(int dirfd, const char *path);
