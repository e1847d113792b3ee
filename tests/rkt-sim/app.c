/* The `rkt app` commands on a running sandbox, `rkt enter`, and the hidden `__stage2` step
 * that turns a spawned process into an app (cgroups, volumes, chroot, ids, exec).
 *
 * As in rkt, stage0 (this CLI) does the file work: app add renders the image into the pod and
 * rewrites the manifest; app start (re)creates <app>-started. The supervisor (sandbox.c) runs
 * and stops the processes and writes the exit files. */
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/parse.h"
#include "base/strv.h"
#include "sim.h"
#include "base/banned.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Sets name=value in an appc name/value array, replacing an existing entry. */
static void kv_set(struct json_object *arr, const char *name, const char *value)
{
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
                struct json_object *e = json_object_array_get_idx(arr, i);
                if (streq_ptr(sim_json_str(e, "name"), name)) {
                        json_object_object_add(e, "value", json_object_new_string(value));
                        return;
                }
        }
        json_object_array_add(arr, sim_json_kv(name, value));
}

/* The pod for an app command; prints rkt's message and returns false when unusable. */
static bool get_pod(const sim_ctx *c, const char *cmd, const char *uuid, sim_pod *ret)
{
        _cleanup_free_ char *err = NULL;
        if (sim_pod_find(c, uuid, ret, &err) < 0) {
                sim_err("%s: problem retrieving pod: %s", cmd, err);
                return false;
        }
        return true;
}

static bool need_running(const char *cmd, const sim_pod *p)
{
        if (p->state != SIM_POD_RUNNING) {
                sim_err("%s: pod \"%s\" isn't currently running", cmd, p->uuid);
                return false;
        }
        if (!sim_pod_ready(p)) {
                sim_err("%s: supervisor for pod \"%s\" is not yet ready", cmd, p->uuid);
                return false;
        }
        return true;
}

static char *image_tree_id(const char *image_id)
{
        return rkl_xasprintf("deps-%s", image_id);
}

static int add_isolator(struct json_object *iso, const char *name, struct json_object *value)
{
        struct json_object *o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(name));
        json_object_object_add(o, "value", value);
        json_object_array_add(iso, o);
        return 0;
}

static struct json_object *strv_json(char **l)
{
        struct json_object *a = json_object_new_array();
        RKL_STRV_FOREACH (s, l)
                json_object_array_add(a, json_object_new_string(*s));
        return a;
}

/* --mnt-volume=name=,kind=host|empty,source=,target=,readOnly= */
static int parse_volume(const char *spec, struct json_object *vols, struct json_object *mounts)
{
        _cleanup_free_ char *name = NULL, *kind = NULL, *source = NULL, *target = NULL;
        bool ro = false;
        _cleanup_free_ char *s = rkl_xstrdup(spec);
        for (char *t = s; t && *t;) {
                char *comma = strchr(t, ',');
                if (comma)
                        *comma = 0;
                char *eq = strchr(t, '=');
                if (!eq)
                        return -EINVAL;
                *eq = 0;
                const char *v = eq + 1;
                if (streq(t, "name"))
                        name = rkl_xstrdup(v);
                else if (streq(t, "kind"))
                        kind = rkl_xstrdup(v);
                else if (streq(t, "source"))
                        source = rkl_xstrdup(v);
                else if (streq(t, "target"))
                        target = rkl_xstrdup(v);
                else if (streq(t, "readOnly")) {
                        if (sim_parse_bool(v, &ro) < 0)
                                return -EINVAL;
                } else if (!streq(t, "recursive"))
                        return -EINVAL;
                t = comma ? comma + 1 : NULL;
        }
        if (!name || !sim_acname_is_valid(name) || !target || target[0] != '/' || !kind ||
            (!streq(kind, "host") && !streq(kind, "empty")) || (streq(kind, "host") && !source))
                return -EINVAL;
        struct json_object *vol = json_object_new_object();
        json_object_object_add(vol, "name", json_object_new_string(name));
        json_object_object_add(vol, "kind", json_object_new_string(kind));
        if (source)
                json_object_object_add(vol, "source", json_object_new_string(source));
        json_object_object_add(vol, "readOnly", json_object_new_boolean(ro));
        json_object_array_add(vols, vol);
        struct json_object *m = json_object_new_object();
        json_object_object_add(m, "volume", json_object_new_string(name));
        json_object_object_add(m, "path", json_object_new_string(target));
        json_object_array_add(mounts, m);
        return 0;
}

static int write_env_file(const char *path, struct json_object *env, const char *app)
{
        char *buf = rkl_xstrdup("");
        bool has_path = false;
        for (size_t i = 0; i < json_object_array_length(env); i++) {
                struct json_object *e = json_object_array_get_idx(env, i);
                const char *n = sim_json_str(e, "name"), *v = sim_json_str(e, "value");
                has_path |= streq_ptr(n, "PATH");
                char *t = rkl_xasprintf("%s%s=%s\n", buf, n ? n : "", v ? v : "");
                free(buf);
                buf = t;
        }
        char *t = rkl_xasprintf("%s%sAC_APP_NAME=%s\n", buf,
                                has_path ? "" : "PATH=" DEFAULT_PATH "\n", app);
        free(buf);
        int r = sim_write_file(path, t, 0644);
        free(t);
        return r;
}

int sim_cmd_app_add(sim_ctx *c, char **argv)
{
        _cleanup_free_ char *name = NULL, *exec = NULL, *wd = NULL, *user = NULL, *group = NULL,
                            *sgids = NULL, *memory = NULL, *cpu = NULL, *cpu_shares = NULL,
                            *oom = NULL, *seccomp = NULL, *in = NULL, *out = NULL, *err = NULL,
                            *ro_s = NULL;
        _cleanup_strv_free_ char **env = NULL, **ann = NULL, **uann = NULL, **ulab = NULL,
                                 **vols = NULL, **caps_retain = NULL, **caps_remove = NULL,
                                 **mount = NULL;
        sim_flag flags[] = {
            {"name", SIM_FLAG_STRING, &name},
            {"exec", SIM_FLAG_STRING, &exec},
            {"working-dir", SIM_FLAG_STRING, &wd},
            {"readonly-rootfs", SIM_FLAG_OPT, &ro_s},
            {"user", SIM_FLAG_STRING, &user},
            {"group", SIM_FLAG_STRING, &group},
            {"supplementary-gids", SIM_FLAG_STRING, &sgids},
            {"environment", SIM_FLAG_STRV, &env},
            {"annotation", SIM_FLAG_STRV, &ann},
            {"user-annotation", SIM_FLAG_STRV, &uann},
            {"user-label", SIM_FLAG_STRV, &ulab},
            {"mnt-volume", SIM_FLAG_STRV, &vols},
            {"mount", SIM_FLAG_STRV, &mount},
            {"memory", SIM_FLAG_STRING, &memory},
            {"cpu", SIM_FLAG_STRING, &cpu},
            {"cpu-shares", SIM_FLAG_STRING, &cpu_shares},
            {"oom-score-adj", SIM_FLAG_STRING, &oom},
            {"caps-retain", SIM_FLAG_STRV, &caps_retain, .split = true},
            {"caps-remove", SIM_FLAG_STRV, &caps_remove, .split = true},
            {"seccomp", SIM_FLAG_STRING, &seccomp},
            {"stdin", SIM_FLAG_STRING, &in, .hidden_attach = true},
            {"stdout", SIM_FLAG_STRING, &out, .hidden_attach = true},
            {"stderr", SIM_FLAG_STRING, &err, .hidden_attach = true},
        };
        _cleanup_args_ sim_args a = {0};
        if (sim_cmd_parse(c, argv, flags, ELEMENTSOF(flags), 0, true, &a) < 0)
                return SIM_EXIT_ERROR;
        _cleanup_pod_ sim_pod p = {0};
        _cleanup_json_ struct json_object *m = NULL;
        _cleanup_json_ struct json_object *im = NULL;
        _cleanup_json_ struct json_object *ra = NULL;
        _cleanup_free_ char *image_id = NULL, *tree = NULL;
        _cleanup_close_ int lck = -EBADF;

        if (rkl_strv_length(a.pos) != 2) {
                sim_err("Error: app add: must provide the pod UUID and an IMAGE");
                return SIM_EXIT_ERROR;
        }
        if (!get_pod(c, "app add", a.pos[0], &p) || !need_running("app add", &p))
                return SIM_EXIT_ERROR;
        if (sim_image_lookup(c, a.pos[1], &image_id) < 0 ||
            !(im = sim_image_manifest(c, image_id))) {
                sim_err("app add: error resolving image: unable to find image \"%s\" in the "
                        "store (pull policy never)",
                        a.pos[1]);
                return SIM_EXIT_ERROR;
        }
        const char *iname = sim_json_str(im, "name");
        if (!name) {
                const char *b = iname ? strrchr(iname, '/') : NULL;
                name = rkl_xstrdup(b ? b + 1 : iname ? iname : "app");
        }
        if (!sim_acname_is_valid(name)) {
                sim_err("Error: invalid app name \"%s\"", name);
                return SIM_EXIT_ERROR;
        }

        /* pod.lck serialises manifest rewrites, as stage0 does. */
        _cleanup_free_ char *lckp = rkl_xasprintf("%s/pod.lck", p.path);
        lck = open(lckp, O_RDONLY | O_CLOEXEC);
        if (lck < 0 || flock(lck, LOCK_EX) < 0) {
                sim_err("app add: cannot lock the pod manifest: %m");
                return SIM_EXIT_ERROR;
        }
        m = sim_pod_manifest(&p);
        struct json_object *apps, *pvols, *v;
        if (!m || !json_object_object_get_ex(m, "apps", &apps)) {
                sim_err("app add: cannot read the pod manifest");
                return SIM_EXIT_ERROR;
        }
        if (sim_manifest_app(m, name)) {
                sim_err("app add: error: an app with name \"%s\" already exists", name);
                return SIM_EXIT_ERROR;
        }

        /* The RuntimeApp: the image's app, then the overrides. */
        ra = json_object_new_object();
        json_object_object_add(ra, "name", json_object_new_string(name));
        struct json_object *img = json_object_new_object(), *app = NULL;
        json_object_object_add(img, "name", json_object_new_string(iname ? iname : ""));
        json_object_object_add(img, "id", json_object_new_string(image_id));
        if (json_object_object_get_ex(im, "labels", &v))
                json_object_object_add(img, "labels", json_object_get(v));
        json_object_object_add(ra, "image", img);
        if (json_object_object_get_ex(im, "app", &v))
                json_object_deep_copy(v, &app, NULL);
        if (!app)
                app = json_object_new_object();
        json_object_object_add(ra, "app", app);
        struct json_object *execv = NULL;
        if (!json_object_object_get_ex(app, "exec", &execv) ||
            !json_object_is_type(execv, json_type_array)) {
                execv = json_object_new_array();
                json_object_object_add(app, "exec", execv);
        }
        if (exec) {
                execv = json_object_new_array();
                json_object_array_add(execv, json_object_new_string(exec));
                json_object_object_add(app, "exec", execv);
        }
        if (a.app_args) {
                /* stage0/app_add.go: Exec = append(Exec[:1], args...) */
                struct json_object *nv = json_object_new_array();
                if (json_object_array_length(execv) > 0)
                        json_object_array_add(nv,
                                              json_object_get(json_object_array_get_idx(execv, 0)));
                RKL_STRV_FOREACH (s, a.app_args)
                        json_object_array_add(nv, json_object_new_string(*s));
                json_object_object_add(app, "exec", nv);
                execv = nv;
        }
        if (json_object_array_length(execv) == 0) {
                sim_err("app add: image \"%s\" has no exec and none was given", a.pos[1]);
                return SIM_EXIT_ERROR;
        }
        if (wd)
                json_object_object_add(app, "workingDirectory", json_object_new_string(wd));
        if (user)
                json_object_object_add(app, "user", json_object_new_string(user));
        if (group)
                json_object_object_add(app, "group", json_object_new_string(group));
        if (!sim_json_str(app, "user"))
                json_object_object_add(app, "user", json_object_new_string("0"));
        if (!sim_json_str(app, "group"))
                json_object_object_add(app, "group", json_object_new_string("0"));
        if (sgids) {
                struct json_object *g = json_object_new_array();
                for (char *t = sgids; *t;) {
                        size_t l = strcspn(t, ",");
                        _cleanup_free_ char *one = rkl_xstrndup(t, l);
                        unsigned gid;
                        if (rkl_safe_atou(one, &gid) < 0) {
                                json_object_put(g);
                                sim_err("Error: invalid argument \"%s\" for "
                                        "\"--supplementary-gids\" flag",
                                        sgids);
                                return SIM_EXIT_ERROR;
                        }
                        json_object_array_add(g, json_object_new_int64(gid));
                        t += l;
                        if (*t)
                                t++;
                }
                json_object_object_add(app, "supplementaryGIDs", g);
        }
        struct json_object *envj = NULL;
        if (!json_object_object_get_ex(app, "environment", &envj) ||
            !json_object_is_type(envj, json_type_array)) {
                envj = json_object_new_array();
                json_object_object_add(app, "environment", envj);
        }
        RKL_STRV_FOREACH (e, env) {
                const char *eq = strchr(*e, '=');
                _cleanup_free_ char *k = eq ? rkl_xstrndup(*e, (size_t)(eq - *e)) : rkl_xstrdup(*e);
                kv_set(envj, k, eq ? eq + 1 : "");
        }
        struct json_object *iso = json_object_new_array();
        json_object_object_add(app, "isolators", iso);
        if (memory) {
                uint64_t b;
                if (sim_parse_bytes(memory, &b) < 0) {
                        sim_err("Error: invalid memory value \"%s\"", memory);
                        return SIM_EXIT_ERROR;
                }
                struct json_object *val = json_object_new_object();
                json_object_object_add(val, "request", json_object_new_string(memory));
                json_object_object_add(val, "limit", json_object_new_string(memory));
                add_isolator(iso, "resource/memory", val);
        }
        if (cpu) {
                uint64_t mc;
                if (sim_parse_millicores(cpu, &mc) < 0) {
                        sim_err("Error: invalid cpu value \"%s\"", cpu);
                        return SIM_EXIT_ERROR;
                }
                struct json_object *val = json_object_new_object();
                json_object_object_add(val, "request", json_object_new_string(cpu));
                json_object_object_add(val, "limit", json_object_new_string(cpu));
                add_isolator(iso, "resource/cpu", val);
        }
        if (cpu_shares) {
                uint64_t sh;
                if (rkl_safe_atou64(cpu_shares, &sh) < 0 || sh < 2 || sh > 262144) {
                        sim_err("Error: invalid cpu-shares value \"%s\"", cpu_shares);
                        return SIM_EXIT_ERROR;
                }
                add_isolator(iso, "os/linux/cpu-shares", json_object_new_int64((int64_t)sh));
        }
        if (oom) {
                int o;
                if (rkl_safe_atoi(oom, &o) < 0 || o < -1000 || o > 1000) {
                        sim_err("Error: invalid oom-score-adj value \"%s\"", oom);
                        return SIM_EXIT_ERROR;
                }
                add_isolator(iso, "os/linux/oom-score-adj", json_object_new_int(o));
        }
        if (caps_retain) {
                struct json_object *val = json_object_new_object();
                json_object_object_add(val, "set", strv_json(caps_retain));
                add_isolator(iso, "os/linux/capabilities-retain-set", val);
        }
        if (caps_remove) {
                struct json_object *val = json_object_new_object();
                json_object_object_add(val, "set", strv_json(caps_remove));
                add_isolator(iso, "os/linux/capabilities-remove-set", val);
        }
        if (seccomp) {
                /* mode=retain|remove,[errno=E,]syscalls|@groups */
                bool retain = strncmp(seccomp, "mode=retain,", 12) == 0;
                if (!retain && strncmp(seccomp, "mode=remove,", 12) != 0) {
                        sim_err("Error: invalid seccomp value \"%s\"", seccomp);
                        return SIM_EXIT_ERROR;
                }
                _cleanup_strv_free_ char **set = rkl_xnew0(char *, 1);
                struct json_object *val = json_object_new_object();
                for (char *t = seccomp + 12; *t;) {
                        size_t l = strcspn(t, ",");
                        _cleanup_free_ char *one = rkl_xstrndup(t, l);
                        if (strncmp(one, "errno=", 6) == 0)
                                json_object_object_add(val, "errno",
                                                       json_object_new_string(one + 6));
                        else
                                rkl_strv_push(&set, one);
                        t += l;
                        if (*t)
                                t++;
                }
                json_object_object_add(val, "set", strv_json(set));
                add_isolator(iso,
                             retain ? "os/linux/seccomp-retain-set" : "os/linux/seccomp-remove-set",
                             val);
        }
        struct json_object *ua = json_object_new_object(), *ul = json_object_new_object();
        RKL_STRV_FOREACH (e, uann) {
                const char *eq = strchr(*e, '=');
                _cleanup_free_ char *k = eq ? rkl_xstrndup(*e, (size_t)(eq - *e)) : rkl_xstrdup(*e);
                json_object_object_add(ua, k, json_object_new_string(eq ? eq + 1 : ""));
        }
        RKL_STRV_FOREACH (e, ulab) {
                const char *eq = strchr(*e, '=');
                _cleanup_free_ char *k = eq ? rkl_xstrndup(*e, (size_t)(eq - *e)) : rkl_xstrdup(*e);
                json_object_object_add(ul, k, json_object_new_string(eq ? eq + 1 : ""));
        }
        json_object_object_add(app, "userAnnotations", ua);
        json_object_object_add(app, "userLabels", ul);

        bool ro = false;
        if (ro_s && sim_parse_bool(ro_s, &ro) < 0) {
                sim_err("Error: invalid argument \"%s\" for \"--readonly-rootfs\" flag", ro_s);
                return SIM_EXIT_ERROR;
        }
        json_object_object_add(ra, "readOnlyRootFS", json_object_new_boolean(ro));
        struct json_object *rmounts = json_object_new_array(), *rann = json_object_new_array();
        json_object_object_add(ra, "mounts", rmounts);
        if (!json_object_object_get_ex(m, "volumes", &pvols) ||
            !json_object_is_type(pvols, json_type_array)) {
                pvols = json_object_new_array();
                json_object_object_add(m, "volumes", pvols);
        }
        RKL_STRV_FOREACH (vs, vols)
                if (parse_volume(*vs, pvols, rmounts) < 0) {
                        sim_err("Error: invalid argument \"%s\" for \"--mnt-volume\" flag", *vs);
                        return SIM_EXIT_ERROR;
                }
        RKL_STRV_FOREACH (e, ann) {
                const char *eq = strchr(*e, '=');
                if (!eq) {
                        sim_err("Error: invalid annotation \"%s\"", *e);
                        return SIM_EXIT_ERROR;
                }
                _cleanup_free_ char *k = rkl_xstrndup(*e, (size_t)(eq - *e));
                kv_set(rann, k, eq + 1);
        }
        const char *const streams[][2] = {{"stdin", in}, {"stdout", out}, {"stderr", err}};
        for (size_t i = 0; i < ELEMENTSOF(streams); i++)
                if (streams[i][1]) {
                        _cleanup_free_ char *k =
                            rkl_xasprintf("coreos.com/rkt/stage2/%s", streams[i][0]);
                        kv_set(rann, k, streams[i][1]);
                }
        json_object_object_add(ra, "annotations", rann);

        /* Render the app: its rootfs lives in overlay/<image tree>/upper/<app>, as the upper
         * dir of the real overlay; opt/stage2/<app>/rootfs points there. */
        tree = image_tree_id(image_id);
        _cleanup_free_ char *itree = sim_image_tree(c, image_id);
        _cleanup_free_ char *src = rkl_xasprintf("%s/rootfs", itree);
        _cleanup_free_ char *upper = rkl_xasprintf("%s/overlay/%s/upper/%s", p.path, tree, name);
        _cleanup_free_ char *work = rkl_xasprintf("%s/overlay/%s/work/%s", p.path, tree, name);
        _cleanup_free_ char *s2 = rkl_xasprintf("%s/stage1/rootfs/opt/stage2/%s", p.path, name);
        _cleanup_free_ char *s2root = rkl_xasprintf("%s/rootfs", s2);
        _cleanup_free_ char *s2target =
            rkl_xasprintf("../../../../../overlay/%s/upper/%s", tree, name);
        (void)rkl_rm_rf_at(AT_FDCWD, upper);
        if (sim_copy_tree(src, upper) < 0 || rkl_mkdir_p(work, 0755) < 0 ||
            rkl_mkdir_p(s2, 0755) < 0) {
                sim_err("app add: error rendering image \"%s\"", a.pos[1]);
                return SIM_EXIT_ERROR;
        }
        (void)unlink(s2root);
        if (symlink(s2target, s2root) < 0) {
                sim_err("app add: cannot link %s: %m", s2root);
                return SIM_EXIT_ERROR;
        }
        _cleanup_free_ char *ims = sim_json_go(im, false);
        _cleanup_free_ char *s2man = rkl_xasprintf("%s/manifest", s2);
        (void)sim_write_file(s2man, ims, 0644);
        _cleanup_free_ char *ai = rkl_xasprintf("%s/appsinfo/%s", p.path, name);
        (void)rkl_mkdir_p(ai, 0755);
        _cleanup_free_ char *aim = rkl_xasprintf("%s/manifest", ai);
        _cleanup_free_ char *ait = rkl_xasprintf("%s/treeStoreID", ai);
        (void)sim_write_file(aim, ims, 0644);
        (void)sim_write_file(ait, tree, 0644);
        sim_fault_step(c, "rendered");

        _cleanup_free_ char *upper_s1 = sim_pod_upper(&p);
        _cleanup_free_ char *envp = rkl_xasprintf("%s/rkt/env/%s", upper_s1, name);
        _cleanup_free_ char *created = sim_pod_status_path(&p, name, "-created");
        if (write_env_file(envp, envj, name) < 0 || sim_touch_new(created) < 0) {
                sim_err("app add: cannot write app files: %m");
                return SIM_EXIT_ERROR;
        }
        sim_fault_step(c, "created");
        json_object_array_add(apps, TAKE_PTR(ra));
        if (sim_pod_manifest_write(&p, m) < 0) {
                sim_err("app add: cannot write the pod manifest: %m");
                return SIM_EXIT_ERROR;
        }
        sim_image_touch(c, image_id);
        sim_profile_pad(c, 124);
        return 0;
}

/* Parses "UUID --app=NAME" for start/stop/rm/status. */
static bool app_cmd_args(sim_ctx *c, char **argv, const char *cmd, sim_flag *extra, size_t nextra,
                         char **ret_app, sim_pod *ret_pod)
{
        _cleanup_free_ char *app = NULL;
        _cleanup_free_ sim_flag *flags = rkl_xnew0(sim_flag, nextra + 1);
        flags[0] = (sim_flag){"app", SIM_FLAG_STRING, &app};
        for (size_t i = 0; i < nextra; i++)
                flags[i + 1] = extra[i];
        _cleanup_args_ sim_args a = {0};
        if (sim_cmd_parse(c, argv, flags, nextra + 1, 0, false, &a) < 0)
                return false;
        if (rkl_strv_length(a.pos) != 1 || isempty(app)) {
                sim_err("Error: %s: must provide the pod UUID and --app=NAME", cmd);
                return false;
        }
        if (!get_pod(c, cmd, a.pos[0], ret_pod))
                return false;
        *ret_app = TAKE_PTR(app);
        return true;
}

static bool app_exists(const sim_pod *p, const char *app)
{
        struct json_object *m = sim_pod_manifest(p);
        bool r = sim_manifest_app(m, app) != NULL;
        json_object_put(m);
        return r;
}

int sim_cmd_app_start(sim_ctx *c, char **argv)
{
        _cleanup_free_ char *app = NULL, *reply = NULL;
        _cleanup_pod_ sim_pod p = {0};
        if (!app_cmd_args(c, argv, "app start", NULL, 0, &app, &p))
                return SIM_EXIT_ERROR;
        if (!need_running("app start", &p))
                return SIM_EXIT_ERROR;
        if (!app_exists(&p, app)) {
                sim_err("app start: error: nonexistent app \"%s\"", app);
                return SIM_EXIT_ERROR;
        }
        /* stage0: an exited app restarts: -started and the exit file go first. */
        _cleanup_free_ char *started = sim_pod_status_path(&p, app, "-started");
        _cleanup_free_ char *exitp = sim_pod_status_path(&p, app, NULL);
        (void)unlink(started);
        (void)unlink(exitp);
        if (sim_touch_new(started) < 0) {
                sim_err("app start: cannot create %s: %m", started);
                return SIM_EXIT_ERROR;
        }
        sim_fault_step(c, "started-file");
        _cleanup_free_ char *req = rkl_xasprintf("start %s", app);
        int r = sim_supervisor_call(p.uuid, req, &reply);
        if (r < 0 || strncmp(reply, "ok", 2) != 0) {
                sim_err("app start: error starting app \"%s\": %s", app,
                        r < 0 ? strerror(-r) : reply + strcspn(reply, " "));
                return SIM_EXIT_ERROR;
        }
        sim_profile_pad(c, 120);
        return 0;
}

int sim_cmd_app_stop(sim_ctx *c, char **argv)
{
        _cleanup_free_ char *app = NULL, *reply = NULL;
        _cleanup_pod_ sim_pod p = {0};
        if (!app_cmd_args(c, argv, "app stop", NULL, 0, &app, &p))
                return SIM_EXIT_ERROR;
        if (sim_pod_after_run(&p)) {
                sim_out("pod \"%s\" is already stopped", p.uuid);
                return 0;
        }
        if (p.state != SIM_POD_RUNNING) {
                sim_err("app stop: pod \"%s\" isn't currently running", p.uuid);
                return SIM_EXIT_ERROR;
        }
        if (!app_exists(&p, app)) {
                sim_err("app stop: error: nonexistent app \"%s\"", app);
                return SIM_EXIT_ERROR;
        }
        _cleanup_free_ char *req = rkl_xasprintf("stop %s", app);
        int r = sim_supervisor_call(p.uuid, req, &reply);
        if (r < 0 || strncmp(reply, "ok", 2) != 0) {
                sim_err("app stop: error stopping app \"%s\": %s", app,
                        r < 0 ? strerror(-r) : reply + strcspn(reply, " "));
                return SIM_EXIT_ERROR;
        }
        sim_profile_pad(c, 121);
        return 0;
}

int sim_cmd_app_rm(sim_ctx *c, char **argv)
{
        _cleanup_free_ char *app = NULL, *reply = NULL;
        _cleanup_pod_ sim_pod p = {0};
        _cleanup_json_ struct json_object *m = NULL;
        if (!app_cmd_args(c, argv, "app rm", NULL, 0, &app, &p))
                return SIM_EXIT_ERROR;
        _cleanup_free_ char *lckp = rkl_xasprintf("%s/pod.lck", p.path);
        _cleanup_close_ int lck = open(lckp, O_RDONLY | O_CLOEXEC);
        if (lck >= 0)
                (void)flock(lck, LOCK_EX);
        m = sim_pod_manifest(&p);
        struct json_object *ra = sim_manifest_app(m, app), *apps, *img;
        if (!ra) {
                sim_err("app rm: error: nonexistent app \"%s\"", app);
                return SIM_EXIT_ERROR;
        }
        bool was_running = false;
        if (p.state == SIM_POD_RUNNING) {
                _cleanup_free_ char *exitp = sim_pod_status_path(&p, app, NULL);
                _cleanup_free_ char *sp = sim_pod_status_path(&p, app, "-started");
                was_running = sim_exists(sp) && !sim_exists(exitp);
                _cleanup_free_ char *req = rkl_xasprintf("rm %s", app);
                int r = sim_supervisor_call(p.uuid, req, &reply);
                if (r < 0 || strncmp(reply, "ok", 2) != 0) {
                        sim_err("app rm: error stopping app \"%s\": %s", app,
                                r < 0 ? strerror(-r) : reply + strcspn(reply, " "));
                        return SIM_EXIT_ERROR;
                }
        }
        sim_fault_step(c, "stopped");
        /* stage0/app_rm.go: status file, env, stage2 dir, appsinfo and the app's own layers
         * under overlay/<image tree> go (packaging/rkt/app-rm-shared-image.patch: unpatched
         * rkt takes the whole tree, other apps' layers with it); -created and -started stay
         * (docs/rkt.md, 'The pod directory'). */
        json_object_object_get_ex(ra, "image", &img);
        _cleanup_free_ char *tree = image_tree_id(sim_json_str(img, "id") ?: "");
        _cleanup_free_ char *exitp = sim_pod_status_path(&p, app, NULL);
        _cleanup_free_ char *up = sim_pod_upper(&p);
        _cleanup_free_ char *envp = rkl_xasprintf("%s/rkt/env/%s", up, app);
        _cleanup_free_ char *s2 = rkl_xasprintf("%s/stage1/rootfs/opt/stage2/%s", p.path, app);
        _cleanup_free_ char *ai = rkl_xasprintf("%s/appsinfo/%s", p.path, app);
        _cleanup_free_ char *ov_up = rkl_xasprintf("%s/overlay/%s/upper/%s", p.path, tree, app);
        _cleanup_free_ char *ov_work = rkl_xasprintf("%s/overlay/%s/work/%s", p.path, tree, app);
        (void)unlink(exitp);
        (void)unlink(envp);
        (void)rkl_rm_rf_at(AT_FDCWD, s2);
        (void)rkl_rm_rf_at(AT_FDCWD, ai);
        (void)rkl_rm_rf_at(AT_FDCWD, ov_up);
        (void)rkl_rm_rf_at(AT_FDCWD, ov_work);
        json_object_object_get_ex(m, "apps", &apps);
        for (size_t i = 0; i < json_object_array_length(apps); i++)
                if (json_object_array_get_idx(apps, i) == ra) {
                        json_object_array_del_idx(apps, i, 1);
                        break;
                }
        if (sim_pod_manifest_write(&p, m) < 0) {
                sim_err("app rm: cannot write the pod manifest: %m");
                return SIM_EXIT_ERROR;
        }
        sim_profile_pad(c, was_running ? 126 : 158);
        return 0;
}

int sim_cmd_app_status(sim_ctx *c, char **argv)
{
        _cleanup_free_ char *app = NULL, *format = NULL;
        _cleanup_pod_ sim_pod p = {0};
        sim_flag extra[] = {{"format", SIM_FLAG_STRING, &format}};
        if (!app_cmd_args(c, argv, "app status", extra, ELEMENTSOF(extra), &app, &p))
                return SIM_EXIT_ERROR;
        _cleanup_json_ struct json_object *m = sim_pod_manifest(&p);
        struct json_object *ra = sim_manifest_app(m, app);
        if (!ra) {
                sim_err("app status: cannot find app \"%s\" in the pod", app);
                return SIM_EXIT_ERROR;
        }
        struct json_object *o = sim_app_json(&p, ra, true), *v;
        if (format && (streq(format, "json") || streq(format, "json-pretty"))) {
                _cleanup_free_ char *s = sim_json_go(o, streq(format, "json-pretty"));
                sim_out("%s", s);
        } else {
                sim_out("name=%s", sim_json_str(o, "name"));
                sim_out("state=%s", sim_json_str(o, "state"));
                sim_out("image_id=%s", sim_json_str(o, "image_id"));
                static const char *const times[] = {"created_at", "started_at", "finished_at"};
                for (size_t i = 0; i < ELEMENTSOF(times); i++)
                        if (json_object_object_get_ex(o, times[i], &v)) {
                                _cleanup_free_ char *t =
                                    sim_format_time_go(json_object_get_int64(v));
                                sim_out("%s=%s", times[i], t);
                        }
                if (json_object_object_get_ex(o, "exit_code", &v))
                        sim_out("exit_code=%d", json_object_get_int(v));
        }
        json_object_put(o);
        sim_profile_pad(c, 45);
        return 0;
}

int sim_cmd_app_list(sim_ctx *c, char **argv)
{
        bool no_legend = false;
        sim_flag flags[] = {{"no-legend", SIM_FLAG_BOOL, &no_legend}};
        _cleanup_args_ sim_args a = {0};
        if (sim_cmd_parse(c, argv, flags, ELEMENTSOF(flags), 0, false, &a) < 0)
                return SIM_EXIT_ERROR;
        _cleanup_pod_ sim_pod p = {0};
        if (rkl_strv_length(a.pos) != 1) {
                sim_err("Error: app list: must provide the pod UUID");
                return SIM_EXIT_ERROR;
        }
        if (!get_pod(c, "app list", a.pos[0], &p))
                return SIM_EXIT_ERROR;
        _cleanup_json_ struct json_object *m = sim_pod_manifest(&p);
        struct json_object *apps;
        if (!no_legend)
                sim_out("NAME\tSTATE");
        if (m && json_object_object_get_ex(m, "apps", &apps))
                for (size_t i = 0; i < json_object_array_length(apps); i++) {
                        struct json_object *o =
                            sim_app_json(&p, json_object_array_get_idx(apps, i), true);
                        sim_out("%s\t%s", sim_json_str(o, "name"), sim_json_str(o, "state"));
                        json_object_put(o);
                }
        sim_profile_pad(c, 45);
        return 0;
}

/* ---- entering an app: shared by `enter`/`app exec` and the app processes ---- */

static char **read_env(const char *pod, const char *app)
{
        _cleanup_free_ char *p = rkl_xasprintf("%s/stage1/rootfs/rkt/env/%s", pod, app), *s = NULL;
        char **l = rkl_xnew0(char *, 1);
        if (sim_read_file(p, &s) < 0)
                return l;
        for (char *t = s; *t;) {
                size_t n = strcspn(t, "\n");
                if (n > 0)
                        rkl_strv_consume(&l, rkl_xstrndup(t, n));
                t += n;
                if (*t)
                        t++;
        }
        return l;
}

static const char *env_get(char **env, const char *name)
{
        size_t l = strlen(name);
        RKL_STRV_FOREACH (e, env)
                if (strncmp(*e, name, l) == 0 && (*e)[l] == '=')
                        return *e + l + 1;
        return NULL;
}

/* Looks name up in a passwd/group style file of the app's rootfs: field 3 is the id. */
static int lookup_id(const char *root, const char *file, const char *name, unsigned *ret,
                     unsigned *ret_gid)
{
        if (rkl_safe_atou(name, ret) == 0)
                return 0;
        _cleanup_free_ char *p = rkl_xasprintf("%s/etc/%s", root, file), *s = NULL;
        if (sim_read_file(p, &s) < 0)
                return -ENOENT;
        size_t nl = strlen(name);
        for (char *t = s; *t;) {
                size_t n = strcspn(t, "\n");
                if (strncmp(t, name, nl) == 0 && t[nl] == ':') {
                        _cleanup_free_ char *line = rkl_xstrndup(t, n);
                        char *f = line;
                        for (int i = 0; i < 2 && f; i++)
                                f = strchr(f, ':') ? strchr(f, ':') + 1 : NULL;
                        if (!f)
                                return -EBADMSG;
                        char *e = strchr(f, ':');
                        if (e)
                                *e = 0;
                        if (rkl_safe_atou(f, ret) < 0)
                                return -EBADMSG;
                        if (ret_gid && e) {
                                char *g = e + 1, *ge = strchr(g, ':');
                                if (ge)
                                        *ge = 0;
                                (void)rkl_safe_atou(g, ret_gid);
                        }
                        return 0;
                }
                t += n;
                if (*t)
                        t++;
        }
        return -ENOENT;
}

/* What nspawn gives every pod: device nodes, a devpts of its own (/dev/ptmx a link to its
 * ptmx, as in rkt's stage1; here one an app rather than one a pod) and a proc. Devices and
 * proc bound from the host, since the simulator has no pid namespace of its own. */
static void mount_basics(const char *root)
{
        static const char *const devs[] = {"null", "zero", "full", "random", "urandom", "tty"};
        _cleanup_free_ char *dev = rkl_xasprintf("%s/dev", root);
        _cleanup_free_ char *pts = rkl_xasprintf("%s/dev/pts", root);
        _cleanup_free_ char *ptmx = rkl_xasprintf("%s/dev/ptmx", root);
        _cleanup_free_ char *proc = rkl_xasprintf("%s/proc", root);
        (void)mkdir(dev, 0755);
        (void)mkdir(pts, 0755);
        (void)mount("devpts", pts, "devpts", MS_NOSUID | MS_NOEXEC,
                    "newinstance,ptmxmode=0666,mode=620,gid=5");
        (void)symlink("/dev/pts/ptmx", ptmx);
        for (size_t i = 0; i < ELEMENTSOF(devs); i++) {
                _cleanup_free_ char *src = rkl_xasprintf("/dev/%s", devs[i]);
                _cleanup_free_ char *dst = rkl_xasprintf("%s/%s", dev, devs[i]);
                int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
                if (fd >= 0)
                        safe_close(fd);
                (void)mount(src, dst, NULL, MS_BIND, NULL);
        }
        (void)mkdir(proc, 0555);
        (void)mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
}

/* Mount namespace with /dev, /proc, the app's volumes (and a read-only root), then chroot.
 * Exits with systemd's codes on failure, like the app's unit would. */
static void enter_root(const char *root, struct json_object *mounts, bool readonly)
{
        size_t n = mounts ? json_object_array_length(mounts) : 0;
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount(root, root, NULL, MS_BIND | MS_REC, NULL) < 0) {
                sim_err("rkt-sim: cannot set up the app's mount namespace: %m");
                _exit(226); /* EXIT_NAMESPACE */
        }
        mount_basics(root);
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(mounts, i), *ro;
                const char *src = sim_json_str(e, "source"), *dst = sim_json_str(e, "target");
                _cleanup_free_ char *t = rkl_xasprintf("%s%s", root, dst ? dst : "/");
                (void)rkl_mkdir_p(t, 0755);
                if (!src || mount(src, t, NULL, MS_BIND | MS_REC, NULL) < 0) {
                        sim_err("rkt-sim: cannot mount volume %s on %s: %m", src ? src : "?", t);
                        _exit(226);
                }
                if (json_object_object_get_ex(e, "readonly", &ro) && json_object_get_boolean(ro))
                        (void)mount(NULL, t, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL);
        }
        if (readonly)
                (void)mount(NULL, root, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL);
        if (chroot(root) < 0) {
                sim_err("rkt-sim: cannot chroot to %s: %m", root);
                _exit(226);
        }
}

/* execve with a PATH search in the app's environment. Returns only on failure. */
static void exec_in_root(char **argv, char **env)
{
        if (strchr(argv[0], '/')) {
                execve(argv[0], argv, env);
                return;
        }
        const char *path = env_get(env, "PATH");
        _cleanup_free_ char *ps = rkl_xstrdup(path ? path : DEFAULT_PATH);
        int saved = ENOENT;
        for (char *d = ps; d && *d;) {
                char *colon = strchr(d, ':');
                if (colon)
                        *colon = 0;
                _cleanup_free_ char *full = rkl_xasprintf("%s/%s", *d ? d : ".", argv[0]);
                execve(full, argv, env);
                if (errno != ENOENT)
                        saved = errno;
                d = colon ? colon + 1 : NULL;
        }
        errno = saved;
}

int sim_cmd_stage2(int argc, char **argv)
{
        if (argc != 3)
                return SIM_EXIT_ERROR;
        struct json_object *spec = json_tokener_parse(argv[2]), *v;
        if (!spec)
                return SIM_EXIT_ERROR;
        const char *app = sim_json_str(spec, "app"), *pod = sim_json_str(spec, "pod");
        if (!app || !pod)
                return SIM_EXIT_ERROR;

        /* Into the app's cgroups first, so everything below is accounted to the app. */
        char pidbuf[32];
        snprintf(pidbuf, sizeof(pidbuf), "%d", (int)getpid());
        if (json_object_object_get_ex(spec, "cgroups", &v))
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        _cleanup_free_ char *p =
                            rkl_xasprintf("%s/cgroup.procs",
                                          json_object_get_string(json_object_array_get_idx(v, i)));
                        (void)sim_write_file(p, pidbuf, 0644);
                }
        if (json_object_object_get_ex(spec, "oom", &v)) {
                char b[16];
                snprintf(b, sizeof(b), "%d", json_object_get_int(v));
                (void)sim_write_file("/proc/self/oom_score_adj", b, 0644);
        }
        struct json_object *fault;
        if (json_object_object_get_ex(spec, "fault", &fault)) {
                struct json_object *sig = NULL, *code = NULL, *after = NULL;
                json_object_object_get_ex(fault, "signal", &sig);
                json_object_object_get_ex(fault, "code", &code);
                json_object_object_get_ex(fault, "after_ms", &after);
                int n = json_object_get_int(code);
                sim_sleep_ms((uint64_t)json_object_get_int64(after));
                if (json_object_get_boolean(sig)) {
                        signal(n, SIG_DFL);
                        (void)raise(n);
                        sim_sleep_ms(100);
                }
                _exit(n);
        }

        _cleanup_free_ char *root =
            rkl_xasprintf("%s/stage1/rootfs/opt/stage2/%s/rootfs", pod, app);
        _cleanup_strv_free_ char **env = read_env(pod, app);
        const char *user = sim_json_str(spec, "user"), *group = sim_json_str(spec, "group");
        unsigned uid = 0, gid = 0, pgid = 0;
        bool have_pgid = false;
        if (lookup_id(root, "passwd", user ? user : "0", &uid, &pgid) < 0) {
                sim_err("rkt-sim: app %s: unknown user \"%s\"", app, user);
                _exit(217); /* EXIT_USER */
        }
        have_pgid = rkl_safe_atou(user ? user : "0", &uid) < 0;
        if (lookup_id(root, "group", group ? group : "0", &gid, NULL) < 0) {
                if (!(have_pgid && streq_ptr(user, group))) {
                        sim_err("rkt-sim: app %s: unknown group \"%s\"", app, group);
                        _exit(216); /* EXIT_GROUP */
                }
                gid = pgid;
        }
        gid_t groups[64];
        size_t ngroups = 0;
        if (json_object_object_get_ex(spec, "groups", &v))
                for (size_t i = 0; i < json_object_array_length(v) && ngroups < ELEMENTSOF(groups);
                     i++)
                        groups[ngroups++] =
                            (gid_t)json_object_get_int64(json_object_array_get_idx(v, i));
        /* The pod's network namespace, while its path (in /proc) is still reachable. */
        const char *netns = sim_json_str(spec, "netns");
        if (netns && sim_podnet_join(netns) < 0) {
                sim_err("rkt-sim: app %s: cannot join the pod's network namespace %s: %m", app,
                        netns);
                _exit(226); /* EXIT_NAMESPACE */
        }
        struct json_object *mounts = NULL, *ro = NULL;
        json_object_object_get_ex(spec, "mounts", &mounts);
        json_object_object_get_ex(spec, "readonly", &ro);
        enter_root(root, mounts, ro && json_object_get_boolean(ro));
        const char *cwd = sim_json_str(spec, "cwd");
        if (chdir(cwd ? cwd : "/") < 0) {
                sim_err("rkt-sim: app %s: cannot chdir to %s: %m", app, cwd);
                _exit(200); /* EXIT_CHDIR */
        }
        if (setgroups(ngroups, groups) < 0 || setgid(gid) < 0) {
                sim_err("rkt-sim: app %s: cannot set groups: %m", app);
                _exit(216);
        }
        if (setuid(uid) < 0) {
                sim_err("rkt-sim: app %s: cannot set user: %m", app);
                _exit(217);
        }
        _cleanup_strv_free_ char **execv = rkl_xnew0(char *, 1);
        if (json_object_object_get_ex(spec, "exec", &v))
                for (size_t i = 0; i < json_object_array_length(v); i++)
                        rkl_strv_push(&execv,
                                      json_object_get_string(json_object_array_get_idx(v, i)));
        if (rkl_strv_length(execv) == 0)
                _exit(203);
        exec_in_root(execv, env);
        sim_err("rkt-sim: app %s: failed to execute %s: %m", app, execv[0]);
        _exit(203); /* EXIT_EXEC, what systemd records for an exec failure */
}

int sim_cmd_enter(sim_ctx *c, char **argv)
{
        _cleanup_free_ char *app = NULL;
        sim_flag flags[] = {{"app", SIM_FLAG_STRING, &app}};
        _cleanup_args_ sim_args a = {0};
        /* Flags stop at the UUID: the command's own flags are its business. */
        if (sim_cmd_parse(c, argv, flags, ELEMENTSOF(flags), 1, false, &a) < 0)
                return SIM_EXIT_ERROR;
        _cleanup_pod_ sim_pod p = {0};
        _cleanup_json_ struct json_object *m = NULL;
        const char *cmd = streq(c->command, "enter") ? "enter" : "app exec";
        if (rkl_strv_length(a.pos) < 1) {
                sim_err("Error: %s: must provide the pod UUID", cmd);
                return SIM_EXIT_ERROR;
        }
        if (!get_pod(c, cmd, a.pos[0], &p))
                return SIM_EXIT_ERROR;
        if (p.state != SIM_POD_RUNNING) {
                sim_err("%s: pod \"%s\" isn't currently running", cmd, p.uuid);
                return SIM_EXIT_ERROR;
        }
        m = sim_pod_manifest(&p);
        struct json_object *apps = NULL, *ra = NULL;
        json_object_object_get_ex(m, "apps", &apps);
        size_t napps = apps ? json_object_array_length(apps) : 0;
        if (!app) {
                if (napps == 0) {
                        sim_err("%s: unable to determine app name: pod contains zero apps", cmd);
                        return SIM_EXIT_ERROR;
                }
                if (napps > 1) {
                        sim_err("%s: pod contains multiple apps:", cmd);
                        for (size_t i = 0; i < napps; i++)
                                sim_err("\t%s",
                                        sim_json_str(json_object_array_get_idx(apps, i), "name"));
                        sim_err("%s: unable to determine app name: specify app using \"rkt enter "
                                "--app= ...\"",
                                cmd);
                        return SIM_EXIT_ERROR;
                }
                ra = json_object_array_get_idx(apps, 0);
                app = rkl_xstrdup(sim_json_str(ra, "name"));
        } else if (!(ra = sim_manifest_app(m, app))) {
                sim_err("%s: error: nonexistent app \"%s\"", cmd, app);
                return SIM_EXIT_ERROR;
        }
        _cleanup_strv_free_ char **execv = rkl_strv_copy(a.pos + 1);
        if (rkl_strv_length(execv) == 0)
                rkl_strv_push(&execv, "/bin/bash");
        _cleanup_strv_free_ char **env = read_env(p.path, app);
        _cleanup_free_ char *root =
            rkl_xasprintf("%s/stage1/rootfs/opt/stage2/%s/rootfs", p.path, app);
        /* The app's volumes, so that the command sees what the app sees. */
        struct json_object *mounts = sim_app_mounts(&p, m, ra);
        struct stat st;
        if (stat(root, &st) < 0) {
                sim_err("%s: cannot enter app \"%s\": its rootfs is gone: %m", cmd, app);
                json_object_put(mounts);
                return SIM_EXIT_ERROR;
        }
        /* The pod's network namespace, as nsenter into stage1 gives it. Without $RKT_SIM_NETNS
         * the netns file names a namespace that does not exist: the command stays here. */
        _cleanup_free_ char *nsf = rkl_xasprintf("%s/netns", p.path), *ns = NULL;
        if (sim_read_file(nsf, &ns) == 0 && strncmp(ns, "/proc/", 6) == 0 &&
            sim_podnet_join(ns) < 0) {
                sim_err("%s: cannot join the pod's network namespace %s: %m", cmd, ns);
                json_object_put(mounts);
                return SIM_EXIT_ERROR;
        }
        sim_profile_pad(c, streq(cmd, "enter") ? 52 : 55);
        fflush(NULL);
        /* rkt's enter runs as root in "/", with the app's environment; we become the command
         * so that its exit status (or signal) is ours. */
        enter_root(root, mounts, false);
        if (chdir("/") < 0)
                _exit(SIM_EXIT_ERROR);
        exec_in_root(execv, env);
        sim_err("%s: failed to execute \"%s\": %m", cmd, execv[0]);
        _exit(SIM_EXIT_ERROR);
}
