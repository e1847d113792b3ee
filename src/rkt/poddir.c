#include "poddir.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "json-util.h"
#include "base/alloc.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/utf8.h"
#include "base/banned.h"

#define APP_NAME_MAX  200
#define TREE_ID_MAX   255
#define NETINFO_MAX_N 64

/* Adds context and keeps r even when the caller passed no rkl_error (prefix returns -EIO). */
#define PREFIX(r, ...) ((void)rkl_error_prefix(reterr, __VA_ARGS__), (r))
/* Moves a value struct out, leaving zeroes behind. */
#define TAKE_STRUCT(s)                                                                             \
        ({                                                                                         \
                typeof(s) _s_ = (s);                                                               \
                (s) = (typeof(s)){0};                                                              \
                _s_;                                                                               \
        })

static const char *const dir_names[_RKL_PODDIR_DIR_MAX] = {
    [RKL_PODDIR_EMBRYO] = "embryo",
    [RKL_PODDIR_PREPARE] = "prepare",
    [RKL_PODDIR_PREPARED] = "prepared",
    [RKL_PODDIR_RUN] = "run",
    [RKL_PODDIR_EXITED_GARBAGE] = "exited-garbage",
    [RKL_PODDIR_GARBAGE] = "garbage",
};

static const char *const state_names[_RKL_POD_STATE_MAX] = {
    [RKL_POD_STATE_EMBRYO] = "embryo",
    [RKL_POD_STATE_PREPARING] = "preparing",
    [RKL_POD_STATE_ABORTED_PREPARE] = "aborted prepare",
    [RKL_POD_STATE_PREPARED] = "prepared",
    [RKL_POD_STATE_RUNNING] = "running",
    [RKL_POD_STATE_EXITED] = "exited",
    [RKL_POD_STATE_EXITED_GARBAGE] = "exited garbage",
    [RKL_POD_STATE_EXITED_DELETING] = "exited deleting",
    [RKL_POD_STATE_GARBAGE] = "garbage",
    [RKL_POD_STATE_DELETING] = "deleting",
};

static const char *const app_state_names[_RKL_POD_APP_MAX] = {
    [RKL_POD_APP_UNKNOWN] = "unknown",
    [RKL_POD_APP_CREATED] = "created",
    [RKL_POD_APP_RUNNING] = "running",
    [RKL_POD_APP_EXITED] = "exited",
};

const char *rkl_poddir_dir_to_string(rkl_poddir_dir d)
{
        return d >= 0 && d < _RKL_PODDIR_DIR_MAX ? dir_names[d] : NULL;
}

rkl_poddir_dir rkl_poddir_dir_from_string(const char *s)
{
        for (int i = 0; s && i < _RKL_PODDIR_DIR_MAX; i++)
                if (streq(s, dir_names[i]))
                        return (rkl_poddir_dir)i;
        return _RKL_PODDIR_DIR_INVALID;
}

const char *rkl_pod_state_to_string(rkl_pod_state s)
{
        return s >= 0 && s < _RKL_POD_STATE_MAX ? state_names[s] : NULL;
}

const char *rkl_pod_app_state_to_string(rkl_pod_app_state s)
{
        return s >= 0 && s < _RKL_POD_APP_MAX ? app_state_names[s] : NULL;
}

bool rkl_pod_state_is_after_run(rkl_pod_state s)
{
        /* pkg/pod AfterRun(): exited (incl. exited garbage), exited deleting, deleting,
         * garbage. */
        switch (s) {
        case RKL_POD_STATE_EXITED:
        case RKL_POD_STATE_EXITED_GARBAGE:
        case RKL_POD_STATE_EXITED_DELETING:
        case RKL_POD_STATE_GARBAGE:
        case RKL_POD_STATE_DELETING:
                return true;
        default:
                return false;
        }
}

static bool is_hex_lower(char c)
{
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

bool rkl_pod_uuid_is_valid(const char *s)
{
        if (!s)
                return false;
        for (size_t i = 0; i < RKL_POD_UUID_LEN; i++) {
                bool dash = i == 8 || i == 13 || i == 18 || i == 23;
                if (dash ? s[i] != '-' : !is_hex_lower(s[i]))
                        return false;
        }
        return s[RKL_POD_UUID_LEN] == 0;
}

static bool is_alnum_lower(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool rkl_pod_app_name_is_valid(const char *s)
{
        if (!s || !is_alnum_lower(s[0]))
                return false;
        size_t i = 1;
        for (; s[i]; i++) {
                if (i >= APP_NAME_MAX)
                        return false;
                if (is_alnum_lower(s[i]))
                        continue;
                /* A separator must sit between two alnums: no "..", no trailing '.'. */
                if (!strchr("-._~", s[i]) || !is_alnum_lower(s[i + 1]))
                        return false;
        }
        return true;
}

/* stage1TreeStoreID becomes a path component: "deps-sha512-<hex>" in practice. */
static bool tree_id_is_valid(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > TREE_ID_MAX || streq(s, ".") || streq(s, ".."))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!is_alnum_lower(s[i]) && !(s[i] >= 'A' && s[i] <= 'Z') && !strchr("-_.", s[i]))
                        return false;
        return true;
}

void rkl_poddir_app_done(rkl_poddir_app *a)
{
        if (!a)
                return;
        free(a->name);
        free(a->image_id);
        rkl_kvs_done(&a->annotations);
        rkl_kvs_done(&a->user_annotations);
        rkl_kvs_done(&a->user_labels);
        *a = (rkl_poddir_app){0};
}

static void apps_free(rkl_poddir_app *apps, size_t n)
{
        for (size_t i = 0; i < n; i++)
                rkl_poddir_app_done(&apps[i]);
        free(apps);
}

void rkl_poddir_manifest_done(rkl_poddir_manifest *m)
{
        if (!m)
                return;
        rkl_kvs_done(&m->annotations);
        rkl_kvs_done(&m->user_annotations);
        rkl_kvs_done(&m->user_labels);
        apps_free(m->apps, m->n_apps);
        *m = (rkl_poddir_manifest){0};
}

void rkl_poddir_pod_done(rkl_poddir_pod *p)
{
        if (!p)
                return;
        free(p->ip);
        free(p->net_name);
        free(p->subcgroup);
        free(p->stage1_tree);
        rkl_kvs_done(&p->annotations);
        rkl_kvs_done(&p->user_annotations);
        rkl_kvs_done(&p->user_labels);
        apps_free(p->apps, p->n_apps);
        *p = (rkl_poddir_pod){0};
}

const rkl_poddir_app *rkl_poddir_pod_find_app(const rkl_poddir_pod *p, const char *name)
{
        for (size_t i = 0; i < p->n_apps; i++)
                if (streq(p->apps[i].name, name))
                        return &p->apps[i];
        return NULL;
}

/* ---- pure parsers ---- */

static bool is_ws(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Trims ASCII whitespace off both ends of [*buf, *buf + *len). */
static void trim(const char **buf, size_t *len)
{
        while (*len > 0 && is_ws(**buf)) {
                (*buf)++;
                (*len)--;
        }
        while (*len > 0 && is_ws((*buf)[*len - 1]))
                (*len)--;
}

/* A small decimal number file: digits only once trimmed; embedded NULs count as garbage. */
static int parse_small_uint(const char *buf, size_t len, uint64_t max, uint64_t *ret)
{
        char tmp[21];
        trim(&buf, &len);
        if (len == 0)
                return -ENODATA;
        if (len >= sizeof(tmp))
                return -EBADMSG;
        for (size_t i = 0; i < len; i++)
                if (buf[i] < '0' || buf[i] > '9')
                        return -EBADMSG;
        memcpy(tmp, buf, len);
        tmp[len] = 0;
        uint64_t v;
        int r = rkl_safe_atou64(tmp, &v);
        if (r < 0)
                return r == -EINVAL ? -EBADMSG : r;
        if (v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int rkl_poddir_parse_exit(const char *buf, size_t len, int *ret_code)
{
        uint64_t v;
        int r = parse_small_uint(buf, len, 255, &v);
        if (r < 0)
                return r;
        *ret_code = (int)v;
        return 0;
}

int rkl_poddir_parse_pid(const char *buf, size_t len, uint32_t *ret_pid)
{
        uint64_t v;
        int r = parse_small_uint(buf, len, INT32_MAX, &v);
        if (r < 0)
                return r;
        if (v == 0)
                return -ERANGE;
        *ret_pid = (uint32_t)v;
        return 0;
}

static int kvs_add_checked(rkl_kvs *l, const char *key, json_object *v, rkl_error *reterr)
{
        if (!json_object_is_type(v, json_type_string))
                return rkl_error_set(reterr, -EBADMSG, "value of '%s' is not a string", key);
        size_t kn = strlen(key), vn = (size_t)json_object_get_string_len(v);
        const char *value = json_object_get_string(v);
        if (kn == 0 || kn > RKL_MAX_KEY || vn > RKL_MAX_VALUE || strlen(value) != vn)
                return rkl_error_set(reterr, -EBADMSG, "bad key or value for '%.64s'", key);
        if (l->n >= RKL_MAX_KV)
                return rkl_error_set(reterr, -EBADMSG, "more than %d entries", RKL_MAX_KV);
        /* appc rejects duplicate annotation names; so do we rather than pick one. */
        if (rkl_kvs_get(l, key))
                return rkl_error_set(reterr, -EBADMSG, "duplicate key '%.64s'", key);
        rkl_kvs_add(l, key, value);
        return 0;
}

/* Annotations are appc arrays of {"name","value"}; userAnnotations/userLabels are maps.
 * Both shapes are accepted for either; absent or null is empty. */
static int parse_kvs(json_object *parent, const char *key, rkl_kvs *out, rkl_error *reterr)
{
        json_object *o = NULL;
        int r;
        if (!json_object_object_get_ex(parent, key, &o) || !o)
                return 0;
        if (json_object_is_type(o, json_type_object)) {
                json_object_object_foreach(o, k, v)
                {
                        if (!v)
                                return rkl_error_set(reterr, -EBADMSG, "'%s': null value", key);
                        r = kvs_add_checked(out, k, v, reterr);
                        if (r < 0)
                                return PREFIX(r, "'%s'", key);
                }
                return 0;
        }
        if (!json_object_is_type(o, json_type_array))
                return rkl_error_set(reterr, -EBADMSG, "'%s' is neither object nor array", key);
        size_t n = json_object_array_length(o);
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(o, i), *v = NULL;
                const char *name;
                if (!e || !json_object_is_type(e, json_type_object))
                        return rkl_error_set(reterr, -EBADMSG, "'%s'[%zu] is not an object", key,
                                             i);
                r = rkl_rkt__json_get_string(e, "name", RKL_MAX_KEY, &name, reterr);
                if (r < 0)
                        return PREFIX(r, "'%s'[%zu]", key, i);
                if (!name || !json_object_object_get_ex(e, "value", &v) || !v)
                        return rkl_error_set(reterr, -EBADMSG, "'%s'[%zu] lacks name or value", key,
                                             i);
                r = kvs_add_checked(out, name, v, reterr);
                if (r < 0)
                        return PREFIX(r, "'%s'", key);
        }
        return 0;
}

static int parse_app(json_object *e, rkl_poddir_app *a, rkl_error *reterr)
{
        const char *name, *id = NULL;
        json_object *image = NULL, *app = NULL;
        int r;

        if (!json_object_is_type(e, json_type_object))
                return rkl_error_set(reterr, -EBADMSG, "not an object");
        r = rkl_rkt__json_get_string(e, "name", APP_NAME_MAX, &name, reterr);
        if (r < 0)
                return r;
        if (!rkl_pod_app_name_is_valid(name))
                return rkl_error_set(reterr, -EBADMSG, "invalid app name '%.64s'",
                                     name ? name : "");
        a->name = rkl_xstrdup(name);
        a->in_manifest = true;

        if (json_object_object_get_ex(e, "image", &image) && image) {
                if (!json_object_is_type(image, json_type_object))
                        return rkl_error_set(reterr, -EBADMSG, "'image' is not an object");
                r = rkl_rkt__json_get_string(image, "id", RKL_MAX_NAME, &id, reterr);
                if (r < 0)
                        return PREFIX(r, "image");
                a->image_id = rkl_xstrdup(id);
        }
        r = parse_kvs(e, "annotations", &a->annotations, reterr);
        if (r < 0)
                return r;
        if (json_object_object_get_ex(e, "app", &app) && app) {
                if (!json_object_is_type(app, json_type_object))
                        return rkl_error_set(reterr, -EBADMSG, "'app' is not an object");
                r = parse_kvs(app, "userAnnotations", &a->user_annotations, reterr);
                if (r < 0)
                        return r;
                r = parse_kvs(app, "userLabels", &a->user_labels, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

int rkl_poddir_parse_manifest(const char *buf, size_t len, rkl_poddir_manifest *ret,
                              rkl_error *reterr)
{
        _cleanup_(json_object_putp) json_object *root = NULL;
        _cleanup_(rkl_poddir_manifest_done) rkl_poddir_manifest m = {0};
        json_object *apps = NULL;
        const char *kind;
        int r;

        r = rkl_rkt__json_parse(buf, len, RKL_PODDIR_MANIFEST_MAX, &root, reterr);
        if (r < 0)
                return PREFIX(r, "pod manifest");
        if (!json_object_is_type(root, json_type_object))
                return rkl_error_set(reterr, -EBADMSG, "pod manifest: not an object");
        r = rkl_rkt__json_get_string(root, "acKind", 64, &kind, reterr);
        if (r < 0 || !streq_ptr(kind, "PodManifest"))
                return rkl_error_set(reterr, -EBADMSG, "pod manifest: acKind is not PodManifest");

        r = parse_kvs(root, "annotations", &m.annotations, reterr);
        if (r >= 0)
                r = parse_kvs(root, "userAnnotations", &m.user_annotations, reterr);
        if (r >= 0)
                r = parse_kvs(root, "userLabels", &m.user_labels, reterr);
        if (r < 0)
                return PREFIX(r, "pod manifest");

        /* An empty sandbox has "apps": null (a nil Go slice). */
        if (json_object_object_get_ex(root, "apps", &apps) && apps) {
                if (!json_object_is_type(apps, json_type_array))
                        return rkl_error_set(reterr, -EBADMSG, "pod manifest: 'apps' not array");
                size_t n = json_object_array_length(apps);
                if (n > RKL_PODDIR_MAX_APPS)
                        return rkl_error_set(reterr, -EBADMSG, "pod manifest: %zu apps", n);
                m.apps = rkl_xnew0(rkl_poddir_app, n ? n : 1);
                for (size_t i = 0; i < n; i++) {
                        json_object *e = json_object_array_get_idx(apps, i);
                        r = parse_app(e, &m.apps[m.n_apps], reterr);
                        m.n_apps++;
                        if (r < 0)
                                return PREFIX(r, "pod manifest: apps[%zu]", i);
                        for (size_t j = 0; j < i; j++)
                                if (streq(m.apps[j].name, m.apps[i].name))
                                        return rkl_error_set(reterr, -EBADMSG,
                                                             "pod manifest: duplicate app '%s'",
                                                             m.apps[i].name);
                }
        }
        *ret = m;
        m = (rkl_poddir_manifest){0};
        return 0;
}

static bool is_ipv4(const char *s)
{
        struct in_addr a;
        return s && inet_pton(AF_INET, s, &a) == 1;
}

int rkl_poddir_parse_netinfo(const char *buf, size_t len, char **ret_ip, char **ret_net_name,
                             rkl_error *reterr)
{
        static const char *const preferred[] = {"rkt.kubernetes.io", "default"};
        _cleanup_(json_object_putp) json_object *root = NULL;
        const char *best_ip = NULL, *best_name = NULL;
        size_t best_rank = SIZE_MAX;
        int r;

        r = rkl_rkt__json_parse(buf, len, RKL_PODDIR_FILE_MAX, &root, reterr);
        if (r < 0)
                return PREFIX(r, "net-info.json");
        if (json_object_is_type(root, json_type_array)) {
                size_t n = json_object_array_length(root);
                if (n > NETINFO_MAX_N)
                        return rkl_error_set(reterr, -EBADMSG, "net-info.json: %zu networks", n);
                for (size_t i = 0; i < n; i++) {
                        json_object *e = json_object_array_get_idx(root, i);
                        const char *name, *ip;
                        if (!e || !json_object_is_type(e, json_type_object))
                                return rkl_error_set(reterr, -EBADMSG,
                                                     "net-info.json: [%zu] not an object", i);
                        r = rkl_rkt__json_get_string(e, "netName", RKL_MAX_NAME, &name, reterr);
                        if (r >= 0)
                                r = rkl_rkt__json_get_string(e, "ip", 64, &ip, reterr);
                        if (r < 0)
                                return PREFIX(r, "net-info.json: [%zu]", i);
                        if (!is_ipv4(ip))
                                continue;
                        /* Rank: preferred names first, then position. */
                        size_t rank = ELEMENTSOF(preferred) + i;
                        for (size_t k = 0; name && k < ELEMENTSOF(preferred); k++)
                                if (streq(name, preferred[k]))
                                        rank = k;
                        if (rank < best_rank) {
                                best_rank = rank;
                                best_ip = ip;
                                best_name = name;
                        }
                }
        } else if (!json_object_is_type(root, json_type_null))
                return rkl_error_set(reterr, -EBADMSG, "net-info.json: not an array");

        *ret_ip = rkl_xstrdup(best_ip);
        if (ret_net_name)
                *ret_net_name = best_ip ? rkl_xstrdup(best_name ? best_name : "") : NULL;
        return 0;
}

/* ---- reading a pod directory ---- */

/* Reads a regular file (never a FIFO, device or symlink: opening a FIFO would block)
 * relative to dirfd. The stat-then-open window only matters against a hostile root. */
static int read_regular_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len,
                           struct stat *ret_st)
{
        struct stat st;
        if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return S_ISCHR(st.st_mode) && st.st_rdev == 0 ? -ENOENT /* overlay whiteout */
                                                              : -EBADFD;
        int r = rkl_read_file_at(dirfd, path, max, ret, ret_len);
        if (r < 0)
                return r;
        if (ret_st)
                *ret_st = st;
        return 0;
}

/* mtime in ns of a regular file; 0 when it is missing or not a regular file. */
static int64_t mtime_at(int dirfd, const char *path)
{
        struct stat st;
        if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                return 0;
        return rkl_timespec_nsec(&st.st_mtim);
}

/* A one-line text file (stage1TreeStoreID, subcgroup): trimmed; NULL when unusable. */
static char *read_line_at(int dirfd, const char *path)
{
        _cleanup_free_ char *buf = NULL;
        size_t n;
        if (read_regular_at(dirfd, path, RKL_PODDIR_FILE_MAX, &buf, &n, NULL) < 0)
                return NULL;
        const char *s = buf;
        trim(&s, &n);
        if (n == 0 || memchr(s, 0, n) || memchr(s, '\n', n) || !rkl_utf8_is_valid(s, n))
                return NULL;
        return rkl_xstrndup(s, n);
}

char *rkl_poddir__read_stage1_tree(int pod_dirfd)
{
        char *s = read_line_at(pod_dirfd, "stage1TreeStoreID");
        if (s && !tree_id_is_valid(s)) {
                free(s);
                return NULL;
        }
        return s;
}

/* The first state dir (in rkt's order) holding the pod. rkt only moves pods forward in
 * that order, so one in-order pass finds a pod that is being renamed. */
static int open_pod(int pods_dirfd, const char *uuid, int *ret_fd, rkl_poddir_dir *ret_dir)
{
        for (int d = 0; d < _RKL_PODDIR_DIR_MAX; d++) {
                _cleanup_free_ char *p = rkl_xasprintf("%s/%s", dir_names[d], uuid);
                int fd = openat(pods_dirfd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0) {
                        if (errno == ENOENT || errno == ENOTDIR)
                                continue;
                        return -errno;
                }
                *ret_fd = fd;
                *ret_dir = (rkl_poddir_dir)d;
                return 0;
        }
        return -ENOENT;
}

/* Probes rkt's pod lock like TrySharedLock(): true when someone holds it exclusively.
 * A lock we get is dropped at once so that rkt's own exclusive lock never waits on us. */
static int probe_lock(int fd, bool *ret_locked)
{
        for (;;) {
                if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
                        (void)flock(fd, LOCK_UN);
                        *ret_locked = false;
                        return 0;
                }
                if (errno == EWOULDBLOCK) {
                        *ret_locked = true;
                        return 0;
                }
                if (errno != EINTR)
                        return -errno;
        }
}

static rkl_pod_state derive_state(rkl_poddir_dir d, bool locked)
{
        switch (d) {
        case RKL_PODDIR_EMBRYO:
                return RKL_POD_STATE_EMBRYO;
        case RKL_PODDIR_PREPARE:
                return locked ? RKL_POD_STATE_PREPARING : RKL_POD_STATE_ABORTED_PREPARE;
        case RKL_PODDIR_PREPARED:
                return RKL_POD_STATE_PREPARED;
        case RKL_PODDIR_RUN:
                return locked ? RKL_POD_STATE_RUNNING : RKL_POD_STATE_EXITED;
        case RKL_PODDIR_EXITED_GARBAGE:
                return locked ? RKL_POD_STATE_EXITED_DELETING : RKL_POD_STATE_EXITED_GARBAGE;
        case RKL_PODDIR_GARBAGE:
                return locked ? RKL_POD_STATE_DELETING : RKL_POD_STATE_GARBAGE;
        default:
                return _RKL_POD_STATE_INVALID;
        }
}

static void read_netinfo(int fd, rkl_poddir_pod *p)
{
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int r = read_regular_at(fd, "net-info.json", RKL_PODDIR_FILE_MAX, &buf, &n, NULL);
        if (r < 0) {
                if (r != -ENOENT)
                        rkl_log_debug_errno(r, "pod %s: net-info.json unreadable: %m", p->uuid);
                return;
        }
        rkl_error e = RKL_ERROR_INIT;
        r = rkl_poddir_parse_netinfo(buf, n, &p->ip, &p->net_name, &e);
        if (r < 0)
                rkl_log_debug("pod %s: %s", p->uuid, e.msg);
}

static void read_pid(int fd, rkl_poddir_pod *p)
{
        static const char *const names[] = {"ppid", "pid"};
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *buf = NULL;
                struct stat st;
                size_t n;
                if (read_regular_at(fd, names[i], RKL_PODDIR_FILE_MAX, &buf, &n, &st) < 0)
                        continue;
                /* The file's mtime is the start time even while its content is half-written. */
                p->started_ns = rkl_timespec_nsec(&st.st_mtim);
                if (rkl_poddir_parse_pid(buf, n, &p->ppid) < 0)
                        p->ppid = 0;
                return;
        }
}

static void read_manifest(int fd, rkl_poddir_pod *p, rkl_poddir_manifest *m)
{
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int r = read_regular_at(fd, "pod", RKL_PODDIR_MANIFEST_MAX, &buf, &n, NULL);
        if (r >= 0) {
                rkl_error e = RKL_ERROR_INIT;
                r = rkl_poddir_parse_manifest(buf, n, m, &e);
                if (r < 0)
                        rkl_log_debug("pod %s: %s", p->uuid, e.msg);
        }
        p->manifest_error = r < 0 ? r : 0;
}

/* Prefers the overlay upper dir, which holds what the pod wrote even when the overlay is
 * not mounted in our namespace (reference B.3); then the merged stage1 rootfs. */
static int open_rkt_subdir(int fd, const char *tree, const char *sub)
{
        if (tree) {
                _cleanup_free_ char *p = rkl_xasprintf("overlay/%s/upper/rkt/%s", tree, sub);
                int d = openat(fd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (d >= 0 || errno != ENOENT)
                        return d >= 0 ? d : -errno;
        }
        _cleanup_free_ char *p = rkl_xasprintf("stage1/rootfs/rkt/%s", sub);
        int d = openat(fd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        return d >= 0 ? d : -errno;
}

static bool read_supervisor_ready(int fd, const char *tree)
{
        char target[16];
        const char *paths[2] = {NULL, "stage1/rootfs/rkt/supervisor-status"};
        _cleanup_free_ char *upper = NULL;
        if (tree)
                paths[0] = upper = rkl_xasprintf("overlay/%s/upper/rkt/supervisor-status", tree);
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                if (!paths[i])
                        continue;
                ssize_t k = readlinkat(fd, paths[i], target, sizeof(target));
                if (k < 0)
                        continue;
                return (size_t)k == strlen("ready") && memcmp(target, "ready", k) == 0;
        }
        return false;
}

/* rkt's mutable-pod rules (lib/app.go), made honest: an exit file that cannot be parsed
 * leaves the exit code unknown instead of rkt's "1". */
static void read_app_status(int status_fd, rkl_poddir_app *a)
{
        if (status_fd < 0)
                return;
        _cleanup_free_ char *cpath = rkl_xasprintf("%s-created", a->name);
        _cleanup_free_ char *spath = rkl_xasprintf("%s-started", a->name);
        a->created_ns = mtime_at(status_fd, cpath);
        a->started_ns = mtime_at(status_fd, spath);
        if (a->created_ns)
                a->state = RKL_POD_APP_CREATED;
        if (a->started_ns)
                a->state = RKL_POD_APP_RUNNING;

        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t n;
        int r = read_regular_at(status_fd, a->name, RKL_PODDIR_FILE_MAX, &buf, &n, &st);
        if (r == -ENOENT)
                return;
        /* The reaper creates the file, then writes the code: empty, it is being written
         * (CLOSE_WRITE follows within ms). A pod that dies in between leaves it empty; its
         * released lock makes the app exited then (rkl_poddir_read). */
        if (r >= 0 && n == 0 && a->state == RKL_POD_APP_RUNNING)
                return;
        if (r == -EFBIG || r >= 0) {
                if (r < 0 && fstatat(status_fd, a->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return;
                a->state = RKL_POD_APP_EXITED;
                a->finished_ns = rkl_timespec_nsec(&st.st_mtim);
                a->exit_known = r >= 0 && rkl_poddir_parse_exit(buf, n, &a->exit_code) >= 0;
                if (!a->exit_known)
                        a->exit_code = 0;
        }
}

static bool has_suffix(const char *s, const char *suffix, size_t *ret_prefix_len)
{
        size_t n = strlen(s), k = strlen(suffix);
        if (n <= k || !streq(s + n - k, suffix))
                return false;
        *ret_prefix_len = n - k;
        return true;
}

static bool apps_contain(char *const *names, const rkl_poddir_app *apps, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (streq(apps[i].name, name))
                        return true;
        RKL_STRV_FOREACH (s, names)
                if (streq(*s, name))
                        return true;
        return false;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Apps that have status files but are not in the manifest: being added (the manifest is
 * rewritten after <app>-created appears), removed (`app rm` leaves -created and -started
 * behind), or all apps when the manifest is unreadable. An entry "x-created" is app x's
 * marker unless the manifest names an app "x-created". */
static char **status_only_apps(int status_fd, const rkl_poddir_app *apps, size_t n_apps)
{
        _cleanup_strv_free_ char **names = NULL;
        size_t count = 0;
        if (status_fd < 0)
                return NULL;
        int fd = openat(status_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        _cleanup_closedir_ DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return NULL;
        }
        struct dirent *de;
        while ((de = readdir(d)) && n_apps + count < RKL_PODDIR_MAX_APPS) {
                _cleanup_free_ char *name = NULL;
                size_t k;
                if (de->d_name[0] == '.' || apps_contain(NULL, apps, n_apps, de->d_name))
                        continue;
                if (has_suffix(de->d_name, "-created", &k) ||
                    has_suffix(de->d_name, "-started", &k))
                        name = rkl_xstrndup(de->d_name, k);
                else
                        name = rkl_xstrdup(de->d_name);
                if (!rkl_pod_app_name_is_valid(name) || apps_contain(names, apps, n_apps, name))
                        continue;
                rkl_strv_consume(&names, TAKE_PTR(name));
                count++;
        }
        if (names)
                qsort(names, count, sizeof(char *), cmp_str);
        return TAKE_PTR(names);
}

static void read_apps(int fd, rkl_poddir_pod *p, rkl_poddir_manifest *m)
{
        _cleanup_close_ int status_fd = open_rkt_subdir(fd, p->stage1_tree, "status");
        _cleanup_strv_free_ char **extra = status_only_apps(status_fd, m->apps, m->n_apps);
        size_t n_extra = rkl_strv_length(extra);
        bool after_run = rkl_pod_state_is_after_run(p->state);

        p->apps = rkl_xnew0(rkl_poddir_app, m->n_apps + n_extra + 1);
        for (size_t i = 0; i < m->n_apps; i++)
                p->apps[p->n_apps++] = TAKE_STRUCT(m->apps[i]);
        for (size_t i = 0; i < n_extra; i++)
                p->apps[p->n_apps++] = (rkl_poddir_app){.name = TAKE_PTR(extra[i])};

        for (size_t i = 0; i < p->n_apps; i++) {
                rkl_poddir_app *a = &p->apps[i];
                read_app_status(status_fd, a);
                /* Not in a readable manifest and not exited: removed or half-added, so its
                 * leftover -created/-started files say nothing about a live process. */
                if (!a->in_manifest && p->manifest_error == 0 && a->state != RKL_POD_APP_EXITED)
                        a->state = RKL_POD_APP_UNKNOWN;
                /* rkt: an app of a pod that is after-run is exited even without a status
                 * file (the pod was killed before the reaper ran); the exit code is unknown. */
                if (after_run && a->state != RKL_POD_APP_EXITED) {
                        a->state = RKL_POD_APP_EXITED;
                        a->finished_ns = p->gc_marked_ns;
                        a->exit_known = false;
                }
        }
}

int rkl_poddir_read(int pods_dirfd, const char *uuid, rkl_poddir_pod *ret, rkl_error *reterr)
{
        _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod p = {0};
        _cleanup_(rkl_poddir_manifest_done) rkl_poddir_manifest m = {0};
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        if (!rkl_pod_uuid_is_valid(uuid))
                return rkl_error_set(reterr, -EINVAL, "invalid pod uuid '%.40s'", uuid ? uuid : "");
        memcpy(p.uuid, uuid, sizeof(p.uuid));

        r = open_pod(pods_dirfd, uuid, &fd, &p.dir);
        if (r == -ENOENT)
                return rkl_error_set(reterr, r, "pod %s not found", uuid);
        if (r < 0)
                return rkl_error_set(reterr, r, "open pod %s: %s", uuid, strerror(-r));

        /* embryo and prepared carry no lock meaning (rkt does not probe them either). */
        if (p.dir != RKL_PODDIR_EMBRYO && p.dir != RKL_PODDIR_PREPARED) {
                r = probe_lock(fd, &p.locked);
                if (r < 0)
                        return rkl_error_set(reterr, r, "lock probe of pod %s: %s", uuid,
                                             strerror(-r));
        }
        p.state = derive_state(p.dir, p.locked);

        if (fstat(fd, &st) < 0)
                return rkl_error_set(reterr, -errno, "stat pod %s: %m", uuid);
        /* rkt's GCMarkedTime(): the rename into a garbage dir sets the dir's ctime. */
        if (p.dir == RKL_PODDIR_EXITED_GARBAGE || p.dir == RKL_PODDIR_GARBAGE)
                p.gc_marked_ns = rkl_timespec_nsec(&st.st_ctim);

        p.rootfs_lock = faccessat(fd, "stage1/.#rootfs.lck", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
        p.created_ns = mtime_at(fd, "pod-created");
        if (p.created_ns == 0)
                p.created_ns = mtime_at(fd, "pod");
        read_pid(fd, &p);

        p.stage1_tree = rkl_poddir__read_stage1_tree(fd);
        /* subcgroup becomes a path below the cgroup root for stats: relative, no "..". */
        p.subcgroup = read_line_at(fd, "subcgroup");
        if (p.subcgroup && (strstr(p.subcgroup, "..") || p.subcgroup[0] == '/')) {
                free(p.subcgroup);
                p.subcgroup = NULL;
        }
        read_netinfo(fd, &p);
        p.supervisor_ready = read_supervisor_ready(fd, p.stage1_tree);

        read_manifest(fd, &p, &m);
        p.annotations = TAKE_STRUCT(m.annotations);
        p.user_annotations = TAKE_STRUCT(m.user_annotations);
        p.user_labels = TAKE_STRUCT(m.user_labels);
        read_apps(fd, &p, &m);

        /* Deleted (rkt rm, gc) while we read: what we saw is gone, do not report it. */
        if (fstat(fd, &st) < 0)
                return rkl_error_set(reterr, -errno, "stat pod %s: %m", uuid);
        if (st.st_nlink == 0)
                return rkl_error_set(reterr, -ENOENT, "pod %s vanished", uuid);

        *ret = p;
        p = (rkl_poddir_pod){0};
        return 0;
}

int rkl_poddir_list(int pods_dirfd, char ***ret_uuids, rkl_error *reterr)
{
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;

        for (int i = 0; i < _RKL_PODDIR_DIR_MAX; i++) {
                int fd = openat(pods_dirfd, dir_names[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0) {
                        if (errno == ENOENT)
                                continue;
                        return rkl_error_set(reterr, -errno, "open pods/%s: %m", dir_names[i]);
                }
                _cleanup_closedir_ DIR *d = fdopendir(fd);
                if (!d) {
                        safe_close(fd);
                        return rkl_error_set(reterr, -errno, "open pods/%s: %m", dir_names[i]);
                }
                struct dirent *de;
                while ((errno = 0, de = readdir(d))) {
                        if (!rkl_pod_uuid_is_valid(de->d_name))
                                continue;
                        if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
                                continue;
                        rkl_strv_push(&l, de->d_name);
                        n++;
                }
                if (errno)
                        return rkl_error_set(reterr, -errno, "read pods/%s: %m", dir_names[i]);
        }
        if (n > 0) {
                qsort(l, n, sizeof(char *), cmp_str);
                /* A pod renamed during the walk shows up twice. */
                size_t k = 0;
                for (size_t i = 0; i < n; i++) {
                        if (k > 0 && streq(l[k - 1], l[i])) {
                                free(l[i]);
                                continue;
                        }
                        l[k++] = l[i];
                }
                l[k] = NULL;
        }
        *ret_uuids = l ? TAKE_PTR(l) : rkl_xnew0(char *, 1);
        return 0;
}
