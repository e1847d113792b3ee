/* The pod as rkt keeps it: pods/<state dir>/<uuid>, its lock, its manifest and status files,
 * and the pod-level commands status, list, stop, rm and gc. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <json-c/json.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "sim.h"
#include "base/banned.h"

static const char *const state_dirs[] = {"embryo", "prepare",        "prepared",
                                         "run",    "exited-garbage", "garbage"};

void sim_pod_done(sim_pod *p)
{
        free(p->uuid);
        free(p->path);
        free(p->statedir);
        *p = (sim_pod){0};
}

const char *sim_pod_state_to_string(sim_pod_state s)
{
        static const char *const names[] = {
            [SIM_POD_EMBRYO] = "embryo",
            [SIM_POD_PREPARING] = "preparing",
            [SIM_POD_ABORTED_PREPARE] = "aborted prepare",
            [SIM_POD_PREPARED] = "prepared",
            [SIM_POD_RUNNING] = "running",
            [SIM_POD_EXITED] = "exited",
            [SIM_POD_EXITED_GARBAGE] = "exited garbage",
            [SIM_POD_EXITED_DELETING] = "exited deleting",
            [SIM_POD_GARBAGE] = "garbage",
            [SIM_POD_DELETING] = "deleting",
        };
        return names[s];
}

bool sim_pod_after_run(const sim_pod *p)
{
        return p->state == SIM_POD_EXITED || p->state == SIM_POD_EXITED_GARBAGE ||
               p->state == SIM_POD_EXITED_DELETING || p->state == SIM_POD_DELETING ||
               p->state == SIM_POD_GARBAGE;
}

static sim_pod_state state_of(const char *statedir, const char *path)
{
        bool locked = sim_lock_held(path);
        if (streq(statedir, "embryo"))
                return SIM_POD_EMBRYO;
        if (streq(statedir, "prepare"))
                return locked ? SIM_POD_PREPARING : SIM_POD_ABORTED_PREPARE;
        if (streq(statedir, "prepared"))
                return SIM_POD_PREPARED;
        if (streq(statedir, "run"))
                return locked ? SIM_POD_RUNNING : SIM_POD_EXITED;
        if (streq(statedir, "exited-garbage"))
                return locked ? SIM_POD_EXITED_DELETING : SIM_POD_EXITED_GARBAGE;
        return locked ? SIM_POD_DELETING : SIM_POD_GARBAGE;
}

static void pod_init(const sim_ctx *c, const char *statedir, const char *uuid, sim_pod *ret)
{
        ret->uuid = rkl_xstrdup(uuid);
        ret->statedir = rkl_xstrdup(statedir);
        ret->path = sim_path(c, "pods/%s/%s", statedir, uuid);
        ret->state = state_of(statedir, ret->path);
}

int sim_pod_find(const sim_ctx *c, const char *uuid, sim_pod *ret, char **ret_err)
{
        _cleanup_free_ char *found_dir = NULL, *found_uuid = NULL;
        int matches = 0;
        size_t len = strlen(uuid);

        if (len == 0 || len > 36 || strchr(uuid, '/') || strchr(uuid, '.')) {
                *ret_err = rkl_xasprintf("no matches found for \"%s\"", uuid);
                return -ENOENT;
        }
        for (size_t i = 0; i < ELEMENTSOF(state_dirs); i++) {
                _cleanup_free_ char *d = sim_path(c, "pods/%s", state_dirs[i]);
                _cleanup_closedir_ DIR *dir = opendir(d);
                if (!dir)
                        continue;
                struct dirent *de;
                while ((de = readdir(dir))) {
                        if (de->d_name[0] == '.' || strncmp(de->d_name, uuid, len) != 0)
                                continue;
                        /* A pod being renamed can show up twice: count UUIDs, not entries. */
                        if (found_uuid && streq(found_uuid, de->d_name))
                                continue;
                        free(found_dir);
                        free(found_uuid);
                        found_dir = rkl_xstrdup(state_dirs[i]);
                        found_uuid = rkl_xstrdup(de->d_name);
                        matches++;
                }
        }
        if (matches == 0) {
                *ret_err = rkl_xasprintf("no matches found for \"%s\"", uuid);
                return -ENOENT;
        }
        if (matches > 1) {
                *ret_err = rkl_xasprintf("ambiguous uuid, %d matches", matches);
                return -EEXIST;
        }
        pod_init(c, found_dir, found_uuid, ret);
        return 0;
}

char *sim_pod_upper(const sim_pod *p)
{
        return rkl_xasprintf("%s/overlay/%s/upper", p->path, SIM_STAGE1_TREE);
}

char *sim_pod_status_path(const sim_pod *p, const char *app, const char *suffix)
{
        return rkl_xasprintf("%s/overlay/%s/upper/rkt/status/%s%s", p->path, SIM_STAGE1_TREE, app,
                             suffix ? suffix : "");
}

struct json_object *sim_pod_manifest(const sim_pod *p)
{
        _cleanup_free_ char *mp = rkl_xasprintf("%s/pod", p->path);
        return sim_json_read(mp);
}

int sim_pod_manifest_write(const sim_pod *p, struct json_object *m)
{
        _cleanup_free_ char *mp = rkl_xasprintf("%s/pod", p->path);
        return sim_json_write_atomic(mp, m);
}

struct json_object *sim_manifest_app(struct json_object *m, const char *app)
{
        struct json_object *apps;
        if (!m || !json_object_object_get_ex(m, "apps", &apps) ||
            !json_object_is_type(apps, json_type_array))
                return NULL;
        for (size_t i = 0; i < json_object_array_length(apps); i++) {
                struct json_object *ra = json_object_array_get_idx(apps, i);
                if (streq_ptr(sim_json_str(ra, "name"), app))
                        return ra;
        }
        return NULL;
}

/* Go encodes map[string]string with sorted keys. */
static struct json_object *sorted_map(struct json_object *m)
{
        if (!m || !json_object_is_type(m, json_type_object) || json_object_object_length(m) == 0)
                return NULL;
        size_t n = (size_t)json_object_object_length(m), i = 0;
        const char **keys = rkl_xnew0(const char *, n);
        json_object_object_foreach(m, k, v)
        {
                (void)v;
                keys[i++] = k;
        }
        for (size_t a = 1; a < n; a++)
                for (size_t b = a; b > 0 && strcmp(keys[b - 1], keys[b]) > 0; b--) {
                        const char *t = keys[b];
                        keys[b] = keys[b - 1];
                        keys[b - 1] = t;
                }
        struct json_object *o = json_object_new_object();
        for (i = 0; i < n; i++) {
                struct json_object *val = NULL;
                json_object_object_get_ex(m, keys[i], &val);
                json_object_object_add(o, keys[i], json_object_get(val));
        }
        free(keys);
        return o;
}

static void add_time(struct json_object *o, const char *key, int64_t t)
{
        if (t >= 0)
                json_object_object_add(o, key, json_object_new_int64(t));
}

/* reads "<code>\n"; -EBADMSG when empty or garbled (a pod killed before its reaper ran). */
static int read_exit_code(const char *path, int *ret)
{
        _cleanup_free_ char *s = NULL;
        int r = sim_read_file(path, &s);
        if (r < 0)
                return r;
        s[strcspn(s, "\n")] = 0;
        return rkl_safe_atoi(s, ret) < 0 ? -EBADMSG : 0;
}

static int64_t pod_created(const sim_pod *p)
{
        _cleanup_free_ char *pc = rkl_xasprintf("%s/pod-created", p->path);
        int64_t t = sim_mtime_ns(pc);
        if (t < 0) {
                _cleanup_free_ char *pm = rkl_xasprintf("%s/pod", p->path);
                t = sim_mtime_ns(pm);
        }
        return t;
}

static int64_t pod_started(const sim_pod *p)
{
        _cleanup_free_ char *pp = rkl_xasprintf("%s/ppid", p->path);
        return sim_mtime_ns(pp);
}

static int64_t pod_gc_marked(const sim_pod *p)
{
        if (p->state != SIM_POD_EXITED_GARBAGE && p->state != SIM_POD_GARBAGE)
                return -1;
        return sim_ctime_ns(p->path);
}

static const char *app_state_from_pod(sim_pod_state s)
{
        switch (s) {
        case SIM_POD_PREPARED:
                return "created";
        case SIM_POD_RUNNING:
                return "running";
        case SIM_POD_EXITED:
        case SIM_POD_EXITED_GARBAGE:
        case SIM_POD_EXITED_DELETING:
        case SIM_POD_DELETING:
        case SIM_POD_GARBAGE:
                return "exited";
        default:
                return "unknown";
        }
}

/* The pod volume that an app mount names, or NULL. */
static struct json_object *find_volume(struct json_object *m, const char *name)
{
        struct json_object *vols = NULL;
        json_object_object_get_ex(m, "volumes", &vols);
        for (size_t k = 0; vols && json_object_is_type(vols, json_type_array) &&
                           k < json_object_array_length(vols);
             k++) {
                struct json_object *vv = json_object_array_get_idx(vols, k);
                if (streq_ptr(sim_json_str(vv, "name"), name))
                        return vv;
        }
        return NULL;
}

static bool volume_readonly(struct json_object *vol)
{
        struct json_object *ro;
        return vol && json_object_object_get_ex(vol, "readOnly", &ro) &&
               json_object_get_boolean(ro);
}

struct json_object *sim_app_mounts(const sim_pod *p, struct json_object *m, struct json_object *ra)
{
        struct json_object *out = json_object_new_array(), *rm = NULL;
        json_object_object_get_ex(ra, "mounts", &rm);
        for (size_t i = 0;
             rm && json_object_is_type(rm, json_type_array) && i < json_object_array_length(rm);
             i++) {
                struct json_object *mt = json_object_array_get_idx(rm, i);
                const char *name = sim_json_str(mt, "volume"), *path = sim_json_str(mt, "path");
                struct json_object *vol = find_volume(m, name);
                if (!vol || !name)
                        continue;
                _cleanup_free_ char *src = NULL;
                if (streq_ptr(sim_json_str(vol, "kind"), "empty")) {
                        /* rkt keeps empty volumes in the pod: sharedVolumes/<name>. */
                        src = rkl_xasprintf("%s/sharedVolumes/%s", p->path, name);
                        (void)rkl_mkdir_p(src, 0755);
                } else
                        src = rkl_xstrdup(sim_json_str(vol, "source") ?: "");
                struct json_object *e = json_object_new_object();
                json_object_object_add(e, "source", json_object_new_string(src));
                json_object_object_add(e, "target", json_object_new_string(path ? path : "/"));
                json_object_object_add(e, "readonly",
                                       json_object_new_boolean(volume_readonly(vol)));
                json_object_array_add(out, e);
        }
        return out;
}

struct json_object *sim_app_json(const sim_pod *p, struct json_object *ra, bool mutable_rules)
{
        const char *name = sim_json_str(ra, "name");
        struct json_object *o = json_object_new_object(), *img = NULL, *app = NULL;
        const char *state = "unknown";
        int64_t created = -1, started = -1, finished = -1;
        int code = 0;
        bool has_code = false;
        _cleanup_free_ char *exitp = sim_pod_status_path(p, name, NULL);

        if (!mutable_rules) {
                /* rkt status/list: the "immutable pod" path (docs/rkt.md, 'Quirks'). */
                state = app_state_from_pod(p->state);
                created = pod_created(p);
                if (read_exit_code(exitp, &code) == 0) {
                        state = "exited";
                        has_code = true;
                }
                started = pod_started(p);
                finished = pod_gc_marked(p);
        } else {
                _cleanup_free_ char *cp = sim_pod_status_path(p, name, "-created");
                _cleanup_free_ char *sp = sim_pod_status_path(p, name, "-started");
                if ((created = sim_mtime_ns(cp)) >= 0) {
                        state = "created";
                        if ((started = sim_mtime_ns(sp)) >= 0) {
                                state = "running";
                                if ((finished = sim_mtime_ns(exitp)) >= 0) {
                                        state = "exited";
                                        if (read_exit_code(exitp, &code) < 0)
                                                code = 1;
                                        has_code = true;
                                }
                        }
                }
                if (sim_pod_after_run(p) && !streq(state, "exited")) {
                        /* A hard-killed pod: exited, finished when GC marked it (if it was). */
                        state = "exited";
                        finished = pod_gc_marked(p);
                }
        }
        json_object_object_add(o, "name", json_object_new_string(name ? name : ""));
        json_object_object_add(o, "state", json_object_new_string(state));
        add_time(o, "created_at", created);
        add_time(o, "started_at", started);
        add_time(o, "finished_at", finished);
        if (has_code)
                json_object_object_add(o, "exit_code", json_object_new_int(code));
        json_object_object_get_ex(ra, "image", &img);
        const char *iid = sim_json_str(img, "id");
        json_object_object_add(o, "image_id", json_object_new_string(iid ? iid : ""));

        json_object_object_get_ex(ra, "app", &app);
        /* v1.Mount: the app's mounts joined with the pod's volumes. */
        _cleanup_json_ struct json_object *pm = sim_pod_manifest(p);
        struct json_object *rm = NULL;
        if (json_object_object_get_ex(ra, "mounts", &rm) &&
            json_object_is_type(rm, json_type_array) && json_object_array_length(rm) > 0) {
                struct json_object *mounts = json_object_new_array();
                for (size_t i = 0; i < json_object_array_length(rm); i++) {
                        struct json_object *mt = json_object_array_get_idx(rm, i), *mo;
                        const char *vol = sim_json_str(mt, "volume"),
                                   *path = sim_json_str(mt, "path");
                        struct json_object *vv = find_volume(pm, vol);
                        const char *hostp = vv ? sim_json_str(vv, "source") : NULL;
                        mo = json_object_new_object();
                        json_object_object_add(mo, "name", json_object_new_string(vol ? vol : ""));
                        json_object_object_add(mo, "container_path",
                                               json_object_new_string(path ? path : ""));
                        json_object_object_add(mo, "host_path",
                                               json_object_new_string(hostp ? hostp : ""));
                        json_object_object_add(mo, "read_only",
                                               json_object_new_boolean(volume_readonly(vv)));
                        json_object_array_add(mounts, mo);
                }
                json_object_object_add(o, "mounts", mounts);
        }
        struct json_object *ua = NULL, *ul = NULL;
        json_object_object_get_ex(app, "userAnnotations", &ua);
        json_object_object_get_ex(app, "userLabels", &ul);
        if ((ua = sorted_map(ua)))
                json_object_object_add(o, "user_annotations", ua);
        if ((ul = sorted_map(ul)))
                json_object_object_add(o, "user_labels", ul);
        return o;
}

struct json_object *sim_pod_json(const sim_pod *p)
{
        struct json_object *o = json_object_new_object(), *m = sim_pod_manifest(p), *apps = NULL,
                           *v;
        json_object_object_add(o, "name", json_object_new_string(p->uuid));
        json_object_object_add(o, "state",
                               json_object_new_string(sim_pod_state_to_string(p->state)));
        if (p->state == SIM_POD_RUNNING || p->state == SIM_POD_EXITED) {
                _cleanup_free_ char *np = rkl_xasprintf("%s/net-info.json", p->path);
                struct json_object *nets = sim_json_read(np);
                if (nets && json_object_is_type(nets, json_type_array) &&
                    json_object_array_length(nets) > 0)
                        json_object_object_add(o, "networks", nets);
                else
                        json_object_put(nets);
        }
        if (m && json_object_object_get_ex(m, "apps", &apps) &&
            json_object_is_type(apps, json_type_array) && json_object_array_length(apps) > 0) {
                struct json_object *names = json_object_new_array(), *arr = json_object_new_array();
                for (size_t i = 0; i < json_object_array_length(apps); i++) {
                        struct json_object *ra = json_object_array_get_idx(apps, i);
                        const char *n = sim_json_str(ra, "name");
                        json_object_array_add(names, json_object_new_string(n ? n : ""));
                        json_object_array_add(arr, sim_app_json(p, ra, false));
                }
                json_object_object_add(o, "app_names", names);
                json_object_object_add(o, "apps", arr);
        }
        if (p->state != SIM_POD_EMBRYO) {
                int64_t t = pod_created(p);
                if (t >= 0)
                        json_object_object_add(o, "created_at",
                                               json_object_new_int64(t / (int64_t)NSEC_PER_SEC));
        }
        int64_t st = pod_started(p);
        if (st >= 0)
                json_object_object_add(o, "started_at",
                                       json_object_new_int64(st / (int64_t)NSEC_PER_SEC));
        struct json_object *ua = NULL, *ul = NULL;
        if (m && json_object_object_get_ex(m, "userAnnotations", &v))
                ua = sorted_map(v);
        if (m && json_object_object_get_ex(m, "userLabels", &v))
                ul = sorted_map(v);
        if (ua)
                json_object_object_add(o, "user_annotations", ua);
        if (ul)
                json_object_object_add(o, "user_labels", ul);
        json_object_put(m);
        return o;
}

void sim_supervisor_addr(const char *uuid, char *buf, size_t n, size_t *ret_len)
{
        /* An abstract socket: nothing on disk, gone with the supervisor. */
        int k = snprintf(buf, n, "%crkt-sim/%s", 0, uuid);
        *ret_len = (size_t)k;
}

int sim_supervisor_call(const char *uuid, const char *request, char **ret_reply)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        size_t len;
        sim_supervisor_addr(uuid, sa.sun_path, sizeof(sa.sun_path), &len);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa,
                    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
                return -errno;
        _cleanup_free_ char *line = rkl_xasprintf("%s\n", request);
        if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
                return -EIO;
        char buf[4096];
        size_t n = 0;
        for (;;) {
                ssize_t k = read(fd, buf + n, sizeof(buf) - 1 - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                n += (size_t)k;
                if (memchr(buf, '\n', n) || n == sizeof(buf) - 1)
                        break;
        }
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        if (n == 0)
                return -ECONNRESET;
        *ret_reply = rkl_xstrdup(buf);
        return 0;
}

void sim_net_free(const sim_ctx *c, const char *uuid)
{
        _cleanup_free_ char *d = sim_path(c, "networks/default");
        _cleanup_closedir_ DIR *dir = opendir(d);
        if (!dir)
                return;
        struct dirent *de;
        while ((de = readdir(dir))) {
                if (de->d_name[0] == '.')
                        continue;
                _cleanup_free_ char *p = rkl_xasprintf("%s/%s", d, de->d_name), *s = NULL;
                if (sim_read_file(p, &s) == 0 && strncmp(s, uuid, 36) == 0)
                        (void)unlink(p);
        }
}

static char *fmt_nets(const sim_pod *p)
{
        _cleanup_free_ char *np = rkl_xasprintf("%s/net-info.json", p->path);
        struct json_object *nets = sim_json_read(np);
        char *s = rkl_xstrdup("");
        for (size_t i = 0; nets && json_object_is_type(nets, json_type_array) &&
                           i < json_object_array_length(nets);
             i++) {
                struct json_object *n = json_object_array_get_idx(nets, i);
                char *t = rkl_xasprintf("%s%s%s:ip4=%s", s, i ? ", " : "",
                                        sim_json_str(n, "netName"), sim_json_str(n, "ip"));
                free(s);
                s = t;
        }
        json_object_put(nets);
        return s;
}

static int read_pid(const sim_pod *p, pid_t *ret)
{
        _cleanup_free_ char *pp = rkl_xasprintf("%s/ppid", p->path), *s = NULL;
        int r = sim_read_file(pp, &s);
        if (r < 0)
                return r;
        s[strcspn(s, "\n")] = 0;
        int v;
        if (rkl_safe_atoi(s, &v) < 0 || v <= 0)
                return -EBADMSG;
        *ret = v;
        return 0;
}

/* --wait / --wait-ready: "true" or negative waits forever, "false"/0 not at all. */
static int wait_arg(const char *s, int64_t *ret_ns)
{
        bool b;
        if (!s) {
                *ret_ns = 0;
                return 0;
        }
        if (sim_parse_bool(s, &b) == 0) {
                *ret_ns = b ? -1 : 0;
                return 0;
        }
        return sim_parse_duration(s, ret_ns);
}

bool sim_pod_ready(const sim_pod *p)
{
        _cleanup_free_ char *up = sim_pod_upper(p);
        _cleanup_free_ char *s = rkl_xasprintf("%s/rkt/supervisor-status", up);
        char buf[16];
        ssize_t k = readlink(s, buf, sizeof(buf) - 1);
        return k == 5 && strncmp(buf, "ready", 5) == 0;
}

/* Polls every 100 ms like rkt; returns false on timeout. Re-resolves the pod each time. */
static bool wait_for(const sim_ctx *c, sim_pod *p, int64_t ns, bool want_ready)
{
        uint64_t deadline =
            ns < 0 ? UINT64_MAX : rkl_now_usec(CLOCK_MONOTONIC) + (uint64_t)ns / 1000;
        for (;;) {
                _cleanup_free_ char *err = NULL;
                sim_pod q = {0};
                if (sim_pod_find(c, p->uuid, &q, &err) == 0) {
                        sim_pod_done(p);
                        *p = q;
                }
                if (want_ready ? (p->state == SIM_POD_RUNNING && sim_pod_ready(p))
                               : (p->state != SIM_POD_RUNNING && p->state != SIM_POD_PREPARING &&
                                  p->state != SIM_POD_EMBRYO))
                        return true;
                if (rkl_now_usec(CLOCK_MONOTONIC) >= deadline)
                        return false;
                sim_sleep_ms(100);
        }
}

int sim_cmd_status(sim_ctx *c, char **argv)
{
        _cleanup_free_ char *wait = NULL, *wait_ready = NULL, *format = NULL, *uuid_file = NULL;
        sim_flag flags[] = {
            {"wait", SIM_FLAG_OPT, &wait},
            {"wait-ready", SIM_FLAG_OPT, &wait_ready},
            {"format", SIM_FLAG_STRING, &format},
            {"uuid-file", SIM_FLAG_STRING, &uuid_file},
        };
        sim_args a = {0};
        if (sim_cmd_parse(c, argv, flags, ELEMENTSOF(flags), 0, false, &a) < 0)
                return SIM_EXIT_ERROR;
        int ret = SIM_EXIT_ERROR;
        sim_pod p = {0};
        _cleanup_free_ char *err = NULL, *uuid = NULL;
        int64_t wn = 0, wrn = 0;

        if (uuid_file) {
                if (sim_read_file(uuid_file, &uuid) < 0) {
                        sim_err("status: unable to read UUID from file: %m");
                        goto out;
                }
                uuid[strcspn(uuid, "\n")] = 0;
        } else if (rkl_strv_length(a.pos) == 1)
                uuid = rkl_xstrdup(a.pos[0]);
        else {
                sim_err("Error: status: exactly one UUID must be given");
                goto out;
        }
        if (format && !streq(format, "json") && !streq(format, "json-pretty") &&
            !streq(format, "")) {
                sim_err("Error: invalid argument \"%s\" for \"--format\" flag", format);
                goto out;
        }
        if (wait_arg(wait, &wn) < 0 || wait_arg(wait_ready, &wrn) < 0) {
                sim_err("Error: invalid duration for --wait/--wait-ready");
                goto out;
        }
        if (sim_pod_find(c, uuid, &p, &err) < 0) {
                sim_err("status: problem retrieving pod: %s", err);
                goto out;
        }
        if (wn != 0 && !wait_for(c, &p, wn, false)) {
                sim_err("status: pod %s did not exit within the wait timeout", p.uuid);
                goto out;
        }
        if (wrn != 0 && !wait_for(c, &p, wrn, true)) {
                sim_err("status: pod %s did not become ready within the wait timeout", p.uuid);
                goto out;
        }
        if (format && (streq(format, "json") || streq(format, "json-pretty"))) {
                struct json_object *o = sim_pod_json(&p);
                _cleanup_free_ char *s = sim_json_go(o, streq(format, "json-pretty"));
                json_object_put(o);
                sim_out("%s", s);
        } else {
                sim_out("state=%s", sim_pod_state_to_string(p.state));
                int64_t cr = pod_created(&p), st = pod_started(&p);
                if (cr >= 0) {
                        _cleanup_free_ char *t = sim_format_time_ms(cr);
                        sim_out("created=%s", t);
                }
                if (st >= 0) {
                        _cleanup_free_ char *t = sim_format_time_ms(st);
                        sim_out("started=%s", t);
                }
                if (p.state == SIM_POD_RUNNING || p.state == SIM_POD_EXITED) {
                        _cleanup_free_ char *n = fmt_nets(&p);
                        sim_out("networks=%s", n);
                }
                if (p.state == SIM_POD_RUNNING || sim_pod_after_run(&p)) {
                        pid_t pid = 0;
                        for (int i = 0; i < 10 && read_pid(&p, &pid) < 0; i++)
                                sim_sleep_ms(100);
                        if (pid <= 0) {
                                sim_err("status: unable to get PID for pod \"%s\"", p.uuid);
                                goto out;
                        }
                        sim_out("pid=%d\nexited=%s", (int)pid,
                                p.state == SIM_POD_EXITED || p.state == SIM_POD_EXITED_GARBAGE
                                    ? "true"
                                    : "false");
                        struct json_object *m = sim_pod_manifest(&p), *apps;
                        if (p.state != SIM_POD_RUNNING && m &&
                            json_object_object_get_ex(m, "apps", &apps))
                                for (size_t i = 0; i < json_object_array_length(apps); i++) {
                                        const char *n = sim_json_str(
                                            json_object_array_get_idx(apps, i), "name");
                                        _cleanup_free_ char *ep = sim_pod_status_path(&p, n, NULL);
                                        int code;
                                        if (read_exit_code(ep, &code) == 0)
                                                sim_out("app-%s=%d", n, code);
                                }
                        json_object_put(m);
                }
        }
        sim_profile_pad(c, 38);
        ret = 0;
out:
        sim_pod_done(&p);
        sim_args_done(&a);
        return ret;
}

/* Pods in the dirs `rkt list` walks, oldest first. */
static sim_pod *list_pods(const sim_ctx *c, size_t *ret_n)
{
        static const char *const dirs[] = {"prepare", "prepared", "run", "exited-garbage"};
        sim_pod *pods = NULL;
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                _cleanup_free_ char *d = sim_path(c, "pods/%s", dirs[i]);
                _cleanup_closedir_ DIR *dir = opendir(d);
                if (!dir)
                        continue;
                struct dirent *de;
                while ((de = readdir(dir))) {
                        if (!sim_uuid_is_valid(de->d_name))
                                continue;
                        pods = rkl_xrealloc(pods, (n + 1) * sizeof(*pods));
                        pods[n] = (sim_pod){0};
                        pod_init(c, dirs[i], de->d_name, &pods[n]);
                        n++;
                }
        }
        *ret_n = n;
        return pods;
}

int sim_cmd_list(sim_ctx *c, char **argv)
{
        _cleanup_free_ char *format = NULL;
        bool full = false, no_legend = false;
        sim_flag flags[] = {
            {"format", SIM_FLAG_STRING, &format},
            {"full", SIM_FLAG_BOOL, &full},
            {"no-legend", SIM_FLAG_BOOL, &no_legend},
        };
        sim_args a = {0};
        if (sim_cmd_parse(c, argv, flags, ELEMENTSOF(flags), 0, false, &a) < 0)
                return SIM_EXIT_ERROR;
        sim_args_done(&a);
        size_t n = 0;
        sim_pod *pods = list_pods(c, &n);
        bool json = format && (streq(format, "json") || streq(format, "json-pretty"));
        if (json) {
                /* A nil Go slice: `null` when there are no pods (docs/rkt.md, 'Output formats'). */
                struct json_object *arr = n ? json_object_new_array() : NULL;
                for (size_t i = 0; i < n; i++)
                        json_object_array_add(arr, sim_pod_json(&pods[i]));
                _cleanup_free_ char *s = sim_json_go(arr, streq(format, "json-pretty"));
                json_object_put(arr);
                sim_out("%s", s);
        } else {
                if (!no_legend)
                        sim_out("UUID\tAPP\tIMAGE NAME\tSTATE\tCREATED\tSTARTED\tNETWORKS");
                for (size_t i = 0; i < n; i++) {
                        struct json_object *m = sim_pod_manifest(&pods[i]), *apps = NULL;
                        _cleanup_free_ char *uuid =
                            full ? rkl_xstrdup(pods[i].uuid) : rkl_xstrndup(pods[i].uuid, 8);
                        _cleanup_free_ char *nets = fmt_nets(&pods[i]);
                        int64_t cr = pod_created(&pods[i]), st = pod_started(&pods[i]);
                        _cleanup_free_ char *crs =
                            cr >= 0 ? sim_format_time_ms(cr) : rkl_xstrdup("");
                        _cleanup_free_ char *sts =
                            st >= 0 ? sim_format_time_ms(st) : rkl_xstrdup("");
                        size_t na = m && json_object_object_get_ex(m, "apps", &apps)
                                        ? json_object_array_length(apps)
                                        : 0;
                        if (na == 0)
                                sim_out("%s\t-\t-\t%s\t%s\t%s\t%s", uuid,
                                        sim_pod_state_to_string(pods[i].state), crs, sts, nets);
                        for (size_t k = 0; k < na; k++) {
                                struct json_object *ra = json_object_array_get_idx(apps, k), *img;
                                json_object_object_get_ex(ra, "image", &img);
                                sim_out("%s\t%s\t%s\t%s\t%s\t%s\t%s", uuid,
                                        sim_json_str(ra, "name"), sim_json_str(img, "name"),
                                        sim_pod_state_to_string(pods[i].state), crs, sts, nets);
                        }
                        json_object_put(m);
                }
        }
        for (size_t i = 0; i < n; i++)
                sim_pod_done(&pods[i]);
        free(pods);
        sim_profile_pad(c, 56);
        return 0;
}

/* SIGKILLs pid's descendants (deepest first), as `rkt stop --force` kills nspawn's children. */
static void kill_descendants(pid_t pid)
{
        _cleanup_free_ char *p = rkl_xasprintf("/proc/%d/task/%d/children", (int)pid, (int)pid);
        _cleanup_free_ char *s = NULL;
        if (sim_read_file(p, &s) < 0)
                return;
        for (char *t = s; *t;) {
                char *e = t + strcspn(t, " \n");
                char ch = *e;
                *e = 0;
                int child;
                if (*t && rkl_safe_atoi(t, &child) == 0) {
                        kill_descendants(child);
                        (void)kill(child, SIGKILL);
                }
                if (!ch)
                        break;
                t = e + 1;
        }
}

/* The pods a stop or rm names: its arguments, plus the UUID in --uuid-file if given. At
 * least one, as rkt requires (then a is released on failure). */
static int uuids_given(sim_args *a, const char *uuid_file, const char *cmd)
{
        if (uuid_file) {
                _cleanup_free_ char *u = NULL;
                if (sim_read_file(uuid_file, &u) == 0) {
                        u[strcspn(u, "\n")] = 0;
                        rkl_strv_push(&a->pos, u);
                }
        }
        if (rkl_strv_length(a->pos) < 1) {
                sim_err("Error: %s: at least one UUID must be given", cmd);
                sim_args_done(a);
                return -EINVAL;
        }
        return 0;
}

int sim_cmd_stop(sim_ctx *c, char **argv)
{
        bool force = false;
        _cleanup_free_ char *uuid_file = NULL;
        sim_flag flags[] = {
            {"force", SIM_FLAG_BOOL, &force},
            {"uuid-file", SIM_FLAG_STRING, &uuid_file},
        };
        sim_args a = {0};
        if (sim_cmd_parse(c, argv, flags, ELEMENTSOF(flags), 0, false, &a) < 0)
                return SIM_EXIT_ERROR;
        if (uuids_given(&a, uuid_file, "stop") < 0)
                return SIM_EXIT_ERROR;
        int errors = 0;
        RKL_STRV_FOREACH (u, a.pos) {
                sim_pod p = {0};
                _cleanup_free_ char *err = NULL;
                if (sim_pod_find(c, *u, &p, &err) < 0) {
                        sim_err("stop: cannot get pod: %s", err);
                        errors++;
                        continue;
                }
                if (sim_pod_after_run(&p)) {
                        sim_out("pod \"%s\" is already stopped", p.uuid);
                        sim_pod_done(&p);
                        continue;
                }
                pid_t pid;
                if (p.state != SIM_POD_RUNNING || read_pid(&p, &pid) < 0) {
                        sim_err("stop: pod \"%s\" is not running", p.uuid);
                        errors++;
                        sim_pod_done(&p);
                        continue;
                }
                if (force) {
                        /* Stopped first, so that it cannot see its apps die and write their
                         * exit files in between: real rkt's --force leaves none. */
                        (void)kill(pid, SIGSTOP);
                        kill_descendants(pid);
                        (void)kill(pid, SIGKILL);
                } else
                        (void)kill(pid, SIGTERM);
                sim_fault_step(c, "signalled");
                sim_out("\"%s\"", p.uuid);
                sim_pod_done(&p);
        }
        sim_args_done(&a);
        sim_profile_pad(c, 46);
        if (errors) {
                sim_err("stop: failed to stop %d pod(s)", errors);
                return SIM_EXIT_ERROR;
        }
        return 0;
}

/* Deletes a pod already in exited-garbage/ or garbage/: lock, network teardown, rm -rf. */
static int delete_pod(const sim_ctx *c, sim_pod *p)
{
        _cleanup_close_ int fd = open(p->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return -errno;
        sim_fault_step(c, "locked");
        sim_net_free(c, p->uuid);
        return rkl_rm_rf_at(AT_FDCWD, p->path);
}

static int move_pod(const sim_ctx *c, sim_pod *p, const char *to)
{
        _cleanup_free_ char *dst_dir = sim_path(c, "pods/%s", to);
        (void)rkl_mkdir_p(dst_dir, 0700);
        _cleanup_free_ char *dst = rkl_xasprintf("%s/%s", dst_dir, p->uuid);
        if (rename(p->path, dst) < 0)
                return -errno;
        free(p->path);
        free(p->statedir);
        p->path = TAKE_PTR(dst);
        p->statedir = rkl_xstrdup(to);
        return 0;
}

int sim_cmd_rm(sim_ctx *c, char **argv)
{
        _cleanup_free_ char *uuid_file = NULL;
        sim_flag flags[] = {{"uuid-file", SIM_FLAG_STRING, &uuid_file}};
        sim_args a = {0};
        if (sim_cmd_parse(c, argv, flags, ELEMENTSOF(flags), 0, false, &a) < 0)
                return SIM_EXIT_ERROR;
        if (uuids_given(&a, uuid_file, "rm") < 0)
                return SIM_EXIT_ERROR;
        int errors = 0;
        RKL_STRV_FOREACH (u, a.pos) {
                sim_pod p = {0};
                _cleanup_free_ char *err = NULL;
                int r = 0;
                if (sim_pod_find(c, *u, &p, &err) < 0) {
                        sim_err("rm: cannot get pod: %s", err);
                        errors++;
                        continue;
                }
                switch (p.state) {
                case SIM_POD_RUNNING:
                        sim_err("rm: pod \"%s\" is currently running", p.uuid);
                        r = -EBUSY;
                        break;
                case SIM_POD_EMBRYO:
                case SIM_POD_PREPARING:
                        sim_err("rm: pod \"%s\" is currently being prepared", p.uuid);
                        r = -EBUSY;
                        break;
                case SIM_POD_DELETING:
                case SIM_POD_EXITED_DELETING:
                        sim_err("rm: pod \"%s\" is currently being deleted", p.uuid);
                        r = -EBUSY;
                        break;
                case SIM_POD_ABORTED_PREPARE:
                case SIM_POD_PREPARED:
                        r = move_pod(c, &p, "garbage");
                        break;
                case SIM_POD_EXITED:
                        r = move_pod(c, &p, "exited-garbage");
                        break;
                default:
                        break;
                }
                if (r == 0) {
                        sim_fault_step(c, "moved");
                        r = delete_pod(c, &p);
                        if (r < 0)
                                sim_err("rm: unable to remove pod \"%s\": %s", p.uuid,
                                        strerror(-r));
                        else
                                sim_out("\"%s\"", p.uuid);
                }
                if (r < 0)
                        errors++;
                sim_pod_done(&p);
        }
        sim_args_done(&a);
        sim_profile_pad(c, 205);
        if (errors) {
                sim_err("rm: failed to remove %d pod(s)", errors);
                return SIM_EXIT_ERROR;
        }
        return 0;
}

int sim_cmd_gc(sim_ctx *c, char **argv)
{
        _cleanup_free_ char *grace = NULL, *expire = NULL;
        bool mark_only = false;
        sim_flag flags[] = {
            {"grace-period", SIM_FLAG_STRING, &grace},
            {"expire-prepared", SIM_FLAG_STRING, &expire},
            {"mark-only", SIM_FLAG_BOOL, &mark_only},
        };
        sim_args a = {0};
        if (sim_cmd_parse(c, argv, flags, ELEMENTSOF(flags), 0, false, &a) < 0)
                return SIM_EXIT_ERROR;
        sim_args_done(&a);
        int64_t grace_ns = 30 * 60 * (int64_t)NSEC_PER_SEC,
                expire_ns = 24 * 3600 * (int64_t)NSEC_PER_SEC;
        if ((grace && sim_parse_duration(grace, &grace_ns) < 0) ||
            (expire && sim_parse_duration(expire, &expire_ns) < 0)) {
                sim_err("Error: invalid duration");
                return SIM_EXIT_ERROR;
        }
        int64_t now = rkl_realtime_ns();
        size_t n = 0;
        sim_pod *pods = list_pods(c, &n);
        /* Mark: exited pods to exited-garbage, aborted and expired prepares to garbage. */
        for (size_t i = 0; i < n; i++) {
                sim_pod *p = &pods[i];
                if (p->state == SIM_POD_EXITED) {
                        sim_out("moving pod \"%s\" to garbage", p->uuid);
                        (void)move_pod(c, p, "exited-garbage");
                } else if (p->state == SIM_POD_ABORTED_PREPARE ||
                           (p->state == SIM_POD_PREPARED &&
                            now - sim_mtime_ns(p->path) > expire_ns)) {
                        sim_out("moving failed prepare \"%s\" to garbage", p->uuid);
                        (void)move_pod(c, p, "garbage");
                }
                sim_pod_done(p);
        }
        free(pods);
        if (mark_only) {
                sim_profile_pad(c, 29);
                return 0;
        }
        /* Sweep: the grace period counts from marking (the rename's ctime). */
        static const char *const sweep[] = {"exited-garbage", "garbage"};
        for (size_t i = 0; i < ELEMENTSOF(sweep); i++) {
                _cleanup_free_ char *d = sim_path(c, "pods/%s", sweep[i]);
                _cleanup_closedir_ DIR *dir = opendir(d);
                if (!dir)
                        continue;
                struct dirent *de;
                while ((de = readdir(dir))) {
                        if (!sim_uuid_is_valid(de->d_name))
                                continue;
                        sim_pod p = {0};
                        pod_init(c, sweep[i], de->d_name, &p);
                        if (streq(sweep[i], "exited-garbage") &&
                            now - sim_ctime_ns(p.path) < grace_ns) {
                                sim_pod_done(&p);
                                continue;
                        }
                        sim_out("Garbage collecting pod \"%s\"", p.uuid);
                        if (delete_pod(c, &p) < 0)
                                sim_err("gc: unable to remove pod \"%s\"", p.uuid);
                        sim_pod_done(&p);
                }
        }
        sim_profile_pad(c, 29);
        return 0;
}
