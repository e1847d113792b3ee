#include "parse.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <string.h>
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

int rkl_ipv4_port_parse(const char *s, bool port_zero, struct sockaddr_in *ret)
{
        const char *colon = strrchr(s, ':');
        unsigned port;
        if (!colon || colon == s || colon - s > 15)
                return -EINVAL;
        char host[16];
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = 0;
        if (rkl_safe_atou(colon + 1, &port) < 0 || (port < 1 && !port_zero) || port > 65535)
                return -EINVAL;
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
                return -EINVAL;
        *ret = sa;
        return 0;
}

bool rkl_syscall_name_is_valid(const char *s)
{
        if (!*s || strlen(s) > 64)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
                        return false;
        return true;
}
