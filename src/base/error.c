#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "banned.h"

int rkl_error_set(rkl_error *e, int code, const char *fmt, ...)
{
        assert(code < 0);
        if (!e)
                return code;
        va_list ap;
        va_start(ap, fmt);
        e->code = code;
        (void)vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
        va_end(ap);
        return code;
}

int rkl_error_prefix(rkl_error *e, const char *fmt, ...)
{
        if (!e)
                return -EIO;
        if (e->code == 0)
                e->code = -EIO;
        char prefix[256];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(prefix, sizeof(prefix) - 2, fmt, ap);
        va_end(ap);
        if (n < 0)
                return e->code;
        size_t plen = strlen(prefix);
        memcpy(prefix + plen, ": ", 3);
        plen += 2;
        /* Shift the old message right, truncating its tail, then put the prefix in front. */
        size_t olen = strnlen(e->msg, sizeof(e->msg) - 1);
        if (plen >= sizeof(e->msg))
                plen = sizeof(e->msg) - 1;
        if (olen > sizeof(e->msg) - 1 - plen)
                olen = sizeof(e->msg) - 1 - plen;
        memmove(e->msg + plen, e->msg, olen);
        memcpy(e->msg, prefix, plen);
        e->msg[plen + olen] = 0;
        return e->code;
}

void rkl_error_clear(rkl_error *e)
{
        if (!e)
                return;
        e->code = 0;
        e->msg[0] = 0;
}

int rkl_error_shortage_of(const char *msg)
{
        static const struct {
                const char *words;
                int code;
        } shortages[] = {
            {"No space left on device", -ENOSPC},
            {"Disk quota exceeded", -ENOSPC},
            {"Too many open files", -EMFILE},
            /* systemd's words when inotify_init1() fails: the instance limit */
            {"Failed to allocate manager object", -EMFILE},
            {"Cannot allocate memory", -ENOMEM},
            {"Out of memory", -ENOMEM},
            /* host-local's and other IPAM plugins' words for a spent range */
            {"no IP addresses available", -ENOSPC},
            {"no more addresses", -ENOSPC},
        };
        if (!msg)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(shortages); i++)
                if (strcasestr(msg, shortages[i].words))
                        return shortages[i].code;
        return 0;
}
