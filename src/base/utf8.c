#include "utf8.h"

#include <stdint.h>
#include <string.h>

#include "banned.h"

/* Length of the valid sequence at s (at most n bytes), or 0 if invalid. */
static size_t sequence_length(const unsigned char *s, size_t n)
{
        uint32_t c;
        size_t len;

        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                len = 2, c = s[0] & 0x1f;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                len = 3, c = s[0] & 0x0f;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                len = 4, c = s[0] & 0x07;
        else
                return 0;
        if (len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                c = (c << 6) | (s[i] & 0x3f);
        }
        /* Overlong forms, surrogates and values past U+10FFFF. */
        if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) || c > 0x10ffff ||
            (c >= 0xd800 && c <= 0xdfff))
                return 0;
        return len;
}

bool rkl_utf8_is_valid(const char *s, size_t n)
{
        const unsigned char *p = (const unsigned char *)s;
        while (n > 0) {
                size_t k = sequence_length(p, n);
                if (k == 0)
                        return false;
                p += k;
                n -= k;
        }
        return true;
}

char *rkl_utf8_sanitize(char *s)
{
        unsigned char *p = (unsigned char *)s;
        size_t n = strlen(s);
        while (n > 0) {
                size_t k = sequence_length(p, n);
                if (k == 0) {
                        *p = '?';
                        k = 1;
                }
                p += k;
                n -= k;
        }
        return s;
}
