/* Parsers of what /proc tells about the app's process. */
#include "exec-internal.h"

#include <stdlib.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/banned.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

void rkl_exec__creds_done(rkl_exec_creds *c)
{
        if (!c)
                return;
        free(c->groups);
        *c = (rkl_exec_creds){0};
}

/* The value of the "Key:\t..." line, or NULL. Points into status. */
static const char *field(const char *status, const char *key, size_t *ret_len)
{
        size_t k = strlen(key);
        for (const char *line = status; line && *line;) {
                const char *end = strchrnul(line, '\n');
                if ((size_t)(end - line) > k && !strncmp(line, key, k) && line[k] == ':') {
                        const char *v = line + k + 1;
                        while (v < end && (*v == '\t' || *v == ' '))
                                v++;
                        *ret_len = (size_t)(end - v);
                        return v;
                }
                line = *end ? end + 1 : NULL;
        }
        return NULL;
}

/* Up to max whitespace-separated unsigned decimal numbers; how many there were, or -EBADMSG. */
static int numbers(const char *v, size_t len, unsigned *out, size_t max)
{
        _cleanup_free_ char *copy = rkl_xstrndup(v, len);
        size_t n = 0;
        char *save = NULL;
        for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
                if (n == max || rkl_safe_atou(t, &out[n]) < 0)
                        return -EBADMSG;
                n++;
        }
        return (int)n;
}

static int ids(const char *status, const char *key, unsigned ret[4])
{
        size_t len;
        const char *v = field(status, key, &len);
        return v && numbers(v, len, ret, 4) == 4 ? 0 : -EBADMSG;
}

static int hex64(const char *status, const char *key, bool required, uint64_t *ret)
{
        size_t len;
        const char *v = field(status, key, &len);
        if (!v) {
                *ret = 0;
                return required ? -EBADMSG : 0;
        }
        _cleanup_free_ char *copy = rkl_xstrndup(v, len);
        char *end;
        if (len == 0 || len > 16)
                return -EBADMSG;
        errno = 0;
        unsigned long long x = strtoull(copy, &end, 16);
        if (errno || *end)
                return -EBADMSG;
        *ret = x;
        return 0;
}

static int small(const char *status, const char *key, unsigned base, unsigned max, int *ret)
{
        size_t len;
        const char *v = field(status, key, &len);
        if (!v)
                return 0; /* older kernels: the default stands */
        _cleanup_free_ char *copy = rkl_xstrndup(v, len);
        char *end;
        errno = 0;
        unsigned long x = strtoul(copy, &end, (int)base);
        if (errno || *end || end == copy || x > max)
                return -EBADMSG;
        *ret = (int)x;
        return 1;
}

int rkl_exec__creds_parse(const char *status, rkl_exec_creds *ret)
{
        rkl_exec_creds c = {0};
        unsigned u[4], g[4];
        int nnp = 0, mask = 0, r;

        if (ids(status, "Uid", u) < 0 || ids(status, "Gid", g) < 0)
                return -EBADMSG;
        for (int i = 0; i < 4; i++) {
                c.uid[i] = (uid_t)u[i];
                c.gid[i] = (gid_t)g[i];
        }
        size_t len;
        const char *v = field(status, "Groups", &len);
        if (!v)
                return -EBADMSG;
        /* At most one number per two bytes of the line. */
        unsigned *groups = rkl_xnew(unsigned, len / 2 + 1);
        r = numbers(v, len, groups, len / 2 + 1);
        if (r < 0) {
                free(groups);
                return r;
        }
        c.n_groups = (size_t)r;
        c.groups = rkl_xnew(gid_t, c.n_groups + 1);
        for (size_t i = 0; i < c.n_groups; i++)
                c.groups[i] = (gid_t)groups[i];
        free(groups);

        if (hex64(status, "CapInh", true, &c.cap_inh) < 0 ||
            hex64(status, "CapPrm", true, &c.cap_prm) < 0 ||
            hex64(status, "CapEff", true, &c.cap_eff) < 0 ||
            hex64(status, "CapBnd", true, &c.cap_bnd) < 0 ||
            hex64(status, "CapAmb", false, &c.cap_amb) < 0 ||
            small(status, "NoNewPrivs", 10, 1, &nnp) < 0 ||
            small(status, "Seccomp", 10, 2, &c.seccomp) < 0 ||
            (r = small(status, "Umask", 8, 0777, &mask)) < 0) {
                rkl_exec__creds_done(&c);
                return -EBADMSG;
        }
        c.no_new_privs = nnp;
        c.has_umask = r > 0;
        c.umask = (mode_t)mask;
        *ret = c;
        return 0;
}

/* What systemd tells the app's main process about itself alone: the command is not that
 * process and does not get its fds (sd_listen_fds() would believe in fds it does not have). */
static bool main_process_only(const char *s)
{
        static const char *const names[] = {
            "LISTEN_PID=",    "LISTEN_FDS=",    "LISTEN_FDNAMES=",  "WATCHDOG_PID=",
            "WATCHDOG_USEC=", "NOTIFY_SOCKET=", "SYSTEMD_EXEC_PID="};
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (!strncmp(s, names[i], strlen(names[i])))
                        return true;
        return false;
}

static int limit_value(const char *s, rlim_t *ret)
{
        uint64_t v;
        if (streq(s, "unlimited")) {
                *ret = RLIM_INFINITY;
                return 0;
        }
        if (rkl_safe_atou64(s, &v) < 0)
                return -EBADMSG;
        *ret = (rlim_t)v;
        return 0;
}

int rkl_exec__limits_parse(const char *text, struct rlimit ret[RLIM_NLIMITS],
                           bool has[RLIM_NLIMITS])
{
        /* The kernel's names (fs/proc/base.c, lnames[]). */
        static const struct {
                const char *name;
                int resource;
        } names[] = {
            {"Max cpu time", RLIMIT_CPU},
            {"Max file size", RLIMIT_FSIZE},
            {"Max data size", RLIMIT_DATA},
            {"Max stack size", RLIMIT_STACK},
            {"Max core file size", RLIMIT_CORE},
            {"Max resident set", RLIMIT_RSS},
            {"Max processes", RLIMIT_NPROC},
            {"Max open files", RLIMIT_NOFILE},
            {"Max locked memory", RLIMIT_MEMLOCK},
            {"Max address space", RLIMIT_AS},
            {"Max file locks", RLIMIT_LOCKS},
            {"Max pending signals", RLIMIT_SIGPENDING},
            {"Max msgqueue size", RLIMIT_MSGQUEUE},
            {"Max nice priority", RLIMIT_NICE},
            {"Max realtime priority", RLIMIT_RTPRIO},
            {"Max realtime timeout", RLIMIT_RTTIME},
        };
        for (int i = 0; i < RLIM_NLIMITS; i++)
                has[i] = false;
        for (const char *line = text; line && *line;) {
                const char *end = strchrnul(line, '\n');
                for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                        size_t k = strlen(names[i].name);
                        if (strncmp(line, names[i].name, k) != 0 || line[k] != ' ')
                                continue;
                        _cleanup_free_ char *rest =
                            rkl_xstrndup(line + k, (size_t)(end - line - k));
                        char *save = NULL;
                        char *soft = strtok_r(rest, " ", &save);
                        char *hard = soft ? strtok_r(NULL, " ", &save) : NULL;
                        struct rlimit l;
                        if (!hard || limit_value(soft, &l.rlim_cur) < 0 ||
                            limit_value(hard, &l.rlim_max) < 0)
                                return -EBADMSG;
                        ret[names[i].resource] = l;
                        has[names[i].resource] = true;
                        break;
                }
                line = *end ? end + 1 : NULL;
        }
        return 0;
}

char **rkl_exec__environ_parse(const char *buf, size_t n)
{
        char **env = rkl_xnew0(char *, 1);
        size_t k = 0;
        for (size_t i = 0; i < n;) {
                const char *s = buf + i;
                size_t len = strnlen(s, n - i);
                if (len > 0 && memchr(s, '=', len) && s[0] != '=' && !main_process_only(s)) {
                        env = rkl_xrealloc(env, (k + 2) * sizeof(*env));
                        env[k++] = rkl_xstrndup(s, len);
                        env[k] = NULL;
                }
                i += len + 1;
        }
        return env;
}

const char *rkl_exec__path_of(char *const *env)
{
        RKL_STRV_FOREACH (e, env)
                if (!strncmp(*e, "PATH=", 5))
                        return *e + 5;
        return DEFAULT_PATH;
}

int rkl_exec__status_parse(const char *text, char *msg, size_t msg_size)
{
        char *end;
        errno = 0;
        long e = strtol(text, &end, 10);
        if (errno || end == text || *end != ' ' || e <= 0 || e > RKL_MAX_ERRNO)
                return -EBADMSG;
        (void)snprintf(msg, msg_size, "%s", end + 1);
        msg[strcspn(msg, "\n")] = 0;
        return -(int)e;
}

void rkl_exec__filter_done(rkl_exec_filter *f)
{
        if (!f)
                return;
        rkl_strv_free(f->names);
        *f = (rkl_exec_filter){0};
}

/* One line; f accumulates as systemd's parser does for the lines rktlet writes. */
static int filter_line(char *line, rkl_exec_filter *f)
{
        char *v;
        if (!*line)
                return 0;
        if ((v = (char *)startswith(line, "SystemCallErrorNumber="))) {
                unsigned e;
                if (rkl_safe_atou(v, &e) < 0 || e == 0 || e > RKL_MAX_ERRNO)
                        return -EBADMSG;
                f->errno_ret = (int)e;
                return 0;
        }
        if (!(v = (char *)startswith(line, "SystemCallFilter=")))
                return -EBADMSG;
        if (!*v) {
                f->names = rkl_strv_free(f->names);
                f->active = false;
                return 0;
        }
        bool deny = *v == '~';
        if (f->active && f->allow_list == deny)
                return -EBADMSG; /* systemd would take names out of the set: never written */
        f->active = true;
        f->allow_list = !deny;
        char *save = NULL;
        for (char *t = strtok_r(v + deny, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
                if (!rkl_syscall_name_is_valid(t))
                        return -EBADMSG;
                rkl_strv_push(&f->names, t);
        }
        return 0;
}

int rkl_exec__filter_parse(const char *text, rkl_exec_filter *ret)
{
        _cleanup_free_ char *copy = rkl_xstrdup(text);
        rkl_exec_filter f = {0};
        char *save = NULL;
        /* strtok_r() skips empty lines, which systemd ignores too. */
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                int r = filter_line(line, &f);
                if (r < 0) {
                        rkl_exec__filter_done(&f);
                        return r;
                }
        }
        if (!f.active)
                rkl_exec__filter_done(&f); /* an error number alone filters nothing */
        *ret = f;
        return 0;
}
