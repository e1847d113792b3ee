#include "oom.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/banned.h"

struct rkl_oom_log {
        int fd;
        char buf[8192]; /* a line not yet complete (a plain file's; kmsg's reads are whole) */
        size_t len;
        char *kills[RKL_OOM_LOG_KEEP]; /* a ring of task_memcg paths */
        size_t next;
};

int rkl_oom_log_open(const char *path, rkl_oom_log **ret)
{
        int fd = open(path ? path : "/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        rkl_oom_log *l = rkl_xnew0(rkl_oom_log, 1);
        l->fd = fd;
        *ret = l;
        return 0;
}

rkl_oom_log *rkl_oom_log_free(rkl_oom_log *l)
{
        if (!l)
                return NULL;
        close(l->fd);
        for (size_t i = 0; i < RKL_OOM_LOG_KEEP; i++)
                free(l->kills[i]);
        free(l);
        return NULL;
}

/* The last occurrence of needle in [s, end), or NULL. */
static const char *find_last(const char *s, const char *end, const char *needle)
{
        size_t n = strlen(needle);

        if ((size_t)(end - s) < n)
                return NULL;
        for (const char *p = end - n;; p--) {
                if (!memcmp(p, needle, n))
                        return p;
                if (p == s)
                        return NULL;
        }
}

int rkl_oom_parse_record(const char *rec, size_t len, const char **ret_memcg, size_t *ret_memcg_len)
{
        static const char kill[] = "oom-kill:", key[] = "task_memcg=", task[] = ",task=";
        const char *end = memchr(rec, '\n', len);
        const char *msg = memchr(rec, ';', len);

        end = end ? end : rec + len;
        if (!msg || msg > end)
                return 0;
        msg++;
        if ((size_t)(end - msg) < strlen(kill) || memcmp(msg, kill, strlen(kill)))
                return 0;
        /* The path runs from "task_memcg=" to the ",task=<comm>,pid=N,uid=N" that ends the
         * line; a comm or a path holding ",task=" can only make the path fail to match. */
        const char *p = NULL;
        for (const char *q = msg; q + strlen(key) <= end; q++)
                if (!memcmp(q, key, strlen(key)) && (q[-1] == ',' || q[-1] == ':')) {
                        p = q + strlen(key);
                        break;
                }
        if (!p)
                return -EBADMSG;
        const char *t = find_last(p, end, task);
        if (!t || t == p || *p != '/')
                return -EBADMSG;
        *ret_memcg = p;
        *ret_memcg_len = (size_t)(t - p);
        return 1;
}

static void remember(rkl_oom_log *l, const char *memcg, size_t n)
{
        free(l->kills[l->next]);
        l->kills[l->next] = rkl_xstrndup(memcg, n);
        l->next = (l->next + 1) % RKL_OOM_LOG_KEEP;
}

static void take_line(rkl_oom_log *l, const char *line, size_t len)
{
        const char *memcg;
        size_t memcg_len;

        /* Not a record's continuation (" KEY=value"), and an OOM kill. */
        if (len > 0 && line[0] != ' ' && rkl_oom_parse_record(line, len, &memcg, &memcg_len) > 0)
                remember(l, memcg, memcg_len);
}

void rkl_oom_log_refresh(rkl_oom_log *l)
{
        for (;;) {
                ssize_t n = read(l->fd, l->buf + l->len, sizeof(l->buf) - l->len);
                if (n < 0 && (errno == EPIPE || errno == EINTR))
                        continue; /* EPIPE: records were overwritten before we read them */
                if (n <= 0)
                        return; /* EAGAIN: all read; 0: the end of a plain file (tests) */
                /* /dev/kmsg gives one record per read, a plain file many lines. */
                const char *start = l->buf, *end = l->buf + l->len + n, *nl;
                for (; (nl = memchr(start, '\n', (size_t)(end - start))); start = nl + 1)
                        take_line(l, start, (size_t)(nl - start));
                l->len = (size_t)(end - start);
                if (l->len == sizeof(l->buf))
                        l->len = 0; /* a line longer than the buffer: not a kill record */
                else
                        memmove(l->buf, start, l->len);
        }
}

bool rkl_oom_log_has(const rkl_oom_log *l, const char *suffix)
{
        size_t n = strlen(suffix);

        if (n < 2 || suffix[0] != '/')
                return false;
        for (size_t i = 0; i < RKL_OOM_LOG_KEEP; i++) {
                const char *k = l->kills[i];
                size_t m = k ? strlen(k) : 0;
                if (m >= n && streq(k + m - n, suffix))
                        return true; /* suffix starts with '/': a component boundary */
        }
        return false;
}
