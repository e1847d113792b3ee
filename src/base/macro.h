/* Small macros every module uses: cleanup attributes, ownership hand-off, guards. */
#pragma once

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _printf_(a, b) __attribute__((__format__(printf, a, b)))
#define _noreturn_     __attribute__((__noreturn__))
#define _unused_       __attribute__((__unused__))
#define _cleanup_(x)   __attribute__((__cleanup__(x)))
#define _likely_(x)    __builtin_expect(!!(x), 1)

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

static inline bool streq(const char *a, const char *b)
{
        return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b)
{
        if (!a || !b)
                return a == b;
        return streq(a, b);
}

/* s past prefix, or NULL when s does not start with it. */
static inline const char *startswith(const char *s, const char *prefix)
{
        size_t n = strlen(prefix);
        return strncmp(s, prefix, n) == 0 ? s + n : NULL;
}

static inline bool isempty(const char *s)
{
        return !s || !*s;
}

/* Hand an owned pointer or fd to someone else and forget it here. */
#define TAKE_PTR(p)                                                                                \
        ({                                                                                         \
                typeof(p) _p_ = (p);                                                               \
                (p) = NULL;                                                                        \
                _p_;                                                                               \
        })
#define TAKE_FD(fd)                                                                                \
        ({                                                                                         \
                int _fd_ = (fd);                                                                   \
                (fd) = -EBADF;                                                                     \
                _fd_;                                                                              \
        })

static inline void *mfree(void *p)
{
        free(p);
        return NULL;
}

static inline void freep(void *p)
{
        free(*(void **)p);
}

static inline int safe_close(int fd)
{
        if (fd >= 0) {
                int saved = errno;
                (void)close(fd);
                errno = saved;
        }
        return -EBADF;
}

static inline void closep(int *fd)
{
        *fd = safe_close(*fd);
}

static inline void fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}

static inline void closedirp(DIR **d)
{
        if (*d)
                closedir(*d);
}

#define _cleanup_free_     _cleanup_(freep)
#define _cleanup_close_    _cleanup_(closep)
#define _cleanup_fclose_   _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Defines name##p(type *p) calling fn(*p) when *p is set, for _cleanup_(name##p). */
#define RKL_DEFINE_CLEANUP(type, fn)                                                               \
        static inline void fn##p(type *p)                                                          \
        {                                                                                          \
                if (*p)                                                                            \
                        (void)fn(*p);                                                              \
        }

/* Scoped mutex: RKL_GUARD(&c->lock); unlocks when the enclosing block ends. */
static inline void rkl__unlockp(pthread_mutex_t **m)
{
        if (*m)
                pthread_mutex_unlock(*m);
}
#define RKL_CONCAT_(a, b) a##b
#define RKL_CONCAT(a, b)  RKL_CONCAT_(a, b)
#define RKL_GUARD(m)                                                                               \
        _cleanup_(rkl__unlockp) _unused_ pthread_mutex_t *RKL_CONCAT(_guard_, __LINE__) =          \
            (pthread_mutex_lock(m), (m))

/* A NULL-terminated string vector literal: RKL_STRV("a", "b"). */
#define RKL_STRV(...)          ((char *const *)(const char *const[]){__VA_ARGS__, NULL})
#define RKL_STRV_FOREACH(s, l) for (char *const *s = (l); s && *s; s++)
