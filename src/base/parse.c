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
        if (rkl_safe_atou(colon + 1, &port) < 0 || (port < 1 && !port_zero) || port > RKL_MAX_PORT)
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

int rkl_parse_quantity(const char *s, uint64_t *ret)
{
        static const struct {
                const char *suffix;
                uint64_t mult;
        } suffixes[] = {
            {"", 1},
            {"k", 1000ULL},
            {"M", 1000000ULL},
            {"G", 1000000000ULL},
            {"T", 1000000000000ULL},
            {"P", 1000000000000000ULL},
            {"E", 1000000000000000000ULL},
            {"Ki", 1ULL << 10},
            {"Mi", 1ULL << 20},
            {"Gi", 1ULL << 30},
            {"Ti", 1ULL << 40},
            {"Pi", 1ULL << 50},
            {"Ei", 1ULL << 60},
        };
        if (isempty(s) || !isdigit((unsigned char)s[0]))
                return -EINVAL;
        /* The value as whole and fraction digits, exactly: no floating point. */
        const char *p = s;
        uint64_t whole = 0;
        for (; isdigit((unsigned char)*p); p++) {
                if (whole > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                whole = whole * 10 + (uint64_t)(*p - '0');
        }
        const char *frac = NULL;
        size_t n_frac = 0;
        if (*p == '.') {
                frac = ++p;
                for (; isdigit((unsigned char)*p); p++)
                        n_frac++;
                if (n_frac == 0 || n_frac > 18)
                        return -EINVAL;
        }
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                if (!streq(p, suffixes[i].suffix))
                        continue;
                uint64_t m = suffixes[i].mult;
                if (whole > (uint64_t)INT64_MAX / m)
                        return -ERANGE;
                uint64_t v = whole * m;
                if (n_frac > 0) {
                        /* fraction * m / 10^n_frac, rounded up, without overflow: m is at
                         * most 2^60 and the fraction below 10^18. */
                        unsigned __int128 f = 0, scale = 1;
                        for (size_t k = 0; k < n_frac; k++) {
                                f = f * 10 + (unsigned)(frac[k] - '0');
                                scale *= 10;
                        }
                        unsigned __int128 part = (f * m + scale - 1) / scale;
                        if (v + part > (uint64_t)INT64_MAX)
                                return -ERANGE;
                        v += (uint64_t)part;
                }
                *ret = v;
                return 0;
        }
        return -EINVAL;
}
