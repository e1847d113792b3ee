/* Command-line and value parsing in the style of Go's pflag/cobra, which is what rkt uses:
 * clients (rktlet) write `--flag=value`, `--flag value` and bare bools, in any order. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/parse.h"
#include "base/strv.h"
#include "sim.h"
#include "base/banned.h"

void sim_args_done(sim_args *a)
{
        a->pos = rkl_strv_free(a->pos);
        a->app_args = rkl_strv_free(a->app_args);
}

int sim_parse_bool(const char *s, bool *ret)
{
        /* strconv.ParseBool */
        static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
        static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                if (streq(s, t[i])) {
                        *ret = true;
                        return 0;
                }
                if (streq(s, f[i])) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

static sim_flag *flag_find(sim_flag *flags, size_t n, const char *name, size_t len)
{
        for (size_t i = 0; i < n; i++)
                if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0)
                        return &flags[i];
        return NULL;
}

static int flag_set(sim_flag *f, const char *value, char **ret_err)
{
        f->seen = true;
        switch (f->type) {
        case SIM_FLAG_BOOL: {
                bool b;
                if (sim_parse_bool(value, &b) < 0) {
                        *ret_err = rkl_xasprintf(
                            "invalid argument \"%s\" for \"--%s\" flag: strconv.ParseBool: "
                            "parsing \"%s\": invalid syntax",
                            value, f->name, value);
                        return -EINVAL;
                }
                *(bool *)f->ptr = b;
                return 0;
        }
        case SIM_FLAG_STRING:
        case SIM_FLAG_OPT:
                free(*(char **)f->ptr);
                *(char **)f->ptr = rkl_xstrdup(value);
                return 0;
        case SIM_FLAG_STRV:
                if (!f->split) {
                        rkl_strv_push((char ***)f->ptr, value);
                        return 0;
                }
                for (const char *p = value;;) {
                        const char *e = strchr(p, ',');
                        size_t len = e ? (size_t)(e - p) : strlen(p);
                        if (len > 0)
                                rkl_strv_consume((char ***)f->ptr, rkl_xstrndup(p, len));
                        if (!e)
                                break;
                        p = e + 1;
                }
                return 0;
        }
        return -EINVAL;
}

int sim_flags_parse(char **argv, sim_flag *flags, size_t n, size_t stop_after, bool app_args,
                    bool attach_enabled, sim_args *ret, char **ret_err)
{
        sim_args a = {0};
        size_t npos = 0;
        bool only_pos = false;

        for (size_t i = 0; argv[i]; i++) {
                const char *w = argv[i];
                if (only_pos || (stop_after > 0 && npos >= stop_after) || w[0] != '-' ||
                    streq(w, "-")) {
                        rkl_strv_push(&a.pos, w);
                        npos++;
                        continue;
                }
                if (streq(w, "--")) {
                        if (!app_args) {
                                only_pos = true;
                                continue;
                        }
                        /* rkt app add: "-- arg1 arg2 ---" replaces the image's arguments. */
                        if (!a.app_args)
                                a.app_args = rkl_xnew0(char *, 1);
                        for (i++; argv[i] && !streq(argv[i], "---"); i++)
                                rkl_strv_push(&a.app_args, argv[i]);
                        if (!argv[i])
                                break;
                        continue;
                }
                if (w[1] != '-') {
                        *ret_err = rkl_xasprintf("unknown shorthand flag: '%c' in %s", w[1], w);
                        sim_args_done(&a);
                        return -EINVAL;
                }
                const char *name = w + 2, *eq = strchr(name, '=');
                size_t len = eq ? (size_t)(eq - name) : strlen(name);
                sim_flag *f = flag_find(flags, n, name, len);
                if (!f || (f->hidden_attach && !attach_enabled)) {
                        *ret_err = rkl_xasprintf("unknown flag: --%.*s", (int)len, name);
                        sim_args_done(&a);
                        return -EINVAL;
                }
                const char *value;
                if (eq)
                        value = eq + 1;
                else if (f->type == SIM_FLAG_BOOL || f->type == SIM_FLAG_OPT)
                        value = "true";
                else if (argv[i + 1])
                        value = argv[++i];
                else {
                        *ret_err = rkl_xasprintf("flag needs an argument: --%s", f->name);
                        sim_args_done(&a);
                        return -EINVAL;
                }
                int r = flag_set(f, value, ret_err);
                if (r < 0) {
                        sim_args_done(&a);
                        return r;
                }
        }
        if (!a.pos)
                a.pos = rkl_xnew0(char *, 1);
        *ret = a;
        return 0;
}

int sim_parse_duration(const char *s, int64_t *ret_ns)
{
        static const struct {
                const char *unit;
                double mult;
        } units[] = {
            {"ns", 1},  {"us", 1e3}, {"µs", 1e3},   {"ms", 1e6},
            {"s", 1e9}, {"m", 60e9}, {"h", 3600e9},
        };
        bool neg = false;
        double total = 0;

        if (*s == '-' || *s == '+')
                neg = *s++ == '-';
        if (streq(s, "0")) {
                *ret_ns = 0;
                return 0;
        }
        if (!*s)
                return -EINVAL;
        while (*s) {
                char *end;
                if (!isdigit((unsigned char)*s) && *s != '.')
                        return -EINVAL;
                double v = strtod(s, &end);
                if (end == s)
                        return -EINVAL;
                s = end;
                size_t best = 0, best_len = 0;
                for (size_t i = 0; i < ELEMENTSOF(units); i++) {
                        size_t l = strlen(units[i].unit);
                        if (strncmp(s, units[i].unit, l) == 0 && l > best_len) {
                                best = i;
                                best_len = l;
                        }
                }
                if (best_len == 0)
                        return -EINVAL; /* Go: missing unit in duration */
                total += v * units[best].mult;
                s += best_len;
        }
        *ret_ns = (int64_t)(neg ? -total : total);
        return 0;
}

static int parse_quantity(const char *s, uint64_t *ret_num, const char **ret_suffix)
{
        char *end;
        if (!isdigit((unsigned char)*s))
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0)
                return -ERANGE;
        *ret_num = v;
        *ret_suffix = end;
        return 0;
}

int sim_parse_bytes(const char *s, uint64_t *ret)
{
        static const struct {
                const char *suffix;
                uint64_t mult;
        } m[] = {
            {"", 1},
            {"k", 1000ULL},
            {"K", 1000ULL},
            {"M", 1000ULL * 1000},
            {"G", 1000ULL * 1000 * 1000},
            {"T", 1000ULL * 1000 * 1000 * 1000},
            {"Ki", 1ULL << 10},
            {"Mi", 1ULL << 20},
            {"Gi", 1ULL << 30},
            {"Ti", 1ULL << 40},
        };
        uint64_t v;
        const char *suffix;
        int r = parse_quantity(s, &v, &suffix);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(m); i++)
                if (streq(suffix, m[i].suffix)) {
                        if (v > UINT64_MAX / m[i].mult)
                                return -ERANGE;
                        *ret = v * m[i].mult;
                        return 0;
                }
        return -EINVAL;
}

int sim_parse_millicores(const char *s, uint64_t *ret)
{
        uint64_t v;
        const char *suffix;
        int r = parse_quantity(s, &v, &suffix);
        if (r < 0)
                return r;
        if (streq(suffix, "m")) {
                *ret = v;
                return 0;
        }
        if (*suffix || v > UINT64_MAX / 1000)
                return -EINVAL;
        *ret = v * 1000;
        return 0;
}

void sim_docker_ref_done(sim_docker_ref *r)
{
        free(r->registry);
        free(r->repo);
        free(r->tag);
        free(r->digest);
        *r = (sim_docker_ref){0};
}

static bool ref_chars_ok(const char *s)
{
        if (isempty(s))
                return false;
        for (; *s; s++)
                if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) ||
                      strchr("._-/", *s)))
                        return false;
        return true;
}

int sim_docker_ref_parse(const char *ref, sim_docker_ref *ret)
{
        sim_docker_ref r = {0};
        _cleanup_free_ char *s = rkl_xstrdup(ref);
        char *name = s;

        char *at = strchr(name, '@');
        if (at) {
                *at = 0;
                r.digest = rkl_xstrdup(at + 1);
                if (strncmp(r.digest, "sha256:", 7) != 0 || strlen(r.digest) != 7 + 64) {
                        sim_docker_ref_done(&r);
                        return -EINVAL;
                }
        }
        /* A tag is after the last ':' that follows the last '/'. */
        char *slash = strrchr(name, '/');
        char *colon = strrchr(slash ? slash : name, ':');
        if (colon) {
                *colon = 0;
                r.tag = rkl_xstrdup(colon + 1);
                if (isempty(r.tag) || strchr(r.tag, '/')) {
                        sim_docker_ref_done(&r);
                        return -EINVAL;
                }
        }
        /* The first component is a registry when it has a '.' or ':' or is localhost. */
        char *first_slash = strchr(name, '/');
        if (first_slash) {
                size_t len = (size_t)(first_slash - name);
                if (memchr(name, '.', len) || memchr(name, ':', len) ||
                    (len == 9 && strncmp(name, "localhost", 9) == 0)) {
                        r.registry = rkl_xstrndup(name, len);
                        name = first_slash + 1;
                }
        }
        if (!r.registry || streq(r.registry, "docker.io") || streq(r.registry, "index.docker.io")) {
                free(r.registry);
                r.registry = rkl_xstrdup("registry-1.docker.io");
        }
        if (streq(r.registry, "registry-1.docker.io") && !strchr(name, '/'))
                r.repo = rkl_xasprintf("library/%s", name);
        else
                r.repo = rkl_xstrdup(name);
        if (!ref_chars_ok(r.repo) || strstr(r.repo, "..")) {
                sim_docker_ref_done(&r);
                return -EINVAL;
        }
        if (!r.tag && !r.digest)
                r.tag = rkl_xstrdup("latest");
        *ret = r;
        return 0;
}

bool sim_uuid_is_valid(const char *s)
{
        static const int dash[] = {8, 13, 18, 23};
        if (!s || strlen(s) != 36)
                return false;
        for (int i = 0, d = 0; i < 36; i++) {
                if (d < 4 && i == dash[d]) {
                        if (s[i] != '-')
                                return false;
                        d++;
                        continue;
                }
                if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
                        return false;
        }
        return true;
}

bool sim_acname_is_valid(const char *s)
{
        /* appc ACName: ^[a-z0-9]+([-][a-z0-9]+)*$ */
        if (isempty(s) || strlen(s) > 512)
                return false;
        bool prev_dash = true;
        for (; *s; s++) {
                if (*s == '-') {
                        if (prev_dash)
                                return false;
                        prev_dash = true;
                        continue;
                }
                if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s)))
                        return false;
                prev_dash = false;
        }
        return !prev_dash;
}

bool sim_env_true(const char *name)
{
        const char *v = getenv(name);
        bool b = false;
        return v && sim_parse_bool(v, &b) == 0 && b;
}

int sim_cmd_parse(sim_ctx *c, char **argv, sim_flag *flags, size_t n, size_t stop_after,
                  bool app_args, sim_args *ret)
{
        _cleanup_free_ char *dir = NULL, *user_config = NULL, *local_config = NULL,
                            *system_config = NULL;
        _cleanup_strv_free_ char **insecure = NULL;
        bool debug = false;
        _cleanup_free_ sim_flag *all = rkl_xnew0(sim_flag, n + 6);
        for (size_t i = 0; i < n; i++)
                all[i] = flags[i];
        all[n + 0] = (sim_flag){"dir", SIM_FLAG_STRING, &dir};
        all[n + 1] = (sim_flag){"insecure-options", SIM_FLAG_STRV, &insecure, .split = true};
        all[n + 2] = (sim_flag){"debug", SIM_FLAG_BOOL, &debug};
        all[n + 3] = (sim_flag){"user-config", SIM_FLAG_STRING, &user_config};
        all[n + 4] = (sim_flag){"local-config", SIM_FLAG_STRING, &local_config};
        all[n + 5] = (sim_flag){"system-config", SIM_FLAG_STRING, &system_config};

        _cleanup_free_ char *err = NULL;
        int r = sim_flags_parse(argv, all, n + 6, stop_after, app_args,
                                sim_env_true("RKT_EXPERIMENT_ATTACH"), ret, &err);
        if (r < 0) {
                sim_err("Error: %s", err);
                return r;
        }
        for (size_t i = 0; i < n; i++)
                flags[i].seen = all[i].seen;
        if (dir) {
                free(c->dir);
                c->dir = TAKE_PTR(dir);
        }
        if (insecure) {
                rkl_strv_free(c->insecure);
                c->insecure = TAKE_PTR(insecure);
        }
        c->debug = debug;
        return 0;
}
