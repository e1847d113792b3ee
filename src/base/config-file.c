#include "config-file.h"

#include <ctype.h>

#include "alloc.h"
#include "fileio.h"
#include "banned.h"

#define CONF_MAX (1 << 20)

static char *strip(char *s)
{
        while (*s == ' ' || *s == '\t')
                s++;
        size_t n = strlen(s);
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
                s[--n] = 0;
        return s;
}

static bool key_is_valid(const char *k)
{
        if (!islower((unsigned char)*k))
                return false;
        for (; *k; k++)
                if (!islower((unsigned char)*k) && !isdigit((unsigned char)*k) && *k != '-')
                        return false;
        return true;
}

int rkl_config_file_parse(const char *path, const char *text, rkl_config_file_fn fn, void *userdata,
                          rkl_error *reterr)
{
        _cleanup_free_ char *copy = rkl_xstrdup(text);
        unsigned line = 0;
        char *p = copy;

        /* strtok_r would skip empty lines and miscount: split by hand. */
        while (p) {
                char *nl = strchr(p, '\n');
                if (nl)
                        *nl = 0;
                line++;
                char *l = strip(p);
                p = nl ? nl + 1 : NULL;
                if (!*l || *l == '#')
                        continue;
                char *eq = strchr(l, '=');
                if (!eq)
                        return rkl_error_set(reterr, -EINVAL,
                                             "%s:%u: expected 'key = value', not '%s'", path, line,
                                             l);
                *eq = 0;
                char *key = strip(l), *value = strip(eq + 1);
                if (!key_is_valid(key))
                        return rkl_error_set(reterr, -EINVAL,
                                             "%s:%u: invalid key '%s' (lowercase letters, digits "
                                             "and '-', as the flags without their '--')",
                                             path, line, key);
                int r = fn(key, value, userdata, reterr);
                if (r < 0)
                        return rkl_error_prefix(reterr, "%s:%u", path, line);
        }
        return 0;
}

int rkl_config_file_load(const char *path, rkl_config_file_fn fn, void *userdata, rkl_error *reterr)
{
        _cleanup_free_ char *text = NULL;
        size_t n;
        int r = rkl_read_file_at(AT_FDCWD, path, CONF_MAX, &text, &n);
        if (r < 0)
                return rkl_error_set(reterr, r, "cannot read '%s': %s", path, strerror(-r));
        if (memchr(text, 0, n))
                return rkl_error_set(reterr, -EINVAL, "'%s' is not text", path);
        return rkl_config_file_parse(path, text, fn, userdata, reterr);
}
