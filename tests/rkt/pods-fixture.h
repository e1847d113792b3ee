/* Shared by the rkt/ tests: a private copy of tests/fixtures/pods in a tmpdir, because a pod
 * dir only means something together with its locks and mtimes, which tests set at run time. */
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/spawn.h"
#include "base/strv.h"
#include "base/time-util.h"

#define U_RUNNING  "1a000000-0000-4000-8000-000000000001"
#define U_STOPPED  "1a000000-0000-4000-8000-000000000002"
#define U_EXITED_G "1a000000-0000-4000-8000-000000000003"
#define U_PREPARE  "1a000000-0000-4000-8000-000000000004"
#define U_BROKEN   "1a000000-0000-4000-8000-000000000005"
#define U_EMPTY    "1a000000-0000-4000-8000-000000000006"
#define U_EMBRYO   "1a000000-0000-4000-8000-000000000007"
#define U_PREPARED "1a000000-0000-4000-8000-000000000008"
#define U_GARBAGE  "1a000000-0000-4000-8000-000000000009"
#define TREE       "deps-sha512-c3749ed3b5ba1bd1fc3ad5dbf6f14ab1c1b44e42d5b5ac5a2d7e7c0bc1bf6f31"
#define UPPER      "overlay/" TREE "/upper/rkt"

/* A fresh tmpdir; with copy, holding pods/ copied from the committed fixtures. */
static inline char *fixture_tmpdir(bool copy)
{
        char *dir = rkl_xstrdup("/tmp/rkl-pods-XXXXXX");
        if (!mkdtemp(dir))
                abort();
        if (copy) {
                const char *src = getenv("RKL_SOURCE_DIR");
                if (!src)
                        abort();
                _cleanup_free_ char *from = rkl_xasprintf("%s/tests/fixtures/pods", src);
                _cleanup_free_ char *to = rkl_xasprintf("%s/pods", dir);
                rkl_spawn_result res = {0};
                rkl_error e = RKL_ERROR_INIT;
                if (rkl_spawn_run(RKL_STRV("/bin/cp", "-R", from, to), NULL, &res, &e) < 0 ||
                    res.exit_code != 0)
                        abort();
                rkl_spawn_result_done(&res);
        }
        return dir;
}

static inline void fixture_rm(char *dir)
{
        (void)rkl_rm_rf_at(AT_FDCWD, dir);
        free(dir);
}

/* Sets a file's mtime (and leaves atime) to ns since the epoch. */
static inline void set_mtime(int dirfd, const char *path, int64_t ns)
{
        struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT},
                                 {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000}};
        if (utimensat(dirfd, path, ts, AT_SYMLINK_NOFOLLOW) < 0)
                abort();
}

static inline void write_at(int dirfd, const char *path, const char *content)
{
        if (rkl_write_file_atomic_at(dirfd, path, content, strlen(content), 0644) < 0)
                abort();
}
