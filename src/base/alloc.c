#include "alloc.h"

#include <stdarg.h>

#include "banned.h"

void rkl_oom(void)
{
        static const char msg[] = "<2>rktlet: out of memory\n";
        (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
        abort();
}

void *rkl_xmalloc(size_t n)
{
        void *p = malloc(n ? n : 1);
        if (!p)
                rkl_oom();
        return p;
}

void *rkl_xcalloc(size_t n, size_t size)
{
        void *p = calloc(n ? n : 1, size ? size : 1);
        if (!p)
                rkl_oom();
        return p;
}

void *rkl_xrealloc(void *p, size_t n)
{
        p = realloc(p, n ? n : 1);
        if (!p)
                rkl_oom();
        return p;
}

char *rkl_xstrdup(const char *s)
{
        if (!s)
                return NULL;
        char *p = strdup(s);
        if (!p)
                rkl_oom();
        return p;
}

char *rkl_xstrndup(const char *s, size_t n)
{
        if (!s)
                return NULL;
        char *p = strndup(s, n);
        if (!p)
                rkl_oom();
        return p;
}

char *rkl_xasprintf(const char *fmt, ...)
{
        va_list ap;
        char *p;
        va_start(ap, fmt);
        int r = vasprintf(&p, fmt, ap);
        va_end(ap);
        if (r < 0)
                rkl_oom();
        return p;
}
