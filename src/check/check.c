/* `rktlet check` (check.h): the checks of a node, each a result with its advice. */
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/config.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "cni/cni.h"
#include "rkt/build.h"
#include "rkt/image.h"
#include "rkt/rkt.h"
#include "base/banned.h"

#define DEFAULT_TIMEOUT_USEC (10 * USEC_PER_SEC)
/* Free space of the state's filesystem: below this pods cannot be counted on to start (an
 * image, a pod's writable layers and logs), below the next images soon fill it. */
#define FREE_FAIL_BYTES (1ull << 30)
#define FREE_WARN_BYTES (5ull << 30)
/* Where the rktlet-rkt package installs rkt: what the advice points at. */
#define PACKAGED_RKT "/usr/lib/rktlet/rkt/bin/rkt"

void rkl_check_result_done(rkl_check_result *r)
{
        free(r->text);
        *r = (rkl_check_result){0};
}

static void set(rkl_check_result *ret, const char *name, rkl_check_level level, const char *fmt,
                ...) _printf_(4, 5);
static void set(rkl_check_result *ret, const char *name, rkl_check_level level, const char *fmt,
                ...)
{
        va_list ap;
        char *text = NULL;
        va_start(ap, fmt);
        if (vasprintf(&text, fmt, ap) < 0)
                rkl_oom();
        va_end(ap);
        *ret = (rkl_check_result){.level = level, .name = name, .text = text};
}

static uint64_t timeout_of(const rkl_check_config *c)
{
        return c->timeout_usec ? c->timeout_usec : DEFAULT_TIMEOUT_USEC;
}

static bool exists(const char *path)
{
        return access(path, F_OK) == 0;
}

/* "1.5 GiB" */
static char *human(uint64_t bytes)
{
        static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
        double v = (double)bytes;
        size_t u = 0;
        while (v >= 1024 && u + 1 < ELEMENTSOF(units)) {
                v /= 1024;
                u++;
        }
        return u == 0 ? rkl_xasprintf("%" PRIu64 " B", bytes)
                      : rkl_xasprintf("%.1f %s", v, units[u]);
}

/* ---- rkt ---- */

/* The stage1 rkt would run: the one its store holds under the record's name, else the file
 * the record names. Its image store is read only when it exists: a check makes nothing. */
static int check_stage1(const rkl_check_config *c, rkl_rkt *rkt, const rkl_rkt_build *b,
                        char **ret_where, rkl_error *reterr)
{
        _cleanup_free_ char *db = rkl_xasprintf("%s/cas/db", c->config->rkt_data_dir);
        rkl_rkt_image *l = NULL;
        size_t n = 0;
        int r = 0;

        if (exists(db)) {
                rkl_error e = RKL_ERROR_INIT;
                r = rkl_rkt_image_list(rkt, timeout_of(c), &l, &n, &e);
                if (r < 0)
                        return rkl_error_set(reterr, r, "cannot list rkt's images in '%s': %s",
                                             c->config->rkt_data_dir, e.msg);
                bool found = false;
                for (size_t i = 0; i < n && r >= 0; i++) {
                        r = rkl_rkt_build_check_stage1(b, l[i].name, l[i].id, reterr);
                        found = found || streq_ptr(l[i].name, b->stage1_name);
                }
                rkl_rkt_images_free(l, n);
                if (r < 0)
                        return r;
                if (found) {
                        *ret_where = rkl_xstrdup("in rkt's store");
                        return 0;
                }
        }
        if (access(b->stage1_path, R_OK) < 0)
                return rkl_error_set(reterr, -ENOENT,
                                     "stage1 '%s' is not in rkt's store and its file '%s' is "
                                     "missing: pods cannot start; install rktlet-rkt again, or "
                                     "build rkt with scripts/build-rkt",
                                     b->stage1_name, b->stage1_path);
        *ret_where = rkl_xasprintf("from '%s'", b->stage1_path);
        return 0;
}

void rkl_check_rkt(const rkl_check_config *c, rkl_check_result *ret)
{
        static const char name[] = "rkt";
        _cleanup_(rkl_rkt_freep) rkl_rkt *rkt = NULL;
        _cleanup_free_ char *where = NULL, *summary = NULL;
        rkl_rkt_version v = {0};
        rkl_rkt_build b = {0};
        rkl_error e = RKL_ERROR_INIT;

        if (!c->config->rkt_path) {
                set(ret, name, RKL_CHECK_FAIL,
                    "no rkt: rkt-path is not set and there is none in PATH; install the "
                    "rktlet-rkt package (" PACKAGED_RKT ") and set rkt-path to it");
                return;
        }
        if (access(c->config->rkt_path, X_OK) < 0) {
                set(ret, name, RKL_CHECK_FAIL,
                    "'%s' (rkt-path): %s; install the rktlet-rkt package (" PACKAGED_RKT
                    ") or set rkt-path to a built rkt",
                    c->config->rkt_path, strerror(errno));
                return;
        }
        rkl_rkt_config rc = {.rkt_path = c->config->rkt_path, .data_dir = c->config->rkt_data_dir};
        if (rkl_rkt_new(&rc, &rkt, &e) < 0 || rkl_rkt_version_get(rkt, &v, &e) < 0) {
                set(ret, name, RKL_CHECK_FAIL, "'%s' does not run: %s", c->config->rkt_path, e.msg);
                return;
        }
        if (rkl_rkt_build_verify(c->config->rkt_path, v.version, rkl_rkt_patches_wanted,
                                 rkl_rkt_n_patches_wanted, NULL, &b, &e) < 0) {
                set(ret, name, RKL_CHECK_FAIL, "%s", e.msg);
                goto out;
        }
        summary = rkl_rkt_build_summary(&b);
        if (c->config->stage1_name && !streq_ptr(c->config->stage1_name, b.stage1_name))
                set(ret, name, RKL_CHECK_WARN,
                    "'%s' %s with %s; pods run stage1 '%s' (stage1-name), which its build "
                    "record does not describe: not checked; leave stage1-name unset to run the "
                    "patched one",
                    c->config->rkt_path, v.version, summary, c->config->stage1_name);
        else if (!b.stage1_name)
                set(ret, name, RKL_CHECK_OK, "'%s' %s with %s (no stage1 recorded)",
                    c->config->rkt_path, v.version, summary);
        else if (check_stage1(c, rkt, &b, &where, &e) < 0)
                set(ret, name, RKL_CHECK_FAIL, "'%s' %s with %s, but %s", c->config->rkt_path,
                    v.version, summary, e.msg);
        else
                set(ret, name, RKL_CHECK_OK, "'%s' %s with %s; stage1 %s %.19s... %s",
                    c->config->rkt_path, v.version, summary, b.stage1_name, b.stage1_id, where);
out:
        rkl_rkt_build_done(&b);
        rkl_rkt_version_done(&v);
}

/* ---- systemd ---- */

static bool bus_name_available(sd_bus *bus, const char *wanted)
{
        static const char *const methods[] = {"ListNames", "ListActivatableNames"};
        for (size_t i = 0; i < ELEMENTSOF(methods); i++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                _cleanup_strv_free_ char **names = NULL;
                if (sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", methods[i], NULL, &reply, "") < 0 ||
                    sd_bus_message_read_strv(reply, &names) < 0)
                        continue;
                if (rkl_strv_contains(names, wanted))
                        return true;
        }
        return false;
}

void rkl_check_systemd(const rkl_check_config *c, rkl_check_result *ret)
{
        static const char name[] = "systemd";
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *version = NULL;
        const char *where = c->config->systemd_bus ? c->config->systemd_bus : "the system bus";
        int r;

        if (!c->config->systemd_bus)
                r = sd_bus_open_system(&bus);
        else if ((r = sd_bus_new(&bus)) >= 0 &&
                 (r = sd_bus_set_address(bus, c->config->systemd_bus)) >= 0)
                r = sd_bus_start(bus);
        if (r >= 0)
                r = sd_bus_set_method_call_timeout(bus, timeout_of(c));
        if (r >= 0)
                r = sd_bus_get_property_string(
                    bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                    "org.freedesktop.systemd1.Manager", "Version", &e, &version);
        if (r < 0) {
                set(ret, name, RKL_CHECK_FAIL,
                    "systemd is not reachable on %s: %s; rkt's pods are systemd units: run "
                    "rktlet on a machine whose PID 1 is systemd, or set systemd-bus",
                    where, sd_bus_error_is_set(&e) && e.message ? e.message : strerror(-r));
                return;
        }
        int bus_client = sd_bus_is_bus_client(bus);
        /* rkt's nspawn registers each pod with machined: a missing one fails every pod. */
        if (bus_client > 0 && !bus_name_available(bus, "org.freedesktop.machine1")) {
                set(ret, name, RKL_CHECK_FAIL,
                    "systemd %s on %s, but no systemd-machined, with which every pod registers; "
                    "install systemd-container",
                    version, where);
                return;
        }
        set(ret, name, RKL_CHECK_OK, "systemd %s on %s%s", version, where,
            bus_client > 0 ? ", with systemd-machined"
                           : " (a direct connection: machined not checked)");
}

/* ---- cgroups ---- */

typedef struct controller {
        const char *name;
        bool needed; /* FAIL without it, else WARN */
        const char *why;
} controller;

static const controller controllers[] = {
    {"cpu", true, "CPU limits"},        {"memory", true, "memory limits, stats and OOM kills"},
    {"cpuset", false, "cpuset limits"}, {"pids", false, "pod stats"},
    {"cpuacct", false, "CPU stats"}, /* v1 only: v2's cpu controller has them */
};

void rkl_check_cgroups(const rkl_check_config *c, rkl_check_result *ret)
{
        static const char name[] = "cgroups";
        _cleanup_free_ char *root_controllers = rkl_xasprintf("%s/cgroup.controllers", c->cgroup);
        _cleanup_free_ char *unified = rkl_xasprintf("%s/unified/cgroup.controllers", c->cgroup);
        _cleanup_free_ char *systemd = rkl_xasprintf("%s/systemd/cgroup.procs", c->cgroup);
        _cleanup_strv_free_ char **have = NULL, **missing = NULL;
        const char *version;
        rkl_check_level level = RKL_CHECK_OK;
        bool v2 = exists(root_controllers);

        if (v2) {
                _cleanup_free_ char *text = NULL;
                version = "v2 (unified)";
                if (rkl_read_file_at(AT_FDCWD, root_controllers, 4096, &text, NULL) < 0)
                        text = rkl_xstrdup("");
                char *save = NULL;
                for (char *w = strtok_r(text, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
                        rkl_strv_push(&have, w);
        } else {
                version = exists(unified) ? "v1 with cgroup2 beside it (hybrid)" : "v1";
                if (!exists(systemd)) {
                        set(ret, name, RKL_CHECK_FAIL,
                            "cgroup %s without systemd's hierarchy (%s/systemd): systemd cannot "
                            "run pods; boot the machine with systemd",
                            version, c->cgroup);
                        return;
                }
                for (size_t i = 0; i < ELEMENTSOF(controllers); i++) {
                        _cleanup_free_ char *p =
                            rkl_xasprintf("%s/%s/cgroup.procs", c->cgroup, controllers[i].name);
                        if (exists(p))
                                rkl_strv_push(&have, controllers[i].name);
                }
        }
        _cleanup_strv_free_ char **why = NULL;
        for (size_t i = 0; i < ELEMENTSOF(controllers); i++) {
                if (v2 && streq(controllers[i].name, "cpuacct"))
                        continue;
                if (rkl_strv_contains(have, controllers[i].name))
                        continue;
                rkl_strv_push(&missing, controllers[i].name);
                rkl_strv_push(&why, controllers[i].why);
                if (controllers[i].needed)
                        level = RKL_CHECK_FAIL;
                else if (level == RKL_CHECK_OK)
                        level = RKL_CHECK_WARN;
        }
        _cleanup_strv_free_ char **used = NULL;
        RKL_STRV_FOREACH (h, have)
                for (size_t i = 0; i < ELEMENTSOF(controllers); i++)
                        if (streq(*h, controllers[i].name))
                                rkl_strv_push(&used, *h);
        _cleanup_free_ char *u = rkl_strv_join(used, ", ");
        if (!missing) {
                set(ret, name, RKL_CHECK_OK, "cgroup %s; the controllers rktlet uses: %s", version,
                    u);
                return;
        }
        _cleanup_free_ char *m = rkl_strv_join(missing, ", ");
        _cleanup_free_ char *w = rkl_strv_join(why, ", ");
        set(ret, name, level,
            "cgroup %s without %s (for %s)%s%s; enable %s (the kernel command line, e.g. "
            "cgroup_enable=memory, or systemd's mounts)",
            version, m, w, u[0] ? "; has " : "", u, missing[1] ? "them" : "it");
}

/* ---- inotify ---- */

/* Root's inotify instances now: the fds of root's processes that are inotify instances. In
 * a PID namespace (a container) only its own processes show, while the limit is the
 * machine's: the count is then low, and the verdict kind. */
static unsigned inotify_in_use(const char *proc)
{
        _cleanup_closedir_ DIR *d = opendir(proc);
        unsigned n = 0;
        if (!d)
                return 0;
        for (struct dirent *p; (p = readdir(d));) {
                unsigned pid;
                struct stat st;
                if (rkl_safe_atou(p->d_name, &pid) < 0 ||
                    fstatat(dirfd(d), p->d_name, &st, 0) < 0 || st.st_uid != 0)
                        continue;
                _cleanup_free_ char *fds = rkl_xasprintf("%s/%u/fd", proc, pid);
                _cleanup_closedir_ DIR *f = opendir(fds);
                if (!f)
                        continue;
                for (struct dirent *e; (e = readdir(f));) {
                        char target[64];
                        ssize_t k = readlinkat(dirfd(f), e->d_name, target, sizeof(target) - 1);
                        if (k <= 0)
                                continue;
                        target[k] = 0;
                        if (streq(target, "anon_inode:inotify"))
                                n++;
                }
        }
        return n;
}

void rkl_check_inotify_verdict(unsigned limit, unsigned in_use, rkl_check_result *ret)
{
        static const char name[] = "inotify";
        unsigned pods = limit > in_use ? (limit - in_use) / RKL_CHECK_INOTIFY_PER_POD : 0;

        if (pods >= RKL_CHECK_PODS) {
                set(ret, name, RKL_CHECK_OK,
                    "fs.inotify.max_user_instances = %u, %u in use by root: room for about %u "
                    "pods (%d instances each)",
                    limit, in_use, pods, RKL_CHECK_INOTIFY_PER_POD);
                return;
        }
        set(ret, name, RKL_CHECK_FAIL,
            "fs.inotify.max_user_instances = %u, %u in use by root: room for about %u pods (%d "
            "instances each) where kubelet runs up to %d, and past it a pod's systemd fails "
            "(\"Failed to allocate manager object\"); raise it: sysctl -w "
            "fs.inotify.max_user_instances=8192 (the rktlet package's "
            "/usr/lib/sysctl.d/90-rktlet.conf sets that at boot)",
            limit, in_use, pods, RKL_CHECK_INOTIFY_PER_POD, RKL_CHECK_PODS);
}

void rkl_check_inotify(const rkl_check_config *c, rkl_check_result *ret)
{
        _cleanup_free_ char *path = rkl_xasprintf("%s/sys/fs/inotify/max_user_instances", c->proc);
        _cleanup_free_ char *text = NULL;
        unsigned limit;

        int r = rkl_read_file_at(AT_FDCWD, path, 64, &text, NULL);
        if (r >= 0)
                text[strcspn(text, "\n")] = 0;
        if (r < 0 || rkl_safe_atou(text, &limit) < 0) {
                set(ret, "inotify", RKL_CHECK_WARN, "cannot read '%s': %s", path,
                    r < 0 ? strerror(-r) : "not a number");
                return;
        }
        rkl_check_inotify_verdict(limit, inotify_in_use(c->proc), ret);
}

/* ---- CNI ---- */

/* Each plugin type the configuration runs, its IPAM plugins included, in order. */
static char **plugin_types(const rkl_cni_config *cfg)
{
        json_object *list = json_tokener_parse(rkl_cni_config_json(cfg)), *plugins;
        char **types = NULL;
        if (list && json_object_object_get_ex(list, "plugins", &plugins))
                for (size_t i = 0; i < json_object_array_length(plugins); i++) {
                        json_object *p = json_object_array_get_idx(plugins, i), *t, *ipam;
                        if (json_object_object_get_ex(p, "type", &t) &&
                            !rkl_strv_contains(types, json_object_get_string(t)))
                                rkl_strv_push(&types, json_object_get_string(t));
                        if (json_object_object_get_ex(p, "ipam", &ipam) &&
                            json_object_object_get_ex(ipam, "type", &t) &&
                            json_object_is_type(t, json_type_string) &&
                            !rkl_strv_contains(types, json_object_get_string(t)))
                                rkl_strv_push(&types, json_object_get_string(t));
                }
        json_object_put(list);
        return types;
}

void rkl_check_cni(const rkl_check_config *c, rkl_check_result *ret)
{
        static const char name[] = "cni";
        _cleanup_(rkl_cni_config_freep) rkl_cni_config *cfg = NULL;
        rkl_error e = RKL_ERROR_INIT;

        if (c->config->net) {
                set(ret, name, RKL_CHECK_OK,
                    "pods use rkt's own network '%s' (net): no CNI configuration is read",
                    c->config->net);
                return;
        }
        if (rkl_cni_config_load_dir(c->config->cni_conf_dir, &cfg, &e) < 0) {
                set(ret, name, RKL_CHECK_FAIL,
                    "%s; pods cannot start (NetworkReady stays false): install the cluster "
                    "network's configuration there (a *.conflist, which a network add-on "
                    "writes), or set cni-conf-dir",
                    e.msg);
                return;
        }
        _cleanup_strv_free_ char **types = plugin_types(cfg), **missing = NULL;
        _cleanup_free_ char *dirs = rkl_strv_join(c->config->cni_bin_dirs, ", ");
        RKL_STRV_FOREACH (t, types) {
                bool found = false;
                RKL_STRV_FOREACH (d, c->config->cni_bin_dirs) {
                        _cleanup_free_ char *p = rkl_xasprintf("%s/%s", *d, *t);
                        struct stat st;
                        if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0) {
                                found = true;
                                break;
                        }
                }
                if (!found)
                        rkl_strv_push(&missing, *t);
        }
        _cleanup_free_ char *all = rkl_strv_join(types, ", ");
        if (missing) {
                _cleanup_free_ char *m = rkl_strv_join(missing, ", ");
                set(ret, name, RKL_CHECK_FAIL,
                    "'%s' (network '%s') runs %s, but %s %s not in %s; install %s (Debian's "
                    "containernetworking-plugins puts them in /usr/lib/cni) or add %s "
                    "directory with cni-bin-dir",
                    rkl_cni_config_source(cfg), rkl_cni_config_name(cfg), all, m,
                    missing[1] ? "are" : "is", dirs, missing[1] ? "them" : "it",
                    missing[1] ? "their" : "its");
                return;
        }
        set(ret, name, RKL_CHECK_OK, "'%s': network '%s', CNI %s, plugins %s found in %s",
            rkl_cni_config_source(cfg), rkl_cni_config_name(cfg), rkl_cni_config_version(cfg), all,
            dirs);
}

/* ---- the socket ---- */

void rkl_check_socket(const rkl_check_config *c, rkl_check_result *ret)
{
        static const char name[] = "socket";
        gid_t want = c->config->socket_gid == (gid_t)-1 ? 0 : c->config->socket_gid;
        struct stat st;

        /* Never connect: rktlet.socket would start the daemon for it. */
        if (lstat(c->config->listen_path, &st) < 0) {
                set(ret, name, RKL_CHECK_WARN,
                    "'%s' (listen) is not there: %s; start rktlet.socket (systemctl enable --now "
                    "rktlet.socket), or the daemon makes it when it starts without one",
                    c->config->listen_path, strerror(errno));
                return;
        }
        if (!S_ISSOCK(st.st_mode)) {
                set(ret, name, RKL_CHECK_FAIL,
                    "'%s' (listen) is not a socket: kubelet cannot connect; remove it, or set "
                    "listen elsewhere",
                    c->config->listen_path);
                return;
        }
        unsigned mode = st.st_mode & 07777;
        if (mode & 0006) {
                set(ret, name, RKL_CHECK_FAIL,
                    "'%s' is mode %04o: anyone on the machine can run pods as root; make it 0660 "
                    "(rktlet.socket's SocketMode=)",
                    c->config->listen_path, mode);
                return;
        }
        if (st.st_gid != want) {
                set(ret, name, RKL_CHECK_WARN,
                    "'%s' is mode %04o, owner %u, group %u, not the configured group %u; "
                    "rktlet.socket's SocketGroup= and socket-group should agree",
                    c->config->listen_path, mode, (unsigned)st.st_uid, (unsigned)st.st_gid,
                    (unsigned)want);
                return;
        }
        set(ret, name, RKL_CHECK_OK, "'%s': mode %04o, owner %u, group %u", c->config->listen_path,
            mode, (unsigned)st.st_uid, (unsigned)st.st_gid);
}

/* ---- the state directory ---- */

static const char *fs_name(long type)
{
        switch ((unsigned long)type) {
        case 0xEF53:
                return "ext4";
        case 0x58465342:
                return "xfs";
        case 0x9123683E:
                return "btrfs";
        case 0x01021994:
                return "tmpfs";
        case 0x794C7630:
                return "overlayfs";
        case 0x2FC12FC1:
                return "zfs";
        case 0xF2F52010:
                return "f2fs";
        case 0x6969:
                return "nfs";
        case 0xFF534D42:
                return "cifs";
        default:
                return NULL;
        }
}

/* path, or its nearest ancestor that exists: what a directory not made yet will be on. */
static char *existing_ancestor(const char *path)
{
        char *p = rkl_xstrdup(path);
        while (!exists(p)) {
                char *slash = strrchr(p, '/');
                if (!slash || slash == p) {
                        p[1] = 0;
                        break;
                }
                *slash = 0;
        }
        return p;
}

void rkl_check_state(const rkl_check_config *c, rkl_check_result *ret)
{
        static const char name[] = "state";
        _cleanup_free_ char *on = existing_ancestor(c->config->state_dir);
        _cleanup_free_ char *data_on = existing_ancestor(c->config->rkt_data_dir);
        struct statfs fs, data_fs;
        struct stat st;

        if (statfs(on, &fs) < 0 || statfs(data_on, &data_fs) < 0) {
                set(ret, name, RKL_CHECK_FAIL, "cannot look at '%s' or '%s': %s", on, data_on,
                    strerror(errno));
                return;
        }
        const char *type = fs_name(fs.f_type), *data_type = fs_name(data_fs.f_type);
        char typebuf[32], data_typebuf[32];
        if (!type)
                type = (snprintf(typebuf, sizeof(typebuf), "fs 0x%lx", (long)fs.f_type), typebuf);
        if (!data_type)
                data_type =
                    (snprintf(data_typebuf, sizeof(data_typebuf), "fs 0x%lx", (long)data_fs.f_type),
                     data_typebuf);
        uint64_t avail = (uint64_t)data_fs.f_bavail * (uint64_t)data_fs.f_bsize;
        uint64_t size = (uint64_t)data_fs.f_blocks * (uint64_t)data_fs.f_bsize;
        _cleanup_free_ char *a = human(avail), *s = human(size);
        const char *made =
            exists(c->config->state_dir) ? "" : " (made at the daemon's first start)";
        bool same = fs.f_fsid.__val[0] == data_fs.f_fsid.__val[0] &&
                    fs.f_fsid.__val[1] == data_fs.f_fsid.__val[1];
        _cleanup_free_ char *data =
            same ? rkl_xasprintf("rkt's data '%s' with it", c->config->rkt_data_dir)
                 : rkl_xasprintf("rkt's data '%s' on %s", c->config->rkt_data_dir, data_type);

        if (streq(data_type, "overlayfs")) {
                set(ret, name, RKL_CHECK_FAIL,
                    "rkt's data '%s' is on overlayfs, on which rkt cannot mount its pods' "
                    "overlays; set rkt-data-dir on ext4, xfs or btrfs",
                    c->config->rkt_data_dir);
                return;
        }
        if (stat(c->config->state_dir, &st) == 0 && (st.st_mode & 0077)) {
                set(ret, name, RKL_CHECK_FAIL,
                    "'%s' is mode %04o: its database holds every pod's environment; chmod 0700 "
                    "it",
                    c->config->state_dir, (unsigned)(st.st_mode & 07777));
                return;
        }
        rkl_check_level level = avail < FREE_FAIL_BYTES   ? RKL_CHECK_FAIL
                                : avail < FREE_WARN_BYTES ? RKL_CHECK_WARN
                                                          : RKL_CHECK_OK;
        set(ret, name, level, "'%s'%s on %s, %s; %s free of %s%s", c->config->state_dir, made, type,
            data, a, s,
            level == RKL_CHECK_OK ? ""
                                  : "; images and pods' layers need room: free some (crictl rmi "
                                    "--prune) or give rkt-data-dir a larger filesystem");
}

/* ---- registry mirrors ---- */

/* Connects to host:port within timeout; a socket fd or -errno. */
static int connect_to(const char *host, const char *port, uint64_t timeout_usec, rkl_error *e)
{
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai;
        int r = getaddrinfo(host, port, &hints, &ai);
        if (r != 0)
                return rkl_error_set(e, -EHOSTUNREACH, "cannot resolve '%s': %s", host,
                                     gai_strerror(r));
        int fd = -EHOSTUNREACH;
        for (struct addrinfo *a = ai; a; a = a->ai_next) {
                int s = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (s < 0)
                        continue;
                if (connect(s, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
                        r = -errno;
                        close(s);
                        continue;
                }
                struct pollfd p = {.fd = s, .events = POLLOUT};
                int k = poll(&p, 1, (int)(timeout_usec / USEC_PER_MSEC));
                int err = 0;
                socklen_t len = sizeof(err);
                if (k == 1 && getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
                        fd = s;
                        break;
                }
                r = k == 0 ? -ETIMEDOUT : -(err ? err : errno);
                close(s);
        }
        freeaddrinfo(ai);
        if (fd < 0)
                return rkl_error_set(e, r < 0 ? r : -EHOSTUNREACH, "cannot connect to %s:%s: %s",
                                     host, port, strerror(r < 0 ? -r : EHOSTUNREACH));
        return fd;
}

/* The status line a registry answers GET /v2/ with ("HTTP/1.1 200 OK"), in buf. */
static int http_get_v2(int fd, const char *host, uint64_t timeout_usec, char *buf, size_t n,
                       rkl_error *e)
{
        char req[512];
        int len =
            snprintf(req, sizeof(req),
                     "GET /v2/ HTTP/1.0\r\nHost: %s\r\nUser-Agent: rktlet-check\r\n\r\n", host);
        if (len < 0 || (size_t)len >= sizeof(req) || write(fd, req, (size_t)len) != len)
                return rkl_error_set(e, -EIO, "cannot send a request to %s", host);
        size_t got = 0;
        while (got + 1 < n && !memchr(buf, '\n', got)) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                if (poll(&p, 1, (int)(timeout_usec / USEC_PER_MSEC)) != 1)
                        return rkl_error_set(e, -ETIMEDOUT, "%s did not answer", host);
                ssize_t k = read(fd, buf + got, n - 1 - got);
                if (k <= 0)
                        break;
                got += (size_t)k;
                buf[got] = 0;
        }
        buf[got] = 0;
        buf[strcspn(buf, "\r\n")] = 0;
        if (strncmp(buf, "HTTP/", 5) != 0)
                return rkl_error_set(e, -EPROTO, "%s does not answer HTTP", host);
        return 0;
}

void rkl_check_mirror(const rkl_check_config *c, const char *spec, rkl_check_result *ret)
{
        static const char name[] = "mirror";
        const char *eq = strchr(spec, '='), *url = eq ? eq + 1 : spec;
        bool http = startswith(url, "http://") != NULL;
        const char *hostport = http ? url + 7 : startswith(url, "https://") ? url + 8 : url;
        _cleanup_free_ char *host = rkl_xstrndup(hostport, strcspn(hostport, "/"));
        const char *port = http ? "80" : "443";
        char *colon = strrchr(host, ':');
        rkl_error e = RKL_ERROR_INIT;

        if (colon && !strchr(colon, ']')) {
                *colon = 0;
                port = colon + 1;
        }
        if (host[0] == '[' && host[strlen(host) - 1] == ']') {
                memmove(host, host + 1, strlen(host));
                host[strlen(host) - 1] = 0;
        }
        _cleanup_close_ int fd = connect_to(host, port, timeout_of(c), &e);
        if (fd < 0) {
                set(ret, name, RKL_CHECK_WARN,
                    "%s: %s; pulls go to the registry itself, slower or not at all: fix the "
                    "mirror or drop the registry-mirror",
                    spec, e.msg);
                return;
        }
        if (!http) {
                set(ret, name, RKL_CHECK_OK, "%s: %s:%s accepts connections (TLS not checked)",
                    spec, host, port);
                return;
        }
        char status[128];
        if (http_get_v2(fd, host, timeout_of(c), status, sizeof(status), &e) < 0) {
                set(ret, name, RKL_CHECK_WARN,
                    "%s: %s; pulls go to the registry itself: is it a registry?", spec, e.msg);
                return;
        }
        /* A registry answers /v2/ with 200, or 401 asking for credentials. */
        const char *code = strchr(status, ' ');
        if (code && (startswith(code + 1, "200") || startswith(code + 1, "401")))
                set(ret, name, RKL_CHECK_OK, "%s: a registry answers GET /v2/ (%s)", spec, status);
        else
                set(ret, name, RKL_CHECK_WARN,
                    "%s: GET /v2/ answered '%s', not a registry's 200 or 401; pulls go to the "
                    "registry itself",
                    spec, status);
}

/* ---- all ---- */

void rkl_check_all(const rkl_check_config *c, rkl_check_result **ret, size_t *ret_n)
{
        size_t n_mirrors = rkl_strv_length(c->config->registry_mirrors), n = 0;
        rkl_check_result *l = rkl_xnew0(rkl_check_result, 7 + (n_mirrors ? n_mirrors : 1));

        rkl_check_rkt(c, &l[n++]);
        rkl_check_systemd(c, &l[n++]);
        rkl_check_cgroups(c, &l[n++]);
        rkl_check_inotify(c, &l[n++]);
        rkl_check_cni(c, &l[n++]);
        rkl_check_socket(c, &l[n++]);
        rkl_check_state(c, &l[n++]);
        RKL_STRV_FOREACH (m, c->config->registry_mirrors)
                rkl_check_mirror(c, *m, &l[n++]);
        if (n_mirrors == 0)
                set(&l[n++], "mirror", RKL_CHECK_OK,
                    "none (registry-mirror): images come from their registries, not checked");
        *ret = l;
        *ret_n = n;
}

char *rkl_check_format(const rkl_check_result *r)
{
        static const char *const words[] = {
            [RKL_CHECK_OK] = "ok",
            [RKL_CHECK_WARN] = "WARN",
            [RKL_CHECK_FAIL] = "FAIL",
        };
        return rkl_xasprintf("%-4s %s: %s", words[r->level], r->name, r->text);
}
