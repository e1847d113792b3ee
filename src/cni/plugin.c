/* One plugin run: found in the plugin directories, given CNI's variables and its
 * configuration on stdin, bounded by a deadline, its answer read. */
#include "cni-internal.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/spawn.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "metrics/metrics.h"
#include "base/banned.h"

#define OUTPUT_MAX   (1 << 20)
#define KILL_GRACE   (2 * USEC_PER_SEC)
#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define QUOTE_MAX    160 /* of a plugin's own words in a message */

extern char **environ;

static int find_plugin(char *const *dirs, const char *type, char **ret, rkl_error *reterr)
{
        RKL_STRV_FOREACH (d, dirs) {
                _cleanup_free_ char *p = rkl_xasprintf("%s/%s", *d, type);
                struct stat st;
                if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0) {
                        *ret = TAKE_PTR(p);
                        return 0;
                }
        }
        _cleanup_free_ char *path = rkl_strv_join(dirs, ":");
        return rkl_error_set(reterr, -ENOENT, "plugin '%s' not found in %s", type,
                             isempty(path) ? "no directory" : path);
}

/* The daemon's environment without any CNI_ variable of its own, then CNI's. */
static char **plugin_env(const rkl_cni_exec *x, const rkl_cni_runtime *rt, const char *command)
{
        char **env = NULL;
        bool has_path = false;
        for (char **e = environ; e && *e; e++) {
                if (!strncmp(*e, "CNI_", 4))
                        continue;
                has_path |= !strncmp(*e, "PATH=", 5);
                rkl_strv_push(&env, *e);
        }
        /* iptables and ip, which plugins run, are found through PATH. */
        if (!has_path)
                rkl_strv_push(&env, "PATH=" DEFAULT_PATH);
        _cleanup_free_ char *path = rkl_strv_join(x->bin_dirs, ":");
        rkl_strv_consume(&env, rkl_xasprintf("CNI_COMMAND=%s", command));
        rkl_strv_consume(&env, rkl_xasprintf("CNI_CONTAINERID=%s", rt->container_id));
        rkl_strv_consume(&env, rkl_xasprintf("CNI_NETNS=%s", rt->netns));
        rkl_strv_consume(&env, rkl_xasprintf("CNI_IFNAME=%s", rt->ifname));
        rkl_strv_consume(&env, rkl_xasprintf("CNI_ARGS=%s", rt->args));
        rkl_strv_consume(&env, rkl_xasprintf("CNI_PATH=%s", path ? path : ""));
        return env;
}

/* The configuration in a memory file: a pipe could not take a large one before the plugin
 * reads it. */
static int conf_fd(json_object *conf, rkl_error *reterr)
{
        const char *s = json_object_to_json_string_ext(conf, JSON_C_TO_STRING_PLAIN |
                                                                 JSON_C_TO_STRING_NOSLASHESCAPE);
        size_t n = strlen(s);
        _cleanup_close_ int fd = memfd_create("cni-config", MFD_CLOEXEC);
        if (fd < 0)
                return rkl_error_set(reterr, -errno, "memfd_create: %s", strerror(errno));
        for (size_t off = 0; off < n;) {
                ssize_t k = write(fd, s + off, n - off);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return rkl_error_set(reterr, -errno, "cannot write the configuration: %s",
                                             strerror(errno));
                }
                off += (size_t)k;
        }
        if (lseek(fd, 0, SEEK_SET) < 0)
                return rkl_error_set(reterr, -errno, "lseek: %s", strerror(errno));
        return TAKE_FD(fd);
}

static void kill_group(pid_t pid, void *userdata)
{
        (void)userdata;
        (void)kill(-pid, SIGKILL);
        (void)kill(pid, SIGKILL);
}

/* The last non-empty line of a plugin's output, bounded and on one line. */
static void last_line(const char *text, char *buf, size_t size)
{
        size_t n = text ? strlen(text) : 0;
        while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' ' || text[n - 1] == '\r'))
                n--;
        size_t start = n;
        while (start > 0 && text[start - 1] != '\n')
                start--;
        size_t len = n - start < size - 1 ? n - start : size - 1;
        for (size_t i = 0; i < len; i++) {
                char c = text[start + i];
                buf[i] =
                    (c == '\t' || (c >= ' ' && c != 0x7f) || (unsigned char)c >= 0x80) ? c : ' ';
        }
        buf[len] = 0;
}

/* A plugin's error object: {"code", "msg", "details"}. */
static bool error_object(const char *out, size_t len, const char *what, rkl_error *reterr)
{
        _cleanup_(json_object_putp) json_object *o = NULL;
        rkl_error e = RKL_ERROR_INIT;
        const char *msg = NULL, *details = NULL;
        int64_t code = 0;
        if (len == 0 || rkl_json_parse(out, len, OUTPUT_MAX, &o, &e) < 0 ||
            !json_object_is_type(o, json_type_object) ||
            rkl_json_get_string(o, "msg", OUTPUT_MAX, &msg, &e) < 0 ||
            rkl_json_get_string(o, "details", OUTPUT_MAX, &details, &e) < 0 ||
            rkl_json_get_int(o, "code", &code, &e) < 0 || (!msg && !code))
                return false;
        rkl_error_set(reterr, -EIO, "%s: %.*s%s%.*s (CNI error %" PRIi64 ")", what, QUOTE_MAX,
                      msg ? msg : "no message", isempty(details) ? "" : ": ", QUOTE_MAX,
                      details ? details : "", code);
        return true;
}

int rkl_cni__plugin_run(const rkl_cni_exec *x, const rkl_cni_runtime *rt, const char *command,
                        const char *type, json_object *conf, char **ret_out, rkl_error *reterr)
{
        _cleanup_free_ char *bin = NULL, *what = rkl_xasprintf("plugin '%s' (%s)", type, command);
        _cleanup_strv_free_ char **env = NULL;
        _cleanup_close_ int in = -EBADF;
        rkl_spawn_result res = {0};
        int r;

        if ((r = find_plugin(x->bin_dirs, type, &bin, reterr)) < 0)
                return r;
        if ((in = conf_fd(conf, reterr)) < 0)
                return rkl_error_prefix(reterr, "%s", what);
        env = plugin_env(x, rt, command);
        rkl_spawn_opts o = {
            .envp = env,
            .timeout_usec = x->timeout_usec,
            .kill_grace_usec = KILL_GRACE,
            .max_output = OUTPUT_MAX,
            .stdin_fd = &in,
            .new_process_group = true,
            .kill_tree = kill_group,
        };
        uint64_t t0 = rkl_now_usec(CLOCK_MONOTONIC);
        if ((r = rkl_spawn_run(RKL_STRV(bin), &o, &res, reterr)) < 0)
                return rkl_error_prefix(reterr, "%s: cannot run %s", what, bin);
        _cleanup_free_ char *label = rkl_xasprintf("%s %s", type, command);
        rkl_metrics_record(RKL_METRICS_CNI, label, rkl_now_usec(CLOCK_MONOTONIC) - t0,
                           res.timed_out || res.exit_code != 0);

        char line[QUOTE_MAX + 1];
        if (res.timed_out) {
                r = rkl_error_set(reterr, -ETIMEDOUT, "%s did not finish within %.0f s: killed",
                                  what, (double)x->timeout_usec / (double)USEC_PER_SEC);
        } else if (res.exit_code != 0) {
                r = -EIO;
                if (!error_object(res.out, res.out_len, what, reterr)) {
                        last_line(res.err_len ? res.err : res.out, line, sizeof(line));
                        if (res.signal)
                                rkl_error_set(reterr, r, "%s was killed by signal %d%s%s", what,
                                              res.signal, *line ? ": " : "", line);
                        else
                                rkl_error_set(reterr, r, "%s failed with exit status %d%s%s", what,
                                              res.exit_code, *line ? ": " : "", line);
                }
        } else if (res.out_truncated) {
                r = rkl_error_set(reterr, -EFBIG, "%s answered more than %d bytes", what,
                                  OUTPUT_MAX);
        } else {
                r = 0;
                if (ret_out)
                        *ret_out = TAKE_PTR(res.out);
        }
        rkl_spawn_result_done(&res);
        return r;
}
