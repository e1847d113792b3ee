#include "strv.h"

#include "alloc.h"
#include "banned.h"

char **rkl_strv_free(char **l)
{
        if (!l)
                return NULL;
        for (char **s = l; *s; s++)
                free(*s);
        free(l);
        return NULL;
}

size_t rkl_strv_length(char *const *l)
{
        size_t n = 0;
        while (l && l[n])
                n++;
        return n;
}

void rkl_strv_consume(char ***l, char *s)
{
        size_t n = rkl_strv_length(*l);
        *l = rkl_xrealloc(*l, (n + 2) * sizeof(char *));
        (*l)[n] = s;
        (*l)[n + 1] = NULL;
}

void rkl_strv_push(char ***l, const char *s)
{
        rkl_strv_consume(l, rkl_xstrdup(s));
}

char **rkl_strv_copy(char *const *l)
{
        char **c = rkl_xnew0(char *, rkl_strv_length(l) + 1);
        for (size_t i = 0; l && l[i]; i++)
                c[i] = rkl_xstrdup(l[i]);
        return c;
}

bool rkl_strv_contains(char *const *l, const char *s)
{
        RKL_STRV_FOREACH (i, l)
                if (streq(*i, s))
                        return true;
        return false;
}

char *rkl_strv_join(char *const *l, const char *sep)
{
        size_t n = 0, k = strlen(sep);
        RKL_STRV_FOREACH (i, l)
                n += strlen(*i) + k;
        char *s = rkl_xmalloc(n + 1), *p = s;
        bool first = true;
        RKL_STRV_FOREACH (i, l) {
                if (!first) {
                        memcpy(p, sep, k);
                        p += k;
                }
                size_t m = strlen(*i);
                memcpy(p, *i, m);
                p += m;
                first = false;
        }
        *p = 0;
        return s;
}
