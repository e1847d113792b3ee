#include "rkt.h"

#include <ctype.h>
#include <inttypes.h>

#include "rkt-internal.h"
#include "base/alloc.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "metrics/metrics.h"
#include "base/banned.h"

#define RKT_VERSION_TIMEOUT (10 * USEC_PER_SEC)

extern char **environ;

struct rkl_rkt {
        char *path;
        char *dir_flag; /* "--dir=<data dir>" */
        char **envp;    /* the daemon's environment plus the experiment gates */
};

static char **env_with_experiments(void)
{
        char **env = NULL;
        for (char **e = environ; e && *e; e++)
                if (strncmp(*e, "RKT_EXPERIMENT_APP=", 19) != 0 &&
                    strncmp(*e, "RKT_EXPERIMENT_ATTACH=", 22) != 0)
                        rkl_strv_push(&env, *e);
        /* rkt hides `app` and the stream flags without these (docs/rkt.md, 'Running rkt'). */
        rkl_strv_push(&env, "RKT_EXPERIMENT_APP=true");
        rkl_strv_push(&env, "RKT_EXPERIMENT_ATTACH=true");
        return env;
}

char **rkl_rkt_unit_env(rkl_rkt *d)
{
        /* A unit starts with systemd's clean environment: give it rkt's own variables (the
         * experiment gates and any RKT_* setting the daemon was started with) and PATH,
         * which stage1 needs to find its helpers. */
        char **env = NULL;
        RKL_STRV_FOREACH (e, d->envp)
                if (strncmp(*e, "RKT_", 4) == 0 || strncmp(*e, "PATH=", 5) == 0)
                        rkl_strv_push(&env, *e);
        return env;
}

static char **argv_build(rkl_rkt *d, char *const args[], const char *extra_insecure,
                         const char *user_config)
{
        char **argv = NULL;
        rkl_strv_push(&argv, d->path);
        rkl_strv_push(&argv, d->dir_flag);
        if (user_config)
                rkl_strv_consume(&argv, rkl_xasprintf("--user-config=%s", user_config));
        /* Global flags in --flag=value form, which rkt accepts before the subcommand. */
        if (extra_insecure)
                rkl_strv_consume(
                    &argv, rkl_xasprintf("--insecure-options=image,ondisk,%s", extra_insecure));
        else
                rkl_strv_push(&argv, "--insecure-options=image,ondisk");
        rkl_strv_push(&argv, "--debug=false");
        RKL_STRV_FOREACH (a, args)
                rkl_strv_push(&argv, *a);
        return argv;
}

char **rkl_rkt_argv(rkl_rkt *d, char *const args[], const char *extra_insecure)
{
        return argv_build(d, args, extra_insecure, NULL);
}

int rkl_rkt_new(const rkl_rkt_config *cfg, rkl_rkt **ret, rkl_error *reterr)
{
        if (isempty(cfg->rkt_path) || cfg->rkt_path[0] != '/')
                return rkl_error_set(reterr, -EINVAL, "rkt path must be absolute");
        if (isempty(cfg->data_dir) || cfg->data_dir[0] != '/')
                return rkl_error_set(reterr, -EINVAL, "rkt data dir must be absolute");
        rkl_rkt *d = rkl_xnew0(rkl_rkt, 1);
        d->path = rkl_xstrdup(cfg->rkt_path);
        d->dir_flag = rkl_xasprintf("--dir=%s", cfg->data_dir);
        d->envp = env_with_experiments();
        *ret = d;
        return 0;
}

rkl_rkt *rkl_rkt_free(rkl_rkt *d)
{
        if (!d)
                return NULL;
        free(d->path);
        free(d->dir_flag);
        rkl_strv_free(d->envp);
        free(d);
        return NULL;
}

/* Terminal escapes (systemd colours its "!!!!!!" lines even into a file) and other control
 * characters mean nothing in a status message: drop ESC sequences, blank the rest but '\n'. */
static char *printable_copy(const char *s)
{
        char *out = rkl_xstrdup(s), *w = out;
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                if (*p == 0x1b) {
                        if (p[1] == '[') { /* CSI: parameters, then one final byte */
                                p += 2;
                                while (*p && (*p < 0x40 || *p > 0x7e))
                                        p++;
                        } else if (p[1]) {
                                p++;
                        }
                        if (!*p)
                                break;
                        continue;
                }
                *w++ = (*p < 0x20 && *p != '\n') || *p == 0x7f ? ' ' : (char)*p;
        }
        *w = 0;
        return out;
}

void rkl_rkt_output_tail(const char *text, char *buf, size_t n)
{
        _cleanup_free_ char *s = printable_copy(text ? text : "");
        size_t len = strlen(s), k = 0;
        buf[0] = 0;
        while (len > 0) {
                while (len > 0 && isspace((unsigned char)s[len - 1]))
                        len--;
                size_t start = len;
                while (start > 0 && s[start - 1] != '\n')
                        start--;
                size_t l = len - start;
                if (l > 0 && !memmem(s + start, l, "group \"rkt\" not found", 21)) {
                        size_t sep = k ? 2 : 0;
                        if (k + l + sep >= n) {
                                if (k == 0) { /* one long line: its end */
                                        memcpy(buf, s + len - (n - 1), n - 1);
                                        buf[n - 1] = 0;
                                }
                                return;
                        }
                        /* Prepend: lines are collected last first. */
                        memmove(buf + l + sep, buf, k + 1);
                        memcpy(buf, s + start, l);
                        if (sep)
                                memcpy(buf + l, "; ", 2);
                        k += l + sep;
                }
                len = start;
        }
}

int rkl_rkt__classify_error(const char *text)
{
        static const struct {
                const char *needle;
                int code;
        } table[] = {
            {"no matches found", -ENOENT},
            {"cannot get pod", -ENOENT},
            {"nonexistent app", -ENOENT},
            {"no such pod", -ENOENT},
            {"is already stopped", -EALREADY},
            {"is not yet ready", -EAGAIN},
            {"is not running", -EAGAIN},
            {"unable to get pod lock", -EAGAIN},
            {"resource temporarily unavailable", -EAGAIN},
        };
        for (size_t i = 0; text && i < ELEMENTSOF(table); i++)
                if (strstr(text, table[i].needle))
                        return table[i].code;
        return -EIO;
}

const char *rkl_rkt__data_dir(const rkl_rkt *d)
{
        return d->dir_flag + strlen("--dir=");
}

int rkl_rkt_exec(rkl_rkt *d, char *const args[], uint64_t timeout_usec, rkl_spawn_result *ret,
                 rkl_error *reterr)
{
        return rkl_rkt__exec(d, args, NULL, timeout_usec, ret, reterr);
}

int rkl_rkt__exec(rkl_rkt *d, char *const args[], const rkl_rkt__exec_opts *eo,
                  uint64_t timeout_usec, rkl_spawn_result *ret, rkl_error *reterr)
{
        _cleanup_strv_free_ char **argv =
            argv_build(d, args, eo ? eo->extra_insecure : NULL, eo ? eo->user_config : NULL);
        const char *what = eo && eo->what ? eo->what : args[0];
        rkl_spawn_result res = {0};
        int r;

        rkl_spawn_opts o = {
            .envp = d->envp,
            .timeout_usec = timeout_usec,
            .kill_grace_usec = 2 * USEC_PER_SEC,
            .max_output = 8 << 20,
            /* rkt makes each app's overlay upper dir, the app's root directory, with the
             * image's mode less the umask: the daemon's 0077 would leave it 0700, and no app
             * that is not root could even chdir there (systemd's exit 200). */
            .set_umask = true,
            .umask = 0022,
        };
        uint64_t t0 = rkl_now_usec(CLOCK_MONOTONIC);
        r = rkl_spawn_run(argv, &o, &res, reterr);
        /* Per verb: "app add" and "image list", not "app" and "image". */
        char verb[64];
        if (args[1] && (streq(args[0], "app") || streq(args[0], "image")))
                (void)snprintf(verb, sizeof(verb), "%s %s", args[0], args[1]);
        else
                (void)snprintf(verb, sizeof(verb), "%s", args[0]);
        rkl_metrics_record(RKL_METRICS_RKT, verb, rkl_now_usec(CLOCK_MONOTONIC) - t0,
                           r < 0 || res.timed_out || res.signal || res.exit_code != 0);
        if (r < 0) {
                r = rkl_error_prefix(reterr, "rkt %s", what);
                if (eo && eo->not_run_is_eio) {
                        if (reterr)
                                reterr->code = -EIO;
                        r = -EIO;
                }
                return r;
        }

        if (res.timed_out) {
                r = rkl_error_set(reterr, -ETIMEDOUT, "rkt %s: no answer within %" PRIu64 " ms",
                                  what, timeout_usec / USEC_PER_MSEC);
        } else if (res.signal) {
                r = rkl_error_set(reterr, -EIO, "rkt %s: killed by signal %d", what, res.signal);
        } else if (res.exit_code != 0) {
                char line[1024];
                rkl_rkt_output_tail(res.err_len ? res.err : res.out, line, sizeof(line));
                r = rkl_error_set(reterr, rkl_rkt__classify_error(res.err),
                                  "rkt %s: exit status %d: %s", what, res.exit_code, line);
        }
        if (ret)
                *ret = res;
        else
                rkl_spawn_result_done(&res);
        return r;
}

void rkl_rkt_version_done(rkl_rkt_version *v)
{
        free(v->version);
        free(v->text);
        *v = (rkl_rkt_version){0};
}

int rkl_rkt_version_parse(const char *text, rkl_rkt_version *ret)
{
        const char *p = strstr(text, "rkt Version:");
        if (!p)
                return -EBADMSG;
        p += strlen("rkt Version:");
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t\r\n");
        if (n == 0 || n > 64)
                return -EBADMSG;

        size_t len = strlen(text);
        while (len > 0 && isspace((unsigned char)text[len - 1]))
                len--;
        *ret = (rkl_rkt_version){
            .version = rkl_xstrndup(p, n),
            .text = rkl_xstrndup(text, len),
            .simulator = strstr(text, "rkt-sim") != NULL,
        };
        return 0;
}

int rkl_rkt_version_get(rkl_rkt *d, rkl_rkt_version *ret, rkl_error *reterr)
{
        rkl_spawn_result res = {0};
        int r = rkl_rkt_exec(d, RKL_STRV("version"), RKT_VERSION_TIMEOUT, &res, reterr);
        if (r < 0) {
                rkl_spawn_result_done(&res);
                return r;
        }
        r = rkl_rkt_version_parse(res.out, ret);
        rkl_spawn_result_done(&res);
        if (r < 0)
                return rkl_error_set(reterr, r, "rkt version: unexpected output");
        return 0;
}
