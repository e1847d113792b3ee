/* `rkt app sandbox`: creates the pod directory the way rkt does (embryo -> prepare -> run, all
 * under the pod lock) and then stays in the foreground as the pod's supervisor, in place of
 * stage1's systemd-nspawn + systemd: it starts, stops and reaps the apps, writes their status
 * files, pipes their output to the k8s-plain log, and tears the pod down on SIGTERM.
 *
 * Commands reach it over an abstract unix socket "@rkt-sim/<uuid>", one request line and one
 * answer line per connection: "start <app>", "stop <app>", "rm <app>", "ping". An answer is
 * "ok" or "error <message>", sent once the effect is done (for stop: once the app exited). */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <json-c/json.h>
#include <systemd/sd-daemon.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "sim.h"
#include "base/banned.h"

extern char **environ;

#define LOGMODE_ANN "coreos.com/rkt/experiment/logmode"
#define LOGDIR_ANN  "coreos.com/rkt/experiment/kubernetes-log-dir"
#define LOGPATH_ANN "coreos.com/rkt/experiment/kubernetes-log-path"
#define STDOUT_ANN  "coreos.com/rkt/stage2/stdout"
#define STDERR_ANN  "coreos.com/rkt/stage2/stderr"
#define MAX_CLIENTS 64
#define MAX_CGROUPS 8

typedef struct sup_stream {
        int fd; /* read end of the app's stdout/stderr pipe, or -1 */
        char buf[8192];
        size_t len;
        const char *name; /* "stdout" / "stderr" */
        bool mid;         /* a record's start is written, its line goes on */
} sup_stream;

typedef struct sup_app {
        char *name;
        pid_t pid; /* 0: not running */
        sup_stream out, err;
        int log_fd;       /* k8s-plain log file, or -1 */
        uint64_t kill_at; /* CLOCK_MONOTONIC usec: SIGKILL escalation, 0: none */
        int waiters[MAX_CLIENTS];
        size_t nwaiters;
        bool removing;
        char *cgroups[MAX_CGROUPS];
        size_t ncgroups;
} sup_app;

typedef struct sup_client {
        int fd;
        char buf[512];
        size_t len;
} sup_client;

typedef struct supervisor {
        sim_ctx *c;
        sim_pod pod;
        char *upper;
        char *unit_cgroup; /* e.g. /rktlet-test-x/app.slice/foo.service */
        int lock_fd, listen_fd, sig_fd;
        sup_app *apps;
        size_t napps;
        sup_client clients[MAX_CLIENTS];
        size_t nclients;
        uint64_t ready_at; /* 0: ready (or never) */
        bool stopping;
        uint64_t stop_timeout_usec;
        sim_podnet net; /* the pod's network namespace, with $RKT_SIM_NETNS */
} supervisor;

/* ---- cgroups ---- */

/* The unit's cgroup path from /proc/self/cgroup: name=systemd on v1/hybrid, else "0::". */
static int own_unit_cgroup(char **ret)
{
        _cleanup_free_ char *s = NULL, *v2 = NULL;
        int r = sim_read_file("/proc/self/cgroup", &s);
        if (r < 0)
                return r;
        for (char *line = s; line && *line;) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = 0;
                char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                if (c1 && c2) {
                        *c2 = 0;
                        if (streq(c1 + 1, "name=systemd")) {
                                *ret = rkl_xstrdup(c2 + 1);
                                return 0;
                        }
                        if (streq(c1 + 1, ""))
                                v2 = rkl_xstrdup(c2 + 1);
                }
                line = nl ? nl + 1 : NULL;
        }
        if (!v2)
                return -ENODATA;
        *ret = TAKE_PTR(v2);
        return 0;
}

/* rkt needs to run in a unit (sd_pid_get_unit). The private test manager's cgroups sit below a
 * non-slice directory, where libsystemd answers ENODATA, so the last path component decides. */
static int current_unit(const char *cg, char **ret_unit)
{
        const char *last = strrchr(cg, '/');
        last = last ? last + 1 : cg;
        size_t l = strlen(last);
        if (l > 8 && streq(last + l - 8, ".service")) {
                *ret_unit = rkl_xstrdup(last);
                return 0;
        }
        return -ENODATA;
}

/* "system.slice/rkt-pod1.service": the unit's slice path plus the unit, as stage1 writes it. */
static char *subcgroup_of(const char *cg)
{
        const char *p = strstr(cg, ".slice/");
        if (!p)
                return rkl_xstrdup(cg[0] == '/' ? cg + 1 : cg);
        /* back up to the start of the first *.slice component */
        const char *start = cg;
        for (const char *q = cg; q < p; q++)
                if (*q == '/')
                        start = q + 1;
        return rkl_xstrdup(start);
}

static const char *const hierarchies[] = {"systemd", "unified", "memory",     "pids",
                                          "cpu",     "cpuacct", "cpu,cpuacct"};

static int write_cg(const char *dir, const char *file, const char *value)
{
        _cleanup_free_ char *p = rkl_xasprintf("%s/%s", dir, file);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return write(fd, value, strlen(value)) < 0 ? -errno : 0;
}

static bool limits_enforced(void)
{
        const char *e = getenv("RKT_SIM_ENFORCE_LIMITS");
        bool b = true;
        return !e || sim_parse_bool(e, &b) < 0 || b;
}

/* Creates <hierarchy>/<unit cgroup>/payload/system.slice/<app>.service where the hierarchy
 * exists: systemd-nspawn 252 puts the pod's systemd under "payload" (docs/rkt.md, 'Cgroups'). */
static void app_cgroups(supervisor *s, sup_app *a, uint64_t mem, uint64_t millicores,
                        uint64_t shares)
{
        bool enforce = limits_enforced();
        for (size_t i = 0; i < ELEMENTSOF(hierarchies) && a->ncgroups < MAX_CGROUPS; i++) {
                _cleanup_free_ char *root = rkl_xasprintf("/sys/fs/cgroup/%s", hierarchies[i]);
                _cleanup_free_ char *procs = rkl_xasprintf("%s/cgroup.procs", root);
                struct stat st;
                if (lstat(root, &st) < 0 || !S_ISDIR(st.st_mode) || !sim_exists(procs))
                        continue;
                char *dir = rkl_xasprintf("%s%s/payload/system.slice/%s.service", root,
                                          s->unit_cgroup, a->name);
                if (rkl_mkdir_p(dir, 0755) < 0) {
                        free(dir);
                        continue;
                }
                if (enforce && mem > 0 && streq(hierarchies[i], "memory")) {
                        char v[32];
                        snprintf(v, sizeof(v), "%" PRIu64, mem);
                        (void)write_cg(dir, "memory.limit_in_bytes", v);
                }
                if (enforce && mem > 0 &&
                    (streq(hierarchies[i], "") || streq(hierarchies[i], "unified"))) {
                        char v[32];
                        snprintf(v, sizeof(v), "%" PRIu64, mem);
                        (void)write_cg(dir, "memory.max", v); /* only with the controller on */
                }
                if (enforce && strncmp(hierarchies[i], "cpu", 3) == 0 &&
                    !streq(hierarchies[i], "cpuacct")) {
                        char v[32];
                        if (millicores > 0) {
                                snprintf(v, sizeof(v), "%" PRIu64, millicores * 100);
                                (void)write_cg(dir, "cpu.cfs_period_us", "100000");
                                (void)write_cg(dir, "cpu.cfs_quota_us", v);
                        }
                        if (shares > 0) {
                                snprintf(v, sizeof(v), "%" PRIu64, shares);
                                (void)write_cg(dir, "cpu.shares", v);
                        }
                }
                a->cgroups[a->ncgroups++] = dir;
        }
}

static void app_cgroups_remove(sup_app *a)
{
        for (size_t i = 0; i < a->ncgroups; i++) {
                (void)rmdir(a->cgroups[i]);
                /* system.slice and payload too, once the last app is gone (EBUSY until then). */
                for (int up = 0; up < 2; up++) {
                        char *slash = strrchr(a->cgroups[i], '/');
                        if (!slash)
                                break;
                        *slash = 0;
                        (void)rmdir(a->cgroups[i]);
                }
                free(a->cgroups[i]);
        }
        a->ncgroups = 0;
}

/* At exit: the unit-level dirs we created in hierarchies systemd does not manage for the unit
 * (cpu, cpuacct here). Where the unit's own processes live, rmdir fails and systemd trims. */
static void unit_cgroups_remove(const supervisor *s)
{
        for (size_t i = 0; i < ELEMENTSOF(hierarchies); i++) {
                _cleanup_free_ char *d =
                    rkl_xasprintf("/sys/fs/cgroup/%s%s", hierarchies[i], s->unit_cgroup);
                _cleanup_free_ char *procs = rkl_xasprintf("%s/cgroup.procs", d);
                _cleanup_free_ char *own = NULL;
                if (sim_read_file(procs, &own) == 0 && isempty(own))
                        (void)rmdir(d);
        }
}

/* Signals every process of the app's cgroups (systemd's KillMode=control-group). */
static void app_kill(sup_app *a, int sig)
{
        for (size_t i = 0; i < a->ncgroups; i++) {
                _cleanup_free_ char *p = rkl_xasprintf("%s/cgroup.procs", a->cgroups[i]), *s = NULL;
                if (sim_read_file(p, &s) < 0)
                        continue;
                for (char *t = s; *t;) {
                        int pid;
                        char *e = t + strcspn(t, "\n");
                        char ch = *e;
                        *e = 0;
                        if (rkl_safe_atoi(t, &pid) == 0 && pid > 0)
                                (void)kill(pid, sig);
                        if (!ch)
                                break;
                        t = e + 1;
                }
        }
        if (a->pid > 0)
                (void)kill(a->pid, sig);
}

/* ---- apps ---- */

static sup_app *app_get(supervisor *s, const char *name, bool create)
{
        for (size_t i = 0; i < s->napps; i++)
                if (streq(s->apps[i].name, name))
                        return &s->apps[i];
        if (!create)
                return NULL;
        s->apps = rkl_xrealloc(s->apps, (s->napps + 1) * sizeof(*s->apps));
        sup_app *a = &s->apps[s->napps++];
        *a = (sup_app){.name = rkl_xstrdup(name), .log_fd = -1};
        a->out = (sup_stream){.fd = -1, .name = "stdout"};
        a->err = (sup_stream){.fd = -1, .name = "stderr"};
        return a;
}

static void reply(int fd, const char *fmt, ...) _printf_(2, 3);
static void reply(int fd, const char *fmt, ...)
{
        char buf[1024];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
        va_end(ap);
        if (n < 0)
                n = 0;
        if ((size_t)n > sizeof(buf) - 2)
                n = (int)sizeof(buf) - 2;
        buf[n++] = '\n';
        (void)send(fd, buf, (size_t)n, MSG_NOSIGNAL);
        safe_close(fd);
}

static struct json_object *isolator(struct json_object *app, const char *name)
{
        struct json_object *iso;
        if (!json_object_object_get_ex(app, "isolators", &iso) ||
            !json_object_is_type(iso, json_type_array))
                return NULL;
        for (size_t i = 0; i < json_object_array_length(iso); i++) {
                struct json_object *e = json_object_array_get_idx(iso, i), *v;
                if (streq_ptr(sim_json_str(e, "name"), name) &&
                    json_object_object_get_ex(e, "value", &v))
                        return v;
        }
        return NULL;
}

/* iottymux in k8s-plain mode, as rkt 1.30's stage1 host runs it under systemd 252
 * (docs/rkt.md, 'Output and logs'), with packaging/rkt/stderr-fd.patch: one
 * "<time> <stdout|stderr> <line>\n" record per line, bytes as they are, a line of any length
 * in one record. A quirk of the real thing is kept: a last line without a newline is lost
 * (iomux exits on EOF before writing it). */
static void stream_emit(sup_app *a, sup_stream *st, const char *line, size_t len, bool end)
{
        if (a->log_fd < 0)
                return;
        char head[80] = "";
        if (!st->mid) {
                _cleanup_free_ char *ts = sim_format_rfc3339nano(rkl_realtime_ns());
                snprintf(head, sizeof(head), "%s %s ", ts, st->name);
        }
        size_t h = strlen(head);
        _cleanup_free_ char *out = rkl_xmalloc(h + len + 1);
        memcpy(out, head, h);
        memcpy(out + h, line, len);
        if (end)
                out[h + len] = '\n';
        (void)!write(a->log_fd, out, h + len + (end ? 1 : 0));
        st->mid = !end;
}

static void stream_read(sup_app *a, sup_stream *st, bool final)
{
        for (;;) {
                if (st->fd < 0)
                        break;
                if (st->len == sizeof(st->buf)) {
                        stream_emit(a, st, st->buf, st->len, false);
                        st->len = 0;
                }
                ssize_t k = read(st->fd, st->buf + st->len, sizeof(st->buf) - st->len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
                                st->fd = safe_close(st->fd);
                        break;
                }
                st->len += (size_t)k;
                char *nl;
                while ((nl = memchr(st->buf, '\n', st->len))) {
                        size_t l = (size_t)(nl - st->buf);
                        stream_emit(a, st, st->buf, l, true);
                        memmove(st->buf, nl + 1, st->len - l - 1);
                        st->len -= l + 1;
                }
                if (!final)
                        break;
        }
        if (final || st->fd < 0)
                st->len = 0; /* the last line without a newline: lost, as with iottymux */
}

static void fa_destroyp(posix_spawn_file_actions_t *fa)
{
        posix_spawn_file_actions_destroy(fa);
}

static void attr_destroyp(posix_spawnattr_t *a)
{
        posix_spawnattr_destroy(a);
}

/* The app's unit runs ExecStart= as systemd reads it: rkt writes the arguments quoted but
 * does not escape '%', so "%%" is one '%' (and rktlet doubles them for that). */
static struct json_object *systemd_exec(struct json_object *exec)
{
        struct json_object *out = json_object_new_array();
        for (size_t i = 0; i < json_object_array_length(exec); i++) {
                const char *a = json_object_get_string(json_object_array_get_idx(exec, i));
                _cleanup_free_ char *u = rkl_xstrdup(a ? a : "");
                char *q = u;
                for (const char *p = u; *p; p++) {
                        *q++ = *p;
                        if (p[0] == '%' && p[1] == '%')
                                p++;
                }
                *q = 0;
                json_object_array_add(out, json_object_new_string(u));
        }
        return out;
}

static int app_launch(supervisor *s, const char *name, char **ret_err)
{
        _cleanup_json_ struct json_object *m = sim_pod_manifest(&s->pod);
        _cleanup_json_ struct json_object *spec = NULL;
        struct json_object *ra = sim_manifest_app(m, name), *app, *v;
        _cleanup_close_ int out_w = -EBADF, err_w = -EBADF, log_fd = -EBADF;
        _cleanup_close_ int out_r = -EBADF, err_r = -EBADF;
        _cleanup_free_ char *spec_s = NULL;
        _cleanup_(fa_destroyp) posix_spawn_file_actions_t fa;
        _cleanup_(attr_destroyp) posix_spawnattr_t attr;
        int r = 0;

        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);

        if (!ra || !json_object_object_get_ex(ra, "app", &app)) {
                *ret_err = rkl_xasprintf("app %s not found in the pod manifest", name);
                r = -ENOENT;
                return r;
        }
        spec = json_object_new_object();
        json_object_object_add(spec, "app", json_object_new_string(name));
        json_object_object_add(spec, "pod", json_object_new_string(s->pod.path));
        if (json_object_object_get_ex(app, "exec", &v))
                json_object_object_add(spec, "exec", systemd_exec(v));
        const char *user = sim_json_str(app, "user"), *group = sim_json_str(app, "group");
        json_object_object_add(spec, "user", json_object_new_string(user ? user : "0"));
        json_object_object_add(spec, "group", json_object_new_string(group ? group : "0"));
        if (json_object_object_get_ex(app, "supplementaryGIDs", &v))
                json_object_object_add(spec, "groups", json_object_get(v));
        const char *wd = sim_json_str(app, "workingDirectory");
        json_object_object_add(spec, "cwd", json_object_new_string(isempty(wd) ? "/" : wd));
        if ((v = isolator(app, "os/linux/oom-score-adj")))
                json_object_object_add(spec, "oom", json_object_get(v));
        /* App faults are read here, so they are in force once `app start` returns. */
        sim_fault f = {0};
        if (sim_fault_find_app(name, &f)) {
                struct json_object *fo = json_object_new_object();
                json_object_object_add(fo, "signal",
                                       json_object_new_boolean(f.kind == SIM_FAULT_APP_SIGNAL));
                json_object_object_add(fo, "code", json_object_new_int(f.code));
                json_object_object_add(fo, "after_ms", json_object_new_int64((int64_t)f.after_ms));
                json_object_object_add(spec, "fault", fo);
                sim_fault_done(&f);
        }
        bool ro = false;
        if (json_object_object_get_ex(ra, "readOnlyRootFS", &v))
                ro = json_object_get_boolean(v);
        json_object_object_add(spec, "readonly", json_object_new_boolean(ro));

        json_object_object_add(spec, "mounts", sim_app_mounts(&s->pod, m, ra));
        if (s->net.path)
                json_object_object_add(spec, "netns", json_object_new_string(s->net.path));

        /* Output: k8s-plain log file for stream-mode apps in a k8s-plain pod, else a file. */
        struct json_object *pann = NULL, *aann = NULL;
        json_object_object_get_ex(m, "annotations", &pann);
        json_object_object_get_ex(ra, "annotations", &aann);
        const char *logmode = sim_json_kv_get(pann, LOGMODE_ANN),
                   *logdir = sim_json_kv_get(pann, LOGDIR_ANN);
        const char *logpath = sim_json_kv_get(aann, LOGPATH_ANN);
        bool stream = streq_ptr(sim_json_kv_get(aann, STDOUT_ANN), "stream") ||
                      streq_ptr(sim_json_kv_get(aann, STDERR_ANN), "stream");
        if (streq_ptr(logmode, "k8s-plain") && stream && logdir && logpath) {
                /* iottymux only accepts direct children of /rkt/kubernetes/log: the app's
                 * unit Requires= iomux, so the start job fails (docs/rkt.md, 'Output and logs'). */
                if (strchr(logpath, '/') || streq(logpath, "..") || streq(logpath, ".")) {
                        *ret_err = rkl_xasprintf("iottymux: invalid log path \"%s\": not a "
                                                 "direct child of /rkt/kubernetes/log",
                                                 logpath);
                        r = -EINVAL;
                        return r;
                }
                _cleanup_free_ char *lp = rkl_xasprintf("%s/%s", logdir, logpath);
                log_fd = open(lp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_APPEND, 0640);
                if (log_fd < 0) {
                        *ret_err = rkl_xasprintf("iottymux: cannot open %s: %m", lp);
                        return -errno;
                }
                int p1[2], p2[2];
                if (pipe2(p1, O_CLOEXEC) < 0)
                        abort();
                if (pipe2(p2, O_CLOEXEC) < 0)
                        abort();
                out_r = p1[0];
                out_w = p1[1];
                err_r = p2[0];
                err_w = p2[1];
                (void)fcntl(out_r, F_SETFL, O_NONBLOCK);
                (void)fcntl(err_r, F_SETFL, O_NONBLOCK);
        } else {
                _cleanup_free_ char *ld = rkl_xasprintf("%s/rkt-sim-logs", s->pod.path);
                (void)rkl_mkdir_p(ld, 0755);
                _cleanup_free_ char *lp = rkl_xasprintf("%s/%s.log", ld, name);
                out_w = open(lp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
                if (out_w < 0) {
                        r = -errno;
                        *ret_err = rkl_xasprintf("cannot open %s: %m", lp);
                        return r;
                }
        }

        sup_app *a = app_get(s, name, true);
        app_cgroups_remove(a);
        uint64_t mem = 0, mc = 0, shares = 0;
        if ((v = isolator(app, "resource/memory")))
                (void)sim_parse_bytes(sim_json_str(v, "limit") ?: "", &mem);
        if ((v = isolator(app, "resource/cpu")))
                (void)sim_parse_millicores(sim_json_str(v, "limit") ?: "", &mc);
        if ((v = isolator(app, "os/linux/cpu-shares")))
                shares = (uint64_t)json_object_get_int64(v);
        app_cgroups(s, a, mem, mc, shares);
        struct json_object *cgs = json_object_new_array();
        for (size_t i = 0; i < a->ncgroups; i++)
                json_object_array_add(cgs, json_object_new_string(a->cgroups[i]));
        json_object_object_add(spec, "cgroups", cgs);

        spec_s = sim_json_go(spec, false);
        char *argv[] = {s->c->exe, (char *)"__stage2", spec_s, NULL};
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, out_w, 1);
        posix_spawn_file_actions_adddup2(&fa, err_w >= 0 ? err_w : out_w, 2);
        sim_spawnattr_clean_signals(&attr, POSIX_SPAWN_SETSID);
        pid_t pid;
        int k = posix_spawn(&pid, s->c->exe, &fa, &attr, argv, environ);
        if (k != 0) {
                *ret_err = rkl_xasprintf("cannot spawn app: %s", strerror(k));
                r = -k;
                return r;
        }
        a->pid = pid;
        a->kill_at = 0;
        a->removing = false;
        safe_close(a->log_fd);
        a->log_fd = TAKE_FD(log_fd);
        a->out.fd = TAKE_FD(out_r);
        a->err.fd = TAKE_FD(err_r);
        a->out.len = a->err.len = 0;
        return 0;
}

static void write_exit_file(supervisor *s, const char *name, int code)
{
        /* reaper.sh: CREATE, MODIFY, CLOSE_WRITE of status/<app> in the upper dir. */
        _cleanup_free_ char *p = sim_pod_status_path(&s->pod, name, NULL);
        char v[16];
        snprintf(v, sizeof(v), "%d\n", code);
        (void)sim_write_file(p, v, 0644);
}

static void app_reaped(supervisor *s, sup_app *a, int status)
{
        stream_read(a, &a->out, true);
        stream_read(a, &a->err, true);
        a->out.fd = safe_close(a->out.fd);
        a->err.fd = safe_close(a->err.fd);
        a->log_fd = safe_close(a->log_fd);
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
        write_exit_file(s, a->name, code);
        a->pid = 0;
        a->kill_at = 0;
        if (a->removing)
                app_cgroups_remove(a);
        for (size_t i = 0; i < a->nwaiters; i++)
                reply(a->waiters[i], "ok");
        a->nwaiters = 0;
}

static void app_stop(supervisor *s, sup_app *a)
{
        if (a->pid <= 0 || a->kill_at)
                return;
        app_kill(a, SIGTERM);
        app_kill(a, SIGCONT);
        a->kill_at = rkl_now_usec(CLOCK_MONOTONIC) + s->stop_timeout_usec;
}

/* ---- the event loop ---- */

static void handle_request(supervisor *s, int fd, char *line)
{
        char *arg = strchr(line, ' ');
        if (arg)
                *arg++ = 0;
        if (streq(line, "ping")) {
                reply(fd, "ok %s", s->ready_at == 0 && !s->stopping ? "ready" : "notready");
                return;
        }
        if (!arg || !sim_acname_is_valid(arg)) {
                reply(fd, "error bad request");
                return;
        }
        sup_app *a = app_get(s, arg, false);
        if (streq(line, "start")) {
                if (s->stopping) {
                        reply(fd, "error pod is stopping");
                        return;
                }
                if (a && a->pid > 0) {
                        reply(fd, "ok");
                        return;
                }
                _cleanup_free_ char *err = NULL;
                if (app_launch(s, arg, &err) < 0)
                        reply(fd, "error %s", err ? err : "cannot start app");
                else
                        reply(fd, "ok");
                return;
        }
        if (streq(line, "stop") || streq(line, "rm")) {
                if (a)
                        a->removing = streq(line, "rm");
                if (!a || a->pid <= 0) {
                        if (a && a->removing)
                                app_cgroups_remove(a);
                        reply(fd, "ok");
                        return;
                }
                if (a->nwaiters == MAX_CLIENTS) {
                        reply(fd, "error too many waiters");
                        return;
                }
                a->waiters[a->nwaiters++] = fd;
                app_stop(s, a);
                return;
        }
        reply(fd, "error unknown request");
}

static void client_read(supervisor *s, size_t idx)
{
        sup_client *cl = &s->clients[idx];
        ssize_t k = read(cl->fd, cl->buf + cl->len, sizeof(cl->buf) - 1 - cl->len);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
                return;
        int fd = cl->fd;
        bool done = false;
        if (k <= 0) {
                safe_close(fd);
                done = true;
        } else {
                cl->len += (size_t)k;
                cl->buf[cl->len] = 0;
                char *nl = strchr(cl->buf, '\n');
                if (nl || cl->len == sizeof(cl->buf) - 1) {
                        if (nl)
                                *nl = 0;
                        char line[512];
                        snprintf(line, sizeof(line), "%s", cl->buf);
                        done = true;
                        s->clients[idx] = s->clients[--s->nclients];
                        handle_request(s, fd, line);
                        return;
                }
        }
        if (done)
                s->clients[idx] = s->clients[--s->nclients];
}

static void become_ready(supervisor *s)
{
        sim_fault f = {0};
        if (sim_fault_find("sandbox", SIM_FAULT_NEVER_READY, &f)) {
                /* Checked again later, so a test can lift the fault. */
                sim_fault_done(&f);
                s->ready_at = rkl_now_usec(CLOCK_MONOTONIC) + 200 * USEC_PER_MSEC;
                return;
        }
        s->ready_at = 0;
        _cleanup_free_ char *link = rkl_xasprintf("%s/rkt/supervisor-status", s->upper);
        (void)unlink(link);
        if (symlink("ready", link) < 0)
                sim_err("rkt-sim: cannot create %s: %m", link);
        (void)sd_notify(0, "READY=1");
}

static void begin_stop(supervisor *s)
{
        if (s->stopping)
                return;
        s->stopping = true;
        sim_fault f = {0};
        if (sim_fault_find("sandbox", SIM_FAULT_SLOW_STOP, &f)) {
                /* A pod slow to go down (its systemd slow to power off): the unit stays
                 * deactivating meanwhile. */
                sim_sleep_ms((uint64_t)f.code);
                sim_fault_done(&f);
        }
        s->ready_at = 0;
        (void)sd_notify(0, "STOPPING=1");
        _cleanup_free_ char *link = rkl_xasprintf("%s/rkt/supervisor-status", s->upper);
        (void)unlink(link);
        /* real profile: rkt stop returns after ~46 ms, the pod is exited ~151 ms after it. */
        if (s->c->profile_real)
                sim_sleep_ms(100);
        for (size_t i = 0; i < s->napps; i++)
                app_stop(s, &s->apps[i]);
}

static bool any_running(const supervisor *s)
{
        for (size_t i = 0; i < s->napps; i++)
                if (s->apps[i].pid > 0)
                        return true;
        return false;
}

static void reap(supervisor *s)
{
        for (;;) {
                int status;
                pid_t pid = waitpid(-1, &status, WNOHANG);
                if (pid <= 0)
                        break;
                sim_podnet_holder_gone(&s->net, pid);
                for (size_t i = 0; i < s->napps; i++)
                        if (s->apps[i].pid == pid)
                                app_reaped(s, &s->apps[i], status);
        }
}

static int supervise(supervisor *s)
{
        for (;;) {
                if (s->stopping && !any_running(s))
                        break;
                uint64_t now = rkl_now_usec(CLOCK_MONOTONIC), next = UINT64_MAX;
                if (s->ready_at) {
                        if (now >= s->ready_at)
                                become_ready(s);
                        if (s->ready_at)
                                next = s->ready_at;
                }
                for (size_t i = 0; i < s->napps; i++) {
                        sup_app *a = &s->apps[i];
                        if (!a->kill_at || a->pid <= 0)
                                continue;
                        if (now >= a->kill_at) {
                                app_kill(a, SIGKILL);
                                a->kill_at = UINT64_MAX;
                        } else if (a->kill_at < next)
                                next = a->kill_at;
                }
                struct pollfd pfd[2 + MAX_CLIENTS + 512];
                size_t n = 0;
                pfd[n++] = (struct pollfd){.fd = s->sig_fd, .events = POLLIN};
                pfd[n++] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
                for (size_t i = 0; i < s->nclients; i++)
                        pfd[n++] = (struct pollfd){.fd = s->clients[i].fd, .events = POLLIN};
                size_t streams_at = n;
                for (size_t i = 0; i < s->napps && n + 2 <= ELEMENTSOF(pfd); i++) {
                        pfd[n++] = (struct pollfd){.fd = s->apps[i].out.fd, .events = POLLIN};
                        pfd[n++] = (struct pollfd){.fd = s->apps[i].err.fd, .events = POLLIN};
                }
                int timeout = next == UINT64_MAX ? -1 : (int)((next - now) / USEC_PER_MSEC + 1);
                int k = poll(pfd, n, timeout);
                if (k < 0 && errno != EINTR)
                        return -errno;
                if (k <= 0)
                        continue;
                if (pfd[0].revents) {
                        struct signalfd_siginfo si;
                        while (read(s->sig_fd, &si, sizeof(si)) == sizeof(si)) {
                                if (si.ssi_signo == SIGCHLD)
                                        reap(s);
                                else
                                        begin_stop(s);
                        }
                }
                for (size_t i = 0, j = streams_at; i < s->napps && j + 1 < n; i++, j += 2) {
                        if (pfd[j].revents)
                                stream_read(&s->apps[i], &s->apps[i].out, false);
                        if (pfd[j + 1].revents)
                                stream_read(&s->apps[i], &s->apps[i].err, false);
                }
                /* Clients: walk backwards, since serving one may drop it from the array. */
                for (size_t i = s->nclients; i > 0; i--)
                        if (pfd[2 + i - 1].revents && 2 + i - 1 < streams_at)
                                client_read(s, i - 1);
                if (pfd[1].revents) {
                        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                        if (fd >= 0 && s->nclients < MAX_CLIENTS)
                                s->clients[s->nclients++] = (sup_client){.fd = fd};
                        else if (fd >= 0)
                                safe_close(fd);
                }
        }
        return 0;
}

static void supervisor_done(supervisor *s)
{
        sim_podnet_teardown(&s->net);
        for (size_t i = 0; i < s->napps; i++) {
                free(s->apps[i].name);
                app_cgroups_remove(&s->apps[i]);
                safe_close(s->apps[i].out.fd);
                safe_close(s->apps[i].err.fd);
                safe_close(s->apps[i].log_fd);
        }
        for (size_t i = 0; i < s->nclients; i++)
                safe_close(s->clients[i].fd);
        free(s->apps);
        free(s->upper);
        free(s->unit_cgroup);
        sim_pod_done(&s->pod);
        safe_close(s->listen_fd);
        safe_close(s->sig_fd);
        safe_close(s->lock_fd);
}

/* ---- pod creation ---- */

static int add_kvs(struct json_object *obj, char **l, bool as_array, const char *what)
{
        RKL_STRV_FOREACH (e, l) {
                const char *eq = strchr(*e, '=');
                if (!eq || eq == *e) {
                        sim_err("Error: invalid %s \"%s\"", what, *e);
                        return -EINVAL;
                }
                _cleanup_free_ char *k = rkl_xstrndup(*e, (size_t)(eq - *e));
                if (as_array)
                        json_object_array_add(obj, sim_json_kv(k, eq + 1));
                else
                        json_object_object_add(obj, k, json_object_new_string(eq + 1));
        }
        return 0;
}

static int parse_ports(char **ports, struct json_object *arr)
{
        RKL_STRV_FOREACH (p, ports) {
                /* name:proto:podPort:hostIP:hostPort */
                _cleanup_strv_free_ char **f = rkl_xnew0(char *, 1);
                for (const char *s = *p;;) {
                        const char *e = strchr(s, ':');
                        rkl_strv_consume(&f, e ? rkl_xstrndup(s, (size_t)(e - s)) : rkl_xstrdup(s));
                        if (!e)
                                break;
                        s = e + 1;
                }
                unsigned pp, hp;
                if (rkl_strv_length(f) != 5 || !sim_acname_is_valid(f[0]) ||
                    (!streq(f[1], "tcp") && !streq(f[1], "udp")) || rkl_safe_atou(f[2], &pp) < 0 ||
                    rkl_safe_atou(f[4], &hp) < 0 || pp == 0 || pp > 65535 || hp > 65535) {
                        sim_err("Error: invalid argument \"%s\" for \"--port\" flag: port must be "
                                "in the name:proto:podPort:hostIP:hostPort format",
                                *p);
                        return -EINVAL;
                }
                struct json_object *o = json_object_new_object(), *pod = json_object_new_object();
                json_object_object_add(o, "name", json_object_new_string(f[0]));
                json_object_object_add(o, "hostPort", json_object_new_int((int)hp));
                json_object_object_add(o, "hostIP", json_object_new_string(f[3]));
                json_object_object_add(pod, "name", json_object_new_string(f[0]));
                json_object_object_add(pod, "protocol", json_object_new_string(f[1]));
                json_object_object_add(pod, "port", json_object_new_int((int)pp));
                json_object_object_add(pod, "count", json_object_new_int(1));
                json_object_object_add(pod, "socketActivated", json_object_new_boolean(false));
                json_object_object_add(o, "podPort", pod);
                json_object_array_add(arr, o);
        }
        return 0;
}

static int alloc_ip(const sim_ctx *c, const char *uuid, char **ret_ip)
{
        _cleanup_free_ char *d = sim_path(c, "networks/default");
        int r = rkl_mkdir_p(d, 0755);
        if (r < 0)
                return r;
        for (int i = 2; i < 255; i++) {
                _cleanup_free_ char *p = rkl_xasprintf("%s/%s.%d", d, SIM_DEFAULT_SUBNET, i);
                int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                if (fd < 0)
                        continue;
                (void)write(fd, uuid, strlen(uuid));
                safe_close(fd);
                *ret_ip = rkl_xasprintf("%s.%d", SIM_DEFAULT_SUBNET, i);
                return 0;
        }
        return -ENOSPC;
}

static int write_in(const char *dir, const char *file, const char *content)
{
        _cleanup_free_ char *p = rkl_xasprintf("%s/%s", dir, file);
        return sim_write_file(p, content, 0644);
}

int sim_cmd_sandbox(sim_ctx *c, char **argv)
{
        _cleanup_free_ char *uuid_file = NULL, *hostname = NULL, *dns_domain = NULL,
                            *stage1_url = NULL, *stage1_path = NULL, *stage1_name = NULL,
                            *stage1_hash = NULL, *stage1_from_dir = NULL;
        _cleanup_strv_free_ char **dns = NULL, **dns_search = NULL, **dns_opt = NULL,
                                 **hosts = NULL, **ports = NULL, **nets = NULL, **ann = NULL,
                                 **uann = NULL, **ulab = NULL;
        bool no_overlay = false;
        sim_flag flags[] = {
            {"uuid-file-save", SIM_FLAG_STRING, &uuid_file},
            {"hostname", SIM_FLAG_STRING, &hostname},
            {"dns", SIM_FLAG_STRV, &dns},
            {"dns-search", SIM_FLAG_STRV, &dns_search},
            {"dns-opt", SIM_FLAG_STRV, &dns_opt},
            {"dns-domain", SIM_FLAG_STRING, &dns_domain},
            {"hosts-entry", SIM_FLAG_STRV, &hosts},
            {"port", SIM_FLAG_STRV, &ports},
            {"net", SIM_FLAG_STRV, &nets, .split = true},
            {"annotation", SIM_FLAG_STRV, &ann},
            {"user-annotation", SIM_FLAG_STRV, &uann},
            {"user-label", SIM_FLAG_STRV, &ulab},
            {"stage1-url", SIM_FLAG_STRING, &stage1_url},
            {"stage1-path", SIM_FLAG_STRING, &stage1_path},
            {"stage1-name", SIM_FLAG_STRING, &stage1_name},
            {"stage1-hash", SIM_FLAG_STRING, &stage1_hash},
            {"stage1-from-dir", SIM_FLAG_STRING, &stage1_from_dir},
            {"no-overlay", SIM_FLAG_BOOL, &no_overlay},
        };
        _cleanup_args_ sim_args a = {0};
        if (sim_cmd_parse(c, argv, flags, ELEMENTSOF(flags), 0, false, &a) < 0)
                return SIM_EXIT_ERROR;
        _cleanup_(supervisor_done)
            supervisor s = {.c = c, .lock_fd = -EBADF, .listen_fd = -EBADF, .sig_fd = -EBADF};
        _cleanup_json_ struct json_object *m = NULL;
        _cleanup_free_ char *cg = NULL, *unit = NULL, *embryo = NULL, *prepare = NULL, *run = NULL,
                            *uuid = NULL, *ip = NULL;
        int r;

        if (rkl_strv_length(a.pos) > 0) {
                sim_err("Error: sandbox: unexpected arguments");
                return SIM_EXIT_ERROR;
        }
        RKL_STRV_FOREACH (d, dns)
                if (streq(*d, "host") && rkl_strv_length(dns) > 1) {
                        sim_err("no other --dns options allowed when --dns=host is passed");
                        return SIM_EXIT_ERROR;
                }
        m = json_object_new_object();
        struct json_object *pann = json_object_new_array(), *pports = json_object_new_array(),
                           *ua = json_object_new_object(), *ul = json_object_new_object();
        json_object_object_add(m, "acVersion", json_object_new_string(SIM_RKT_VERSION));
        json_object_object_add(m, "acKind", json_object_new_string("PodManifest"));
        json_object_object_add(m, "apps", json_object_new_array());
        json_object_object_add(m, "volumes", NULL);
        json_object_object_add(m, "isolators", NULL);
        json_object_array_add(pann, sim_json_kv("coreos.com/rkt/stage1/mutable", "true"));
        json_object_object_add(m, "annotations", pann);
        json_object_object_add(m, "ports", pports);
        json_object_object_add(m, "userAnnotations", ua);
        json_object_object_add(m, "userLabels", ul);
        if (add_kvs(pann, ann, true, "annotation") < 0 ||
            add_kvs(ua, uann, false, "user annotation") < 0 ||
            add_kvs(ul, ulab, false, "user label") < 0 || parse_ports(ports, pports) < 0)
                return SIM_EXIT_ERROR;

        /* rkt's stage1 asks sd_pid_get_unit(); refuse to run outside a systemd service. */
        if (own_unit_cgroup(&cg) < 0 || current_unit(cg, &unit) < 0) {
                sim_err("stage1: error calling sd_pid_get_unit: no data available");
                return SIM_EXIT_ERROR;
        }
        s.unit_cgroup = rkl_xstrdup(cg);
        sim_err("group \"rkt\" not found, will use default gid");

        static const char *const dirs[] = {"embryo", "prepare",        "prepared",
                                           "run",    "exited-garbage", "garbage"};
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                _cleanup_free_ char *d = sim_path(c, "pods/%s", dirs[i]);
                if ((r = rkl_mkdir_p(d, 0700)) < 0) {
                        sim_err("cannot create %s: %s", d, strerror(-r));
                        return SIM_EXIT_ERROR;
                }
        }
        _cleanup_free_ char *locks = sim_path(c, "locks");
        (void)rkl_mkdir_p(locks, 0755);
        _cleanup_free_ char *prepare_lock = sim_path(c, "locks/prepareLock");
        (void)sim_write_file(prepare_lock, "", 0644);

        uuid = sim_uuid_new();
        embryo = sim_path(c, "pods/embryo/%s", uuid);
        prepare = sim_path(c, "pods/prepare/%s", uuid);
        run = sim_path(c, "pods/run/%s", uuid);
        if (mkdir(embryo, 0700) < 0) {
                sim_err("cannot create pod dir: %m");
                return SIM_EXIT_ERROR;
        }
        /* The pod lock: held for the pod's lifetime, across the renames below. */
        s.lock_fd = open(embryo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s.lock_fd < 0 || flock(s.lock_fd, LOCK_EX) < 0) {
                sim_err("cannot lock pod dir: %m");
                return SIM_EXIT_ERROR;
        }
        if (c->profile_real)
                sim_sleep_ms(80);
        if (uuid_file && sim_write_file(uuid_file, uuid, 0644) < 0) {
                sim_err("cannot save UUID to %s: %m", uuid_file);
                return SIM_EXIT_ERROR;
        }
        sim_fault_step(c, "embryo");
        if (rename(embryo, prepare) < 0) {
                sim_err("cannot move pod to prepare: %m");
                return SIM_EXIT_ERROR;
        }
        sim_sleep_ms(c->profile_real ? 60 : 0);
        _cleanup_free_ char *upper = rkl_xasprintf("%s/overlay/%s/upper", prepare, SIM_STAGE1_TREE);
        _cleanup_free_ char *work = rkl_xasprintf("%s/overlay/%s/work", prepare, SIM_STAGE1_TREE);
        _cleanup_free_ char *status_dir = rkl_xasprintf("%s/rkt/status", upper);
        _cleanup_free_ char *env_dir = rkl_xasprintf("%s/rkt/env", upper);
        _cleanup_free_ char *s1root = rkl_xasprintf("%s/stage1/rootfs", prepare);
        _cleanup_free_ char *stage2 = rkl_xasprintf("%s/opt/stage2", s1root);
        _cleanup_free_ char *appsinfo = rkl_xasprintf("%s/appsinfo", prepare);
        _cleanup_free_ char *netdir = rkl_xasprintf("%s/net", prepare);
        _cleanup_free_ char *shared = rkl_xasprintf("%s/sharedVolumes", prepare);
        const char *mk[] = {status_dir, env_dir, work, stage2, appsinfo, netdir, shared};
        for (size_t i = 0; i < ELEMENTSOF(mk); i++)
                if ((r = rkl_mkdir_p(mk[i], 0755)) < 0) {
                        sim_err("cannot create %s: %s", mk[i], strerror(-r));
                        return SIM_EXIT_ERROR;
                }
        /* stage1/rootfs is overlay-mounted on the upper dir in real rkt; here its rkt/ is a
         * symlink into the upper dir, so one write shows up under both paths. */
        _cleanup_free_ char *s1rkt = rkl_xasprintf("%s/rkt", s1root);
        _cleanup_free_ char *s1target =
            rkl_xasprintf("../../overlay/%s/upper/rkt", SIM_STAGE1_TREE);
        if (symlink(s1target, s1rkt) < 0) {
                sim_err("cannot link %s: %m", s1rkt);
                return SIM_EXIT_ERROR;
        }
        _cleanup_free_ char *s1man =
            rkl_xasprintf("{\"acKind\":\"ImageManifest\",\"acVersion\":\"%s\",\"name\":\"%s\","
                          "\"labels\":[{\"name\":\"version\",\"value\":\"%s\"},{\"name\":\"arch\","
                          "\"value\":\"amd64\"},{\"name\":\"os\",\"value\":\"linux\"}],"
                          "\"annotations\":[{\"name\":\"coreos.com/rkt/stage1/interface-version\","
                          "\"value\":\"6\"},{\"name\":\"coreos.com/rkt/stage1/flavor\",\"value\":"
                          "\"host\"},{\"name\":\"coreos.com/rkt-sim\",\"value\":\"test double\"}]}",
                          SIM_APPC_VERSION, SIM_STAGE1_NAME, SIM_RKT_VERSION);
        _cleanup_free_ char *s1dir = rkl_xasprintf("%s/stage1", prepare);
        _cleanup_free_ char *mstr = sim_json_go(m, false);
        if (write_in(s1dir, "manifest", s1man) < 0 ||
            write_in(prepare, "stage1TreeStoreID", SIM_STAGE1_TREE) < 0 ||
            write_in(prepare, "pod.lck", "") < 0 || write_in(prepare, "pod", mstr) < 0 ||
            write_in(prepare, "pod-created", "") < 0 ||
            write_in(prepare, "overlay-prepared", "") < 0) {
                sim_err("cannot write pod files: %m");
                return SIM_EXIT_ERROR;
        }
        sim_fault_step(c, "prepare");
        if (rename(prepare, run) < 0) {
                sim_err("cannot move pod to run: %m");
                return SIM_EXIT_ERROR;
        }
        s.pod = (sim_pod){.uuid = rkl_xstrdup(uuid),
                          .path = rkl_xstrdup(run),
                          .statedir = rkl_xstrdup("run"),
                          .state = SIM_POD_RUNNING};
        s.upper = sim_pod_upper(&s.pod);
        bool host_net = false, no_net = false;
        RKL_STRV_FOREACH (n, nets) {
                host_net |= streq(*n, "host");
                no_net |= streq(*n, "none");
        }
        const char *netname = rkl_strv_length(nets) && !host_net && !no_net ? nets[0] : "default";
        _cleanup_free_ char *netname_s = rkl_xstrndup(netname, strcspn(netname, ":"));
        {
                struct json_object *rc = json_object_new_object(), *nl = json_object_new_array();
                _cleanup_free_ char *hn =
                    hostname ? rkl_xstrdup(hostname) : rkl_xasprintf("rkt-%s", uuid);
                json_object_object_add(rc, "Mutable", json_object_new_boolean(true));
                json_object_object_add(rc, "Hostname", json_object_new_string(hn));
                RKL_STRV_FOREACH (n, nets)
                        json_object_array_add(nl, json_object_new_string(*n));
                json_object_object_add(rc, "NetList", nl);
                json_object_object_add(rc, "UseOverlay", json_object_new_boolean(!no_overlay));
                json_object_object_add(rc, "Debug", json_object_new_boolean(c->debug));
                _cleanup_free_ char *rcs = sim_json_go(rc, false);
                json_object_put(rc);
                if (write_in(run, "runtime-config", rcs) < 0) {
                        sim_err("cannot write runtime-config: %m");
                        return SIM_EXIT_ERROR;
                }
        }
        _cleanup_free_ char *flavor = rkl_xasprintf("%s/flavor", run);
        (void)symlink("host", flavor);
        sim_fault_step(c, "run");

        /* stage1 init: networking, then nspawn (our ppid) and the pod's systemd. */
        if (!host_net && !no_net) {
                if ((r = alloc_ip(c, uuid, &ip)) < 0) {
                        sim_err("networking: no free IP in %s.0/24", SIM_DEFAULT_SUBNET);
                        return SIM_EXIT_ERROR;
                }
                _cleanup_free_ char *conf = rkl_xasprintf(
                    "{\"name\":\"%s\",\"type\":\"ptp\",\"ipMasq\":true,\"ipam\":{\"type\":"
                    "\"host-local\",\"subnet\":\"%s.0/24\",\"routes\":[{\"dst\":\"0.0.0.0/"
                    "0\"}]}}",
                    netname_s, SIM_DEFAULT_SUBNET);
                _cleanup_free_ char *confname = rkl_xasprintf("net/99-%s.conf", netname_s);
                (void)write_in(run, confname, conf);
                struct json_object *ni = json_object_new_array(), *n = json_object_new_object();
                json_object_object_add(n, "netName", json_object_new_string(netname_s));
                json_object_object_add(n, "netConf", json_object_new_string(confname));
                json_object_object_add(
                    n, "pluginPath",
                    json_object_new_string("stage1/rootfs/usr/lib/rkt/plugins/net/ptp"));
                json_object_object_add(n, "ifName", json_object_new_string("eth0"));
                json_object_object_add(n, "ip", json_object_new_string(ip));
                json_object_object_add(n, "args", json_object_new_string(""));
                json_object_object_add(n, "mask", json_object_new_string("255.255.255.0"));
                json_object_array_add(ni, n);
                _cleanup_free_ char *nis = sim_json_go(ni, false);
                json_object_put(ni);
                (void)write_in(run, "net-info.json", nis);
                const char *outer = getenv("RKT_SIM_NETNS");
                _cleanup_free_ char *ns = NULL, *err = NULL;
                if (!isempty(outer)) {
                        /* A namespace of the pod's own on the test's bridge: the IP is real. */
                        if (sim_podnet_setup(&s.net, c->exe, outer, uuid, ip, &err) < 0) {
                                sim_err("networking: %s", err);
                                return SIM_EXIT_ERROR;
                        }
                        ns = rkl_xstrdup(s.net.path);
                } else {
                        /* rkt's name for a namespace that does not exist here. */
                        char h[33];
                        sim_random_hex(h, 16);
                        ns = rkl_xasprintf("/var/run/netns/cni-%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8,
                                           h + 12, h + 16, h + 20);
                }
                (void)write_in(run, "netns", ns);
        }
        if (c->profile_real)
                sim_sleep_ms(1170); /* host binaries copied into stage1 (docs/rkt.md) */
        _cleanup_free_ char *subcg = subcgroup_of(cg);
        char pidbuf[32];
        snprintf(pidbuf, sizeof(pidbuf), "%d", (int)getpid());
        _cleanup_free_ char *rootfs_lck = rkl_xasprintf("%s/stage1/.#rootfs.lck", run);
        if (write_in(run, "subcgroup", subcg) < 0 || write_in(run, "ppid", pidbuf) < 0 ||
            sim_write_file(rootfs_lck, "", 0644) < 0) {
                sim_err("cannot write pod files: %m");
                return SIM_EXIT_ERROR;
        }

        /* Signals arrive through a signalfd; apps get a clean mask at spawn. */
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        s.sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        size_t len;
        sim_supervisor_addr(uuid, sa.sun_path, sizeof(sa.sun_path), &len);
        s.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s.sig_fd < 0 || s.listen_fd < 0 ||
            bind(s.listen_fd, (struct sockaddr *)&sa,
                 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0 ||
            listen(s.listen_fd, 64) < 0) {
                sim_err("cannot set up the supervisor: %m");
                return SIM_EXIT_ERROR;
        }
        uint64_t stop_ms = 90000;
        const char *st = getenv("RKT_SIM_STOP_TIMEOUT_MS");
        if (st)
                (void)rkl_safe_atou64(st, &stop_ms);
        s.stop_timeout_usec = stop_ms * USEC_PER_MSEC;
        /* fast: ~20 ms to readiness; real: the sleeps above bring it to ~1.35 s. */
        s.ready_at = rkl_now_usec(CLOCK_MONOTONIC) + 20 * USEC_PER_MSEC;
        sim_fault_step(c, "started");

        r = supervise(&s);

        /* The pod's systemd is gone: nspawn deletes its lock file and exits. */
        (void)unlink(rootfs_lck);
        for (size_t i = 0; i < s.napps; i++)
                app_cgroups_remove(&s.apps[i]);
        unit_cgroups_remove(&s);
        return r < 0 ? SIM_EXIT_ERROR : 0;
}
