#include "parse.h"

#include <ctype.h>
#include <limits.h>

#include "macro.h"
#include "banned.h"

int rkl_safe_atou64(const char *s, uint64_t *ret)
{
        char *end;
        if (isempty(s) || !isdigit((unsigned char)s[0]))
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno)
                return -errno;
        if (*end)
                return -EINVAL;
        *ret = v;
        return 0;
}

int rkl_safe_atoi64(const char *s, int64_t *ret)
{
        char *end;
        if (isempty(s) || isspace((unsigned char)s[0]))
                return -EINVAL;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno)
                return -errno;
        if (*end)
                return -EINVAL;
        *ret = v;
        return 0;
}

int rkl_safe_atoi(const char *s, int *ret)
{
        int64_t v = 0;
        int r = rkl_safe_atoi64(s, &v);
        if (r < 0)
                return r;
        if (v < INT_MIN || v > INT_MAX)
                return -ERANGE;
        *ret = (int)v;
        return 0;
}

int rkl_safe_atou(const char *s, unsigned *ret)
{
        uint64_t v = 0;
        int r = rkl_safe_atou64(s, &v);
        if (r < 0)
                return r;
        if (v > UINT_MAX)
                return -ERANGE;
        *ret = (unsigned)v;
        return 0;
}
